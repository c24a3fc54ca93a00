package rolloutcontroller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// TestApprovalHoldsAPartitionUntilItsRevisionIsApproved: a partition that requires an approval
// waits (status.gate Approval, partition AwaitingApproval, Ready Gated, an event, the metrics)
// until a PartitionApproval of the update revision exists; an approval of another revision does
// not release it, and the approval of one commit does not let the next one through.
func TestApprovalHoldsAPartitionUntilItsRevisionIsApproved(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	f := &rolloutFleet{t: t, name: "approve-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	c1 := f.commit(1, true, false)
	clusters := prefixed(f.name, []string{"e", "n", "l"}, "")
	f.addClusters(clusters[0]+":early", clusters[1]+":normal", clusters[2]+":late")
	newHostedClusterPackage(t, f.name, f.ns, func(o *convoyv1alpha1.HostedClusterPackage) {
		o.Spec.Partition.Policies = []convoyv1alpha1.PartitionPolicy{{Name: "normal", RequireApproval: true}}
	})

	rev1 := f.expectAwaitingApproval(g, "normal", c1, clusters[0])
	f.approve(g, "normal", f.name+"-0000000000000000")
	g.Consistently(func(g Gomega) {
		g.Expect(getHCPkg(g, f.name).Status.Gate).To(HaveField("Type", convoyv1alpha1.GateApproval))
		g.Expect(packagesOf(g, f.name)).NotTo(HaveKey(clusters[1]))
	}).WithTimeout(2*time.Second).Should(Succeed(), "an approval of another revision does not count")
	f.expectEvent(g, GatedReason, "convoy approve "+f.name+" --partition normal")
	g.Expect(testutil.ToFloat64(awaitingApprovalGauge.WithLabelValues(f.name))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(gateGauge.WithLabelValues(f.name, convoyv1alpha1.GateApproval))).To(Equal(1.0))
	expectLogged(g, f.logged(), "Rollout gated", "gate", convoyv1alpha1.GateApproval, "partition", "normal", "revision", rev1)

	f.approve(g, "normal", rev1)
	f.expectComplete(g, c1, 3)
	g.Expect(getHCPkg(g, f.name).Status.Gate).To(BeNil())
	g.Expect(testutil.ToFloat64(awaitingApprovalGauge.WithLabelValues(f.name))).To(BeZero())

	c2 := f.commit(2, true, false)
	rev2 := f.expectAwaitingApproval(g, "normal", c2, clusters[0])
	g.Expect(rev2).NotTo(Equal(rev1))
	g.Expect(packagesOf(g, f.name)[clusters[1]].Spec.Revision).To(Equal(c1), "the approval of the previous commit does not let this one through")
	f.approve(g, "normal", rev2)
	f.expectComplete(g, c2, 3)
}

// expectAwaitingApproval waits until exactly the clusters done are on commit and partition
// waits for an approval of the update revision, and returns that revision.
func (f *rolloutFleet) expectAwaitingApproval(g *WithT, partition, commit string, done ...string) string {
	f.t.Helper()
	var rev string
	g.Eventually(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, f.name), commit)).To(ConsistOf(done))
		st := getHCPkg(g, f.name).Status
		rev = st.UpdateRevision
		g.Expect(st.Gate).NotTo(BeNil())
		g.Expect(*st.Gate).To(And(HaveField("Type", convoyv1alpha1.GateApproval), HaveField("Partition", partition)))
		g.Expect(partitionStates(st)).To(ContainElement(partition + "=" + convoyv1alpha1.PartitionAwaitingApproval))
		ready := metaCondition(st.Conditions, convoyv1alpha1.ReadyCondition)
		g.Expect(ready).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", convoyv1alpha1.GatedReason),
			HaveField("Message", And(HavePrefix("Rollout of revision "+rev+" is gated (Approval): "),
				ContainSubstring("convoy approve "+f.name+" --partition "+partition)))))
		g.Expect(metaCondition(st.Conditions, convoyv1alpha1.ReconcilingCondition)).To(HaveField("Status", metav1.ConditionTrue))
	}).Should(Succeed())
	return rev
}

// approve creates a PartitionApproval of partition at revision, as `convoy approve` does.
func (f *rolloutFleet) approve(g *WithT, partition, revision string) {
	f.t.Helper()
	a := approve(g, f.name, f.ns, partition, revision)
	f.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), a) })
}

