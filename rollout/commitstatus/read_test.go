package commitstatus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/commitstatus"
)

// TestReadGivesTheLatestStatusOfEachContext posts statuses of three management clusters on a
// real Gitea, one context moving through two states, and reads them back as the promotion's
// CommitStatuses bus does: the latest state of each context, with the forge's time.
func TestReadGivesTheLatestStatusOfEachContext(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	h := setupWith(t, "read-latest", gitea1.URL, options{})
	hcp := func(name string) *convoyv1alpha1.HostedClusterPackage {
		return &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name}}
	}
	status := func(mc string, state commitstatus.State, description string) commitstatus.Status {
		return commitstatus.NewStatus(h.target, "addon", h.commit, state, description).WithScope("canary", mc, "addon")
	}
	before := time.Now().Add(-time.Second)
	h.reporter.Report(hcp("one"), status("mc-1", commitstatus.Pending, "0/1 partitions, 0/2 clusters"))
	expectRead(g, h, "convoy/canary/mc-1/addon", commitstatus.Pending, "0/1 partitions, 0/2 clusters")
	h.reporter.Report(hcp("one"), status("mc-1", commitstatus.Success, "Completed: 1/1 partitions, 2/2 clusters"))
	h.reporter.Report(hcp("two"), status("mc-2", commitstatus.Failure, "Rejected: 0/1 partitions, 1/2 clusters"))
	expectRead(g, h, "convoy/canary/mc-1/addon", commitstatus.Success, "Completed: 1/1 partitions, 2/2 clusters")
	got := expectRead(g, h, "convoy/canary/mc-2/addon", commitstatus.Failure, "Rejected: 0/1 partitions, 1/2 clusters")
	g.Expect(got).To(HaveLen(2), "one status per context, the latest")
	for _, o := range got {
		g.Expect(o.At).To(BeTemporally(">", before), o.Context)
	}
}

// expectRead waits until Read (past its cache) shows the context name in state with
// description, and returns what it read.
func expectRead(g Gomega, h harness, name string, state commitstatus.State, description string) []commitstatus.Observed {
	var got []commitstatus.Observed
	g.Eventually(func(g Gomega) {
		r := &commitstatus.Reporter{Secrets: h.secrets, AllowInsecureHTTP: true, Timeout: 5 * time.Second}
		var err error
		got, err = r.Read(context.Background(), h.target, h.commit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(ContainElement(And(
			HaveField("Context", name), HaveField("State", state), HaveField("Description", description))))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	return got
}

// TestReadRefusesWhatAReportWould: the same rules as a send. The token's Secret must be
// Opaque, http:// needs the flag, and an unreadable forge is an error naming the request
// without the token.
func TestReadRefusesWhatAReportWould(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	h := setupWith(t, "read-refusals", gitea1.URL, options{})
	strict := &commitstatus.Reporter{Secrets: h.secrets}
	_, err := strict.Read(context.Background(), h.target, h.commit)
	g.Expect(err).To(MatchError(ContainSubstring("--commit-status-allow-insecure-http")))

	missing := h.target
	missing.Repository = h.repo.Owner.UserName + "/no-such-repository"
	r := &commitstatus.Reporter{Secrets: h.secrets, AllowInsecureHTTP: true}
	_, err = r.Read(context.Background(), missing, h.commit)
	g.Expect(err).To(MatchError(ContainSubstring("404")))
	g.Expect(err.Error()).NotTo(ContainSubstring(gitea1.Token))
}

// TestReadCachesACommitForItsTTL: a second read within ReadTTL costs no request, so the
// passes of many HostedClusterPackages share one read per commit.
func TestReadCachesACommitForItsTTL(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	h := setupWith(t, "read-cache", gitea1.URL, options{})
	now := time.Now()
	r := &commitstatus.Reporter{Secrets: h.secrets, AllowInsecureHTTP: true, ReadTTL: time.Minute,
		Now: func() time.Time { return now }}
	first, err := r.Read(context.Background(), h.target, h.commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first).To(BeEmpty())
	h.reporter.Report(nil, commitstatus.NewStatus(h.target, "addon", h.commit, commitstatus.Pending, "posted after the read"))
	expectNewestContext(g, h, "convoy/addon")
	cached, err := r.Read(context.Background(), h.target, h.commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cached).To(BeEmpty(), "served from the first read")
	now = now.Add(time.Minute)
	fresh, err := r.Read(context.Background(), h.target, h.commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fresh).To(ContainElement(HaveField("Context", "convoy/addon")))
}

// expectNewestContext waits until Gitea holds a status of the context name on the harness's
// commit.
func expectNewestContext(g Gomega, h harness, name string) {
	g.Eventually(func(g Gomega) {
		st, err := gitea1.Statuses(h.repo, h.commit)
		g.Expect(err).NotTo(HaveOccurred())
		var contexts []string
		for _, s := range st {
			contexts = append(contexts, s.Context)
		}
		g.Expect(strings.Join(contexts, ",")).To(ContainSubstring(name), fmt.Sprint(len(st)))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}
