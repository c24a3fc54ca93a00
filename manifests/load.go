package manifests

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/convoy-gitops/convoy/manifests/probe"
)

// TemplateData is what a package is rendered for: the values templates see, besides the
// package's own files.
type TemplateData struct {
	// Config is the package's config (Package spec.config), before defaulting. It must be
	// JSON-compatible.
	Config map[string]any `json:"config,omitempty"`
	// Package names the Package being rendered.
	Package PackageRef `json:"package"`
	// HostedCluster is the hosted cluster of the Package's namespace; nil when there is none.
	HostedCluster *HostedClusterRef `json:"hostedCluster,omitempty"`
	// Revision is the commit being rendered.
	Revision string `json:"revision,omitempty"`
	// Component selects a component of a multi-component Package Operator package (the
	// package in components/NAME/); empty selects the root package.
	Component string `json:"component,omitempty"`
	// Environment is .environment, the clusters the package is rendered for; nil is an
	// environment with an unknown Kubernetes version and no OpenShift or proxy.
	Environment *Environment `json:"environment,omitempty"`
	// HostedEnvironment is the hosted cluster's environment, for a chart split across both
	// clusters (hosted-cluster and management phases) rendered for the management cluster's
	// Environment: the objects of its hosted-cluster phases are rendered with this
	// environment's .Capabilities (Kubernetes version and API versions). Templates and values
	// files do not see it. Nil renders every phase with Environment.
	HostedEnvironment *Environment `json:"hostedEnvironment,omitempty"`
	// Charts fetches the charts a package pulls from a Helm repository; nil refuses such
	// packages. A pulled chart is pinned by digest, so the fetcher is not part of the data.
	Charts ChartFetcher `json:"-"`
	// Scope is the Package Operator scope asked for (Namespaced or Cluster); empty picks
	// Namespaced when the package supports it, else Cluster. See Rendered.Scope.
	Scope string `json:"scope,omitempty"`

	// packageImage is .package.image, set by a test case.
	packageImage string
	// testCase renders a test.template case: every image resolves to staticImage and the
	// rendered files are kept for the fixtures.
	testCase bool
	// componentOf is the name of the component being loaded, set by loadComponent.
	componentOf string
	// staticOnly reads only the plain YAML files, without config or templates (LoadStatic).
	staticOnly bool
	// renders, set by a Cache, shares chart renders among loads whose charts get equal inputs.
	renders *Cache
}

