package rolloutcontroller

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/promotion"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// sectorMapFile declares canary (two management clusters) before eu (the suite's controller).
const sectorMapFile = `apiVersion: convoy.dev/v1alpha1
kind: SectorMap
sectors:
- name: canary
  managementClusters: [mc-canary-1, mc-canary-2]
- name: eu
  managementClusters: [mc-eu-1]
`

// promotionRepo is a package repository with the sector map, followed by a GitSource.
type promotionRepo struct {
	repo *gitserver.Repo
	url  string
	ns   string
}

// newPromotionRepo creates the repository and its GitSource, polled every second.
func newPromotionRepo(t *testing.T) *promotionRepo {
	ns := env.NewNamespace(t)
	repo, url := newSourceWithURL(t, ns)
	return &promotionRepo{repo: repo, url: url, ns: ns}
}

// commit commits revision n of the package with the sector map.
func (p *promotionRepo) commit(t *testing.T, n int) string {
	files := gatePackage(n, true, false)
	files["sectors.yaml"] = sectorMapFile
	c, err := p.repo.Commit("main", "revision", files)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// publish pushes, as management cluster mc of sector canary would, its record of key.
func (p *promotionRepo) publish(t *testing.T, mc, key string, commits ...promotion.CommitRecord) {
	g := NewWithT(t)
	data, err := promotion.Record{ManagementCluster: mc, Sector: "canary", Key: key, Commits: commits}.Encode()
	g.Expect(err).NotTo(HaveOccurred())
	ref := sources.PromotionRef("canary", mc, key)
	g.Expect(sources.PushPromotionRecord(context.Background(), sources.Remote{URL: p.url}, ref, data, time.Now())).To(Succeed())
}

// published reads the record the suite's controller published for key; false when it has none.
func (p *promotionRepo) published(g Gomega, key string) (promotion.Record, bool) {
	ref := sources.PromotionRef(testIdentity.Sector, testIdentity.ManagementCluster, key)
	out, err := exec.Command("git", "--git-dir", p.repo.Dir, "show", ref+":"+sources.PromotionRecordFile).Output()
	if err != nil {
		return promotion.Record{}, false
	}
	rec, err := promotion.DecodeRecord(out)
	g.Expect(err).NotTo(HaveOccurred())
	return rec, true
}

// TestPromotionFollowsTheUpstreamSector runs the suite's controller as management cluster
// mc-eu-1 of sector eu, after sector canary (mc-canary-1 and mc-canary-2, whose records the
// test pushes to the package repository as they would): nothing rolls out before both canary
// clusters completed a commit and soaked it; a commit canary failed never comes, and holds
// nothing but itself; a ManualPromotion lets one commit skip canary; a malformed record holds
// promotion; and eu publishes its own progress on the repository.
func TestPromotionFollowsTheUpstreamSector(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	p := newPromotionRepo(t)
	name := "promote-" + fleet.NameSuffix()
	first := p.commit(t, 1)
	newHostedClusterPackage(t, name, p.ns, func(o *convoyv1alpha1.HostedClusterPackage) {
		o.Spec.Promotion = &convoyv1alpha1.PromotionSpec{Publish: true,
			After: []convoyv1alpha1.UpstreamSector{{Sector: "canary", SoakSeconds: 3}}}
	})
	ready := func(g Gomega) *metav1.Condition {
		return apimeta.FindStatusCondition(getHCPkg(g, name).Status.Conditions, convoyv1alpha1.ReadyCondition)
	}
	g.Eventually(ready).Should(And(Not(BeNil()), HaveField("Reason", convoyv1alpha1.AwaitingPromotionReason),
		HaveField("Message", ContainSubstring("mc-canary-1 not started, mc-canary-2 not started"))))

	By(t, "one canary cluster completing is not enough")
	p.publish(t, "mc-canary-1", name, promotion.CommitRecord{Commit: first, State: promotion.Completed, Since: time.Now()})
	g.Eventually(ready).Should(HaveField("Message", ContainSubstring("mc-canary-1 completed, mc-canary-2 not started")))
	g.Consistently(func(g Gomega) string { return getHCPkg(g, name).Status.UpdateRevision }, 2*time.Second).Should(BeEmpty())

	By(t, "both completed: the commit comes after the soak, not before")
	done := time.Now()
	p.publish(t, "mc-canary-2", name, promotion.CommitRecord{Commit: first, State: promotion.Completed, Since: done})
	g.Eventually(func(g Gomega) string { return updateRevisionCommit(g, p.ns, name) }).Should(Equal(first))
	g.Expect(time.Since(done)).To(BeNumerically(">=", 3*time.Second))
	g.Eventually(func(g Gomega) []string { return eventNotes(g, name, PromotedReason) }).Should(
		ContainElement("Commit " + first[:12] + " came through the upstream sectors"))
	g.Eventually(func(g Gomega) promotion.State {
		rec, ok := p.published(g, name)
		g.Expect(ok).To(BeTrue())
		c, _ := rec.Find(first)
		return c.State
	}).Should(Equal(promotion.Completed))

	By(t, "a commit canary failed never comes")
	second := p.commit(t, 2)
	p.publish(t, "mc-canary-1", name, promotion.CommitRecord{Commit: second, State: promotion.Failed, Since: time.Now()},
		promotion.CommitRecord{Commit: first, State: promotion.Completed, Since: done})
	p.publish(t, "mc-canary-2", name, promotion.CommitRecord{Commit: second, State: promotion.Completed, Since: done},
		promotion.CommitRecord{Commit: first, State: promotion.Completed, Since: done})
	g.Eventually(func(g Gomega) *convoyv1alpha1.PromotionStatus { return getHCPkg(g, name).Status.Promotion }).Should(And(
		HaveField("HeadCommit", second), HaveField("Commit", first)))
	g.Consistently(func(g Gomega) string { return updateRevisionCommit(g, p.ns, name) }, 3*time.Second).Should(Equal(first))
	g.Expect(getHCPkg(g, name).Status.Gate).To(And(Not(BeNil()), HaveField("Type", convoyv1alpha1.GatePromotion)))

	By(t, "a ManualPromotion of another rollout's UID, of another namespace or an unowned PromotionApproval lets nothing through")
	uid := string(getHCPkg(g, name).UID)
	promote := func(ns, uid string) {
		a := &convoyv1alpha1.ManualPromotion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "promote-"},
			Spec: convoyv1alpha1.ManualPromotionSpec{HostedClusterPackage: name, HostedClusterPackageUID: uid, Sector: "eu", Commit: second, Reason: "the fix"}}
		g.Expect(env.Client.Create(ctx, a)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(ctx, a) })
	}
	promote(p.ns, "uid-of-another-rollout")
	promote(env.NewNamespace(t), uid)
	unowned := &convoyv1alpha1.PromotionApproval{ObjectMeta: metav1.ObjectMeta{GenerateName: "promote-"},
		Spec: convoyv1alpha1.PromotionApprovalSpec{HostedClusterPackage: name, Sector: "eu", Commit: second}}
	g.Expect(env.Client.Create(ctx, unowned)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, unowned) })
	g.Consistently(func(g Gomega) string { return updateRevisionCommit(g, p.ns, name) }, 2*time.Second).Should(Equal(first))

	By(t, "a ManualPromotion in the GitSource's namespace, of the rollout's UID, lets that one commit through")
	promote(p.ns, uid)
	g.Eventually(func(g Gomega) string { return updateRevisionCommit(g, p.ns, name) }).Should(Equal(second))
	g.Eventually(func(g Gomega) bool { return getHCPkg(g, name).Status.Promotion.ByHand }).Should(BeTrue())
	g.Eventually(func(g Gomega) []string { return eventNotes(g, name, PromotedReason) }).Should(
		ContainElement("Commit " + second[:12] + " came by hand (a ManualPromotion)"))

	By(t, "a malformed record holds promotion and changes nothing")
	third := p.commit(t, 3)
	g.Expect(sources.PushPromotionRecord(ctx, sources.Remote{URL: p.url}, sources.PromotionRef("canary", "mc-canary-1", name),
		[]byte(`{"version":"v0"}`), time.Now())).To(Succeed())
	p.publish(t, "mc-canary-2", name, promotion.CommitRecord{Commit: third, State: promotion.Completed, Since: done})
	g.Eventually(func(g Gomega) string { return getHCPkg(g, name).Status.Promotion.Message }).Should(
		ContainSubstring("the record of management cluster mc-canary-1 (sector canary)"))
	g.Consistently(func(g Gomega) string { return updateRevisionCommit(g, p.ns, name) }, 2*time.Second).Should(Equal(second))
	g.Eventually(func(g Gomega) []string { return eventNotes(g, name, PromotionHeldReason) }).Should(
		ContainElement(ContainSubstring("the record of management cluster mc-canary-1 (sector canary)")))
	g.Expect(getHCPkg(g, name).Status.Promotion).To(And(HaveField("Commit", second), HaveField("ByHand", true)),
		"a held bus keeps saying which commit the sector runs")

	By(t, "the record mended, the newest commit comes")
	p.publish(t, "mc-canary-1", name, promotion.CommitRecord{Commit: third, State: promotion.Completed, Since: done})
	g.Eventually(func(g Gomega) string { return updateRevisionCommit(g, p.ns, name) }).Should(Equal(third))
	g.Eventually(func(g Gomega) []string {
		rec, _ := p.published(g, name)
		var states []string
		for _, c := range rec.Commits {
			states = append(states, c.Commit[:7]+" "+string(c.State))
		}
		return states
	}).Should(Equal([]string{third[:7] + " Completed", second[:7] + " Completed", first[:7] + " Completed"}))
	g.Expect(eventNotes(g, name, PromotedReason)).To(ConsistOf("Commit "+first[:12]+" came through the upstream sectors",
		"Commit "+second[:12]+" came by hand (a ManualPromotion)", "Commit "+third[:12]+" came through the upstream sectors"),
		"each commit announced once, the hold and its end included")
}

// eventNotes returns the notes of the events of HostedClusterPackage name with reason.
func eventNotes(g Gomega, name, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(context.Background(), list)).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "HostedClusterPackage" && e.Regarding.Name == name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// By logs a step of a test.
func By(t *testing.T, step string) { t.Helper(); t.Log(strings.TrimSpace(step)) }