// TestRollbackRejectsTheRevision: under a Rollback failure policy, a Package that misses its
// progress deadline stops the rollout; the controller marks the update revision rejected on its
// ControllerRevision, reports it in status.rejectedRevision with Stalled RolloutRejected and a
// Warning event, and the failed Package goes back to the current revision's commit.
func TestRollbackRejectsTheRevision(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	f := &rolloutFleet{t: t, name: "rollback-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	c1 := f.commit(1, true, false)
	clusters := prefixed(f.name, []string{"e", "n"}, "")
	f.addClusters(clusters[0]+":early", clusters[1]+":normal")
	zero := intstr.FromInt32(0)
	newHostedClusterPackage(t, f.name, f.ns, func(o *convoyv1alpha1.HostedClusterPackage) {
		o.Spec.FailurePolicy = convoyv1alpha1.FailurePolicy{MaxFailures: &zero, Action: convoyv1alpha1.FailureActionRollback,
			RollbackScope: convoyv1alpha1.RollbackFailed}
	})
	rev1 := f.expectComplete(g, c1, 2)
	f.setProgressDeadline(g, 4)

	bad := f.commit(2, false, false)
	g.Eventually(func(g Gomega) {
		g.Expect(getHCPkg(g, f.name).Status.UpdateRevision).NotTo(Equal(rev1))
	}).Should(Succeed(), "the bad commit is the update revision")
	// The first cluster fails 4s after its update; the pass that sees it rejects the revision
	// and moves the cluster back, so the failure itself may never show in status.
	g.Eventually(func(g Gomega) {
		g.Expect(getHCPkg(g, f.name).Status.RejectedRevision).NotTo(BeEmpty())
	}).Should(Succeed(), "the failure policy rejects the bad commit's revision")
	obj := getHCPkg(g, f.name)
	rev2 := obj.Status.UpdateRevision
	g.Expect(obj.Status.RejectedRevision).To(Equal(rev2))
	cr := &appsv1.ControllerRevision{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: rev2}, cr)).To(Succeed())
	g.Expect(cr.Annotations).To(HaveKeyWithValue(rollout.RejectedAnnotation, ContainSubstring(clusters[0])),
		"the reason names the failed cluster")
	g.Eventually(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, f.name), c1)).To(ConsistOf(clusters), "the failed cluster is back on the current commit")
		st := getHCPkg(g, f.name).Status
		g.Expect(st.CurrentRevision).To(Equal(rev1))
		g.Expect(metaCondition(st.Conditions, convoyv1alpha1.StalledCondition)).To(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", convoyv1alpha1.RolloutRejectedReason)))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, f.name), bad)).To(BeEmpty())
	}).WithTimeout(2*time.Second).Should(Succeed(), "a rejected revision is not rolled out again")
	f.expectEvent(g, RevisionRejectedReason, "Revision "+rev2)
	g.Expect(testutil.ToFloat64(rollbacksCounter.WithLabelValues(f.name))).To(Equal(1.0))
	expectLogged(g, f.logged(), "Revision rejected", "revision", rev2, "commit", bad)
}

// TestInvalidWindowStallsWithInvalidSpec: a window whose schedule does not parse stalls the
// rollout with InvalidSpec, naming the window, before anything is applied.
func TestInvalidWindowStallsWithInvalidSpec(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	f := &rolloutFleet{t: t, name: "window-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	f.commit(1, true, false)
	f.addClusters(prefixed(f.name, []string{"e"}, ":early")...)
	newHostedClusterPackage(t, f.name, f.ns, func(o *convoyv1alpha1.HostedClusterPackage) {
		o.Spec.Windows = []convoyv1alpha1.RolloutWindow{{Kind: convoyv1alpha1.WindowAllow, Schedule: "every tuesday",
			Duration: metav1.Duration{Duration: time.Hour}}}
	})
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, f.name).Status
		g.Expect(metaCondition(st.Conditions, convoyv1alpha1.StalledCondition)).To(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", convoyv1alpha1.InvalidSpecReason),
			HaveField("Message", ContainSubstring("window"))))
		g.Expect(packagesOf(g, f.name)).To(BeEmpty())
	}).Should(Succeed())
}

// expectEvent waits for an event of the HostedClusterPackage with reason whose note contains
// text.
func (f *rolloutFleet) expectEvent(g *WithT, reason, text string) {
	f.t.Helper()
	g.Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(env.Client.List(context.Background(), list)).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "HostedClusterPackage" && e.Regarding.Name == f.name && e.Reason == reason {
				notes = append(notes, e.Note)
			}
		}
		g.Expect(notes).To(ContainElement(ContainSubstring(text)))
	}).Should(Succeed())
}

// metaCondition returns the condition of type t, or nil.
func metaCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
