package sources

import (
	"testing"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// TestTreeHashChangesOnlyWithTheDirectory: a commit that changes another folder leaves a
// directory's tree hash as it was; one that changes a file under it, however deep, does not.
func TestTreeHashChangesOnlyWithTheDirectory(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	first, err := repo.CommitFiles("main", "one",
		gitserver.File{Path: "a/manifest.yaml", Content: "a: 1\n"},
		gitserver.File{Path: "a/sub/objects.yaml", Content: "x: 1\n"},
		gitserver.File{Path: "b/manifest.yaml", Content: "b: 1\n"})
	g.Expect(err).NotTo(HaveOccurred())
	other, err := repo.CommitFiles("main", "b only", gitserver.File{Path: "b/manifest.yaml", Content: "b: 2\n"})
	g.Expect(err).NotTo(HaveOccurred())
	deep, err := repo.CommitFiles("main", "a deep", gitserver.File{Path: "a/sub/objects.yaml", Content: "x: 2\n"})
	g.Expect(err).NotTo(HaveOccurred())
	s := newStore(t, Limits{})
	key := KeyFor("ns", "src")
	_, err = s.Poll(testCtx(t), key, Remote{URL: srv.FileURL("repo")}, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())

	hash := func(commit, dir string) string {
		h, err := s.TreeHash(testCtx(t), key, commit, dir)
		g.Expect(err).NotTo(HaveOccurred())
		return h
	}
	g.Expect(hash(other, "a")).To(Equal(hash(first, "a")))
	g.Expect(hash(other, "./a/")).To(Equal(hash(first, "a")))
	g.Expect(hash(other, "b")).NotTo(Equal(hash(first, "b")))
	g.Expect(hash(deep, "a")).NotTo(Equal(hash(other, "a")))
	g.Expect(hash(deep, "")).NotTo(Equal(hash(other, ".")))
	_, err = s.TreeHash(testCtx(t), key, first, "missing")
	g.Expect(err).To(MatchError(ContainSubstring("directory missing of ns/src")))
	_, err = s.TreeHash(testCtx(t), key, first, "a/manifest.yaml")
	g.Expect(err).To(MatchError(ContainSubstring("is not a directory")))
}

func TestIsAncestorFollowsTheHistoryAndNotAnUnrelatedOne(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	first, err := repo.CommitFiles("main", "one", gitserver.File{Path: "a/manifest.yaml", Content: "a: 1\n"})
	g.Expect(err).NotTo(HaveOccurred())
	second, err := repo.CommitFiles("main", "two", gitserver.File{Path: "b/manifest.yaml", Content: "b: 1\n"})
	g.Expect(err).NotTo(HaveOccurred())
	unrelated, err := repo.CommitFiles("rewritten", "a new root", gitserver.File{Path: "a/manifest.yaml", Content: "a: 1\n"})
	g.Expect(err).NotTo(HaveOccurred())
	s := newStore(t, Limits{})
	key := KeyFor("ns", "src")
	_, err = s.Poll(testCtx(t), key, Remote{URL: srv.FileURL("repo")}, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())

	isAncestor := func(ancestor, commit string) bool {
		ok, err := s.IsAncestor(testCtx(t), key, ancestor, commit)
		g.Expect(err).NotTo(HaveOccurred())
		return ok
	}
	g.Expect(isAncestor(first, second)).To(BeTrue())
	g.Expect(isAncestor(first, first)).To(BeTrue())
	g.Expect(isAncestor(second, first)).To(BeFalse())
	g.Expect(isAncestor(first, unrelated)).To(BeFalse(), "the same tree in an unrelated history is not a descendant")
}
