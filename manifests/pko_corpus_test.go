package manifests

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// pkoCorpus is testdata/pko: one Package Operator package per supported feature (valid/) and
// per rejection (invalid/), each with the verdict Package Operator gives, and, for the valid
// ones, their test.template fixtures as Package Operator writes them.
const pkoCorpus = "testdata/pko"

func TestPKOCorpusVerdicts(t *testing.T) {
	cases := []struct {
		dir      string
		rule     Rule
		file     string
		fragment string
	}{
		{dir: "valid/context"},
		{dir: "valid/lock-images"},
		{dir: "valid/duplicate-key"},
		{dir: "valid/multi-component"},
		{dir: "valid/conditional"},
		{dir: "valid/cluster-scope-only"},
		{dir: "valid/dependencies"},
		{dir: "invalid/no-scopes", rule: RuleInvalidManifest, file: "manifest.yaml", fragment: "spec.scopes is required"},
		{dir: "invalid/missing-lock-file", rule: RuleLockFile, file: "manifest.lock.yaml", fragment: "has no manifest.lock.yaml"},
		{dir: "invalid/lock-mismatch", rule: RuleLockFile, file: "manifest.lock.yaml", fragment: `"quay.io/example/app:v1" in manifest.lock.yaml`},
		{dir: "invalid/invalid-label", rule: RuleObjectMetadata, file: "a.yaml", fragment: `"-bad-key-"`},
		{dir: "invalid/missing-phase", rule: RuleMissingPhase, file: "a.yaml", fragment: "package-operator.run/phase"},
		{dir: "invalid/bad-filter", rule: RuleFilter, file: "manifest.yaml", fragment: `condition "broken": expression "environment.kubernetes.version >"`},
		{dir: "invalid/bad-condition-annotation", rule: RuleFilter, file: "a.yaml.gotmpl", fragment: "not a bool"},
		{dir: "invalid/fixture-mismatch", rule: RuleTestFixture, file: ".test-fixtures/default/a.yaml", fragment: `render has "  name: rendered"`},
		{dir: "invalid/nested-component", rule: RuleComponent, file: "manifest.yaml", fragment: "cannot be nested"},
	}
	for _, tc := range cases {
		t.Run(tc.dir, func(t *testing.T) {
			g := NewWithT(t)
			errs := validatePKOPackage(t, filepath.Join(pkoCorpus, tc.dir))
			if tc.rule == "" {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errs).To(ContainElement(And(
				HaveField("Rule", tc.rule), HaveField("File", tc.file), HaveField("Message", ContainSubstring(tc.fragment)))), "%v", errs)
		})
	}
}

// TestPKOCorpusCoversEveryPackage keeps the table above in step with testdata/pko.
func TestPKOCorpusCoversEveryPackage(t *testing.T) {
	g := NewWithT(t)
	dirs, err := filepath.Glob(filepath.Join(pkoCorpus, "*", "*", "manifest.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dirs).To(HaveLen(16))
}

// validatePKOPackage validates a package as `convoy validate` does (and `kubectl package
// validate`): the root package and each component, by their test cases compared with their
// fixtures, or, without any, by their plain files. It returns every problem.
func validatePKOPackage(t *testing.T, dir string) []*Error {
	t.Helper()
	fsys := os.DirFS(dir)
	info, err := Inspect(fsys, ".", "")
	if err != nil {
		return asErrors(t, err)
	}
	var all []*Error
	for _, component := range append([]string{""}, info.Components...) {
		cinfo, err := Inspect(fsys, ".", component)
		if err != nil {
			all = append(all, asErrors(t, err)...)
			continue
		}
		if len(cinfo.TestCases) == 0 {
			if _, err := LoadStatic(fsys, ".", component); err != nil {
				all = append(all, asErrors(t, err)...)
			}
			continue
		}
		for _, tc := range cinfo.TestCases {
			r, err := LoadTestCase(fsys, ".", component, tc, DefaultRenderBudget)
			if err == nil {
				err = CompareFixtures(tc.Name, r.Files(), readFixtureDir(t, fsys, component, tc.Name))
			}
			all = append(all, asErrors(t, err)...)
		}
	}
	return all
}

// readFixtureDir reads the fixtures of a test case, keyed by path in the case's directory.
func readFixtureDir(t *testing.T, fsys fs.FS, component, name string) map[string][]byte {
	t.Helper()
	root := path.Join(FixturesDir, name)
	if component != "" {
		root = path.Join("components", component, root)
	}
	out := map[string][]byte{}
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		out[strings.TrimPrefix(p, root+"/")] = data
		return err
	})
	if err != nil {
		t.Fatalf("reading the fixtures of %s: %v", name, err)
	}
	return out
}

// asErrors returns the Errors of a load, failing the test on any other error.
func asErrors(t *testing.T, err error) []*Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("not a package problem: %v", err)
	}
	return errs
}

