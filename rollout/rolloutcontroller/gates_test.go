package rolloutcontroller

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout"
)

// gateAt returns a gate of type at partition, opening by itself at until (zero: never).
func gateAt(typ, partition string, until time.Time) *convoyv1alpha1.RolloutGate {
	gate := &convoyv1alpha1.RolloutGate{Type: typ, Partition: partition}
	if !until.IsZero() {
		gate.Until = &metav1.Time{Time: until}
	}
	return gate
}

// TestRolloutProgressNamesWhatHoldsTheRollout: a gate makes the rollout wait (Ready=False,
// reason Gated, Reconciling=True) with the gate in the message; a rejected revision and
// failures beyond the failure policy stall it; failures the policy tolerates do not.
func TestRolloutProgressNamesWhatHoldsTheRollout(t *testing.T) {
	until := time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC)
	failed := []convoyv1alpha1.PackageFailure{{HostedCluster: "clusters/e1", Message: "not available"}}
	one := intstr.FromInt32(1)
	for _, tc := range []struct {
		name        string
		gate        *convoyv1alpha1.RolloutGate
		failed      []convoyv1alpha1.PackageFailure
		maxFailures *intstr.IntOrString
		rejected    string
		class       pass.Class
		reason      string
		message     string
	}{
		{name: "awaiting approval", gate: gateAt(convoyv1alpha1.GateApproval, "normal", time.Time{}),
			class: pass.ClassWaiting, reason: convoyv1alpha1.GatedReason,
			message: "Rollout of revision addon-b is gated (Approval): Partition normal awaits approval at revision addon-b. 2/6 packages progressed."},
		{name: "soaking", gate: gateAt(convoyv1alpha1.GateSoak, "late", until),
			class: pass.ClassWaiting, reason: convoyv1alpha1.GatedReason,
			message: "Rollout of revision addon-b is gated (Soak): Partition late waits for the soak of the previous partition until 2026-11-27T14:00:00Z. 2/6 packages progressed."},
		{name: "outside the windows", gate: gateAt(convoyv1alpha1.GateWindow, "early", time.Time{}),
			class: pass.ClassWaiting, reason: convoyv1alpha1.GatedReason,
			message: "Rollout of revision addon-b is gated (Window): Partition early waits outside the rollout windows until no known time. 2/6 packages progressed."},
		{name: "a failure without a failure policy", failed: failed,
			class: pass.ClassStalled, reason: convoyv1alpha1.RolloutBlockedReason,
			message: "Rollout of revision addon-b is blocked: 1 package(s) failed, first clusters/e1: not available"},
		{name: "a tolerated failure", failed: failed, maxFailures: &one,
			class: pass.ClassWaiting, reason: convoyv1alpha1.ProgressingReason,
			message: "Rolling out revision addon-b: 2/6 packages progressed."},
		{name: "failures beyond the tolerance", failed: failed, maxFailures: &one,
			gate:  gateAt(convoyv1alpha1.GateFailures, "early", time.Time{}),
			class: pass.ClassStalled, reason: convoyv1alpha1.RolloutBlockedReason,
			message: "Rollout of revision addon-b is blocked: 1 package(s) failed, first clusters/e1: not available"},
		{name: "rejected", failed: failed, rejected: "addon-b", gate: gateAt(convoyv1alpha1.GateFailures, "early", time.Time{}),
			class: pass.ClassStalled, reason: convoyv1alpha1.RolloutRejectedReason,
			message: "Revision addon-b is rejected by the failure policy and not rolled out again until a new commit or template change: 1/6 packages on it."},
		{name: "another revision was rejected", rejected: "addon-a",
			class: pass.ClassWaiting, reason: convoyv1alpha1.ProgressingReason,
			message: "Rolling out revision addon-b: 2/6 packages progressed."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &convoyv1alpha1.HostedClusterPackage{}
			obj.Spec.FailurePolicy.MaxFailures = tc.maxFailures
			obj.Status.RejectedRevision = tc.rejected
			plan := &rollout.Plan{UpdateRevision: "addon-b", Gate: tc.gate, Failed: tc.failed,
				Counts: rollout.Counts{Total: 6, Updated: 1, Progressed: 2, Failed: int32(len(tc.failed))}}
			out := pass.Classify(rolloutProgress(obj, plan, time.Minute), time.Minute)
			g.Expect([]any{out.Class, out.Reason, out.Message}).To(Equal([]any{tc.class, tc.reason, tc.message}))
		})
	}
}

