package sectors

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/promotion"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
)

// rolloutBound is how long one management cluster may take to run a commit it may run.
const rolloutBound = 90 * time.Second

// sectors is the suite's four management clusters, canary's first.
type sectors struct {
	canary, downstream, all []*managementCluster
}

// TestACommitCrossesTheSectors tells one repository's story across four management clusters,
// eu reading canary's progress on the promotion refs and us on the commit statuses:
// a good commit, a broken one, two in quick succession, the Git server out of reach of eu and
// us, a commit promoted by hand, and eu's controller killed while it rolls a commit out.
func TestACommitCrossesTheSectors(t *testing.T) {
	startServers(t)
	ctx := context.Background()
	repo, first := newRepository(ctx, t, "sectors-"+fleet.NameSuffix())
	var s sectors
	for _, mc := range managementClusters {
		mode := faultnet.Forward
		if mc.name == "mc-canary-2" {
			mode = faultnet.Refuse // until goodCommit has seen mc-canary-1 complete alone
		}
		m := setUp(ctx, t, mc.name, mc.sector, repo, mode)
		s.all = append(s.all, m)
		if mc.sector == "canary" {
			s.canary = append(s.canary, m)
		} else {
			s.downstream = append(s.downstream, m)
		}
	}
	commits := map[string]string{"first": first}
	t.Run("a good commit waits for both canary clusters and the soak", func(t *testing.T) {
		goodCommit(ctx, t, s, repo, first)
	})
	t.Run("a broken commit stays in canary; the next good one goes on", func(t *testing.T) {
		commits["broken"], commits["mended"] = brokenCommit(ctx, t, s, repo)
	})
	t.Run("a commit superseded in canary never runs downstream", func(t *testing.T) {
		commits["superseded"], commits["latest"] = supersededCommit(ctx, t, s, repo)
	})
	t.Run("eu and us hold while they cannot reach the Git server", func(t *testing.T) {
		commits["unreachable"] = unreachableBus(ctx, t, s, repo)
	})
	t.Run("a commit promoted by hand skips canary, and only that one", func(t *testing.T) {
		commits["by hand"] = promotedByHand(ctx, t, s, repo)
	})
	t.Run("eu's controller killed mid-promotion loses and doubles nothing", func(t *testing.T) {
		controllerKilled(ctx, t, s, repo)
	})
	for _, m := range s.downstream {
		ran := m.commits()
		for _, never := range []string{"broken", "superseded"} {
			NewWithT(t).Expect(ran).NotTo(ContainElement(commits[never]), "%s ran the %s commit", m, never)
		}
	}
}

// goodCommit: with mc-canary-2 out of reach of Git, mc-canary-1 completes the first commit and
// nothing moves downstream, soak or not; once mc-canary-2 completed it too, eu and us start it
// no sooner than the soak after the later completion, and within a few seconds of it.
func goodCommit(ctx context.Context, t *testing.T, s sectors, repo *gitea.Repository, first string) {
	g := NewWithT(t)
	late := s.canary[1]
	s.canary[0].expectRunning(ctx, t, first, rolloutBound)
	expectBusState(t, repo, s.canary[0].name, first, promotion.Completed)
	for _, m := range s.downstream {
		g.Eventually(func(g Gomega) string { return readyMessage(g, m) }).Should(
			ContainSubstring("mc-canary-1 completed, mc-canary-2 not started"))
	}
	g.Consistently(func() []string { return append(s.downstream[0].commits(), s.downstream[1].commits()...) },
		(canarySoak+2)*time.Second, 250*time.Millisecond).Should(BeEmpty(), "one canary cluster is not the sector")

	late.proxy.SetMode(faultnet.Forward)
	late.expectRunning(ctx, t, first, rolloutBound)
	done := expectBusState(t, repo, late.name, first, promotion.Completed)
	for _, m := range s.downstream {
		m.expectRunning(ctx, t, first, rolloutBound)
		started, _ := m.firstSeen(first)
		wait := started.Sub(done)
		t.Logf("%s started %s %s after canary completed it", m, first[:8], wait.Round(time.Millisecond))
		// The record's Since is to the second; the GitSource polls every second.
		g.Expect(wait).To(BeNumerically(">=", canarySoak*time.Second-time.Second), "%s started before the soak", m)
		g.Expect(wait).To(BeNumerically("<", canarySoak*time.Second+5*time.Second), "%s started late", m)
	}
	// us read canary's progress from these statuses (spec.promotion.bus CommitStatuses).
	combined, _, err := srv.Client.GetCombinedStatus(repo.Owner.UserName, repo.Name, first)
	g.Expect(err).NotTo(HaveOccurred())
	var contexts []string
	for _, st := range combined.Statuses {
		if st.State == gitea.StatusSuccess && strings.HasPrefix(st.Description, "Completed: ") {
			contexts = append(contexts, st.Context)
		}
	}
	g.Expect(contexts).To(ContainElements("convoy/canary/mc-canary-1/addon", "convoy/canary/mc-canary-2/addon"))
}

