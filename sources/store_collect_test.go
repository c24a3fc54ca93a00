package sources

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// stored reports whether the repository of key holds commit, reading the disk afresh.
func stored(g Gomega, s *Store, key Key, commit string) bool {
	repo, err := git.PlainOpen(s.dir(key))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = repo.CommitObject(plumbing.NewHash(commit))
	return err == nil
}

func TestCollectKeepsWhatIsStillNeededAndDropsTheRest(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	c1 := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	c2 := gittest.Commit(t, repo, "two", map[string]string{"f": "2"})
	c3 := gittest.Commit(t, repo, "three", map[string]string{"f": "3"})
	o1, err := repo.Commit("other", "other", map[string]string{"o": "1"})
	g.Expect(err).NotTo(HaveOccurred())
	s, err := NewStore(t.TempDir(), StoreOptions{PackGrace: time.Nanosecond})
	g.Expect(err).NotTo(HaveOccurred())
	key, remote := KeyFor("ns", "src"), Remote{URL: srv.HTTPURL("repo")}
	_, err = s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = s.Open(testCtx(t), key, o1) // fetches every branch and tag
	g.Expect(err).NotTo(HaveOccurred())

	// The branch is force-pushed to an unrelated history.
	u1, err := repo.Commit("unrelated", "unrelated", map[string]string{"u": "1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.ResetBranch("main", u1)).To(Succeed())
	g.Expect(repo.DeleteRef("refs/heads/other")).To(Succeed())
	_, err = s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())

	res, err := s.Collect(testCtx(t), key, keepOf(u1, c2, c2), true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Collected).To(BeTrue())
	g.Expect(res.Pinned).To(Equal(2))
	g.Expect(res.Packs).To(Equal(1))
	for _, c := range []string{u1, c2, c1} {
		g.Expect(stored(g, s, key, c)).To(BeTrue(), "kept, or an ancestor of a kept commit: %s", c)
	}
	for _, c := range []string{c3, o1} {
		g.Expect(stored(g, s, key, c)).To(BeFalse(), "no longer needed: %s", c)
	}
	_, err = s.Open(testCtx(t), key, c2)
	g.Expect(err).NotTo(HaveOccurred(), "readers see the repacked store")

	res, err = s.Collect(testCtx(t), key, keepOf(u1), false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Collected).To(BeFalse(), "one pack: nothing to collect")
}

func TestCollectReportsARepositoryAboveTheBound(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	c1 := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	s, err := NewStore(t.TempDir(), StoreOptions{MaxRepoBytes: 1000})
	g.Expect(err).NotTo(HaveOccurred())
	key := KeyFor("ns", "src")
	_, err = s.Poll(testCtx(t), key, Remote{URL: srv.HTTPURL("repo")}, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = s.Collect(testCtx(t), key, keepOf(c1), true)
	var rs *RepoSizeError
	g.Expect(errors.As(err, &rs)).To(BeTrue(), "%v", err)
	g.Expect(rs.Max).To(Equal(int64(1000)))
	classified := ClassifyGitError("storing", err)
	g.Expect(classified.Error()).To(ContainSubstring("above the bound of 1000 bytes"))
}

// TestStoreStaysBoundedOver1000Commits follows a branch through 1,000 commits (a poll every
// 10 commits, as a busy repository polled every minute would give), collecting as the
// GitSource controller does, and compares the store's size with a store that never collects.
// It runs in `make e2e`; TestStoreStaysBoundedOver300Commits is its short version.
func TestStoreStaysBoundedOver1000Commits(t *testing.T) {
	storeStaysBounded(t, 1000)
}

// TestStoreStaysBoundedOver300Commits is TestStoreStaysBoundedOver1000Commits over 300
// commits: 30 polls, past the 20 packs (DefaultCollectPackLimit) at which it collects.
func TestStoreStaysBoundedOver300Commits(t *testing.T) {
	storeStaysBounded(t, 300)
}

// storeStaysBounded follows a branch through commits (a poll every 10), collecting, and
// compares the store's size with a store that never collects; then force-pushes a new root.
func storeStaysBounded(t *testing.T, commits int) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	key, remote := KeyFor("ns", "src"), Remote{URL: srv.FileURL("repo")}
	collected, err := NewStore(t.TempDir(), StoreOptions{PackGrace: time.Nanosecond})
	g.Expect(err).NotTo(HaveOccurred())
	plain, err := NewStore(t.TempDir(), StoreOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	const perPoll = 10
	var maxBytes int64
	var last CollectResult
	var previous string
	start := time.Now()
	for batch := 0; batch < commits/perPoll; batch++ {
		g.Expect(repo.FastImport(historyBatch(g, repo, batch*perPoll, perPoll))).To(Succeed())
		for _, s := range []*Store{collected, plain} {
			_, err := s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
			g.Expect(err).NotTo(HaveOccurred())
		}
		head, err := repo.Head("main")
		g.Expect(err).NotTo(HaveOccurred())
		last, err = collected.Collect(testCtx(t), key, keepOf(head, previous), false)
		g.Expect(err).NotTo(HaveOccurred())
		maxBytes = max(maxBytes, last.Bytes)
		previous = head
	}
	elapsed := time.Since(start)
	plainBytes, plainPacks, err := liveSize(plain.dir(key), nil)
	g.Expect(err).NotTo(HaveOccurred())
	final, err := collected.Collect(testCtx(t), key, keepOf(previous), true)
	g.Expect(err).NotTo(HaveOccurred())

	// The branch is force-pushed to a new root: the old history is needed no more.
	root, err := repo.Commit("fresh", "fresh start", map[string]string{"f": "1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.ResetBranch("main", root)).To(Succeed())
	_, err = collected.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	afterPush, err := collected.Collect(testCtx(t), key, keepOf(root), true)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("%d commits, %d polls: never collected %d KiB in %d packs; collected at most %d KiB in at most %d packs, %d KiB in 1 pack after a final collection; %d KiB once a force-push drops the history; %s in all",
		commits, commits/perPoll, plainBytes>>10, plainPacks, maxBytes>>10, DefaultCollectPackLimit+1, final.Bytes>>10, afterPush.Bytes>>10, elapsed.Round(time.Millisecond))
	g.Expect(plainPacks).To(Equal(commits / perPoll))
	g.Expect(last.Packs).To(BeNumerically("<=", DefaultCollectPackLimit+1))
	g.Expect(final.Bytes).To(BeNumerically("<", plainBytes))
	g.Expect(afterPush.Bytes).To(BeNumerically("<", 64<<10), "only the new root and its pins are left")
	g.Expect(stored(g, collected, key, previous)).To(BeFalse())
}

// keepOf returns a keep function of Collect.
func keepOf(commits ...string) func() ([]string, error) {
	return func() ([]string, error) { return commits, nil }
}

// historyBatch returns a fast-import stream of n commits on main from commit number first,
// each changing one of 100 files of about 600 bytes.
func historyBatch(g Gomega, repo *gitserver.Repo, first, n int) *bytes.Buffer {
	var s bytes.Buffer
	for c := first; c < first+n; c++ {
		fmt.Fprintf(&s, "commit refs/heads/main\ncommitter bench <bench@convoy.dev> %d +0000\n", 1700000000+c)
		msg := fmt.Sprintf("commit %d", c)
		fmt.Fprintf(&s, "data %d\n%s\n", len(msg), msg)
		if c == first && c > 0 {
			head, err := repo.Head("main")
			g.Expect(err).NotTo(HaveOccurred())
			fmt.Fprintf(&s, "from %s\n", head)
		}
		files := []int{c % 100}
		if c == 0 {
			files = make([]int, 100)
			for i := range files {
				files[i] = i
			}
		}
		for _, f := range files {
			content := benchFile(f, c)
			fmt.Fprintf(&s, "M 100644 inline packages/p/file%03d.yaml\ndata %d\n%s\n", f, len(content), content)
		}
	}
	return &s
}
