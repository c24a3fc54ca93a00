package manifests

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Package Operator's manifest scopes.
const (
	pkoScopeCluster    = "Cluster"
	pkoScopeNamespaced = "Namespaced"
)

// pkoManifest is what convoy reads of a Package Operator manifest beyond convoy's own fields.
type pkoManifest struct {
	Spec struct {
		Scopes       []string        `json:"scopes"`
		Images       []pkoImage      `json:"images"`
		Components   *struct{}       `json:"components"`
		Filter       pkoFilter       `json:"filter"`
		Constraints  Constraints     `json:"constraints"`
		Dependencies []pkoDependency `json:"dependencies"`
	} `json:"spec"`
	Test struct {
		Template    []TestCase `json:"template"`
		Kubeconform any        `json:"kubeconform"`
	} `json:"test"`
}

// pkoImage is an entry of spec.images, or of manifest.lock.yaml's spec.images.
type pkoImage struct {
	Name   string `json:"name"`
	Image  string `json:"image"`
	Digest string `json:"digest,omitempty"`
}

// TestCase is a Package Operator test.template case: a template context the package is rendered
// with by `convoy validate`, whose output is compared with .test-fixtures/NAME/.
type TestCase struct {
	// Name of the case, and of its fixtures directory.
	Name string `json:"name"`
	// Context is the template context of the case.
	Context TestCaseContext `json:"context"`
}

// TestCaseContext is the template context of a test case.
type TestCaseContext struct {
	// Package is .package.
	Package struct {
		// Metadata is .package.metadata.
		Metadata ObjectMeta `json:"metadata"`
		// Image is .package.image.
		Image string `json:"image"`
	} `json:"package"`
	// Config is .config, before defaulting.
	Config map[string]any `json:"config,omitempty"`
	// Environment is .environment.
	Environment Environment `json:"environment"`
}

// decodePKO reads the Package Operator parts of the manifest: scopes, images and test cases.
func (m *manifest) decodePKO(j []byte, errs *errorList) {
	var pm pkoManifest
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &pm); err != nil {
		errs.add(m.file, 1, RuleInvalidManifest, "%v", err)
		return
	}
	m.scopes = pm.Spec.Scopes
	m.pkoImages = pm.Spec.Images
	m.testCases = pm.Test.Template
	m.components = pm.Spec.Components != nil
	m.filter = pm.Spec.Filter
	m.constraints = pm.Spec.Constraints
	m.decodeDependencies(pm.Spec.Dependencies, errs)
	if pm.Test.Kubeconform != nil {
		errs.warn(m.file, m.lines.line("test.kubeconform"), RuleUnsupported,
			"test.kubeconform (Package Operator's schema check against downloaded schemas) is not run by convoy: ignored")
	}
	seen := map[string]bool{}
	for i, img := range pm.Spec.Images {
		at := m.lines.line(fmt.Sprintf("spec.images[%d]", i))
		switch {
		case img.Name == "":
			errs.add(m.file, at, RuleInvalidManifest, "spec.images[%d].name must be non empty", i)
		case seen[img.Name]:
			errs.add(m.file, at, RuleInvalidManifest, "spec.images[%d].name %q must be unique", i, img.Name)
		case img.Image == "":
			errs.add(m.file, at, RuleInvalidManifest, "spec.images[%d].image must be non empty", i)
		}
		seen[img.Name] = true
	}
	m.checkScopes(errs)
	m.checkConstraints(errs)
	m.checkTestCaseNames(errs)
}

// checkScopes requires spec.scopes and known values in it, as Package Operator's manifest
// validation does. Whether the package supports the scope it is installed with is decided
// where the Package chooses its placement (see resolveScope), not here: `kubectl package
// validate` accepts a package of either scope.
func (m *manifest) checkScopes(errs *errorList) {
	at := m.lines.line("spec.scopes")
	if len(m.scopes) == 0 {
		errs.add(m.file, at, RuleInvalidManifest, "spec.scopes is required (Cluster, Namespaced or both)")
		return
	}
	for _, s := range m.scopes {
		if s != pkoScopeNamespaced && s != pkoScopeCluster {
			errs.add(m.file, at, RuleInvalidManifest, "spec.scopes: unknown scope %q; want Cluster or Namespaced", s)
		}
	}
}

