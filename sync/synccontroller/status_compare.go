package synccontroller

import (
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

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
		slices.Equal(b.Conditions, a.Conditions) && slices.Equal(b.Phases, a.Phases) && slices.Equal(b.Inventory, a.Inventory)
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
