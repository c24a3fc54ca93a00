package sources

import (
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/gittest"
)

// TestPollBringsInThePromotionRefs pushes records to a real repository and polls it: the poll
// brings the refs in and digests them, a reader reads only the paths it asks for, a ref the
// remote deleted goes, and a ref that is not a record commit holds only its readers.
func TestPollBringsInThePromotionRefs(t *testing.T) {
	g := NewWithT(t)
	ctx := testCtx(t)
	srv, repo := gittest.NewServer(t)
	head := gittest.Commit(t, repo, "one", map[string]string{"a.yaml": "a: 1\n"})
	remote := Remote{URL: srv.FileURL("repo")}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a, b := PromotionRef("canary", "mc-1", "addon"), PromotionRef("canary", "mc-2", "addon")
	g.Expect(PushPromotionRecord(ctx, remote, a, []byte(`{"a":1}`), at)).To(Succeed())
	g.Expect(PushPromotionRecord(ctx, remote, b, []byte(`{"b":2}`), at)).To(Succeed())

	s := newStore(t, Limits{})
	key := KeyFor("ns", "src")
	res, err := s.Poll(ctx, key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Revision.Commit).To(Equal(head))
	g.Expect(res.PromotionError).NotTo(HaveOccurred())
	g.Expect(res.PromotionRefs).To(HavePrefix("sha256:"))
	records, err := s.PromotionRecords(key, 1024, []string{"canary/mc-1/addon"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(records).To(Equal(map[string][]byte{"canary/mc-1/addon": []byte(`{"a":1}`)}))

	data, ok, err := FetchPromotionRecord(ctx, remote, b, 1024)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(string(data)).To(Equal(`{"b":2}`))
	_, ok, err = FetchPromotionRecord(ctx, remote, PromotionRef("eu", "mc-3", "addon"), 1024)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse())

	// A ref pointing at a commit of the branch (it has a parent) is not a record: its readers
	// get an error, the others do not.
	second := gittest.Commit(t, repo, "two", map[string]string{"a.yaml": "a: 2\n"})
	g.Expect(repo.ResetBranch("main", second)).To(Succeed())
	_, err = repo.Commit("main", "three", map[string]string{"a.yaml": "a: 3\n"})
	g.Expect(err).NotTo(HaveOccurred())
	bad := PromotionRef("canary", "mc-9", "addon")
	g.Expect(exec.Command("git", "--git-dir", repo.Dir, "update-ref", bad, second).Run()).To(Succeed())
	g.Expect(repo.DeleteRef(b)).To(Succeed())
	res2, err := s.Poll(ctx, key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res2.PromotionRefs).NotTo(Equal(res.PromotionRefs))
	records, err = s.PromotionRecords(key, 1024, []string{"canary/mc-1/addon", "canary/mc-2/addon"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(records).To(HaveKey("canary/mc-1/addon"))
	g.Expect(records).NotTo(HaveKey("canary/mc-2/addon"), "deleted on the remote")
	_, err = s.PromotionRecords(key, 1024, []string{"canary/mc-9/addon"})
	g.Expect(err).To(MatchError(ContainSubstring("has a parent")))
}