// resolveImages sets .images: each spec.images name resolved through manifest.lock.yaml to its
// digest-pinned reference, or (static, for a test case) to the static test image; the lock
// file is checked either way. A package with images
// needs a lock file with an entry for each, naming the same image, and no other entries.
func (m *manifest) resolveImages(pf *packageFiles, static bool, errs *errorList) {
	m.images = map[string]any{}
	if static {
		defer func() {
			for _, img := range m.pkoImages {
				m.images[img.Name] = staticImage
			}
		}()
	}
	lock, ok := readLock(pf, errs)
	if !ok {
		return
	}
	if lock == nil {
		if len(m.pkoImages) > 0 {
			errs.add(pkoLockFile, 0, RuleLockFile, "spec.images lists %d image(s) but the package has no %s", len(m.pkoImages), pkoLockFile)
		}
		return
	}
	locked := map[string]pkoImage{}
	for _, img := range lock {
		locked[img.Name] = img
	}
	declared := map[string]bool{}
	for _, img := range m.pkoImages {
		declared[img.Name] = true
		l, ok := locked[img.Name]
		switch {
		case !ok:
			errs.add(pkoLockFile, 0, RuleLockFile, "image %q of spec.images has no entry in %s", img.Name, pkoLockFile)
		case l.Image != img.Image:
			errs.add(pkoLockFile, 0, RuleLockFile, "image %q is %q in %s but %q in %s", img.Name, l.Image, pkoLockFile, img.Image, m.file)
		default:
			m.images[img.Name] = imageWithDigest(l.Image, l.Digest)
		}
	}
	for _, l := range lock {
		if !declared[l.Name] {
			errs.add(pkoLockFile, 0, RuleLockFile, "image %q is locked but not listed in spec.images of %s", l.Name, m.file)
		}
	}
}

// readLock reads manifest.lock.yaml's images; nil without a lock file. It reports false when the
// lock file is unusable (the problem is recorded).
func readLock(pf *packageFiles, errs *errorList) ([]pkoImage, bool) {
	if _, alt := pf.data["manifest.lock.yml"]; alt {
		errs.add("manifest.lock.yml", 0, RuleLockFile, "the lock file must be named %s", pkoLockFile)
		return nil, false
	}
	data, ok := pf.data[pkoLockFile]
	if !ok {
		return nil, true
	}
	var lock struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Images       []pkoImage `json:"images"`
			Dependencies []pkoImage `json:"dependencies"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &lock); err != nil {
		errs.add(pkoLockFile, 0, RuleLockFile, "%v", err)
		return nil, false
	}
	if lock.Kind != "PackageManifestLock" {
		errs.add(pkoLockFile, 0, RuleLockFile, "want kind PackageManifestLock, got %q", lock.Kind)
		return nil, false
	}
	for i, img := range lock.Spec.Images {
		if img.Name == "" || img.Image == "" || !strings.Contains(img.Digest, ":") {
			errs.add(pkoLockFile, 0, RuleLockFile, "spec.images[%d] needs a name, an image and a digest (algorithm:hex)", i)
			return nil, false
		}
	}
	if len(lock.Spec.Dependencies) > 0 {
		errs.warn(pkoLockFile, 0, RuleUnsupported,
			"spec.dependencies: the images Package Operator locked for the package's dependencies are not used by convoy, "+
				"which orders the dependencies on each HostedCluster instead")
	}
	return lock.Spec.Images, true
}

// imageWithDigest replaces the tag or digest of reference with digest, expanding Docker Hub's
// short names as Package Operator does ("nginx:1" becomes "index.docker.io/library/nginx@…").
func imageWithDigest(reference, digest string) string {
	repo, _, _ := strings.Cut(reference, "@")
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo = repo[:i]
	}
	first, rest, hasSlash := strings.Cut(repo, "/")
	switch {
	case !hasSlash:
		repo = "index.docker.io/library/" + repo
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		repo = "index.docker.io/" + repo
	case first == "docker.io":
		repo = "index.docker.io/" + rest
		if !strings.Contains(rest, "/") {
			repo = "index.docker.io/library/" + rest
		}
	}
	return repo + "@" + digest
}

// testCaseData is the TemplateData of a test case.
func testCaseData(tc TestCase) (TemplateData, error) {
	env := tc.Context.Environment
	meta := tc.Context.Package.Metadata
	data := TemplateData{
		Config:       tc.Context.Config,
		Package:      PackageRef(meta),
		Environment:  &env,
		packageImage: tc.Context.Package.Image,
		testCase:     true,
	}
	if _, err := json.Marshal(data.Config); err != nil {
		return data, fmt.Errorf("test case %q: config is not JSON-compatible: %w", tc.Name, err)
	}
	return data, nil
}

// fileTexts returns the text of each YAML file that holds objects, templates rendered and keyed
// without their suffix, for comparison with a test case's fixtures: files left out by a path
// filter are absent, documents left out by a condition are removed, and a file left empty is
// absent, as in Package Operator's fixtures.
func fileTexts(pf *packageFiles, rendered map[string][]byte, objs []*object, dropped map[*object]bool) map[string][]byte {
	byFile := map[string][]*object{}
	for _, o := range objs {
		byFile[o.file] = append(byFile[o.file], o)
	}
	for o := range dropped {
		byFile[o.file] = append(byFile[o.file], o)
	}
	out := map[string][]byte{}
	for p, list := range byFile {
		// Number the file's objects in file order, the kept and the dropped alike.
		slices.SortStableFunc(list, func(a, b *object) int { return cmp.Compare(a.line, b.line) })
		drop := map[int]bool{}
		for i, o := range list {
			if dropped[o] {
				drop[i] = true
			}
		}
		if len(drop) == len(list) {
			continue
		}
		text := pf.data[p]
		if isTemplate(p) {
			text = rendered[renderedPath(p)]
		}
		if len(drop) > 0 {
			text = withoutDocuments(text, drop)
		}
		out[renderedPath(p)] = text
	}
	return out
}
