package synccontroller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
