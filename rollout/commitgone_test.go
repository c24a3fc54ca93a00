package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// A Package available at a commit that a force-push dropped, and that the store cannot find
// any more (Progressing=True, CommitNotFound), holds no budget slot. The soak's failure: the
// Packages of the later partitions waited at such a commit, each holding a slot; the first
// partition's available Packages needed one to move to the next commit, and the later
// partitions could not start before it: the rollout stalled for good.
func TestPackagesAtAGoneCommitHoldNoSlot(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early").fleet(2, "normal").progressedAll(revision(1))
	// normal-2 never reached the gone commit: its spec moved there, its objects did not.
	w.packages[namespaceOf("normal-2")].Status.Revision = "previous"
	for _, name := range []string{"normal-1", "normal-2"} {
		p := w.packages[namespaceOf(name)]
		setCondition(p, convoyv1alpha1.ProgressingCondition, metav1.ConditionTrue, t0.Add(-time.Minute),
			"commit not found in source nor on its remote")
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == convoyv1alpha1.ProgressingCondition {
				p.Status.Conditions[i].Reason = convoyv1alpha1.CommitNotFoundReason
			}
		}
		g.Expect(commitGone(p)).To(BeTrue())
	}
	plan := compute(g, w)
	g.Expect(describe(plan)).To(ConsistOf("update early-1 rev2 WithinBudget"),
		"maxUnavailable 1: one slot, not held by the Packages at the gone commit")

	p := w.packages[namespaceOf("normal-1")]
	setCondition(p, convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, t0, "")
	g.Expect(commitGone(p)).To(BeFalse(), "only an available Package")
}
