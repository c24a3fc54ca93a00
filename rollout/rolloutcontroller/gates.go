package rolloutcontroller

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// Event reasons of the rollout's gates.
const (
	// GatedReason: a gate (a soak, an approval, a window, the failure policy) started holding
	// the rollout.
	GatedReason = convoyv1alpha1.GatedReason
	// RevisionRejectedReason: the failure policy rolled the rollout back and rejected its update
	// revision.
	RevisionRejectedReason = "RevisionRejected"
)

// listApprovals returns the PartitionApprovals and legacy RolloutApprovals that name the
// HostedClusterPackage hcpkg, from the cache, sorted by namespace and name; the planner decides
// which count (rollout.Approval.Approves).
func (r *HostedClusterPackageReconciler) listApprovals(ctx context.Context, hcpkg string) ([]rollout.Approval, error) {
	byName := client.MatchingFields{approvalIndex: hcpkg}
	list := &convoyv1alpha1.PartitionApprovalList{}
	if err := r.Client.List(ctx, list, byName, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing PartitionApprovals: %w", err)
	}
	legacy := &convoyv1alpha1.RolloutApprovalList{}
	if err := r.Client.List(ctx, legacy, byName, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing RolloutApprovals: %w", err)
	}
	out := make([]rollout.Approval, 0, len(list.Items)+len(legacy.Items))
	for i := range list.Items {
		out = append(out, rollout.ApprovalOf(&list.Items[i]))
	}
	for i := range legacy.Items {
		out = append(out, rollout.LegacyApprovalOf(&legacy.Items[i]))
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace < out[j].Namespace || (out[i].Namespace == out[j].Namespace && out[i].Name < out[j].Name)
	})
	return out, nil
}

// pruneApprovals deletes the approvals of the pruned revisions. An approval of a revision that
// is not in the history for another reason (one given by hand, or before its revision was
// seen) is left alone: only a revision this controller deleted is known to be gone for good.
// One that escapes (made while its revision was pruned) never counts for a revision made again
// under the same name: it is older than that revision (rollout.Approval.Approves).
func (r *HostedClusterPackageReconciler) pruneApprovals(ctx context.Context, approvals []rollout.Approval, pruned map[string]bool) error {
	for _, a := range approvals {
		if !pruned[a.Revision] {
			continue
		}
		var obj client.Object = &convoyv1alpha1.PartitionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name}}
		if a.Namespace == "" {
			obj = &convoyv1alpha1.RolloutApproval{ObjectMeta: metav1.ObjectMeta{Name: a.Name}}
		}
		if err := r.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("pruning the approval %s of the pruned revision %s: %w", a.Name, a.Revision, err)
		}
	}
	return nil
}

// reconcileReject marks the update revision rejected when the plan says Reject: one patch of
// rollout.RejectedAnnotation, whose value is the plan's reason, onto its ControllerRevision
// (s.updateObj), before the apply step moves Packages back. It sets s.update.Rejected. A
// revision already marked is left as it is.
func (r *HostedClusterPackageReconciler) reconcileReject(ctx context.Context, s *scope) error {
	if !s.plan.Reject || s.updateObj == nil || isRejected(s.updateObj) {
		return nil
	}
	cr := s.updateObj
	patch, err := rejectPatch(s.plan.RejectReason)
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, cr, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("rejecting ControllerRevision %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	s.update.Rejected = true
	r.rejected.mark(cr.UID, s.obj.Name)
	return nil
}

// rejections remember the ControllerRevisions this process marked rejected until the cache
// shows the mark. A pass that read such a ControllerRevision as it was before the patch would
// take the rejected revision for a good one and, its failed clusters moved back and healthy,
// roll it out again. Each UID maps to its HostedClusterPackage's name, which forget uses.
type rejections struct{ uids sync.Map }

// mark remembers that the ControllerRevision uid of the HostedClusterPackage hcpkg is rejected.
func (j *rejections) mark(uid types.UID, hcpkg string) { j.uids.Store(uid, hcpkg) }

// apply marks rejected the revisions this process rejected, and forgets those the cache shows
// rejected.
func (j *rejections) apply(revisions []storedRevision) {
	for i := range revisions {
		sr := &revisions[i]
		if _, ok := j.uids.Load(sr.obj.UID); !ok {
			continue
		}
		if isRejected(sr.obj) {
			j.uids.Delete(sr.obj.UID)
		}
		sr.rev.Rejected = true
	}
}

// forget drops what is remembered of the HostedClusterPackage hcpkg, deleted.
func (j *rejections) forget(hcpkg string) {
	j.uids.Range(func(uid, name any) bool {
		if name == hcpkg {
			j.uids.Delete(uid)
		}
		return true
	})
}

// rejectPatch is the merge patch that sets rollout.RejectedAnnotation to reason, bounded.
func rejectPatch(reason string) ([]byte, error) {
	if reason == "" {
		reason = "rejected by the failure policy"
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{rollout.RejectedAnnotation: rollout.BoundSample(reason)}}})
}

