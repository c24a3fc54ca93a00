package synccontroller

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	cliobject "github.com/fluxcd/cli-utils/pkg/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
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
	// synced are the kinds whose watch has synced (Synced), with the informer's store when it
	// has one to read without the cache's lookups (nil otherwise). An informer of this cache
	// is never removed, so its store stays the one its watch feeds.
	synced map[schema.GroupVersionKind]toolscache.Store
	// events counts the events of the watch per owner (ownerEvents); counted holds, per kind,
	// the registration of its counting handler, which Synced waits for too.
	events  *ownerEvents
	counted map[schema.GroupVersionKind]toolscache.ResourceEventHandlerRegistration
}

// appliedWatcher is one controller's registration.
type appliedWatcher struct {
	controller controller.Controller
	predicate  predicate.Predicate
	handler    handler.EventHandler
}

// newAppliedWatches creates the label-filtered metadata cache and adds it to mgr: the objects
// applied by the owners of shard (the engine labels them with it; none on the unsharded
// replica), each trimmed to what the watches read (trimAppliedMetadata).
func newAppliedWatches(mgr ctrl.Manager, shard string) (*appliedWatches, error) {
	owned, err := labels.NewRequirement(convoyv1alpha1.PackageNameLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	ofShard, _ := ShardSelector(shard).Requirements()
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		DefaultLabelSelector: labels.NewSelector().Add(*owned).Add(ofShard...),
		DefaultTransform:     trimAppliedMetadata,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of applied objects: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	return appliedWatchesOn(c), nil
}

// appliedWatchesOn returns the watches of applied objects served by c, none started yet.
func appliedWatchesOn(c cache.Cache) *appliedWatches {
	return &appliedWatches{cache: c, kinds: map[schema.GroupVersionKind]bool{}, synced: map[schema.GroupVersionKind]toolscache.Store{},
		events: newOwnerEvents(), counted: map[schema.GroupVersionKind]toolscache.ResourceEventHandlerRegistration{}}
}

// watchApplied registers controller c for the events of objects applied by owners of the
// type of owner.
func (c *Common) watchApplied(_ ctrl.Manager, ctl controller.Controller, owner pass.Object) error {
	w := &appliedWatcher{controller: ctl, predicate: c.appliedChangedPredicate(), handler: c.enqueueOwner(owner)}
	c.applied.mu.Lock()
	defer c.applied.mu.Unlock()
	c.applied.watchers = append(c.applied.watchers, w)
	for gvk, watched := range c.applied.kinds {
		if !watched {
			continue
		}
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
		started := true
		if err := a.count(ctx, gvk); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Counting the events of applied objects", "kind", gvk)
			started = false
		}
		for _, w := range a.watchers {
			if err := a.start(w, gvk); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Watching applied objects", "kind", gvk)
				started = false
			}
		}
		// Note: a kind whose watch failed to start is tried again by the next pass; until then
		// its objects are read, and their owners checked every health-check interval.
		a.kinds[gvk] = started
	}
}

// start makes w's controller watch gvk.
func (a *appliedWatches) start(w *appliedWatcher, gvk schema.GroupVersionKind) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return w.controller.Watch(source.Kind[client.Object](a.cache, obj, w.handler, w.predicate))
}

// statusChurnDelay spaces the passes that status-only updates of applied objects make once
// their owner is settled: an object whose status changes all the time (a Deployment being
// scaled) costs its owner at most one pass per delay, and a regression is still seen within it.
const statusChurnDelay = 2 * time.Second

// enqueueOwner enqueues the owner (of the type of owner) of an applied object: at once for a
// deletion, a change of what convoy applied, or any update while the owner is not settled;
// after statusChurnDelay for a status-only update of a settled owner's object (the work queue
// keeps one pending add per owner). An update that changed the ownership labels enqueues the
// owner the object left too. Each owner's event count moves before it is enqueued: the
// counting handler of the same informer runs in a goroutine of its own, maybe later, and the
// pass must not repeat a settled one that this event ends.
func (c *Common) enqueueOwner(owner pass.Object) handler.EventHandler {
	kind := ownerKind(owner)
	owners := requestsForOwner(kind)
	return handler.Funcs{
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			for _, req := range owners(ctx, e.Object) {
				c.applied.countEvent(kind, req)
				q.Add(req)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			statusOnly := statusOnlyUpdate(e.ObjectOld, e.ObjectNew)
			reqs := owners(ctx, e.ObjectNew)
			for _, left := range owners(ctx, e.ObjectOld) {
				if !slices.Contains(reqs, left) {
					reqs = append(reqs, left)
				}
			}
			for _, req := range reqs {
				c.applied.countEvent(kind, req)
				if statusOnly && c.settled(ctx, owner, req) {
					q.AddAfter(req, statusChurnDelay)
				} else {
					q.Add(req)
				}
			}
		},
	}
}

