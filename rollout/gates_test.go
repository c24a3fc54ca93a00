package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

func TestInstantStrategyReachesOnlyApprovedPartitions(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal", "late").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = convoyv1alpha1.HostedClusterPackageStrategy{Instant: &convoyv1alpha1.InstantStrategy{}}
	w.hcpkg.Spec.Partition.Policies = []convoyv1alpha1.PartitionPolicy{
		{Name: "early", RequireApproval: true, SoakSeconds: ptr(int32(3600))},
		{Name: "late", RequireApproval: true},
	}
	w.approvals = []Approval{approval("a", "late", revision(2)), approval("b", "early", revision(1))}

	plan := compute(g, w)
	g.Expect(describe(plan)).To(ConsistOf("update normal-1 rev2 WithinBudget", "update late-1 rev2 WithinBudget"))
	g.Expect(states(plan)).To(Equal([]string{"early=AwaitingApproval", "normal=Progressing", "late=Progressing"}))
	g.Expect(plan.Gate.Type).To(Equal(convoyv1alpha1.GateApproval))
	g.Expect(plan.Gate.Partition).To(Equal("early"))
	g.Expect(plan.RequeueAfter).To(BeZero(), "the instant strategy has no soak")
}

func TestRejectedFirstRolloutHasNothingToGoBackTo(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal")
	w.current, w.update, w.history = nil, revision(1), []Revision{revision(1)}
	w.hcpkg.Spec.FailurePolicy = convoyv1alpha1.FailurePolicy{Action: convoyv1alpha1.FailureActionRollback,
		RollbackScope: convoyv1alpha1.RollbackUpdated}
	p := w.pkg("early-1", revision(1), t0.Add(-time.Hour))
	setSpec(p, revision(1), t0.Add(-time.Hour)) // never progressed since

	plan := compute(g, w)
	g.Expect(plan.Failed).To(HaveLen(1))
	g.Expect(plan.Reject).To(BeTrue())
	g.Expect(plan.RejectReason).To(ContainSubstring("clusters/early-1 (ProgressDeadlineExceeded)"))
	g.Expect(describe(plan)).To(BeEmpty())
	g.Expect(plan.Gate.Message).To(ContainSubstring("no earlier revision to roll back to"))

	w.update.Rejected = true
	plan = compute(g, w)
	g.Expect(plan.Reject).To(BeFalse(), "already rejected")
	g.Expect(describe(plan)).To(BeEmpty())
	g.Expect(plan.Completed).To(BeFalse())
}

func TestApprovalHoldsTheReplacementOfAFailedPackage(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(3))
	w.hcpkg.Spec.Partition.Policies = []convoyv1alpha1.PartitionPolicy{{Name: "normal", RequireApproval: true}}
	w.approvals = []Approval{approval("a", "normal", revision(2))}
	setSpec(w.packages[namespaceOf("normal-1")], revision(2), t0.Add(-time.Hour)) // failed at rev2
	w.update, w.history = revision(3), append(w.history, revision(3))

	plan := compute(g, w)
	g.Expect(describe(plan)).To(ConsistOf("update early-1 rev3 WithinBudget"), "the approval of rev2 does not let rev3 through")

	w.approvals = append(w.approvals, approval("b", "normal", revision(3)))
	plan = compute(g, w)
	g.Expect(describe(plan)).To(ConsistOf("update normal-1 rev3 ReplaceFailed", "update early-1 rev3 WithinBudget"))
}

func TestWriteStatusWritesTheGate(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy.RollingUpgrade.SoakSeconds = 600
	w.pkg("early-1", revision(2), t0.Add(-time.Minute))

	plan := compute(g, w)
	g.Expect(plan.RequeueAfter).To(Equal(9 * time.Minute))
	var status convoyv1alpha1.HostedClusterPackageStatus
	plan.WriteStatus(&status)
	g.Expect(status.Gate).NotTo(BeNil())
	g.Expect(status.Gate.Type).To(Equal(convoyv1alpha1.GateSoak))
	g.Expect(status.Gate.Partition).To(Equal("normal"))
	g.Expect(status.Gate.Until.Time).To(Equal(t0.Add(9 * time.Minute)))
	g.Expect(status.Partitions[0].State).To(Equal(convoyv1alpha1.PartitionSoaking))
	g.Expect(status.Partitions[0].Until.Time).To(Equal(t0.Add(9 * time.Minute)))
	g.Expect(status.CurrentRevision).To(BeEmpty())

	w.now = t0.Add(9 * time.Minute)
	plan = compute(g, w)
	plan.WriteStatus(&status)
	g.Expect(describe(plan)).To(Equal([]string{"update normal-1 rev2 WithinBudget"}))
	g.Expect(status.Gate).To(BeNil())
	g.Expect(status.Partitions[0].Until).To(BeNil())
}

func TestMaxFailuresPercentage(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(5, "early", "normal").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(3))
	w.hcpkg.Spec.FailurePolicy.MaxFailures = ptr(intstr.FromString("20%")) // 2 of 10
	for _, name := range []string{"early-1", "early-2"} {
		setSpec(w.packages[namespaceOf(name)], revision(2), t0.Add(-time.Hour))
	}
	for _, name := range []string{"early-3", "early-4", "early-5"} {
		w.pkg(name, revision(2), t0.Add(-time.Hour))
	}
	plan := compute(g, w)
	g.Expect(plan.Failed).To(HaveLen(2))
	g.Expect(plan.Gate).To(BeNil())
	g.Expect(states(plan)).To(Equal([]string{"early=Done", "normal=Progressing", "late=Done"}))
	g.Expect(describe(plan)).To(Equal([]string{"update normal-1 rev2 WithinBudget"}), "two failures hold two of three slots")
	g.Expect(plan.Completed).To(BeFalse())
}

func TestToleratedFailuresKeepTheRolloutFromCompleting(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal").progressedAll(revision(2))
	w.hcpkg.Spec.FailurePolicy.MaxFailures = ptr(intstr.FromInt32(1))
	setSpec(w.packages[namespaceOf("normal-1")], revision(2), t0.Add(-time.Hour))

	plan := compute(g, w)
	g.Expect(plan.Failed).To(HaveLen(1))
	g.Expect(plan.Completed).To(BeFalse())
	g.Expect(states(plan)).To(Equal([]string{"early=Done", "normal=Done", "late=Done"}))
	g.Expect(plan.Gate.Type).To(Equal(convoyv1alpha1.GateFailures))
	g.Expect(plan.Gate.Partition).To(Equal("normal"))
	g.Expect(plan.Gate.Message).To(ContainSubstring("1 tolerated failure(s) keep it from completing"))
	g.Expect(plan.Reject).To(BeFalse())
}