// TestWriteGatesNamesTheRejectedRevision: status.rejectedRevision names the update revision
// while it is rejected, from the pass that rejects it on, and nothing once a new revision
// supersedes it.
func TestWriteGatesNamesTheRejectedRevision(t *testing.T) {
	g := NewWithT(t)
	gate := gateAt(convoyv1alpha1.GateFailures, "early", time.Time{})
	s := &scope{obj: &convoyv1alpha1.HostedClusterPackage{}, update: rollout.Revision{Name: "addon-b"},
		plan: &rollout.Plan{Gate: gate, Reject: true}}
	writeGates(s)
	g.Expect(s.obj.Status.Gate).To(Equal(gate))
	g.Expect(s.obj.Status.RejectedRevision).To(Equal("addon-b"), "the pass that rejects")

	s.plan, s.update.Rejected = &rollout.Plan{}, true
	writeGates(s)
	g.Expect(s.obj.Status.Gate).To(BeNil())
	g.Expect(s.obj.Status.RejectedRevision).To(Equal("addon-b"), "a later pass")

	s.update = rollout.Revision{Name: "addon-c"}
	writeGates(s)
	g.Expect(s.obj.Status.RejectedRevision).To(BeEmpty(), "a new revision")
}

// TestReportGatesAnnouncesEachGateOnce: an event when a gate starts holding the rollout, none
// while the same gate holds it (even when its until moves), another for another gate or
// revision; a Warning when the update revision is newly rejected.
func TestReportGatesAnnouncesEachGateOnce(t *testing.T) {
	g := NewWithT(t)
	rec := events.NewFakeRecorder(10)
	r := &HostedClusterPackageReconciler{Recorder: rec}
	until := time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC)
	report := func(before, after convoyv1alpha1.HostedClusterPackageStatus, plan *rollout.Plan) []string {
		obj := &convoyv1alpha1.HostedClusterPackage{Status: after}
		r.reportGates(context.Background(), &scope{obj: obj, before: &before, plan: plan,
			update: rollout.Revision{Name: after.UpdateRevision, Commit: "0123456789abcdef"}})
		var out []string
		for len(rec.Events) > 0 {
			out = append(out, <-rec.Events)
		}
		return out
	}
	soak := convoyv1alpha1.HostedClusterPackageStatus{UpdateRevision: "addon-b", Gate: gateAt(convoyv1alpha1.GateSoak, "normal", until)}
	g.Expect(report(convoyv1alpha1.HostedClusterPackageStatus{UpdateRevision: "addon-b"}, soak, &rollout.Plan{})).To(Equal([]string{
		"Normal Gated Partition normal waits for the soak of the previous partition until 2026-11-27T14:00:00Z."}))
	later := *soak.DeepCopy()
	later.Gate.Until.Time = until.Add(time.Minute)
	g.Expect(report(soak, later, &rollout.Plan{})).To(BeEmpty(), "the same gate")

	approval := convoyv1alpha1.HostedClusterPackageStatus{UpdateRevision: "addon-b", Gate: gateAt(convoyv1alpha1.GateApproval, "late", time.Time{})}
	approval.Gate.Message = "Partition late waits for an approval: run `convoy approve addon --partition late`."
	g.Expect(report(later, approval, &rollout.Plan{})).To(Equal([]string{
		"Normal Gated Partition late waits for an approval: run `convoy approve addon --partition late`."}))
	newer := *approval.DeepCopy()
	newer.UpdateRevision = "addon-c"
	g.Expect(report(approval, newer, &rollout.Plan{})).To(HaveLen(1), "the same gate of another revision")

	rejected := convoyv1alpha1.HostedClusterPackageStatus{UpdateRevision: "addon-c", CurrentRevision: "addon-a",
		RejectedRevision: "addon-c", Gate: gateAt(convoyv1alpha1.GateFailures, "early", time.Time{})}
	g.Expect(report(newer, rejected, &rollout.Plan{Reject: true, RejectReason: "2 packages failed, more than maxFailures 1"})).To(Equal([]string{
		"Warning Gated Rollout of revision addon-c is stopped by failures in partition early.",
		"Warning RevisionRejected Revision addon-c (commit 0123456789ab) is rejected (2 packages failed, more than maxFailures 1); " +
			"rolling back to revision addon-a."}))
	g.Expect(report(rejected, rejected, &rollout.Plan{})).To(BeEmpty(), "said once")
	g.Expect(rollbackTarget("")).To(Equal("there is no current revision to roll back to."), "a first rollout")
}

