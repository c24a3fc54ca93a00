package sources

import (
	"testing"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/gittest"
)

// TestPollFollowsANewCommitAfterAForcePush is the soak's force-push sequence for the store: a
// branch at P is force-pushed back to its parent F, then a new commit G on F brings P's tree
// back. Each poll resolves and stores the head (the local branch still names P when G is
// fetched), G's folder has P's tree, and P is not an ancestor of G while F is.
func TestPollFollowsANewCommitAfterAForcePush(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	gittest.Commit(t, repo, "root", map[string]string{"other/f": "0"})
	f := gittest.Commit(t, repo, "rev 1", map[string]string{"pkg/f": "1"})
	p := gittest.Commit(t, repo, "rev 2", map[string]string{"pkg/f": "2"})
	s := newStore(t, Limits{})
	key, remote := KeyFor("ns", "src"), Remote{URL: srv.HTTPURL("repo")}
	poll := func() string {
		res, err := s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
		g.Expect(err).NotTo(HaveOccurred())
		return res.Revision.Commit
	}
	g.Expect(poll()).To(Equal(p))
	g.Expect(repo.ResetBranch("main", f)).To(Succeed())
	g.Expect(poll()).To(Equal(f))
	gc := gittest.Commit(t, repo, "rev 2", map[string]string{"pkg/f": "2"})
	g.Expect(poll()).To(Equal(gc))
	tp, err := s.TreeHash(testCtx(t), key, p, "pkg")
	g.Expect(err).NotTo(HaveOccurred())
	tg, err := s.TreeHash(testCtx(t), key, gc, "pkg")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tg).To(Equal(tp))
	anc, err := s.IsAncestor(testCtx(t), key, p, gc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(anc).To(BeFalse())
	anc, err = s.IsAncestor(testCtx(t), key, f, gc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(anc).To(BeTrue())
}
