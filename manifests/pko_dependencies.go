package manifests

import (
	"errors"
	"io/fs"
	"path"
	"strings"
)

// Dependency is an entry of a Package Operator manifest's spec.dependencies: another package
// this one needs. Package Operator resolves it to an image within a semantic version range and
// records it in manifest.lock.yaml; convoy, which rolls out Git commits and not versioned
// images, orders it instead: on each HostedCluster, the package installs or moves only once the
// HostedClusterPackage that rolls out the package named Package is available there.
type Dependency struct {
	// Name of the dependency in the manifest (image.name).
	Name string
	// Package is the package's name: image.package, "<package>.<repository>", up to its first
	// dot. The repository is Package Operator's; convoy has none.
	Package string
	// Range is image.range, which convoy does not check.
	Range string
}

// pkoDependency is an entry of spec.dependencies as Package Operator writes it.
type pkoDependency struct {
	Image *struct {
		Name    string `json:"name"`
		Package string `json:"package"`
		Range   string `json:"range"`
	} `json:"image"`
}

// decodeDependencies checks spec.dependencies and maps each entry to a Dependency, warning
// once per entry about what convoy does not map: the version range and the repository.
func (m *manifest) decodeDependencies(deps []pkoDependency, errs *errorList) {
	line := m.lines.line("spec.dependencies")
	for i, d := range deps {
		if d.Image == nil || d.Image.Name == "" || d.Image.Package == "" {
			errs.add(m.file, line, RuleInvalidManifest, "spec.dependencies[%d] needs image.name and image.package", i)
			continue
		}
		pkg, _, _ := strings.Cut(d.Image.Package, ".")
		m.dependencies = append(m.dependencies, Dependency{Name: d.Image.Name, Package: pkg, Range: d.Image.Range})
		errs.warn(m.file, line, RuleUnsupported,
			"spec.dependencies[%d] %q: on each HostedCluster convoy installs this package only once the HostedClusterPackage "+
				"rolling out package %q is available there; the range %q and the repository of %q are not checked, since convoy "+
				"rolls out Git commits, not versioned images", i, d.Image.Name, pkg, d.Image.Range, d.Image.Package)
	}
}

// ManifestHead is what a HostedClusterPackage reads of the manifest of the package it rolls
// out: its name and its dependencies.
type ManifestHead struct {
	// Name is metadata.name.
	Name string
	// Dependencies are Package Operator's spec.dependencies; none in convoy's format.
	Dependencies []Dependency
}

// ReadManifestHead reads the manifest of the package directory dir of fsys (of component
// components/COMPONENT/ when component is set), without rendering anything. It fails when the
// directory has no manifest or the manifest cannot be used; Load says why in detail.
func ReadManifestHead(fsys fs.FS, dir, component string) (ManifestHead, error) {
	if component != "" {
		dir = path.Join(dir, "components", component)
	}
	for _, file := range []string{manifestFile, manifestFileAlt} {
		data, err := fs.ReadFile(fsys, path.Join(dir, file))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return ManifestHead{}, err
		}
		errs := &errorList{}
		m := parseManifest(file, data, errs)
		if m == nil {
			return ManifestHead{}, errs.err()
		}
		return ManifestHead{Name: m.name, Dependencies: m.dependencies}, nil
	}
	return ManifestHead{}, errors.New("the package directory has no " + manifestFile)
}
