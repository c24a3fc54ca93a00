package synccontroller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// inShard reports whether obj belongs to the replica's shard: its convoy.dev/shard label is
// c.Shard, or it has none when c.Shard is empty (the unsharded replica).
func (c *Common) inShard(obj client.Object) bool {
	return obj.GetLabels()[convoyv1alpha1.ShardLabel] == c.Shard
}

// shardPredicate passes the events of the objects of the replica's shard and, on the
// unsharded replica, of every object being deleted (releaseStranded).
func (c *Common) shardPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return c.inShard(obj) || (c.Shard == "" && !obj.GetDeletionTimestamp().IsZero())
	})
}

// releaseStranded lets the unsharded replica remove convoy's finalizer from another shard's
// object that is being deleted in a terminating namespace, so that the finalizer never holds
// up the deletion of a hosted control plane namespace when the object's shard has no replica
// (a shard removed from the deployment, a mistyped label). It abandons everything, as the
// shard's own replica would there: the namespace's deletion takes the management objects,
// and the hosted cluster goes with it; it writes nothing to a live cluster. Elsewhere it
// leaves the object to its shard.
func (c *Common) releaseStranded(ctx context.Context, obj pass.Object) error {
	if c.Shard != "" || obj.GetDeletionTimestamp().IsZero() || !controllerutil.ContainsFinalizer(obj, convoyv1alpha1.Finalizer) {
		return nil
	}
	terminating, err := c.namespaceTerminating(ctx, obj.GetNamespace())
	if err != nil || !terminating {
		return err
	}
	c.emit(obj, AbandonedReason, "Namespace %s is terminating and shard %q has not released this object: leaving its objects to the namespace's deletion",
		obj.GetNamespace(), obj.GetLabels()[convoyv1alpha1.ShardLabel])
	return c.patchFinalizers(ctx, obj, controllerutil.RemoveFinalizer)
}

// statusOptions returns the status finalizer options of the replica: its notifier and its
// status field manager (pass.ShardStatusFieldOwner).
func (c *Common) statusOptions() pass.StatusOptions {
	return pass.StatusOptions{Notifier: c.notifier, FieldOwner: pass.ShardStatusFieldOwner(c.Shard),
		Written: c.written, Reader: c.Direct, SameStatus: sameSyncStatus}
}

// ShardSelector returns the label selector of the objects the replica of shard reconciles:
// convoy.dev/shard=shard, or no convoy.dev/shard label at all when shard is empty.
func ShardSelector(shard string) labels.Selector {
	op, values := selection.Equals, []string{shard}
	if shard == "" {
		op, values = selection.DoesNotExist, nil
	}
	req, err := labels.NewRequirement(convoyv1alpha1.ShardLabel, op, values)
	if err != nil {
		panic(err) // shard is validated by the command (convoyv1alpha1.ValidateShardName)
	}
	return labels.NewSelector().Add(*req)
}

// ConfigureShardCache makes the cache of a shard replica hold only the Packages and
// ObjectDeployments of its shard: Kubernetes does the distribution, and a replica's memory grows
// with its shard, not with the fleet. The unsharded replica keeps every one of them: the
// HostedClusterPackage controller it runs reads the Packages of all shards, and it releases
// the object of a shard without a replica in a terminating namespace (releaseStranded), which it
// must see for that; its controllers skip the other shards' objects (shardPredicate). Call it on
// the cache options before creating the manager.
func ConfigureShardCache(o *cache.Options, shard string) {
	if shard == "" {
		return
	}
	if o.ByObject == nil {
		o.ByObject = map[client.Object]cache.ByObject{}
	}
	sel := ShardSelector(shard)
	o.ByObject[&convoyv1alpha1.ObjectDeployment{}] = cache.ByObject{Label: sel}
	o.ByObject[&convoyv1alpha1.Package{}] = cache.ByObject{Label: sel}
}

