package synccontroller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/sync/engine"
	"github.com/convoy-gitops/convoy/sync/hosted"
)

var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// setup fills in the dependencies not given, from mgr: the shared ones (setupShared) and the
// controller's own engine and event recorder, both named recorderName.
func (c *Common) setup(mgr ctrl.Manager, recorderName string) error {
	if err := c.setupShared(mgr); err != nil {
		return err
	}
	if c.Engine == nil {
		c.Engine = engine.NewEngine(engine.Options{Controller: recorderName, Versions: c.applied,
			Events: c.applied.ownerEvents()})
		c.applied.skipStatesOf(c.Engine)
	}
	if c.Recorder == nil {
		c.Recorder = mgr.GetEventRecorder(recorderName)
	}
	c.notifier = pass.NewNotifier(c.Recorder)
	return nil
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
