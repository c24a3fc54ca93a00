package sources

// Note: what a follower of a GitSource (Package, HostedClusterPackage) needs lives here, next to
// the store, so that their controllers need not import the GitSource controller.

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// RequestsForFollowers returns a watch mapper from a GitSource to the objects that follow it:
// those newList lists whose field index holds the GitSource's Key (as a string). Controllers
// whose objects read a GitSource's artifact (Packages, HostedClusterPackages) use it with an
// index of their own.
func RequestsForFollowers(c client.Reader, newList func() client.ObjectList, index string) handler.MapFunc {
	return func(ctx context.Context, gs client.Object) []reconcile.Request {
		list := newList()
		key := KeyFor(gs.GetNamespace(), gs.GetName()).String()
		if err := c.List(ctx, list, client.MatchingFields{index: key}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the followers of a GitSource", "gitsource", key, "index", index)
			return nil
		}
		var reqs []reconcile.Request
		_ = apimeta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	}
}

// ReconcileRequestedPredicate passes updates that change the convoy.dev/requestedAt
// annotation (a manual or webhook request for an immediate reconcile).
func ReconcileRequestedPredicate() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			return e.ObjectOld.GetAnnotations()[convoyv1alpha1.RequestedAtAnnotation] !=
				e.ObjectNew.GetAnnotations()[convoyv1alpha1.RequestedAtAnnotation]
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// ArtifactChangedPredicate passes GitSource events that matter to consumers of artifacts
// (Package controllers): creation with an artifact, deletion, and updates that change
// status.artifact.revision. Use it with Watches(&convoyv1alpha1.GitSource{}, ...).
func ArtifactChangedPredicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return revisionOf(e.Object) != "" },
		UpdateFunc: func(e event.UpdateEvent) bool { return revisionOf(e.ObjectOld) != revisionOf(e.ObjectNew) },
		DeleteFunc: func(event.DeleteEvent) bool { return true },
	}
}

// ArtifactOrPromotionChangedPredicate passes what ArtifactChangedPredicate passes and updates
// that change status.promotion (a record published on the repository's promotion refs, or the
// refs becoming unreadable or readable again) or the FetchFailed condition (the repository
// itself out of reach, or back): promotion holds, and says so, while the bus cannot be read.
// HostedClusterPackages that promote across sectors follow them.
func ArtifactOrPromotionChangedPredicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return revisionOf(e.Object) != "" },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return revisionOf(e.ObjectOld) != revisionOf(e.ObjectNew) || promotionOf(e.ObjectOld) != promotionOf(e.ObjectNew) ||
				fetchFailed(e.ObjectOld) != fetchFailed(e.ObjectNew)
		},
		DeleteFunc: func(event.DeleteEvent) bool { return true },
	}
}

// promotionOf returns the status.promotion of a GitSource, or the zero value.
func promotionOf(o client.Object) convoyv1alpha1.PromotionRefsStatus {
	gs, ok := o.(*convoyv1alpha1.GitSource)
	if !ok || gs.Status.Promotion == nil {
		return convoyv1alpha1.PromotionRefsStatus{}
	}
	return *gs.Status.Promotion
}

// fetchFailed reports whether a GitSource's last poll could not fetch its repository.
func fetchFailed(o client.Object) bool {
	gs, ok := o.(*convoyv1alpha1.GitSource)
	return ok && apimeta.IsStatusConditionTrue(gs.Status.Conditions, convoyv1alpha1.FetchFailedCondition)
}

// revisionOf returns the artifact revision of a GitSource, or "".
func revisionOf(o client.Object) string {
	gs, ok := o.(*convoyv1alpha1.GitSource)
	if !ok || gs.Status.Artifact == nil {
		return ""
	}
	return gs.Status.Artifact.Revision
}

// GetArtifact returns the artifact of the GitSource named by key, or a Waiting error with
// reason DependencyNotReady when it has none yet (the source has not been polled, or is
// missing).
func GetArtifact(ctx context.Context, c client.Reader, key Key) (*convoyv1alpha1.Artifact, error) {
	gs := &convoyv1alpha1.GitSource{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name}, gs); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, pass.Waitf(convoyv1alpha1.DependencyNotReadyReason, 0, "GitSource %s not found", key)
		}
		return nil, fmt.Errorf("reading GitSource %s: %w", key, err)
	}
	if gs.Status.Artifact == nil {
		return nil, pass.Waitf(convoyv1alpha1.DependencyNotReadyReason, 0, "GitSource %s has no artifact yet", key)
	}
	return gs.Status.Artifact.DeepCopy(), nil
}