// brokenCommit: a commit that cannot render fails in canary and never reaches eu or us; the
// good commit after it does.
func brokenCommit(ctx context.Context, t *testing.T, s sectors, repo *gitea.Repository) (string, string) {
	g := NewWithT(t)
	broken := push(ctx, t, repo, "Break the template", brokenFiles("2"))
	for _, m := range s.canary {
		g.Eventually(func() promotion.State { st, _ := busState(t, repo, m.name, broken); return st }).
			WithTimeout(rolloutBound).WithPolling(250 * time.Millisecond).Should(BeElementOf(promotion.Failed, promotion.Rejected))
	}
	g.Consistently(func() []string { return append(s.downstream[0].commits(), s.downstream[1].commits()...) },
		(canarySoak+2)*time.Second, 250*time.Millisecond).ShouldNot(ContainElement(broken))
	files := packageFiles("3")
	files[packagePath+"/broken.yaml.gotmpl"] = "" // removed
	mended := push(ctx, t, repo, "Mend the template", files)
	for _, m := range s.all {
		m.expectRunning(ctx, t, mended, rolloutBound)
	}
	return broken, mended
}

// supersededCommit: a commit canary has started is superseded by the next one before it
// completes (canary's partitions soak a minute meanwhile); eu and us only ever run the second.
func supersededCommit(ctx context.Context, t *testing.T, s sectors, repo *gitea.Repository) (string, string) {
	g := NewWithT(t)
	for _, m := range s.canary {
		m.setPartitionSoak(ctx, t, 60)
	}
	superseded := push(ctx, t, repo, "Set the value to 4", packageFiles("4"))
	for _, m := range s.canary {
		g.Eventually(func() bool { _, ok := m.firstSeen(superseded); return ok }).
			WithTimeout(rolloutBound).WithPolling(50 * time.Millisecond).Should(BeTrue())
	}
	latest := push(ctx, t, repo, "Set the value to 5", packageFiles("5"))
	for _, m := range s.canary {
		g.Eventually(func() bool { _, ok := m.firstSeen(latest); return ok }).
			WithTimeout(rolloutBound).WithPolling(50 * time.Millisecond).Should(BeTrue())
		m.setPartitionSoak(ctx, t, partitionSoak)
	}
	for _, m := range s.all {
		m.expectRunning(ctx, t, latest, rolloutBound)
	}
	for _, m := range s.canary {
		st, _ := busState(t, repo, m.name, superseded)
		g.Expect(st).To(Equal(promotion.Superseded), m.String())
	}
	return superseded, latest
}

// unreachableBus: eu and us cannot reach the Git server while canary completes a commit; they
// hold, say why, change nothing, and take the commit within seconds of the server's return.
func unreachableBus(ctx context.Context, t *testing.T, s sectors, repo *gitea.Repository) string {
	g := NewWithT(t)
	before := s.downstream[0].packageRevisions(g)
	for _, m := range s.downstream {
		m.proxy.SetMode(faultnet.Blackhole)
	}
	commit := push(ctx, t, repo, "Set the value to 6", packageFiles("6"))
	var done time.Time
	for _, m := range s.canary {
		m.expectRunning(ctx, t, commit, rolloutBound)
		done = later(done, expectBusState(t, repo, m.name, commit, promotion.Completed))
	}
	time.Sleep(time.Until(done.Add((canarySoak + 1) * time.Second)))
	for _, m := range s.downstream {
		g.Eventually(func(g Gomega) string { return m.hcpkg(g).Status.Promotion.Message }).Should(Not(BeEmpty()))
		t.Logf("%s while Git is out of reach: %q", m, m.hcpkg(g).Status.Promotion.Message)
		g.Expect(m.commits()).NotTo(ContainElement(commit), "%s moved without the bus", m)
	}
	g.Expect(s.downstream[0].packageRevisions(g)).To(Equal(before))
	back := time.Now()
	for _, m := range s.downstream {
		m.proxy.SetMode(faultnet.Forward)
	}
	for _, m := range s.downstream {
		m.expectRunning(ctx, t, commit, rolloutBound)
		started, _ := m.firstSeen(commit)
		t.Logf("%s started %s %s after Git came back", m, commit[:8], started.Sub(back).Round(time.Millisecond))
	}
	return commit
}

