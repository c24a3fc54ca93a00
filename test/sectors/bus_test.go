package sectors

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/rollout/promotion"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/infrastructure/forge"
)

// newRepository creates the package repository on Gitea, with the package at value 1.
func newRepository(ctx context.Context, t *testing.T, name string) (*gitea.Repository, string) {
	t.Helper()
	g := NewWithT(t)
	repo, err := srv.CreateRepo(name)
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := srv.Push(ctx, forge.PushInput{Repo: repo, Branch: "main", Message: "Add the addon", Files: packageFiles("1")})
	g.Expect(err).NotTo(HaveOccurred())
	return repo, commit
}

// push commits files to main, straight to Gitea (not through any management cluster's proxy).
func push(ctx context.Context, t *testing.T, repo *gitea.Repository, message string, files map[string]string) string {
	t.Helper()
	commit, err := srv.Push(ctx, forge.PushInput{Repo: repo, Branch: "main", Message: message, Files: files})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Logf("pushed %s: %s", commit[:8], message)
	return commit
}

// readBusInto fetches the promotion refs of the repository into the bare repository dir, as
// any reader with read access would, and returns the records by management cluster.
func readBusInto(g Gomega, repo *gitea.Repository, dir string) map[string]promotion.Record {
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"--git-dir", dir}, args...)...).CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "git %v: %s", args, out)
		return string(out)
	}
	if out, err := exec.Command("git", "init", "--quiet", "--bare", dir).CombinedOutput(); err != nil {
		g.Expect(err).NotTo(HaveOccurred(), string(out))
	}
	git("fetch", "--quiet", "--force", repo.CloneURL, "+"+sources.PromotionRefPrefix+"*:"+sources.PromotionRefPrefix+"*")
	records := map[string]promotion.Record{}
	for _, ref := range strings.Fields(git("for-each-ref", "--format=%(refname)", sources.PromotionRefPrefix)) {
		rec, err := promotion.DecodeRecord([]byte(git("show", ref+":"+sources.PromotionRecordFile)))
		g.Expect(err).NotTo(HaveOccurred(), ref)
		records[rec.ManagementCluster] = rec
	}
	return records
}

// busState returns the state a management cluster published for commit ("" when none).
func busState(t *testing.T, repo *gitea.Repository, mc, commit string) (promotion.State, time.Time) {
	t.Helper()
	rec, ok := readBusInto(NewWithT(t), repo, filepath.Join(t.TempDir(), "bus"))[mc]
	if !ok {
		return "", time.Time{}
	}
	c, _ := rec.Find(commit)
	return c.State, c.Since
}

// expectBusState waits until management cluster mc published state for commit, and returns
// since when.
func expectBusState(t *testing.T, repo *gitea.Repository, mc, commit string, state promotion.State) time.Time {
	t.Helper()
	var since time.Time
	NewWithT(t).Eventually(func() promotion.State {
		var st promotion.State
		st, since = busState(t, repo, mc, commit)
		return st
	}).WithTimeout(90*time.Second).WithPolling(250*time.Millisecond).Should(Equal(state), "%s on %s", mc, commit[:8])
	return since
}
