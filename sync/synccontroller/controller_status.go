package synccontroller

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sync/engine"
)

// statusFields points the status finalizer at the shared status.
func statusFields(st *convoyv1alpha1.SyncStatus) pass.StatusFields {
	return pass.StatusFields{ObservedGeneration: &st.ObservedGeneration, LastHandledReconcileAt: &st.LastHandledReconcileAt}
}

// recordResult writes what the engine did into the status: phases, inventory, the revision
// once available, and the Available condition.
func recordResult(s *scope, err error) {
	res := s.result
	if res == nil {
		return
	}
	s.status.Phases = res.Phases
	s.status.Inventory = res.Inventory
	if res.Available {
		s.status.Revision = s.revision.ID
	}
	setAvailableCondition(s, err)
}

// setAvailableCondition sets Available from the last engine pass: True when every phase of the
// revision is available, False with the reason and message of what stopped the pass.
func setAvailableCondition(s *scope, err error) {
	if s.result != nil && s.result.Available {
		pass.MarkTrue(s.obj, convoyv1alpha1.AvailableCondition, convoyv1alpha1.RevisionAvailableReason,
			"All %d phases of revision %s are available", len(s.result.Phases), s.revision.ID)
		return
	}
	if err == nil {
		return
	}
	pass.MarkFalse(s.obj, convoyv1alpha1.AvailableCondition, pass.ReasonOf(err), "%s", err.Error())
}

// setProgressingCondition sets Progressing: False once the desired revision is the available
// status.revision, True with what is under way (or in the way) otherwise. An empty desired
// revision (not known yet) leaves it alone unless the pass failed.
func setProgressingCondition(s *scope, desired string, err error) {
	switch {
	case s.done:
		return
	case err == nil && desired != "" && desired == s.status.Revision:
		pass.MarkFalse(s.obj, convoyv1alpha1.ProgressingCondition, convoyv1alpha1.RevisionAvailableReason,
			"Revision %s is available", desired)
	case err != nil:
		pass.MarkTrue(s.obj, convoyv1alpha1.ProgressingCondition, pass.ReasonOf(err), "%s", progressMessage(desired, err))
	case desired != "":
		pass.MarkTrue(s.obj, convoyv1alpha1.ProgressingCondition, convoyv1alpha1.ProgressingReason,
			"Applying revision %s", desired)
	}
}

// progressMessage says what holds the desired revision back.
func progressMessage(desired string, err error) string {
	if desired == "" {
		return err.Error()
	}
	return fmt.Sprintf("Revision %s: %v", desired, err)
}

// maxLeftListed bounds the entries named in one event (an event note holds 1 KiB).
const maxLeftListed = 3

// leftNote lists the entries a prune dropped without deleting them.
func leftNote(left []engine.Left) string {
	if len(left) == 0 {
		return ""
	}
	return fmt.Sprintf(", %d dropped from the inventory without a delete: %s", len(left), describeLeft(left))
}

// describeLeft names the first entries of left and counts the others.
func describeLeft(left []engine.Left) string {
	parts := make([]string, 0, maxLeftListed+1)
	for i, l := range left {
		if i == maxLeftListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(left)-i))
			break
		}
		parts = append(parts, l.String())
	}
	return strings.Join(parts, "; ")
}

// sameSyncStatus implements pass.StatusOptions.SameStatus for Packages and ObjectDeployments:
// their statuses are identical, field by field. Times are equal only with the same *Location
// pointer, stricter than reflect.DeepEqual; a nil slice equals an empty one, since every slice
// of SyncStatus is omitempty and both encode alike. False only means "compare them as JSON",
// which decides. Every settled pass compares its status, and reflection took a fortieth of a settled
// fleet's CPU.
func sameSyncStatus(before, after client.Object) bool {
	b, a := syncStatusOf(before), syncStatusOf(after)
	if b == nil || a == nil {
		return false
	}
	return b.ObservedGeneration == a.ObservedGeneration && b.Revision == a.Revision &&
		b.LastAttemptedRevision == a.LastAttemptedRevision && b.LastHandledReconcileAt == a.LastHandledReconcileAt &&
		slices.Equal(b.Conditions, a.Conditions) && slices.Equal(b.Phases, a.Phases) && slices.Equal(b.Inventory, a.Inventory) &&
		slices.Equal(b.Warnings, a.Warnings)
}

// syncStatusOf returns the status of a Package or an ObjectDeployment, nil for another kind.
func syncStatusOf(obj client.Object) *convoyv1alpha1.SyncStatus {
	switch o := obj.(type) {
	case *convoyv1alpha1.Package:
		return &o.Status
	case *convoyv1alpha1.ObjectDeployment:
		return &o.Status
	}
	return nil
}