// writeGates writes what holds the rollout into the status: the plan's gate, and the update
// revision when a rollback rejected it (now, or in an earlier pass).
func writeGates(s *scope) {
	st := &s.obj.Status
	st.Gate = s.plan.Gate
	st.RejectedRevision = ""
	if s.plan.Reject || s.update.Rejected {
		st.RejectedRevision = s.update.Name
	}
}

// reportGates announces, by an event and a log line, a gate that starts holding the rollout
// (newGate; a Failures gate by a Warning event only) and the rejection of the update revision.
func (r *HostedClusterPackageReconciler) reportGates(ctx context.Context, s *scope) {
	before, after := s.before, &s.obj.Status
	log := ctrl.LoggerFrom(ctx)
	if gate := after.Gate; gate != nil && newGate(before, after) {
		// Note: a rollout stopped by failures stalls, and "Rollout stalled" logs it already.
		if gate.Type == convoyv1alpha1.GateFailures {
			r.event(s, corev1.EventTypeWarning, GatedReason, "%s", describeGate(gate, after.UpdateRevision))
		} else {
			r.event(s, corev1.EventTypeNormal, GatedReason, "%s", describeGate(gate, after.UpdateRevision))
			log.Info("Rollout gated", "gate", gate.Type, "partition", gate.Partition, "revision", after.UpdateRevision,
				"until", formatUntil(gate.Until), "message", rollout.BoundSample(gate.Message))
		}
	}
	if after.RejectedRevision != "" && after.RejectedRevision != before.RejectedRevision {
		reason := s.plan.RejectReason
		if reason == "" && s.updateObj != nil {
			reason = s.updateObj.Annotations[rollout.RejectedAnnotation]
		}
		r.event(s, corev1.EventTypeWarning, RevisionRejectedReason, "Revision %s (commit %s) is rejected (%s); %s",
			after.RejectedRevision, shortCommit(s.update.Commit), reason, rollbackTarget(after.CurrentRevision))
		log.Info("Revision rejected", "revision", after.RejectedRevision, "commit", s.update.Commit,
			"currentRevision", after.CurrentRevision, "reason", rollout.BoundSample(reason))
	}
}

// newGate reports whether the gate of after is not the one of before: another type or
// partition, or another update revision. A gate whose until moves (a soak restarted, the next
// window) is the same gate.
func newGate(before, after *convoyv1alpha1.HostedClusterPackageStatus) bool {
	b, a := before.Gate, after.Gate
	return b == nil || a == nil || b.Type != a.Type || b.Partition != a.Partition ||
		before.UpdateRevision != after.UpdateRevision
}

// describeGate says what holds the rollout of revision, as a sentence: the gate's own message
// (the planner's, which says what opens it), or one made from its type, partition and until.
func describeGate(gate *convoyv1alpha1.RolloutGate, revision string) string {
	if gate.Message != "" {
		return rollout.BoundSample(gate.Message)
	}
	switch gate.Type {
	case convoyv1alpha1.GateSoak:
		return fmt.Sprintf("Partition %s waits for the soak of the previous partition until %s.", gate.Partition, formatUntil(gate.Until))
	case convoyv1alpha1.GateApproval:
		return fmt.Sprintf("Partition %s awaits approval at revision %s.", gate.Partition, revision)
	case convoyv1alpha1.GateWindow:
		return fmt.Sprintf("Partition %s waits outside the rollout windows until %s.", gate.Partition, formatUntil(gate.Until))
	case convoyv1alpha1.GateFailures:
		if gate.Partition == "" {
			return fmt.Sprintf("Rollout of revision %s is stopped by failures.", revision)
		}
		return fmt.Sprintf("Rollout of revision %s is stopped by failures in partition %s.", revision, gate.Partition)
	}
	return fmt.Sprintf("Rollout of revision %s is held by a %s gate at partition %s.", revision, gate.Type, gate.Partition)
}

// formatUntil formats, in RFC 3339, when a gate opens by itself, or says that nothing known
// opens it.
func formatUntil(until *metav1.Time) string {
	if until == nil {
		return "no known time"
	}
	return until.UTC().Format(time.RFC3339)
}

// rollbackTarget says where the Packages of a rejected revision go back to.
func rollbackTarget(current string) string {
	if current == "" {
		return "there is no current revision to roll back to."
	}
	return "rolling back to revision " + current + "."
}