// TestReconcileRejectAnnotatesTheUpdateRevisionOnce: a plan that says Reject sets the
// annotation, with the reason, on the update revision's ControllerRevision in one patch; a
// revision that carries it is not patched again.
func TestReconcileRejectAnnotatesTheUpdateRevisionOnce(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "addon-b"}}
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cr.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	r := &HostedClusterPackageReconciler{Client: c}
	s := &scope{obj: &convoyv1alpha1.HostedClusterPackage{}, update: rollout.Revision{Name: "addon-b"}, updateObj: cr.DeepCopy(),
		plan: &rollout.Plan{}}
	g.Expect(r.reconcileReject(context.Background(), s)).To(Succeed())
	g.Expect(patches).To(BeZero(), "no Reject, no patch")

	s.plan = &rollout.Plan{Reject: true, RejectReason: "2 packages failed"}
	g.Expect(r.reconcileReject(context.Background(), s)).To(Succeed())
	got := &appsv1.ControllerRevision{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(cr), got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(rollout.RejectedAnnotation, "2 packages failed"))
	g.Expect(s.update.Rejected).To(BeTrue())
	g.Expect(patches).To(Equal(1))

	sr, err := decodeRevision(withData(got))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sr.rev.Rejected).To(BeTrue(), "read back as rejected")
	s.updateObj = got
	g.Expect(r.reconcileReject(context.Background(), s)).To(Succeed())
	g.Expect(patches).To(Equal(1), "a rejected revision is not patched again")
}

// withData gives cr the data of a revision, so that it decodes.
func withData(cr *appsv1.ControllerRevision) *appsv1.ControllerRevision {
	cr = cr.DeepCopy()
	cr.Data = runtime.RawExtension{Raw: []byte(`{"commit":"0123456789abcdef","template":{"sourceRef":{"name":"addons"},"path":"pkg"}}`)}
	return cr
}

// TestRecordGatesSetsTheGateMetrics: the gate gauge holds 1 for the gate in force and 0 for
// the others, partitions awaiting approval are counted, and a rejection counts one rollback,
// even when a pass starts from a cache that does not yet show the rejection.
func TestRecordGatesSetsTheGateMetrics(t *testing.T) {
	g := NewWithT(t)
	name := "metrics-gates"
	m := newRolloutMetrics()
	before := &convoyv1alpha1.HostedClusterPackageStatus{}
	st := &convoyv1alpha1.HostedClusterPackageStatus{Gate: gateAt(convoyv1alpha1.GateApproval, "normal", time.Time{}),
		Partitions: []convoyv1alpha1.PartitionStatus{{Name: "early", State: convoyv1alpha1.PartitionDone},
			{Name: "normal", State: convoyv1alpha1.PartitionAwaitingApproval}, {Name: "late", State: convoyv1alpha1.PartitionPending}}}
	m.recordGates(name, before, st)
	for _, gate := range gateTypes {
		want := 0.0
		if gate == convoyv1alpha1.GateApproval {
			want = 1
		}
		g.Expect(testutil.ToFloat64(gateGauge.WithLabelValues(name, gate))).To(Equal(want), gate)
	}
	g.Expect(testutil.ToFloat64(awaitingApprovalGauge.WithLabelValues(name))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(rollbacksCounter.WithLabelValues(name))).To(BeZero())

	rejected := &convoyv1alpha1.HostedClusterPackageStatus{RejectedRevision: "addon-b",
		Gate: gateAt(convoyv1alpha1.GateFailures, "early", time.Time{})}
	m.recordGates(name, st, rejected)
	m.recordGates(name, st, rejected) // the cache lags behind the status write
	m.recordGates(name, rejected, rejected)
	g.Expect(testutil.ToFloat64(rollbacksCounter.WithLabelValues(name))).To(Equal(1.0), "one rejection, one rollback")
	m.recordGates(name, rejected, st)
	m.recordGates(name, st, rejected)
	g.Expect(testutil.ToFloat64(rollbacksCounter.WithLabelValues(name))).To(Equal(2.0),
		"the same revision rejected again after another came between")
	g.Expect(testutil.ToFloat64(gateGauge.WithLabelValues(name, convoyv1alpha1.GateFailures))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(awaitingApprovalGauge.WithLabelValues(name))).To(BeZero())
	m.forget(name)
	g.Expect(testutil.CollectAndCount(gateGauge, "convoy_rollout_gate")).To(BeZero())
}

