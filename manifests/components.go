package manifests

import (
	"io/fs"
	"path"
	"slices"
	"strings"
)

// componentsDir is the directory of a multi-component Package Operator package that holds one
// package per component: components/NAME/ with its own manifest.
const componentsDir = "components"

// loadComponent loads the component data.Component of the multi-component package at dir: the
// package at dir/components/NAME, named NAME. The root manifest must enable spec.components.
func loadComponent(fsys fs.FS, dir string, data TemplateData, b RenderBudget) (*Rendered, bool, error) {
	name := data.Component
	errs := &errorList{}
	if name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		errs.add("", 0, RuleComponent, "component %q is not a directory name", name)
		return nil, true, errs.err()
	}
	pf, ok := readPackage(confine(fsys, dir), dir, false, errs)
	if !ok {
		return nil, true, errs.err()
	}
	m := readManifest(pf, errs)
	if m == nil {
		return nil, true, errs.err()
	}
	names := componentNames(pf)
	switch {
	case !m.components:
		errs.add(m.file, m.lines.line("spec"), RuleComponent,
			"component %q is selected but the package does not enable spec.components", name)
	case !slices.Contains(names, name):
		errs.add(m.file, m.lines.line("spec.components"), RuleComponent,
			"the package has no component %q (components: %s)", name, strings.Join(names, ", "))
	}
	if err := errs.err(); err != nil {
		return nil, true, err
	}
	data.Component, data.componentOf = "", name
	return load(fsys, path.Join(dir, componentsDir, name), data, b)
}

// splitComponents applies spec.components to the files of a package: the root package of a
// multi-component package leaves out components/, where every file must be in a component's
// directory; a component may not itself enable components, and takes its name from its
// directory.
func (m *manifest) splitComponents(pf *packageFiles, component string, errs *errorList) {
	if component != "" {
		m.name = component
		if m.components {
			errs.add(m.file, m.lines.line("spec.components"), RuleComponent,
				"component %q enables spec.components: components cannot be nested", component)
		}
		return
	}
	if !m.components {
		return
	}
	kept := pf.paths[:0]
	for _, p := range pf.paths {
		rest, inComponents := strings.CutPrefix(p, componentsDir+"/")
		switch {
		case !inComponents:
			kept = append(kept, p)
			continue
		case !strings.Contains(rest, "/"):
			errs.add(p, 0, RuleComponent, "a file in %s/ must be in a component's directory, %s/NAME/", componentsDir, componentsDir)
		}
		delete(pf.data, p)
	}
	pf.paths = kept
}

// componentNames lists the components of a package: the directories of components/ that hold a
// manifest.
func componentNames(pf *packageFiles) []string {
	var names []string
	for _, p := range pf.paths {
		rest, ok := strings.CutPrefix(p, componentsDir+"/")
		if !ok {
			continue
		}
		name, file, _ := strings.Cut(rest, "/")
		if (file == manifestFile || file == manifestFileAlt) && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// PackageInfo is what a package directory declares about how it is validated.
type PackageInfo struct {
	// PKO is set for a Package Operator package.
	PKO bool
	// TestCases are its test.template cases, in manifest order.
	TestCases []TestCase
	// Components are the names of its components when it enables spec.components.
	Components []string
	// Scope is the scope the package is installed with when its Package asks for none:
	// Namespaced when it supports it, else Cluster.
	Scope string
	// HostedChart is set for a chart package whose every phase is of the hosted-cluster
	// class: it lands wholly in the hosted cluster, so it is rendered for that cluster's
	// environment (its .Capabilities and .environment).
	HostedChart bool
	// Chart is set for a chart package: it is rendered with the API versions of the cluster
	// it lands in (.Capabilities.APIVersions).
	Chart bool
	// SplitChart is set for a chart package with phases of both classes: the objects of its
	// hosted-cluster phases are rendered for the hosted cluster (TemplateData.HostedEnvironment).
	SplitChart bool
}

// Inspect reads the manifest of the package at dir of fsys, or of its component when component
// is not empty. It fails only when the manifest cannot be read.
func Inspect(fsys fs.FS, dir, component string) (PackageInfo, error) {
	dir = cleanDir(dir)
	if component != "" {
		dir = path.Join(dir, componentsDir, component)
	}
	errs := &errorList{}
	pf, ok := readPackage(confine(fsys, dir), dir, false, errs)
	if !ok {
		return PackageInfo{}, errs.err()
	}
	m := readManifest(pf, errs)
	if m == nil {
		return PackageInfo{}, errs.err()
	}
	info := PackageInfo{PKO: m.pko, TestCases: m.testCases, Scope: m.resolveScope("", errs), HostedChart: m.hostedChart(),
		Chart: m.spec.Chart != nil, SplitChart: m.spec.Chart != nil && m.splitsClasses()}
	if m.components && component == "" {
		info.Components = componentNames(pf)
	}
	return info, nil
}
