package rolloutcontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// noteStatusContextOwner sets s.keyOwner, under a sector, when another HostedClusterPackage
// owns the name this one would publish under: its promotion key when it publishes (the record
// on the refs and the commit status "convoy/<sector>/<management cluster>/<key>"), else its
// name (the commit status alone). The oldest publisher of a key owns it, and a publisher owns
// it before a HostedClusterPackage that only bears its name: a status of another rollout on a
// publisher's context would read as its record downstream. A pass whose name another owns
// publishes and posts nothing under it, and says so in a PromotionKeyConflict event.
func (r *HostedClusterPackageReconciler) noteStatusContextOwner(ctx context.Context, s *scope) {
	if r.Identity.Sector == "" || s.plan == nil || s.update.Commit == "" {
		return
	}
	owner, err := r.contextOwner(ctx, s)
	switch {
	case err != nil:
		// Unknown: publish nothing this pass rather than risk two writers of one record.
		s.keyOwner = "?"
	case owner != s.obj.Name:
		s.keyOwner = owner
		r.event(s, corev1.EventTypeWarning, PromotionConflictReason,
			"Not publishing: %s is the promotion key of HostedClusterPackage %s, which publishes it", contextName(s), owner)
	}
}

// publishedKeyIndex indexes the HostedClusterPackages that publish by their promotion key, so
// that a pass finds the rivals for its key in one lookup rather than a list of them all.
const publishedKeyIndex = ".spec.promotion.key"

// indexPublishedKey returns the promotion key a HostedClusterPackage publishes under, if it
// publishes.
func indexPublishedKey(o client.Object) []string {
	hcpkg, ok := o.(*convoyv1alpha1.HostedClusterPackage)
	if !ok || hcpkg.Spec.Promotion == nil || !hcpkg.Spec.Promotion.Publish {
		return nil
	}
	return []string{promotionKey(hcpkg)}
}

// contextName is the name s publishes under: its promotion key when it publishes, else its own.
func contextName(s *scope) string {
	if publishes(s) {
		return promotionKey(s.obj)
	}
	return s.obj.Name
}

// contextOwner returns the HostedClusterPackage that publishes under contextName(s) on this
// management cluster: of the publishers of that key, the oldest (by creation, then name); s
// itself when none other does and s may. The rule is read from the objects, not from which
// pass came first, so a restarted controller gives the name to the same one.
func (r *HostedClusterPackageReconciler) contextOwner(ctx context.Context, s *scope) (string, error) {
	name := contextName(s)
	list := &convoyv1alpha1.HostedClusterPackageList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{publishedKeyIndex: name}, client.UnsafeDisableDeepCopy); err != nil {
		return "", fmt.Errorf("listing HostedClusterPackages for the owner of promotion key %s: %w", name, err)
	}
	var owner *convoyv1alpha1.HostedClusterPackage
	if publishes(s) {
		owner = s.obj
	}
	for i := range list.Items {
		other := &list.Items[i]
		if other.Name == s.obj.Name || !other.DeletionTimestamp.IsZero() {
			continue
		}
		if owner == nil || older(other, owner) {
			owner = other
		}
	}
	if owner == nil {
		return s.obj.Name, nil
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
