package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

func TestProgressDeadline(t *testing.T) {
	for _, tc := range []struct {
		name        string
		updated     time.Duration // before now
		wantFailed  bool
		wantRequeue time.Duration
	}{
		{name: "within the deadline", updated: 9 * time.Minute, wantRequeue: time.Minute},
		{name: "at the deadline", updated: 10 * time.Minute, wantFailed: true},
		{name: "past the deadline", updated: time.Hour, wantFailed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(2, "early", "normal").progressedAll(revision(1))
			setSpec(w.packages[namespaceOf("early-1")], revision(2), t0.Add(-tc.updated))

			plan := compute(g, w)
			// Failed or not, early-1 keeps its budget slot: nothing else is updated.
			g.Expect(describe(plan)).To(BeEmpty())
			g.Expect(plan.RequeueAfter).To(Equal(tc.wantRequeue))
			if !tc.wantFailed {
				g.Expect(plan.Failed).To(BeEmpty())
				g.Expect(states(plan)[0]).To(Equal("early=Progressing"))
				return
			}
			g.Expect(plan.Counts.Failed).To(Equal(int32(1)))
			g.Expect(states(plan)[0]).To(Equal("early=Blocked"))
			g.Expect(plan.Failed).To(HaveLen(1))
			g.Expect(plan.Failed[0].HostedCluster).To(Equal("clusters/early-1"))
			g.Expect(plan.Failed[0].Reason).To(Equal(ProgressDeadlineExceededReason))
			g.Expect(plan.Failed[0].Message).To(Equal("Package clusters-early-1/addon has not progressed at revision " +
				"02eeeeeeeeee for 10m0s: applying 02eeeeeeeeee"))
		})
	}
}

func TestProgressDeadlineFromSpec(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early").progressedAll(revision(1))
	seconds := int32(60)
	w.hcpkg.Spec.Strategy.RollingUpgrade.ProgressDeadlineSeconds = &seconds
	setSpec(w.packages[namespaceOf("early-1")], revision(2), t0.Add(-time.Minute))
	g.Expect(compute(g, w).Failed).To(HaveLen(1))
}

func TestRegressionIsMeasuredFromTheRegression(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early").progressedAll(revision(2))
	setCondition(w.packages[namespaceOf("early-1")], "Available", "False", t0.Add(-time.Minute), "probe failed")

	plan := compute(g, w)
	g.Expect(plan.Failed).To(BeEmpty())
	g.Expect(plan.Counts.Unavailable).To(Equal(int32(1)))
	g.Expect(plan.RequeueAfter).To(Equal(9 * time.Minute))

	w.now = t0.Add(9 * time.Minute)
	g.Expect(compute(g, w).Failed).To(HaveLen(1))
}

func TestNewerRevisionSupersedes(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal", "late").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(2))
	// rev2 reached normal: early is done, normal-1 is updating, the rest is on rev1.
	w.pkg("early-1", revision(2), t0.Add(-time.Hour))
	w.pkg("early-2", revision(2), t0.Add(-time.Hour))
	setSpec(w.packages[namespaceOf("normal-1")], revision(2), t0.Add(-time.Minute))
	w.update, w.history = revision(3), append(w.history, revision(3))

	plan := compute(g, w)
	// The rollout starts again at early; normal-1 keeps updating to rev2 and holds a slot.
	g.Expect(describe(plan)).To(Equal([]string{"update early-1 rev3 WithinBudget"}))
	g.Expect(states(plan)).To(Equal([]string{"early=Progressing", "normal=Pending", "late=Pending"}))
	g.Expect(plan.RevisionsInUse).To(Equal([]string{"rev1", "rev2"}))
}

func TestNotYetUpdatedTargetsSkipToTheNewestRevision(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal").progressedAll(revision(1))
	w.pkg("early-1", revision(3), t0.Add(-time.Hour))
	w.update, w.history = revision(3), append(w.history, revision(3))

	g.Expect(describe(compute(g, w))).To(Equal([]string{"update normal-1 rev3 WithinBudget"}))
}

func TestUpdatingToASupersededRevisionGetsTheNewOneInItsPartition(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	setSpec(w.packages[namespaceOf("early-1")], revision(2), t0.Add(-time.Minute))
	w.update, w.history = revision(3), append(w.history, revision(3))

	g.Expect(describe(compute(g, w))).To(Equal([]string{"update early-1 rev3 AlreadyUnavailable"}))
}