// promotedByHand: canary cannot reach Git, so a new commit is not run there; a
// ManualPromotion for eu (`convoy promote`) lets it through in eu only, and the commit after it
// waits.
func promotedByHand(ctx context.Context, t *testing.T, s sectors, repo *gitea.Repository) string {
	g := NewWithT(t)
	for _, m := range s.canary {
		m.proxy.SetMode(faultnet.Refuse)
	}
	fix := push(ctx, t, repo, "The emergency fix", packageFiles("7"))
	eu, us := s.downstream[0], s.downstream[1]
	g.Eventually(func(g Gomega) string { return eu.hcpkg(g).Status.Promotion.HeadCommit }).Should(Equal(fix))
	// As the on-call engineer types it: a ManualPromotion in the GitSource's namespace.
	out, err := exec.CommandContext(ctx, eu.convoy, "promote", addon, "--commit", fix, "--sector", eu.sector,
		"--reason", "the on-call engineer's fix", "--kubeconfig", eu.kubeconfig).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	t.Logf("convoy promote: %s", strings.TrimSpace(string(out)))
	eu.expectRunning(ctx, t, fix, rolloutBound)
	g.Expect(eu.hcpkg(g).Status.Promotion.ByHand).To(BeTrue())
	after := push(ctx, t, repo, "The change after the fix", packageFiles("8"))
	g.Eventually(func(g Gomega) string { return eu.hcpkg(g).Status.Promotion.HeadCommit }).Should(Equal(after))
	g.Consistently(func() []string { return append(eu.commits(), us.commits()...) }, 3*time.Second, 250*time.Millisecond).
		ShouldNot(ContainElement(after))
	g.Expect(us.commits()).NotTo(ContainElement(fix), "the approval names eu")
	for _, m := range s.canary {
		m.proxy.SetMode(faultnet.Forward)
	}
	for _, m := range s.all {
		m.expectRunning(ctx, t, after, rolloutBound)
	}
	return fix
}

// controllerKilled: eu's controller is SIGKILLed as soon as eu starts a commit and started
// again; eu completes the commit on the same Packages and publishes it once.
func controllerKilled(ctx context.Context, t *testing.T, s sectors, repo *gitea.Repository) {
	g := NewWithT(t)
	eu := s.downstream[0]
	uids := eu.packageUIDs(g)
	commit := push(ctx, t, repo, "Set the value to 9", packageFiles("9"))
	g.Eventually(func() bool { _, ok := eu.firstSeen(commit); return ok }).
		WithTimeout(rolloutBound).WithPolling(20 * time.Millisecond).Should(BeTrue())
	g.Expect(eu.ctrl.Kill()).To(Succeed())
	t.Logf("killed %s's controller as it started %s", eu, commit[:8])
	time.Sleep(2 * time.Second)
	eu.start(t)
	for _, m := range s.all {
		m.expectRunning(ctx, t, commit, rolloutBound)
	}
	g.Expect(eu.packageUIDs(g)).To(Equal(uids), "the same Packages")
	expectBusState(t, repo, eu.name, commit, promotion.Completed)
	rec := readBusInto(g, repo, t.TempDir()+"/bus")[eu.name]
	var seen []string
	for _, c := range rec.Commits {
		g.Expect(seen).NotTo(ContainElement(c.Commit), "a commit published twice")
		seen = append(seen, c.Commit)
	}
}

// readyMessage is the HostedClusterPackage's Ready message.
func readyMessage(g Gomega, m *managementCluster) string {
	c := apimeta.FindStatusCondition(m.hcpkg(g).Status.Conditions, convoyv1alpha1.ReadyCondition)
	g.Expect(c).NotTo(BeNil())
	return c.Message
}

// packageRevisions returns the commit each Package is pinned to, by namespace.
func (m *managementCluster) packageRevisions(g Gomega) map[string]string {
	out := map[string]string{}
	for _, p := range m.packages(g) {
		out[p.Namespace] = p.Spec.Revision
	}
	return out
}

// packageUIDs returns the UIDs of the Packages, sorted.
func (m *managementCluster) packageUIDs(g Gomega) []types.UID {
	var out []types.UID
	for _, p := range m.packages(g) {
		out = append(out, p.UID)
	}
	slices.Sort(out)
	return out
}

func (m *managementCluster) packages(g Gomega) []convoyv1alpha1.Package {
	pkgs := &convoyv1alpha1.PackageList{}
	g.Expect(m.fleet.Client.List(context.Background(), pkgs,
		client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: addon})).To(Succeed())
	return pkgs.Items
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