func TestPKORenderPinsImagesToTheLockFileDigests(t *testing.T) {
	g := NewWithT(t)
	r, err := Load(os.DirFS(filepath.Join(pkoCorpus, "valid/lock-images")), ".", TemplateData{Package: PackageRef{Name: "a", Namespace: "ns"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Phases[0].Objects[0].Object["data"]).To(Equal(map[string]any{
		"agent":   "quay.io/example/agent@sha256:1111111111111111111111111111111111111111111111111111111111111111",
		"sidecar": "index.docker.io/library/busybox@sha256:2222222222222222222222222222222222222222222222222222222222222222",
	}))
}

func TestPKORenderSeesTheEnvironmentAndFiltersWithIt(t *testing.T) {
	g := NewWithT(t)
	data := TemplateData{
		Package:       PackageRef{Name: "addon", Namespace: "clusters-demo", Labels: map[string]string{"tier": "gold"}},
		Config:        map[string]any{"owner": "team-a"},
		HostedCluster: &HostedClusterRef{Name: "demo", Namespace: "clusters"},
		Environment: &Environment{Kubernetes: KubernetesEnvironment{Version: "v1.31.2"},
			OpenShift: &OpenShiftEnvironment{Version: "4.17.0", Managed: &ManagedOpenShiftEnvironment{Data: map[string]string{"region": "eu"}}}},
	}
	r, err := Load(os.DirFS(filepath.Join(pkoCorpus, "valid/context")), ".", data)
	g.Expect(err).NotTo(HaveOccurred())
	cm := r.Phases[0].Objects[0].Object["data"].(map[string]any)
	g.Expect(cm).To(HaveKeyWithValue("kubernetes", "v1.31.2"))
	g.Expect(cm).To(HaveKeyWithValue("openShift", "4.17.0"))
	g.Expect(cm).To(HaveKeyWithValue("tier", "gold"))
	g.Expect(cm).To(HaveKeyWithValue("hostedCluster", "demo"))
	g.Expect(cm).To(HaveKeyWithValue("hcpNamespace", "clusters-demo"))
	g.Expect(cm).NotTo(HaveKey("httpProxy"), "proxy is left out when unknown")

	data.Config = map[string]any{"monitoring": true}
	r, err = Load(os.DirFS(filepath.Join(pkoCorpus, "valid/conditional")), ".", data)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, o := range r.Phases[0].Objects {
		names = append(names, o.GetName())
	}
	g.Expect(names).To(ConsistOf("always", "openshift-only", "monitoring"))

	data.Environment.OpenShift, data.Config = nil, nil
	r, err = Load(os.DirFS(filepath.Join(pkoCorpus, "valid/conditional")), ".", data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Phases[0].Objects).To(HaveLen(1))
	g.Expect(r.Phases[0].Objects[0].Object["data"]).To(HaveKeyWithValue("platform", "kubernetes"))
}

func TestPKOComponentIsSelectedByName(t *testing.T) {
	g := NewWithT(t)
	fsys := os.DirFS(filepath.Join(pkoCorpus, "valid/multi-component"))
	r, err := Load(fsys, ".", TemplateData{Package: PackageRef{Name: "p", Namespace: "ns"}, Component: "console"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Name).To(Equal("console"))
	g.Expect(r.Phases[0].Objects[0].GetName()).To(Equal("p-console"))

	root, err := Load(fsys, ".", TemplateData{Package: PackageRef{Name: "p", Namespace: "ns"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(root.Phases[0].Objects).To(HaveLen(1), "the root package leaves components/ out")

	_, err = Load(fsys, ".", TemplateData{Component: "nope"})
	g.Expect(err).To(MatchError(ContainSubstring(`no component "nope" (components: agent, console)`)))
}

func TestPKOFeaturesConvoyIgnoresAreWarnedAbout(t *testing.T) {
	g := NewWithT(t)
	manifest := "apiVersion: manifests.package-operator.run/v1alpha1\nkind: PackageManifest\nmetadata: {name: w}\n" +
		"spec:\n  scopes: [Namespaced]\n  phases: [{name: one}]\n  constraints: [{platform: [OpenShift]}, {uniqueInScope: {}}]\n" +
		"test:\n  kubeconform: {kubernetesVersion: v1.31.0}\n"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    package-operator.run/phase: one\n" +
		"    package-operator.run/condition-map: 'Available => my/Available'\n"
	r := mustLoad(t, pkgFS(map[string]string{"manifest.yaml": manifest, "a.yaml": cm}), TemplateData{})
	g.Expect(r.Warnings).To(haveProblem("manifest.yaml", RuleUnsupported, "test.kubeconform"))
	g.Expect(r.Warnings).To(haveProblem("manifest.yaml", RuleUnsupported, "uniqueInScope"))
	g.Expect(r.Warnings).To(HaveLen(2), "constraints and condition maps are evaluated")
	g.Expect(r.Constraints).To(HaveLen(2))
	g.Expect(r.Phases[0].Objects).To(HaveLen(1))
	g.Expect(r.Phases[0].Objects[0].GetAnnotations()).To(BeEmpty(), "the condition-map annotation is not applied")
	g.Expect(r.Phases[0].ConditionMaps).To(Equal(map[int][]ConditionMapping{0: {{Source: "Available", Destination: "my/Available"}}}))
}
