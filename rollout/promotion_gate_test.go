package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

func TestPromotionHoldStartsNothingAtTheUpdateRevision(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal").progressedAll(revision(1))
	in := w.input()
	in.Promotion = PromotionGate{Hold: "Promotion holds: the bus cannot be read."}
	plan, err := Compute(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(describe(plan)).To(BeEmpty())
	g.Expect(plan.Gate).To(Equal(&convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GatePromotion, Partition: "early",
		Message: "Promotion holds: the bus cannot be read."}))

	plan = compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{"update early-1 rev2 WithinBudget"}), "the same world without the hold")
}

func TestPromotionHoldLetsUpdatesInFlightFinish(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	updating := w.pkg("early-1", revision(2), t0.Add(-time.Minute))
	setCondition(updating, convoyv1alpha1.AvailableCondition, "False", t0, "rolling")
	in := w.input()
	in.Promotion = PromotionGate{Hold: "Promotion holds."}
	plan, err := Compute(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(describe(plan)).To(BeEmpty(), "early-2 does not start, early-1 stays on rev2")
	g.Expect(plan.Reject).To(BeFalse(), "a hold alone rejects nothing")
}

func TestPromotionWithdrawnRollsBackUnderARollbackPolicy(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	w.pkg("early-1", revision(2), t0.Add(-time.Minute))
	w.hcpkg.Spec.FailurePolicy = convoyv1alpha1.FailurePolicy{Action: convoyv1alpha1.FailureActionRollback,
		RollbackScope: convoyv1alpha1.RollbackUpdated}
	in := w.input()
	in.Promotion = PromotionGate{Withdrawn: true, Hold: "Commit 02eeeeeeeeee was withdrawn upstream."}
	plan, err := Compute(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Reject).To(BeTrue())
	g.Expect(plan.Gate.Type).To(Equal(convoyv1alpha1.GatePromotion))
	g.Expect(describe(plan)).To(Equal([]string{"update early-1 rev1 Rollback"}))

	w.hcpkg.Spec.FailurePolicy = convoyv1alpha1.FailurePolicy{}
	in = w.input()
	in.Promotion = PromotionGate{Withdrawn: true, Hold: "Commit 02eeeeeeeeee was withdrawn upstream."}
	plan, err = Compute(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Reject).To(BeFalse(), "without a Rollback policy the rollout only stops")
	g.Expect(describe(plan)).To(BeEmpty())
}

func TestPromotionWaitingIsTheGateOnlyWhenNothingElseHolds(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early").progressedAll(revision(2))
	in := w.input()
	in.Promotion = PromotionGate{Waiting: "Commit 03eeeeeeeeee waits for the upstream sectors."}
	plan, err := Compute(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Completed).To(BeTrue())
	g.Expect(plan.Gate).To(Equal(&convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GatePromotion,
		Message: "Commit 03eeeeeeeeee waits for the upstream sectors."}))
}
