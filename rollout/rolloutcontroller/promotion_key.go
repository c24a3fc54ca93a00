package rolloutcontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// notePromotionKeyOwner sets s.keyOwner when the pass publishes: a pass whose key another
// HostedClusterPackage owns publishes nothing under it, on the refs or as a commit status, and
// says so in a PromotionKeyConflict event.
func (r *HostedClusterPackageReconciler) notePromotionKeyOwner(ctx context.Context, s *scope) {
	if !publishes(s) || r.Identity.Sector == "" {
		return
	}
	owner, err := r.promotionKeyOwner(ctx, s)
	if err != nil {
		// Unknown: publish nothing this pass rather than risk two writers of one record.
		s.keyOwner = "?"
		return
	}
	if owner != s.obj.Name {
		s.keyOwner = owner
		r.event(s, corev1.EventTypeWarning, PromotionConflictReason,
			"Not publishing: promotion key %s is published by HostedClusterPackage %s, the older of the two", promotionKey(s.obj), owner)
	}
}

// promotionKeyOwner returns the HostedClusterPackage that publishes the promotion key of
// s.obj on this management cluster: of those publishing the same key, the oldest (by creation,
// then name). The rule is read from the objects, not from which pass came first, so a
// restarted controller gives the key to the same one.
func (r *HostedClusterPackageReconciler) promotionKeyOwner(ctx context.Context, s *scope) (string, error) {
	list := &convoyv1alpha1.HostedClusterPackageList{}
	if err := r.Client.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing HostedClusterPackages for the owner of promotion key %s: %w", promotionKey(s.obj), err)
	}
	key, owner := promotionKey(s.obj), s.obj
	for i := range list.Items {
		other := &list.Items[i]
		if p := other.Spec.Promotion; p == nil || !p.Publish || promotionKey(other) != key || !other.DeletionTimestamp.IsZero() {
			continue
		}
		if older(other, owner) {
			owner = other
		}
	}
	return owner.Name, nil
}

// older reports whether a was created before b, the name breaking a tie.
func older(a, b *convoyv1alpha1.HostedClusterPackage) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