// TestApprovalsAreIndexedByTheirHostedClusterPackage: the index and the watch map an approval
// to the HostedClusterPackage it names.
func TestApprovalsAreIndexedByTheirHostedClusterPackage(t *testing.T) {
	g := NewWithT(t)
	a := &convoyv1alpha1.PartitionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "addon-x1"},
		Spec: convoyv1alpha1.PartitionApprovalSpec{HostedClusterPackage: "addon", HostedClusterPackageUID: "uid-a", Partition: "normal",
			Revision: "addon-b", Commit: strings.Repeat("b", 40)}}
	for _, o := range []client.Object{a, &convoyv1alpha1.RolloutApproval{Spec: convoyv1alpha1.RolloutApprovalSpec{HostedClusterPackage: "addon"}},
		&convoyv1alpha1.ManualPromotion{Spec: convoyv1alpha1.ManualPromotionSpec{HostedClusterPackage: "addon"}},
		&convoyv1alpha1.PromotionApproval{Spec: convoyv1alpha1.PromotionApprovalSpec{HostedClusterPackage: "addon"}}} {
		g.Expect(indexApproval(o)).To(Equal([]string{"addon"}), "%T", o)
		reqs := requestForApproval(context.Background(), o)
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[0].Name).To(Equal("addon"))
	}
	g.Expect(indexApproval(&convoyv1alpha1.Package{})).To(BeNil())

	scheme := runtime.NewScheme()
	g.Expect(convoyv1alpha1.AddToScheme(scheme)).To(Succeed())
	other := a.DeepCopy()
	other.Name, other.Spec.HostedClusterPackage = "other-x1", "other"
	earlier := a.DeepCopy()
	earlier.Name, earlier.Spec.Revision = "addon-a0", "addon-a"
	legacy := &convoyv1alpha1.RolloutApproval{ObjectMeta: metav1.ObjectMeta{Name: "addon-l1", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: convoyv1alpha1.GroupVersion.String(), Kind: "HostedClusterPackage", Name: "addon", UID: "uid-a"}}},
		Spec: convoyv1alpha1.RolloutApprovalSpec{HostedClusterPackage: "addon", Partition: "normal", Revision: "addon-b", Commit: strings.Repeat("b", 40)}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(a, other, earlier, legacy).
		WithIndex(&convoyv1alpha1.PartitionApproval{}, approvalIndex, indexApproval).
		WithIndex(&convoyv1alpha1.RolloutApproval{}, approvalIndex, indexApproval).Build()
	r := &HostedClusterPackageReconciler{Client: c}
	got, err := r.listApprovals(context.Background(), "addon")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveLen(3))
	g.Expect(got[0]).To(And(HaveField("Name", "addon-l1"), HaveField("Namespace", ""), HaveField("HostedClusterPackageUID", types.UID("uid-a"))),
		"a legacy approval binds its owner's UID")
	g.Expect(got[1]).To(And(HaveField("Name", "addon-a0"), HaveField("Namespace", "team-a"), HaveField("Revision", "addon-a")))
	g.Expect(got[2]).To(And(HaveField("Name", "addon-x1"), HaveField("Commit", strings.Repeat("b", 40))))
}

// TestRejectionsHoldUntilTheCacheShowsThem: a ControllerRevision this process rejected reads as
// rejected while the cache still shows it as it was, and the memory goes once the cache shows
// the mark.
func TestRejectionsHoldUntilTheCacheShowsThem(t *testing.T) {
	g := NewWithT(t)
	var j rejections
	stale := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "addon-b", UID: "uid-b"}}
	other := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "addon-a", UID: "uid-a"}}
	j.mark(stale.UID, "addon")
	j.mark("uid-c", "other")

	revisions := []storedRevision{{obj: other}, {obj: stale}}
	j.apply(revisions)
	g.Expect(revisions[0].rev.Rejected).To(BeFalse())
	g.Expect(revisions[1].rev.Rejected).To(BeTrue(), "the cache has not seen the patch yet")

	shown := stale.DeepCopy()
	shown.Annotations = map[string]string{rollout.RejectedAnnotation: "failed"}
	j.apply([]storedRevision{{obj: shown, rev: rollout.Revision{Rejected: true}}})
	_, remembered := j.uids.Load(stale.UID)
	g.Expect(remembered).To(BeFalse(), "forgotten once the cache shows the mark")
	j.forget("other")
	_, remembered = j.uids.Load(types.UID("uid-c"))
	g.Expect(remembered).To(BeFalse(), "forgotten with its HostedClusterPackage")
}
