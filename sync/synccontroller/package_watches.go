package synccontroller

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/longwait"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/sync/hosted"
)

// unpinnedSourceIndex indexes the Packages that follow their GitSource's artifact (no
// spec.revision) by the GitSource's "<namespace>/<name>".
const unpinnedSourceIndex = ".spec.sourceRef.unpinned"

// SetupWithManager registers the controller. It watches Packages (spec changes and
// convoy.dev/requestedAt); GitSource artifact changes, for the Packages that follow that source
// without a pinned revision; GitSource spec.accessFrom changes, for every Package of it; kubeconfig Secrets, for the Packages of their namespace;
// HostedClusters starting their deletion, for the Packages of their HCP namespace; and the
// management objects Packages applied, by ownership label and metadata only.
func (r *PackageReconciler) SetupWithManager(mgr ctrl.Manager, opts PackageReconcilerOptions) error {
	if opts.RecorderName == "" {
		opts.RecorderName = "convoy-package"
	}
	if err := r.setup(mgr, opts.RecorderName); err != nil {
		return err
	}
	if err := r.watchShardMoves(context.Background(), mgr, &convoyv1alpha1.Package{}); err != nil {
		return err
	}
	if r.Renders == nil {
		r.Renders = manifests.NewCache(0)
	}
	renderCaches.add(r.Renders)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &convoyv1alpha1.Package{},
		unpinnedSourceIndex, indexUnpinnedSource); err != nil {
		return fmt.Errorf("indexing Packages: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &convoyv1alpha1.Package{},
		sourceIndex, indexSource); err != nil {
		return fmt.Errorf("indexing Packages: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&convoyv1alpha1.Package{}, builder.WithPredicates(r.shardPredicate(), predicate.Or(
			predicate.GenerationChangedPredicate{}, requestedAtChanged(), shardChanged()))).
		Watches(&convoyv1alpha1.GitSource{}, handler.EnqueueRequestsFromMapFunc(sources.RequestsForFollowers(r.Client,
			func() client.ObjectList { return &convoyv1alpha1.PackageList{} }, unpinnedSourceIndex)),
			builder.WithPredicates(sources.ArtifactChangedPredicate())).
		Watches(&convoyv1alpha1.GitSource{}, handler.EnqueueRequestsFromMapFunc(sources.RequestsForFollowers(r.Client,
			func() client.ObjectList { return &convoyv1alpha1.PackageList{} }, sourceIndex)),
			builder.WithPredicates(accessFromChanged())).
		WatchesMetadata(secretObject(), r.requestsForSecret(&convoyv1alpha1.PackageList{})).
		WatchesMetadata(namespaceObject(), handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.requestsInNamespace(ctx, &convoyv1alpha1.PackageList{}, o.GetName())
		}), builder.WithPredicates(predicate.Or[client.Object](predicate.LabelChangedPredicate{}, deletionStarted()))).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles, NewQueue: longwait.NewQueue}).
		Named("package")
	r.watchHostedClusters(mgr, b, &convoyv1alpha1.PackageList{})
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	return r.watchApplied(mgr, c, &convoyv1alpha1.Package{})
}

// namespaceObject is the metadata of a Namespace, for watches: a Package's access to a
// GitSource of another namespace depends on its namespace's labels. The watch also keeps the
// Namespaces' metadata in the cache from the start, so that the access check reads it there.
func namespaceObject() client.Object {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(namespaceGVK)
	return ns
}

// indexUnpinnedSource returns the GitSource key of a Package without spec.revision.
func indexUnpinnedSource(o client.Object) []string {
	p, ok := o.(*convoyv1alpha1.Package)
	if !ok || p.Spec.Revision != "" {
		return nil
	}
	return []string{sourceKey(p).String()}
}

// watchHostedClusters adds a metadata watch of HostedClusters to b when HyperShift is
// installed: a HostedCluster starting its deletion (or gone) requeues the objects of its HCP
// namespace, whose teardown may stop waiting for it.
func (c *Common) watchHostedClusters(mgr ctrl.Manager, b *builder.Builder, list client.ObjectList) {
	if _, err := mgr.GetRESTMapper().RESTMapping(hosted.HostedClusterGVK.GroupKind(), hosted.HostedClusterGVK.Version); err != nil {
		return
	}
	hc := &metav1.PartialObjectMetadata{}
	hc.SetGroupVersionKind(hosted.HostedClusterGVK)
	b.WatchesMetadata(hc, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return c.requestsInNamespace(ctx, list, convoyv1alpha1.HostedControlPlaneNamespace(o.GetNamespace(), o.GetName()))
	}), builder.WithPredicates(deletionStarted()))
}

// requestsInNamespace maps to the objects of namespace (listed into a copy of list).
func (c *Common) requestsInNamespace(ctx context.Context, list client.ObjectList, namespace string) []reconcile.Request {
	var reqs []reconcile.Request
	for _, o := range c.listIn(ctx, list, namespace) {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
	}
	return reqs
}

// deletionStarted passes deletions and updates that set a deletionTimestamp.
func deletionStarted() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
		},
		DeleteFunc: func(event.DeleteEvent) bool { return true },
	}
}
