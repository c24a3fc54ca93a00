package sources

import (
	"io/fs"
	"os"
	"testing"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// A reader that holds a commit's tree while the store's directory is deleted under it (a lost
// volume, an operator's rm -rf) gets a transient *StoreReadError, never a wrong answer: a
// render made of what it could read is refused, and the next Open fetches the repository again.
func TestReadsOfADeletedStoreFailTransientlyAndRecover(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	c, err := repo.CommitFiles("main", "package",
		gitserver.File{Path: "pkg/manifest.yaml", Content: "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata:\n  name: p\nspec:\n  phases: [{name: deploy}]\n"},
		gitserver.File{Path: "pkg/.convoyignore", Content: "ignored.yaml\n"},
		gitserver.File{Path: "pkg/ignored.yaml", Content: "not: [valid\n"},
		gitserver.File{Path: "pkg/objects/cm.yaml", Content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations: {convoy.dev/phase: deploy}\n"})
	g.Expect(err).NotTo(HaveOccurred())
	remote := Remote{URL: srv.HTTPURL("repo")}
	s, err := NewStore(t.TempDir(), StoreOptions{Resolver: staticResolver(remote)})
	g.Expect(err).NotTo(HaveOccurred())
	key := KeyFor("ns", "src")
	_, err = s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())

	held, err := s.Open(testCtx(t), key, c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.RemoveAll(s.dir(key))).To(Succeed())

	_, err = fs.ReadFile(held, "pkg/objects/cm.yaml")
	g.Expect(IsStoreRead(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(c), "names the commit")
	_, err = manifests.Load(held, "pkg", manifests.TemplateData{})
	g.Expect(IsStoreRead(err)).To(BeTrue(), "a render of what could be read is refused: %v", err)
	var invalid manifests.Errors
	g.Expect(err).NotTo(BeAssignableToTypeOf(invalid), "not invalid content")

	before := srv.Stats()
	fresh, err := s.Open(testCtx(t), key, c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srv.Stats().Sub(before).Advertisements).To(BeEquivalentTo(1), "fetched again, once")
	r, err := manifests.Load(fresh, "pkg", manifests.TemplateData{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Phases).To(HaveLen(1))
	g.Expect(r.Phases[0].Objects).To(HaveLen(1))
	g.Expect(fresh.(*treeFS).Fault()).To(Succeed())
}

// A handle opened before the store's directory was deleted and fetched again reads the new
// packs, not the deleted ones.
func TestAHandleOfADeletedStoreIsReopened(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	c := gittest.Commit(t, repo, "one", map[string]string{"a/f": "1"})
	remote := Remote{URL: srv.HTTPURL("repo")}
	s := newStore(t, Limits{})
	key := KeyFor("ns", "src")
	_, err := s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = s.Open(testCtx(t), key, c) // caches the handle
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(os.RemoveAll(s.dir(key))).To(Succeed())
	_, err = s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	fsys, err := s.Open(testCtx(t), key, c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fs.ReadFile(fsys, "a/f")).To(Equal([]byte("1")))
}