func TestFailedPackagesGetTheFixFirst(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal", "late").progressedAll(revision(1))
	// late-1 failed at rev2 while another update is in flight in early: no budget is free, and
	// late is far from reached.
	setSpec(w.packages[namespaceOf("late-1")], revision(2), t0.Add(-time.Hour))
	setSpec(w.packages[namespaceOf("early-1")], revision(2), t0.Add(-time.Minute))
	w.update, w.history = revision(3), append(w.history, revision(3))

	plan := compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{
		"update late-1 rev3 ReplaceFailed",
		"update early-1 rev3 AlreadyUnavailable",
	}))
}

func TestFailedAtTheUpdateRevisionStays(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	setSpec(w.packages[namespaceOf("early-1")], revision(2), t0.Add(-time.Hour))

	plan := compute(g, w)
	g.Expect(describe(plan)).To(BeEmpty())
	g.Expect(plan.Failed).To(HaveLen(1))
}

func TestInstantStrategy(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal", "late").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = convoyv1alpha1.HostedClusterPackageStrategy{Instant: &convoyv1alpha1.InstantStrategy{}}
	w.find("late-2").Available = false
	w.cluster("new-1", "normal")

	plan := compute(g, w)
	g.Expect(plan.Creates).To(HaveLen(1))
	g.Expect(plan.Creates[0].Revision.Name).To(Equal("rev2"))
	g.Expect(plan.Updates).To(HaveLen(5))
	g.Expect(plan.MaxUnavailable).To(Equal(0))
	g.Expect(states(plan)).To(Equal([]string{"early=Progressing", "normal=Progressing", "late=Progressing"}))
	// The missing Package is unavailable and instant tolerates none.
	g.Expect(plan.Conditions[0].Reason).To(Equal(convoyv1alpha1.NotEnoughPackagesAvailableReason))
}

func TestPausedStartsNoUpdate(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal").progressedAll(revision(1))
	w.hcpkg.Spec.Paused = true
	setSpec(w.packages[namespaceOf("early-1")], revision(2), t0.Add(-time.Hour)) // failed
	w.cluster("new-1", "early")
	w.update, w.history = revision(3), append(w.history, revision(3))

	plan := compute(g, w)
	// No update, not even the fix for early-1; the new target gets the current revision.
	g.Expect(describe(plan)).To(Equal([]string{"create new-1 rev1 NewTarget"}))
}

func TestPausedLetsInFlightUpdatesFinish(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	w.hcpkg.Spec.Paused = true
	p := w.packages[namespaceOf("early-1")]
	setSpec(p, revision(2), t0.Add(-time.Minute))
	progress(p, t0)

	plan := compute(g, w)
	g.Expect(describe(plan)).To(BeEmpty())
	g.Expect(plan.Counts.Progressed).To(Equal(int32(1)))
}

func TestCompletion(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal").progressedAll(revision(2))
	w.find("normal-1").Available = false
	w.pkg("normal-1", revision(1), t0.Add(-time.Hour))

	plan := compute(g, w)
	g.Expect(plan.Completed).To(BeTrue(), "ineligible targets do not hold the rollout")
	g.Expect(plan.RevisionsInUse).To(Equal([]string{"rev1", "rev2"}))
	status := convoyv1alpha1.HostedClusterPackageStatus{CurrentRevision: "rev1"}
	plan.WriteStatus(&status)
	g.Expect(status.CurrentRevision).To(Equal("rev2"))
	g.Expect(status.UpdateRevision).To(Equal("rev2"))

	w.find("normal-1").Available = true
	plan = compute(g, w)
	g.Expect(plan.Completed).To(BeFalse())
	g.Expect(describe(plan)).To(Equal([]string{"update normal-1 rev2 WithinBudget"}))
}

func TestTemplateChangeIsANewRevision(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early").progressedAll(revision(1))
	rev := revision(1)
	rev.Name, rev.Template.Path = "rev1b", "packages/other"
	w.update, w.history = rev, append(w.history, rev)

	plan := compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{"update early-1 rev1b WithinBudget"}))
	g.Expect(plan.Counts.Updated).To(Equal(int32(0)))
}

func TestPackagePausedByHandStillMatchesItsRevision(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early").progressedAll(revision(2))
	w.packages[namespaceOf("early-1")].Spec.Paused = true

	plan := compute(g, w)
	g.Expect(plan.Counts.Updated).To(Equal(int32(1)))
	g.Expect(plan.Counts.Paused).To(Equal(int32(1)))
	g.Expect(describe(plan)).To(BeEmpty())
}