// shardChanged passes updates that change the convoy.dev/shard label, so that an object moved
// into the replica's shard is reconciled at once.
func shardChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetLabels()[convoyv1alpha1.ShardLabel] != e.ObjectNew.GetLabels()[convoyv1alpha1.ShardLabel]
	}}
}

// errLeftShard is the cause of the cancellation of a pass whose object left the replica's shard.
var errLeftShard = errors.New("the object moved to another shard during the pass")

// passesInFlight cancels the pass of an object that leaves the replica's shard while it runs.
// The replica the object moves to reconciles it at once, and may be given a newer revision by
// the next HostedClusterPackage pass: the old replica's pass must then neither apply its older
// revision nor patch its status over the new replica's. Its applies and its status patch use
// the pass's context, so cancelling it stops both.
type passesInFlight struct {
	mu      sync.Mutex
	cancels map[types.NamespacedName]context.CancelCauseFunc
}

// newPassesInFlight returns an empty registry.
func newPassesInFlight() *passesInFlight {
	return &passesInFlight{cancels: map[types.NamespacedName]context.CancelCauseFunc{}}
}

// start registers the pass of key and returns its context, and the function that ends it.
// Register before reading the object from the cache: the cache holds any move announced before,
// and any move announced after cancels the pass.
func (p *passesInFlight) start(ctx context.Context, key types.NamespacedName) (context.Context, func()) {
	if p == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	p.mu.Lock()
	p.cancels[key] = cancel
	p.mu.Unlock()
	return ctx, func() {
		p.mu.Lock()
		delete(p.cancels, key)
		p.mu.Unlock()
		cancel(nil)
	}
}

// cancel cancels the pass of key, if one runs.
func (p *passesInFlight) cancel(key types.NamespacedName) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cancel := p.cancels[key]; cancel != nil {
		cancel(errLeftShard)
	}
}

// watchShardMoves gives the controller its registry of passes in flight, and makes the cache's
// informer of obj's kind cancel the pass of an object that leaves c.Shard: an update that
// changes its label away from it (the unsharded replica sees every object) or, on a replica
// whose cache holds only its shard, a deletion of an object that is not being deleted (the
// watch drops an object whose label no longer matches).
func (c *Common) watchShardMoves(ctx context.Context, mgr ctrl.Manager, obj client.Object) error {
	c.inFlight = newPassesInFlight()
	informer, err := mgr.GetCache().GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("watching shard moves: %w", err)
	}
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			before, ok1 := oldObj.(client.Object)
			after, ok2 := newObj.(client.Object)
			if ok1 && ok2 && c.inShard(before) && !c.inShard(after) {
				c.inFlight.cancel(client.ObjectKeyFromObject(after))
			}
		},
		DeleteFunc: func(gone any) {
			if tombstone, ok := gone.(toolscache.DeletedFinalStateUnknown); ok {
				gone = tombstone.Obj
			}
			if o, ok := gone.(client.Object); ok && o.GetDeletionTimestamp().IsZero() {
				c.inFlight.cancel(client.ObjectKeyFromObject(o))
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching shard moves: %w", err)
	}
	return nil
}

// afterMoveRecheck is how soon a pass cancelled by a move runs again when its object is in the
// replica's shard after all.
const afterMoveRecheck = time.Second

// afterMove returns the result of a pass cancelled by a move: nothing more, unless the object
// is in the replica's shard again (its label went back, or it was deleted and created again
// under the same name, which also cancels by name), whose passes must not stop.
func (c *Common) afterMove(key types.NamespacedName, obj client.Object) ctrl.Result {
	if err := c.Client.Get(context.Background(), key, obj); err == nil && c.inShard(obj) {
		return ctrl.Result{RequeueAfter: afterMoveRecheck}
	}
	return ctrl.Result{}
}

// leftShard reports whether ctx is the context of a pass cancelled because its object left the
// replica's shard: the pass reports nothing, since the object is the other replica's now.
func leftShard(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errLeftShard) }
