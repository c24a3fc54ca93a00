package manifests

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// pkoPublicCorpus is testdata/pko-public: real Package Operator packages that projects
// publish, vendored unchanged (their SOURCE file names the repository, the path, the commit
// and the licence, and Package Operator's verdict). Every one is valid for Package Operator,
// and the fixtures of their test.template cases are Package Operator's own output.
const pkoPublicCorpus = "testdata/pko-public"

func TestPKOPublicCorpusValidatesAsPackageOperatorDoes(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(pkoPublicCorpus, "*", "manifest.yaml"))
	if err != nil || len(dirs) < 4 {
		t.Fatalf("the corpus has %d packages (%v)", len(dirs), err)
	}
	for _, m := range dirs {
		dir := filepath.Dir(m)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			g := NewWithT(t)
			source, err := os.ReadFile(filepath.Join(dir, "SOURCE"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(source)).To(ContainSubstring("verdict: valid"))
			g.Expect(string(source)).To(MatchRegexp(`commit: [0-9a-f]{40}`))
			g.Expect(validatePKOPackage(t, dir)).To(BeEmpty())
		})
	}
}

// TestPKOPublicCorpusRendersTheObjectsOfTheFixtures checks that the render of each test case
// holds exactly the objects of Package Operator's fixtures of that case, in number, besides
// the file-by-file comparison of validate above.
func TestPKOPublicCorpusRendersTheObjectsOfTheFixtures(t *testing.T) {
	for _, name := range []string{"managed-upgrade-operator", "ocm-agent-operator", "test-stub"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			fsys := os.DirFS(filepath.Join(pkoPublicCorpus, name))
			info, err := Inspect(fsys, ".", "")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(info.TestCases).NotTo(BeEmpty())
			for _, tc := range info.TestCases {
				r, err := LoadTestCase(fsys, ".", "", tc, DefaultRenderBudget)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(renderedObjects(r)).To(Equal(fixtureObjects(t, fsys, tc.Name)), tc.Name)
			}
		})
	}
}

// renderedObjects counts the objects of a render.
func renderedObjects(r *Rendered) int {
	n := 0
	for _, ph := range r.Phases {
		n += len(ph.Objects)
	}
	return n
}

// fixtureObjects counts the objects of a test case's fixtures.
func fixtureObjects(t *testing.T, fsys fs.FS, name string) int {
	t.Helper()
	dec := &decoder{errs: &errorList{}, lenient: true}
	n := 0
	for p, data := range readFixtureDir(t, fsys, "", name) {
		n += len(dec.decodeFile(p, data))
	}
	if err := dec.errs.err(); err != nil {
		t.Fatalf("decoding the fixtures of %s: %v", name, err)
	}
	return n
}

// TestPKOScopePlacesAClusterPackageInTheHostedCluster renders Package Operator's test stub,
// which supports both scopes, as a Package and as a ClusterPackage.
func TestPKOScopePlacesAClusterPackageInTheHostedCluster(t *testing.T) {
	g := NewWithT(t)
	fsys := os.DirFS(filepath.Join(pkoPublicCorpus, "test-stub"))
	data := TemplateData{
		Package:       PackageRef{Name: "stub", Namespace: "clusters-a"},
		HostedCluster: &HostedClusterRef{Name: "a", Namespace: "clusters"},
		Config:        map[string]any{"testStubImage": "quay.io/stub:v1"},
		Environment:   &Environment{Kubernetes: KubernetesEnvironment{Version: "v1.31.0"}},
	}
	r, err := Load(fsys, ".", data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Scope).To(Equal("Namespaced"), "a package of both scopes installed in a namespace is a Package")
	g.Expect(r.Phases[0].Objects).To(BeEmpty(), "no Namespace in the namespaced scope")
	g.Expect(r.Phases[1].Class).To(BeEmpty())

	data.Scope = "Cluster"
	r, err = Load(fsys, ".", data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Scope).To(Equal("Cluster"))
	for _, ph := range r.Phases {
		g.Expect(ph.Class).To(Equal("hosted-cluster"), ph.Name)
	}
	g.Expect(r.Phases[0].Objects[0].GetKind()).To(Equal("Namespace"))
	g.Expect(r.Phases[0].Objects[0].GetName()).To(Equal("stub"))
	deploy := r.Phases[1].Objects[0]
	g.Expect(deploy.GetNamespace()).To(Equal("stub"), ".package.metadata.namespace is empty, so the object names its own")
	g.Expect(deploy.GetAnnotations()["test-environment"]).NotTo(ContainSubstring("hyperShift"), "a ClusterPackage sees the hosted cluster's environment")
	g.Expect(r.Phases[1].ConditionMaps).To(Equal(map[int][]ConditionMapping{0: {{Source: "Progressing", Destination: "my-prefix/Progressing"}}}))

	only, err := Load(os.DirFS(filepath.Join(pkoPublicCorpus, "managed-upgrade-operator")), ".", TemplateData{Package: data.Package})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(only.Scope).To(Equal("Cluster"), "a Cluster-only package defaults to the Cluster scope")

	_, err = Load(os.DirFS(filepath.Join(pkoPublicCorpus, "managed-upgrade-operator")), ".", TemplateData{Package: data.Package, Scope: "Namespaced"})
	g.Expect(err).To(MatchError(ContainSubstring("installed with the Namespaced scope but its spec.scopes lists Cluster")))
}

func TestPKOConstraintsAreCheckedAgainstAnEnvironment(t *testing.T) {
	g := NewWithT(t)
	cs := Constraints{
		{Platform: []string{"OpenShift"}},
		{PlatformVersion: &PlatformVersionConstraint{Name: "OpenShift", Range: ">=4.14"}},
		{PlatformVersion: &PlatformVersionConstraint{Name: "Kubernetes", Range: ">=1.28.x"}},
	}
	g.Expect(cs.Check(&Environment{Kubernetes: KubernetesEnvironment{Version: "v1.31.2"},
		OpenShift: &OpenShiftEnvironment{Version: "4.16.3"}})).To(Succeed())
	g.Expect(cs.Check(&Environment{Kubernetes: KubernetesEnvironment{Version: "v1.31.2"},
		OpenShift: &OpenShiftEnvironment{Version: "4.12.0"}})).To(MatchError("constraints not met: OpenShift 4.12.0 does not meet constraint >=4.14"))
	g.Expect(cs.Check(&Environment{Kubernetes: KubernetesEnvironment{Version: "v1.27.0"}})).To(MatchError(
		"constraints not met: OpenShift platform, Kubernetes 1.27.0 does not meet constraint >=1.28.x"))
}