// settled reports whether the owner req names (read from the cache into a new object of
// owner's type, without copying what the cache holds: only its conditions are read) is Ready
// and Available.
func (c *Common) settled(ctx context.Context, owner pass.Object, req reconcile.Request) bool {
	o, ok := owner.DeepCopyObject().(pass.Object)
	if !ok || c.Client.Get(ctx, req.NamespacedName, o, client.UnsafeDisableDeepCopy) != nil {
		return false
	}
	return pass.IsReady(o) && pass.IsTrue(o, convoyv1alpha1.AvailableCondition)
}

// statusOnlyUpdate reports an update that changed neither the generation (of a kind that has
// one), the labels, the annotations nor the deletion of the object. In the cache of applied
// objects the labels hold the digest of the annotations and other labels, and the annotations
// are none (trimAppliedMetadata).
func statusOnlyUpdate(old, updated client.Object) bool {
	return updated.GetGeneration() != 0 && old.GetGeneration() == updated.GetGeneration() &&
		maps.Equal(old.GetLabels(), updated.GetLabels()) && maps.Equal(old.GetAnnotations(), updated.GetAnnotations()) &&
		updated.GetDeletionTimestamp() == nil
}

// Synced implements memory.ResourceVersions: the kind is watched and its watch has synced. It
// never waits.
func (a *appliedWatches) Synced(gvk schema.GroupVersionKind) bool {
	_, synced := a.syncedStore(gvk)
	return synced
}

