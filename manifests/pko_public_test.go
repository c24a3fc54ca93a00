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
