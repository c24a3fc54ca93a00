package synccontroller

import (
	"context"
	"fmt"
	"sync"

	cliobject "github.com/fluxcd/cli-utils/pkg/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// appliedWatches watches, metadata only, the kinds convoy applied to the management cluster,
// filtered by the ownership label, and feeds their events to the registered controllers. A
// kind is watched from the first time an owner applies it: the kinds of a package are only
// known once it is rendered.
type appliedWatches struct {
	cache cache.Cache

	mu       sync.Mutex
	watchers []*appliedWatcher
	kinds    map[schema.GroupVersionKind]bool
}

// appliedWatcher is one controller's registration.
type appliedWatcher struct {
	controller controller.Controller
	predicate  predicate.Predicate
	// kind is the OwnerKindLabel value of the controller's objects.
	kind string
}

// newAppliedWatches creates the label-filtered metadata cache and adds it to mgr: the objects
// applied by the owners of shard (the engine labels them with it; none on the unsharded
// replica).
func newAppliedWatches(mgr ctrl.Manager, shard string) (*appliedWatches, error) {
	owned, err := labels.NewRequirement(convoyv1alpha1.PackageNameLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	ofShard, _ := ShardSelector(shard).Requirements()
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		DefaultLabelSelector: labels.NewSelector().Add(*owned).Add(ofShard...),
		DefaultTransform:     cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of applied objects: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	return &appliedWatches{cache: c, kinds: map[schema.GroupVersionKind]bool{}}, nil
}

// watchApplied registers controller c for the events of objects applied by owners of the
// type of owner.
func (c *Common) watchApplied(_ ctrl.Manager, ctl controller.Controller, owner pass.Object) error {
	w := &appliedWatcher{controller: ctl, predicate: c.appliedChangedPredicate(), kind: ownerKind(owner)}
	c.applied.mu.Lock()
	defer c.applied.mu.Unlock()
	c.applied.watchers = append(c.applied.watchers, w)
	for gvk := range c.applied.kinds {
		if err := c.applied.start(w, gvk); err != nil {
			return err
		}
	}
	return nil
}

// ensure starts watching the management kinds of inv not watched yet.
func (a *appliedWatches) ensure(ctx context.Context, inv []convoyv1alpha1.InventoryEntry) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range inv {
		gvk, ok := gvkOf(e)
		if !ok || e.Cluster != convoyv1alpha1.InventoryClusterManagement || a.kinds[gvk] {
			continue
		}
		a.kinds[gvk] = true
		for _, w := range a.watchers {
			if err := a.start(w, gvk); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Watching applied objects", "kind", gvk)
			}
		}
	}
}

// start makes w's controller watch gvk.
func (a *appliedWatches) start(w *appliedWatcher, gvk schema.GroupVersionKind) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return w.controller.Watch(source.Kind[client.Object](a.cache, obj,
		handler.EnqueueRequestsFromMapFunc(requestsForOwner(w.kind)), w.predicate))
}

// ResourceVersion implements engine.ResourceVersions from the cache: it answers only for a
// kind watched and synced, and never waits.
func (a *appliedWatches) ResourceVersion(gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	if a == nil {
		return "", false
	}
	a.mu.Lock()
	watched := a.kinds[gvk]
	a.mu.Unlock()
	if !watched {
		return "", false
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	ctx := context.Background()
	inf, err := a.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil || !inf.HasSynced() {
		return "", false
	}
	if err := a.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return "", false
	}
	return obj.GetResourceVersion(), true
}

// gvkOf returns the kind of an inventory entry.
func gvkOf(e convoyv1alpha1.InventoryEntry) (schema.GroupVersionKind, bool) {
	m, err := cliobject.ParseObjMetadata(e.ID)
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	return m.GroupKind.WithVersion(e.Version), true
}
