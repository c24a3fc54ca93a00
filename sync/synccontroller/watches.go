package synccontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/sync/engine"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
	"github.com/convoy-gitops/convoy/sync/hosted"
)

// setup fills in the dependencies not given, from mgr: the shared ones (setupShared) and the
// controller's own engine and event recorder, both named recorderName.
func (c *Common) setup(mgr ctrl.Manager, recorderName string) error {
	if err := c.setupShared(mgr); err != nil {
		return err
	}
	if c.Engine == nil {
		c.Engine = engineOf(engine.Options{Controller: recorderName}, c.applied, true)
	}
	if c.Recorder == nil {
		c.Recorder = mgr.GetEventRecorder(recorderName)
	}
	c.notifier = pass.NewNotifier(c.Recorder)
	return nil
}

// statelessEngines, set by the controllers' tests when CONVOY_TEST_ENGINE_MEMORY=off, makes
// engineOf give engines no memory: the controllers must behave alike, the memory only saving
// requests.
var statelessEngines bool

// engineOf returns an engine of opts with a memory of its own (sync/engine/memory), which the
// watch of applied objects a tells about the management cluster. With events, the memory
// repeats settled passes by a's count of each owner's events, and a counts no event of a state
// the engine holds for its owner (Engine.HoldsState).
func engineOf(opts engine.Options, a *appliedWatches, events bool) *engine.Engine {
	if statelessEngines {
		opts.Watch = a
		return engine.NewEngine(opts)
	}
	concurrency := opts.Concurrency
	if concurrency <= 0 {
		concurrency = engine.DefaultConcurrency
	}
	mopts := memory.Options{Controller: opts.Controller, Concurrency: concurrency, Versions: a}
	if events {
		mopts.Events = a.ownerEvents()
	}
	opts.Watch, opts.Memory = a, memory.New(mopts)
	e := engine.NewEngine(opts)
	if events {
		a.skipStatesOf(e)
	}
	return e
}

// setupShared fills in, from mgr, the dependencies the Package and ObjectDeployment
// controllers can share: the cached and direct clients, the hosted-cluster clients and the
// cache of applied objects.
func (c *Common) setupShared(mgr ctrl.Manager) error {
	if c.Client == nil {
		c.Client = mgr.GetClient()
		// It reads the manager's cache: the HostedControlPlanes are read from its informer.
		c.discoverer = &hosted.Discoverer{Reader: c.Client, Informers: mgr.GetCache()}
	}
	if c.Direct == nil {
		direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(),
			Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()})
		if err != nil {
			return err
		}
		c.Direct = direct
	}
	if c.impersonating == nil {
		c.impersonating = newServiceAccountClients(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	}
	if c.Hosted == nil {
		c.Hosted = hosted.NewClients(mgr.GetClient(), mgr.GetAPIReader(), hosted.Options{})
		if err := mgr.Add(c.Hosted); err != nil {
			return err
		}
	}
	if c.written == nil {
		c.written = &pass.WrittenVersions{}
	}
	if c.discoverer == nil {
		c.discoverer = &hosted.Discoverer{Reader: c.Client}
	}
	if c.applied == nil {
		applied, err := newAppliedWatches(mgr, c.Shard)
		if err != nil {
			return err
		}
		c.applied = applied
	}
	return nil
}

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

// SetupWithManager registers the controller: ObjectDeployments on spec changes and
// convoy.dev/requestedAt, kubeconfig Secrets of their namespaces, HostedClusters starting
// their deletion, and the management objects they applied.
func (r *ObjectDeploymentReconciler) SetupWithManager(mgr ctrl.Manager, opts ObjectDeploymentReconcilerOptions) error {
	if opts.RecorderName == "" {
		opts.RecorderName = "convoy-objectdeployment"
	}
	if err := r.setup(mgr, opts.RecorderName); err != nil {
		return err
	}
	if err := r.watchShardMoves(context.Background(), mgr, &convoyv1alpha1.ObjectDeployment{}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&convoyv1alpha1.ObjectDeployment{}, builder.WithPredicates(r.shardPredicate(), predicate.Or(
			predicate.GenerationChangedPredicate{}, requestedAtChanged(), shardChanged()))).
		WatchesMetadata(secretObject(), r.requestsForSecret(&convoyv1alpha1.ObjectDeploymentList{})).
		// A namespace starting its deletion releases the ObjectDeployments of shards without a
		// replica there (releaseStranded); nothing else would wake them.
		WatchesMetadata(namespaceObject(), handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.requestsInNamespace(ctx, &convoyv1alpha1.ObjectDeploymentList{}, o.GetName())
		}), builder.WithPredicates(deletionStarted())).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles, NewQueue: longwait.NewQueue}).
		Named("objectdeployment")
	r.watchHostedClusters(mgr, b, &convoyv1alpha1.ObjectDeploymentList{})
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	return r.watchApplied(mgr, c, &convoyv1alpha1.ObjectDeployment{})
}