// PackageRef names a Package; templates see it as .package.name and .package.namespace, and
// as .package.metadata (with its labels and annotations).
type PackageRef struct {
	// Name of the Package.
	Name string `json:"name"`
	// Namespace of the Package.
	Namespace string `json:"namespace"`
	// Labels of the Package.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations of the Package.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// HostedClusterRef describes a HostedCluster; templates see it as .hostedCluster.
type HostedClusterRef struct {
	// Name of the HostedCluster.
	Name string `json:"name"`
	// Namespace of the HostedCluster (not its HCP namespace).
	Namespace string `json:"namespace"`
	// Labels of the HostedCluster.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations of the HostedCluster.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Rendered is a package rendered for one TemplateData: its phases in manifest order, its
// compiled probes and its defaulted config.
//
// A Rendered returned by Cache is shared by every caller with the same inputs and must be
// treated as immutable: call DeepCopy (or DeepCopy the objects) before changing anything.
type Rendered struct {
	// Name is the manifest's metadata.name.
	Name string
	// Phases in the order the manifest declares them, empty phases included.
	Phases []Phase
	// Probes judge the availability of the objects they select.
	Probes []probe.Rule
	// ProbesDigest is probe.Digest(Probes), computed once per render like the phases' Digests.
	ProbesDigest Digest
	// Config is the config after defaulting and validation; never nil.
	Config map[string]any
	// Warnings are problems that did not fail the load (a repeated key in a Package Operator
	// package).
	Warnings Errors
	// Scope is the scope the package was rendered with: with Cluster, every phase has the
	// hosted-cluster class.
	Scope string
	// Constraints are the package's spec.constraints, which the cluster it is installed in
	// must meet (Constraints.Check).
	Constraints Constraints
	// Dependencies are Package Operator's spec.dependencies: the packages whose
	// HostedClusterPackages must be available on a HostedCluster before this one installs there.
	Dependencies []Dependency

	// size is the size of the files read and the templates' output, what a Cache counts.
	size int64
	// files holds, for a test case, the text of each YAML file with objects (templates
	// rendered, filtered documents removed), keyed by path without the template suffix.
	files map[string][]byte
}

// Phase is a named, ordered group of objects that land in one cluster.
type Phase struct {
	// Name of the phase.
	Name string
	// Class is "" (the management cluster) or "hosted-cluster".
	Class string
	// Objects of the phase, without the phase annotation, in file order (or kustomize's
	// output order).
	Objects []*unstructured.Unstructured
	// ConditionMaps holds, by index in Objects, the conditions of the object that are mapped
	// onto the Package's (Package Operator's condition-map annotation, removed from the
	// object); nil when none is.
	ConditionMaps map[int][]ConditionMapping
	// Digests holds ObjectDigest of each object, in the order of Objects: computed once per
	// render, so that whoever compares states (the engine's ledger, every pass of every
	// Package sharing the render) does not encode the objects again.
	Digests []Digest
}

// Digest identifies the content of an object.
type Digest = [sha256.Size]byte

// ObjectDigest is the SHA-256 of obj's JSON (map keys sorted); ok is false for an object
// that does not encode.
func ObjectDigest(obj *unstructured.Unstructured) (d Digest, ok bool) {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return d, false
	}
	return sha256.Sum256(raw), true
}

// digestPhases fills in the Digests of r's phases, and its ProbesDigest; an object that does
// not encode leaves its phase without them (a consumer then encodes the objects itself, and
// fails the same way).
func (r *Rendered) digestPhases() {
	r.ProbesDigest = probe.Digest(r.Probes)
	for i := range r.Phases {
		ph := &r.Phases[i]
		ph.Digests = make([]Digest, len(ph.Objects))
		for j, obj := range ph.Objects {
			var ok bool
			if ph.Digests[j], ok = ObjectDigest(obj); !ok {
				ph.Digests = nil
				break
			}
		}
	}
}

// DeepCopy copies the phases and the config; the compiled probes are immutable and shared.
// The copy has no Digests, nor ProbesDigest: it is made to be changed.
func (r *Rendered) DeepCopy() *Rendered {
	out := &Rendered{Name: r.Name, Probes: r.Probes, Config: deepCopyJSON(r.Config), Warnings: r.Warnings, size: r.size, files: r.files,
		Scope: r.Scope, Constraints: r.Constraints, Dependencies: r.Dependencies}
	out.Phases = make([]Phase, len(r.Phases))
	for i, ph := range r.Phases {
		objs := make([]*unstructured.Unstructured, len(ph.Objects))
		for j, o := range ph.Objects {
			objs[j] = o.DeepCopy()
		}
		out.Phases[i] = Phase{Name: ph.Name, Class: ph.Class, Objects: objs, ConditionMaps: ph.ConditionMaps}
	}
	return out
}

// NeedsHostedCluster reports whether a phase with objects lands in a hosted cluster.
func (r *Rendered) NeedsHostedCluster() bool {
	for _, ph := range r.Phases {
		if ph.Class != "" && len(ph.Objects) > 0 {
			return true
		}
	}
	return false
}

// Load reads the package directory dir of fsys and renders it for data. It is pure: it reads
// only fsys, and the same inputs give the same result. On failure it returns Errors, every
// problem found; when fsys remembers a failure of its storage (it has a Fault method, as the
// Git store's trees do) it returns that failure instead, whatever the files read said.
// Templates are executed under DefaultRenderBudget; LoadWithBudget sets another.
func Load(fsys fs.FS, dir string, data TemplateData) (*Rendered, error) {
	return LoadWithBudget(fsys, dir, data, DefaultRenderBudget)
}

// LoadWithBudget is Load executing the package's templates under budget b. A render stopped by
// the budget fails with a RuleLimit Error naming the template and the limit; an error other
// than Errors means the render process could not be started.
func LoadWithBudget(fsys fs.FS, dir string, data TemplateData, b RenderBudget) (*Rendered, error) {
	r, _, err := load(fsys, dir, data, b)
	return r, err
}

// load is Load that also reports whether the package has templates (files read whose path
// isTemplate). A package without templates depends on data only through data.Config, so Cache
// shares its render (or its errors) among all data with the same config. When load fails before
// the package's files are read it reports true, the answer that never over-shares.
func load(fsys fs.FS, dir string, data TemplateData, b RenderBudget) (*Rendered, bool, error) {
	dir = cleanDir(dir)
	var (
		r         *Rendered
		templated bool
		err       error
	)
	if data.Component != "" {
		r, templated, err = loadComponent(fsys, dir, data, b)
	} else {
		r, templated, err = loadPackage(fsys, dir, data, b)
	}
	if fault := storageFault(fsys); fault != nil {
		return nil, true, fmt.Errorf("reading the package directory %q: %w", dir, fault)
	}
	if r != nil {
		r.digestPhases()
	}
	return r, templated, err
}

// faultyFS is an fs.FS that remembers the failures of its storage, as a tree of the Git store
// does.
type faultyFS interface {
	fs.FS
	Fault() error
}

// storageFault returns the failure of fsys's storage during the load, if it remembers one.
// Whatever the load made of the files it read (even Errors: a file it could not read, an
// optional one it thought absent) is then not the package's, and is not returned or cached.
func storageFault(fsys fs.FS) error {
	if f, ok := fsys.(faultyFS); ok {
		return f.Fault()
	}
	return nil
}

// loadPackage is load of a whole package directory.
func loadPackage(fsys fs.FS, dir string, data TemplateData, b RenderBudget) (*Rendered, bool, error) {
	fsys = confine(fsys, dir)
	errs := &errorList{}
	config, err := normalizeConfig(data.Config)
	if err != nil {
		errs.add("", 0, RuleConfig, "config is not JSON-compatible: %v", err)
		return nil, true, errs.err()
	}
	kustomized := hasRootKustomization(fsys, dir)
	pf, ok := readPackage(fsys, dir, kustomized, errs)
	if !ok {
		return nil, true, errs.err()
	}
	templated := pf.hasTemplates()
	m := readManifest(pf, errs)
	if m == nil {
		return nil, templated, errs.err()
	}
	if m.pko {
		m.splitComponents(pf, data.componentOf, errs)
		m.resolveImages(pf, data.testCase, errs)
	}
	chart := newChartPackage(m, kustomized, errs)
	if chart != nil {
		chart.dropChartFiles(pf)
		templated = true
	}
	scope := m.resolveScope(data.Scope, errs)
	data = forScope(data, scope, m.pko)
	configOK := !data.staticOnly && applyConfig(m, config, errs)
	var (
		objs     []*object
		rendered map[string][]byte
	)
	var dropped map[*object]bool
	switch {
	case configOK:
		tctx := templateContext(data, config, m)
		conds := m.evalConditions(tctx, errs)
		if conds == nil {
			break
		}
		var err error
		rendered, err = renderTemplates(pf, tctx, conds, b, errs)
		if err != nil {
			return nil, templated, err
		}
		objs = collectObjects(chart.objectFiles(pf), rendered, kustomized, m.pko, errs)
		if chart != nil {
			chartObjs, err := chart.render(chartRender{fsys: fsys, dir: dir, pf: pf, m: m, data: data,
				config: config, rendered: rendered, budget: b, errs: errs})
			if err != nil {
				return nil, templated, err
			}
			objs = append(objs, chartObjs...)
		}
		objs, dropped = filterObjects(m, tctx, conds, objs, errs)
	case !kustomized:
		// Templates cannot be rendered with an invalid config; still check the plain files.
		objs = collectObjects(chart.objectFiles(pf), nil, false, m.pko, errs)
	}
	phases := assignPhases(m, objs, errs)
	if err := errs.err(); err != nil {
		return nil, templated, err
	}
	placeForScope(phases, scope)
	r := &Rendered{Name: m.name, Phases: phases, Probes: m.probes, Config: config, Warnings: errs.warnings, size: int64(pf.size),
		Scope: scope, Constraints: m.constraints, Dependencies: m.dependencies}
	if data.testCase {
		r.files = fileTexts(pf, rendered, objs, dropped)
	}
	return r, templated, nil
}

// readManifest finds and parses manifest.yaml at the package root.
func readManifest(pf *packageFiles, errs *errorList) *manifest {
	_, hasYAML := pf.data[manifestFile]
	_, hasYML := pf.data[manifestFileAlt]
	switch {
	case hasYAML && hasYML:
		errs.add(manifestFileAlt, 0, RuleInvalidManifest, "the package has both %s and %s", manifestFile, manifestFileAlt)
		return nil
	case hasYAML:
		return parseManifest(manifestFile, pf.data[manifestFile], errs)
	case hasYML:
		return parseManifest(manifestFileAlt, pf.data[manifestFileAlt], errs)
	}
	errs.add(manifestFile, 0, RuleMissingManifest, "the package directory has no %s", manifestFile)
	return nil
}

// applyConfig defaults and validates config in place; it reports whether it is valid.
func applyConfig(m *manifest, config map[string]any, errs *errorList) bool {
	if m.schema == nil {
		return m.spec.Config.OpenAPIV3Schema == nil || len(m.spec.Config.OpenAPIV3Schema.Raw) == 0 ||
			string(m.spec.Config.OpenAPIV3Schema.Raw) == "null"
	}
	fieldErrs := m.schema.apply(config)
	configErrors(m, fieldErrs, errs)
	return len(fieldErrs) == 0
}

// collectObjects decodes the package's objects: the kustomize build of the root kustomization,
// or every YAML file and rendered template. Package Operator packages (pko) accept repeated
// keys with a warning, and skip files whose name starts with "_", as Package Operator does.
func collectObjects(pf *packageFiles, rendered map[string][]byte, kustomized, pko bool, errs *errorList) []*object {
	if kustomized {
		files := make(map[string][]byte, len(pf.data)+len(rendered))
		for p, d := range pf.data {
			if !isTemplate(p) {
				files[p] = d
			}
		}
		for p, d := range rendered {
			files[p] = d
		}
		return buildKustomization(files, rootKustomization(files), errs)
	}
	var objs []*object
	dec := &decoder{errs: errs, lenient: pko}
	for _, p := range pf.paths {
		switch {
		case isRootFile(p, manifestFile, manifestFileAlt, pkoLockFile):
		case pko && strings.HasPrefix(path.Base(p), "_"):
		case isKustomization(p):
			errs.add(p, 0, RuleKustomize, "a kustomization is only built at the package root")
		case isObjectFile(p):
			objs = append(objs, dec.decodeFile(p, pf.data[p])...)
		case isTemplate(p):
			if out, ok := rendered[strings.TrimSuffix(p, templateExtension)]; ok {
				objs = append(objs, dec.decodeFile(p, out)...)
			}
		}
	}
	return objs
}

// rootKustomization returns the name of the root kustomization file among files.
func rootKustomization(files map[string][]byte) string {
	for _, name := range kustomizationFiles {
		if _, ok := files[name]; ok {
			return name
		}
	}
	return kustomizationFiles[0]
}

// normalizeConfig deep-copies config through JSON, so that it holds only JSON types (int64,
// float64, string, bool, nil, maps and slices) and the caller's value is never changed.
func normalizeConfig(config map[string]any) (map[string]any, error) {
	out := map[string]any{}
	if config == nil {
		return out, nil
	}
	j, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	if err := utiljson.Unmarshal(j, &out); err != nil {
		return nil, fmt.Errorf("re-decoding: %w", err)
	}
	return out, nil
}

// deepCopyJSON copies a JSON-compatible map.
func deepCopyJSON(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return runtime.DeepCopyJSON(m)
}
