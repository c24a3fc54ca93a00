package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// markCommitGone makes p wait because its commit is gone: Progressing=True, CommitNotFound.
func markCommitGone(g Gomega, p *convoyv1alpha1.Package) {
	setCondition(p, convoyv1alpha1.ProgressingCondition, metav1.ConditionTrue, t0.Add(-time.Minute),
		"commit not found in source nor on its remote")
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == convoyv1alpha1.ProgressingCondition {
			p.Status.Conditions[i].Reason = convoyv1alpha1.CommitNotFoundReason
		}
	}
	g.Expect(commitGone(p)).To(BeTrue())
}

// A Package that progressed at the completed current revision and waits only because its
// commit is gone holds no budget slot: whatever comes back, it has applied it. The soak's
// failure: the Packages of the later partitions waited at such a commit, each holding a slot;
// the first partition's available Packages needed one to move to the next commit, and the
// later partitions could not start before it: the rollout stalled for good.
func TestPackagesSettledAtAGoneCommitHoldNoSlot(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early").fleet(2, "normal").progressedAll(revision(1))
	markCommitGone(g, w.packages[namespaceOf("normal-1")])
	plan := compute(g, w)
	g.Expect(describe(plan)).To(ConsistOf("update early-1 rev2 WithinBudget"),
		"maxUnavailable 1: one slot, not held by the Package settled at the gone commit")

	p := w.packages[namespaceOf("normal-1")]
	setCondition(p, convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, t0, "")
	g.Expect(commitGone(p)).To(BeFalse(), "only an available Package")
}

// A Package pinned to a gone commit it never applied keeps its slot: were the commit to come
// back, it would apply it. In a partition the update revision has not reached, the rollout
// moves it back to the current revision within that slot; in a reached one, on to the update
// revision (AlreadyUnavailable).
func TestPackagesPinnedToAGoneCommitKeepTheirSlotAndMoveWithinIt(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal").progressedAll(revision(1))
	w.update, w.history = revision(3), []Revision{revision(1), revision(2), revision(3)}
	for _, name := range []string{"early-1", "normal-1"} {
		p := w.packages[namespaceOf(name)]
		setSpec(p, revision(2), t0.Add(-time.Minute)) // pinned by the superseded rev2, never reached
		markCommitGone(g, p)
	}
	plan := compute(g, w)
	g.Expect(describe(plan)).To(ConsistOf("update early-1 rev3 AlreadyUnavailable", "update normal-1 rev1 CommitGone"),
		"each moves within the slot it holds, none takes another")

	w = newWorld().fleet(1, "early", "normal").progressedAll(revision(1))
	setSpec(w.packages[namespaceOf("normal-1")], revision(1), t0.Add(-time.Minute))
	w.packages[namespaceOf("normal-1")].Status.Revision = "previous" // at the current revision, never applied
	markCommitGone(g, w.packages[namespaceOf("normal-1")])
	g.Expect(describe(compute(g, w))).To(BeEmpty(), "it holds the only slot")

	w.hcpkg.Spec.Paused = true
	w.update, w.history = revision(3), []Revision{revision(1), revision(2), revision(3)}
	setSpec(w.packages[namespaceOf("normal-1")], revision(2), t0.Add(-time.Minute))
	markCommitGone(g, w.packages[namespaceOf("normal-1")])
	g.Expect(describe(compute(g, w))).To(BeEmpty(), "nothing moves under spec.paused")
}

// A Package whose spec moved to a commit that was gone before its controller applied it has
// an Available condition of its previous generation: its controller never judged the new
// spec. It waits for the gone commit all the same, and goes back to the current revision.
// The soak's failure (seed 1795853754295794458): a leader killed while pinning a later
// partition, a force-push dropping that revision's commit, and two Packages of that partition
// held their slots for good while the earlier partitions went back, against the barrier.
func TestPackagesThatNeverAppliedAGoneCommitGoBack(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal").progressedAll(revision(1))
	w.update, w.history = revision(3), []Revision{revision(1), revision(2), revision(3)}
	p := w.packages[namespaceOf("normal-1")]
	setSpec(p, revision(2), t0.Add(-time.Minute))
	markCommitGone(g, p)
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == convoyv1alpha1.AvailableCondition {
			p.Status.Conditions[i].ObservedGeneration = p.Generation - 1
		}
	}
	g.Expect(commitGone(p)).To(BeFalse(), "its Available condition is of the previous spec")
	g.Expect(waitsForGoneCommit(p)).To(BeTrue())
	g.Expect(describe(compute(g, w))).To(ContainElement("update normal-1 rev1 CommitGone"))

	w.find("normal-1").Available = false
	g.Expect(describe(compute(g, w))).To(ContainElement("update normal-1 rev1 CommitGone"),
		"held, its HostedCluster not available: left pinned, the commit coming back would reach it")

	p.Status.LastAttemptedRevision = p.Spec.Revision
	g.Expect(describe(compute(g, w))).NotTo(ContainElement(ContainSubstring("normal-1")),
		"held after it attempted the commit: the update may be what broke its cluster; it keeps its slot")
	w.find("normal-1").Available = true
	g.Expect(describe(compute(g, w))).NotTo(ContainElement(ContainSubstring("normal-1")),
		"attempted, and not available at its generation: it waits for its deadline")

	p.Status.LastAttemptedRevision, p.Status.Revision = "", revision(2).Commit
	g.Expect(describe(compute(g, w))).NotTo(ContainElement(ContainSubstring("normal-1")),
		"its cluster runs another revision than the current one")
}