// syncedStore reports whether gvk's watch has synced, with its informer's store when it has
// one. It never waits.
func (a *appliedWatches) syncedStore(gvk schema.GroupVersionKind) (toolscache.Store, bool) {
	if a == nil {
		return nil, false
	}
	a.mu.Lock()
	watched := a.kinds[gvk]
	store, synced := a.synced[gvk]
	counted := a.counted[gvk]
	a.mu.Unlock()
	if !watched || synced {
		return store, synced
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	inf, err := a.cache.GetInformer(context.Background(), obj, cache.BlockUntilSynced(false))
	if err != nil || !inf.HasSynced() || counted == nil || !counted.HasSynced() {
		return nil, false
	}
	if s, ok := inf.(interface{ GetStore() toolscache.Store }); ok {
		store = s.GetStore()
	}
	a.mu.Lock()
	a.synced[gvk] = store // an informer stays synced: the passes ask once per object, twice
	a.mu.Unlock()
	return store, true
}

// ResourceVersion implements memory.ResourceVersions from the cache: it answers only for a
// kind watched and synced, and never waits. Every settled pass asks it for each of its
// objects, so it reads the informer's store directly when it can, without the cache's
// lookups and copies, and keeps nothing of the object but a string.
func (a *appliedWatches) ResourceVersion(gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	store, synced := a.syncedStore(gvk)
	if !synced {
		return "", false
	}
	if store == nil {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		err := a.cache.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj, client.UnsafeDisableDeepCopy)
		return obj.GetResourceVersion(), err == nil
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	item, found, err := store.GetByKey(key)
	if err != nil || !found {
		return "", false
	}
	obj, ok := item.(metav1.Object)
	if !ok {
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

// count makes the owners' event counts (ownerEvents) follow the events of gvk's watch, once.
// An owner's count has to move whenever one of its objects reaches a state its engine's pass did
// not see, and may move more.
func (a *appliedWatches) count(ctx context.Context, gvk schema.GroupVersionKind) error {
	if a.counted[gvk] != nil {
		return nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	inf, err := a.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(a.events.handler())
	if err != nil {
		return err
	}
	a.counted[gvk] = reg
	return nil
}

// ownerEvents returns the count of the events of each owner's objects, for the engine; nil
// without a watch.
func (a *appliedWatches) ownerEvents() memory.OwnerEvents {
	if a == nil {
		return nil
	}
	return a.events
}

// skipStatesOf makes the owners' event counts skip the events of the states e holds
// (ownerEvents): e is the engine whose settled passes read the counts.
func (a *appliedWatches) skipStatesOf(e stateHolder) {
	if a != nil {
		a.events.skipStatesOf(e)
	}
}

// countEvent moves the event count of the owner req names, of kind.
func (a *appliedWatches) countEvent(kind string, req reconcile.Request) {
	if a != nil {
		a.events.bucket(kind, req.Namespace, req.Name).Add(1)
	}
}

// ownerEventBuckets is how many counters ownerEvents spreads the owners over.
const ownerEventBuckets = 1 << 16

// ownerEvents counts the events of the watch of applied objects per owner, as their ownership
// labels name it before and after the event (memory.OwnerEvents). Owners are spread over a
// fixed number of buckets, 512 KiB whatever the fleet: owners that share a bucket move each
// other's count, which only costs a pass in full (and, for a pass that applied objects, the
// pass 2 s later a stale one makes: engine.Result.Stale), never a missed change. An event of a state an
// engine holds for the owner (engine.Engine.HoldsState: its own write, or a state its pass read)
// is not counted, nor is a resync that changes nothing: the owner's pass saw that state.
type ownerEvents struct {
	seed    maphash.Seed
	buckets [ownerEventBuckets]atomic.Uint64

	mu      sync.RWMutex
	holders []stateHolder
}

// stateHolder tells the events of the states an engine's passes saw (engine.Engine).
type stateHolder interface {
	HoldsState(obj client.Object, count func()) bool
}

// newOwnerEvents returns counts at zero.
func newOwnerEvents() *ownerEvents { return &ownerEvents{seed: maphash.MakeSeed()} }

// skipStatesOf stops counting the events of the states e holds for their owners.
func (o *ownerEvents) skipStatesOf(e stateHolder) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.holders = append(o.holders, e)
}

// Count implements memory.OwnerEvents.
func (o *ownerEvents) Count(kind, namespace, name string) uint64 {
	return o.bucket(kind, namespace, name).Load()
}

// handler counts the events of an informer for the owners their objects' labels name.
func (o *ownerEvents) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			count := func() { o.add(obj) }
			if !o.held(obj, count) {
				count()
			}
		},
		UpdateFunc: func(old, updated any) {
			count := func() { o.add(old); o.add(updated) }
			if !o.tellsOwnerNothing(old, updated, count) {
				count()
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			o.add(obj)
		},
	}
}

// tellsOwnerNothing reports an update that tells its owner nothing new: a resync of the same
// resourceVersion, or a state an engine holds for the owner, who owned the object before too.
// An engine may call count later instead (held).
func (o *ownerEvents) tellsOwnerNothing(old, updated any, count func()) bool {
	before, ok := old.(client.Object)
	after, ok2 := updated.(client.Object)
	if !ok || !ok2 {
		return false
	}
	if rv := after.GetResourceVersion(); rv != "" && rv == before.GetResourceVersion() {
		return true
	}
	return ownerOfLabels(before.GetLabels()) == ownerOfLabels(after.GetLabels()) && o.held(after, count)
}

// held reports whether an engine holds obj's state for the owner its labels name, or will tell
// once its apply of obj ends, calling count if it turns out not to.
func (o *ownerEvents) held(obj any, count func()) bool {
	co, ok := obj.(client.Object)
	if !ok {
		return false
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	for _, h := range o.holders {
		if h.HoldsState(co, count) {
			return true
		}
	}
	return false
}

// add counts one event for the owner obj's labels name, if any.
func (o *ownerEvents) add(obj any) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	l := m.GetLabels()
	name, namespace := l[convoyv1alpha1.PackageNameLabel], l[convoyv1alpha1.PackageNamespaceLabel]
	if name == "" || namespace == "" {
		return // no owner's object: nothing an owner's settled pass looked at
	}
	o.bucket(l[convoyv1alpha1.OwnerKindLabel], namespace, name).Add(1)
}

// ownerOfLabels names the owner ownership labels name: its kind, namespace and name.
func ownerOfLabels(l map[string]string) [3]string {
	return [3]string{l[convoyv1alpha1.OwnerKindLabel], l[convoyv1alpha1.PackageNamespaceLabel], l[convoyv1alpha1.PackageNameLabel]}
}

// bucket returns the counter of the owner of kind, namespace and name.
func (o *ownerEvents) bucket(kind, namespace, name string) *atomic.Uint64 {
	var h maphash.Hash
	h.SetSeed(o.seed)
	for _, s := range []string{kind, namespace, name} {
		_, _ = h.WriteString(s)
		_ = h.WriteByte(0)
	}
	return &o.buckets[h.Sum64()%ownerEventBuckets]
}