var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// requestedAtChanged passes updates of the convoy.dev/requestedAt annotation.
func requestedAtChanged() predicate.Predicate { return sources.ReconcileRequestedPredicate() }

// secretObject is the metadata-only form of a Secret, for watches.
func secretObject() client.Object {
	s := &metav1.PartialObjectMetadata{}
	s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return s
}

// requestsForSecret maps a Secret event to the objects of its namespace (listed into a copy
// of list) whose hosted-cluster kubeconfig it holds.
func (c *Common) requestsForSecret(list client.ObjectList) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, secret client.Object) []reconcile.Request {
		var reqs []reconcile.Request
		for _, o := range c.listIn(ctx, list, secret.GetNamespace()) {
			if kubeconfigSecretName(o) == secret.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
		}
		return reqs
	})
}

// listIn lists the objects of namespace from the cache, into a copy of list.
func (c *Common) listIn(ctx context.Context, list client.ObjectList, namespace string) []client.Object {
	items, _ := list.DeepCopyObject().(client.ObjectList)
	if err := c.Client.List(ctx, items, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing objects to requeue", "namespace", namespace)
		return nil
	}
	var out []client.Object
	_ = apimeta.EachListItem(items, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			out = append(out, obj)
		}
		return nil
	})
	return out
}

// kubeconfigSecretName returns the name of the Secret an object reaches its hosted cluster
// with.
func kubeconfigSecretName(obj client.Object) string {
	if p, ok := obj.(*convoyv1alpha1.Package); ok && p.Spec.HostedCluster != nil && p.Spec.HostedCluster.KubeconfigSecretRef != nil {
		return p.Spec.HostedCluster.KubeconfigSecretRef.Name
	}
	return convoyv1alpha1.KubeconfigSecretName
}

// ownerKind returns the OwnerKindLabel value of the objects owner applies.
func ownerKind(owner client.Object) string {
	if _, ok := owner.(*convoyv1alpha1.ObjectDeployment); ok {
		return "ObjectDeployment"
	}
	return ""
}

// requestsForOwner returns a mapper from an applied object to its owner, named by the
// ownership labels, when the owner is of kind (an OwnerKindLabel value).
func requestsForOwner(kind string) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		name, ns := l[convoyv1alpha1.PackageNameLabel], l[convoyv1alpha1.PackageNamespaceLabel]
		if name == "" || ns == "" || l[convoyv1alpha1.OwnerKindLabel] != kind {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
	}
}

// appliedChangedPredicate passes the events of applied objects that may need a pass of their
// owner: deletions, and every update but those the engine's own applies made (the engine knows
// their resourceVersion). Status-only updates pass too: they are how an owner learns that an
// object's availability changed, and its pass reads only the objects the watch saw change
// (engine.ResourceVersions); enqueueOwner spaces them. Creations do not pass: convoy makes them
// itself.
func (c *Common) appliedChangedPredicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() && !c.Engine.AppliedByEngine(e.ObjectNew)
		},
	}
}

// unpinnedSourceIndex indexes the Packages that follow their GitSource's artifact (no
// spec.revision) by the GitSource's "<namespace>/<name>".
const unpinnedSourceIndex = ".spec.sourceRef.unpinned"

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

// sourceIndex indexes every Package, pinned or not, by its GitSource's "<namespace>/<name>".
const sourceIndex = ".spec.sourceRef"

// indexSource returns the GitSource key of a Package.
func indexSource(o client.Object) []string {
	p, ok := o.(*convoyv1alpha1.Package)
	if !ok {
		return nil
	}
	return []string{sourceKey(p).String()}
}

// accessFromChanged passes GitSource updates that change spec.accessFrom, so that the
// Packages it now admits (or no longer admits) are looked at again.
func accessFromChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldGS, okOld := e.ObjectOld.(*convoyv1alpha1.GitSource)
			newGS, okNew := e.ObjectNew.(*convoyv1alpha1.GitSource)
			return okOld && okNew && !equality.Semantic.DeepEqual(oldGS.Spec.AccessFrom, newGS.Spec.AccessFrom)
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
