package rolloutcontroller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/source"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// leaseExpiryMargin is how long after a lease's expiry the lease watch looks at it, so that
// the pass it starts sees it expired.
const leaseExpiryMargin = 50 * time.Millisecond

// markShardsReady sets ShardsReady on s.obj: False/InvalidShardList while the shards ConfigMap
// holds a list that is refused; False/ShardWithoutReplica naming each shard that holds some of
// its Packages and whose replica's lease is absent, released or expired, with how many wait
// there; else True/ShardsHaveReplicas. The condition is removed when nothing is sharded (no
// shard in force, no Package on a shard, no problem) and, but for a refused list, when
// leases are not checked (no LeaseNamespace).
//
// Note: a Package on a shard without a replica is reconciled by nobody: its status stays what
// it was. The rollout does not take it for updated and available: a spec the rollout changes
// has a new generation, and the planner counts conditions only at the current one.
func (r *HostedClusterPackageReconciler) markShardsReady(ctx context.Context, s *scope) error {
	onShard := packagesByShard(s.packages.byKey)
	checked := r.Sharding.LeaseNamespace != ""
	if s.shardProblem == "" && (!checked || (len(onShard) == 0 && len(s.sharding.Shards) == 0)) {
		pass.Delete(s.obj, convoyv1alpha1.ShardsReadyCondition)
		return nil
	}
	var dead []string
	if checked && len(onShard) > 0 {
		var err error
		if dead, s.orphanedShards, err = r.shardsWithoutReplica(ctx, onShard, s.now); err != nil {
			return err
		}
	}
	switch {
	case s.shardProblem != "":
		pass.MarkFalse(s.obj, convoyv1alpha1.ShardsReadyCondition, convoyv1alpha1.InvalidShardListReason,
			"%s; the shards in force stay %s.%s", s.shardProblem, shardNames(s.sharding.Shards), joinedAfterSpace(dead))
	case len(dead) > 0:
		pass.MarkFalse(s.obj, convoyv1alpha1.ShardsReadyCondition, convoyv1alpha1.ShardWithoutReplicaReason, "%s", strings.Join(dead, " "))
	case len(onShard) == 0:
		pass.MarkTrue(s.obj, convoyv1alpha1.ShardsReadyCondition, convoyv1alpha1.ShardsHaveReplicasReason, "No package is on a shard yet.")
	default:
		pass.MarkTrue(s.obj, convoyv1alpha1.ShardsReadyCondition, convoyv1alpha1.ShardsHaveReplicasReason,
			"Every shard holding packages has a live replica: %s.", shardCounts(onShard))
	}
	return nil
}

// shardsWithoutReplica returns, for each shard of onShard (sorted) whose lease is not held at
// now, a sentence naming it, its lease and the Packages waiting there; and the set of those
// shards.
func (r *HostedClusterPackageReconciler) shardsWithoutReplica(ctx context.Context, onShard map[string]int, now time.Time) ([]string, map[string]bool, error) {
	list := &coordinationv1.LeaseList{}
	if err := r.Client.List(ctx, list, client.InNamespace(r.Sharding.LeaseNamespace)); err != nil {
		return nil, nil, fmt.Errorf("listing the leases of namespace %s: %w", r.Sharding.LeaseNamespace, err)
	}
	leases := map[string]*coordinationv1.Lease{}
	for i := range list.Items {
		leases[list.Items[i].Name] = &list.Items[i]
	}
	var out []string
	dead := map[string]bool{}
	for _, shard := range slices.Sorted(maps.Keys(onShard)) {
		name := ShardLeaseName(shard)
		if held, why := leaseHeld(leases[name], now); !held {
			dead[shard] = true
			out = append(out, fmt.Sprintf("Shard %s has no live replica (lease %s/%s %s): %d package(s) wait there.",
				shard, r.Sharding.LeaseNamespace, name, why, onShard[shard]))
		}
	}
	return out, dead, nil
}

// leaseHeld reports whether a leader election lease is held at now: it has a holder, and its
// renewTime plus leaseDurationSeconds is after now; else why not.
//
// Note: renewTime is written by the holder's clock; the controller's may differ from it by
// the clock skew of the cluster's nodes, which leader election itself assumes small.
func leaseHeld(l *coordinationv1.Lease, now time.Time) (bool, string) {
	expiry, why := leaseExpiry(l)
	switch {
	case why != "":
		return false, why
	case !now.Before(expiry):
		return false, "expired at " + expiry.UTC().Format(time.RFC3339)
	}
	return true, ""
}

// leaseExpiry returns when l stops being held, or why it is not held at all.
func leaseExpiry(l *coordinationv1.Lease) (time.Time, string) {
	switch {
	case l == nil:
		return time.Time{}, "absent"
	case l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "":
		return time.Time{}, "released"
	case l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil:
		return time.Time{}, "never renewed"
	}
	return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second), ""
}

// packagesByShard counts the Packages by convoy.dev/shard label; unlabelled ones are not
// counted.
func packagesByShard(pkgs map[types.NamespacedName]*convoyv1alpha1.Package) map[string]int {
	out := map[string]int{}
	for _, pkg := range pkgs {
		if shard := shardLabelOf(pkg); shard != "" {
			out[shard]++
		}
	}
	return out
}

// shardCounts formats onShard as "a (12), b (18)", sorted by shard.
func shardCounts(onShard map[string]int) string {
	parts := make([]string, 0, len(onShard))
	for _, shard := range slices.Sorted(maps.Keys(onShard)) {
		parts = append(parts, fmt.Sprintf("%s (%d)", shard, onShard[shard]))
	}
	return strings.Join(parts, ", ")
}

// shardNames formats a shard list, "none" when empty.
func shardNames(shards []string) string {
	if len(shards) == 0 {
		return "none"
	}
	return strings.Join(shards, ",")
}

// joinedAfterSpace returns the sentences joined by spaces after a space, or "" when none.
func joinedAfterSpace(sentences []string) string {
	if len(sentences) == 0 {
		return ""
	}
	return " " + strings.Join(sentences, " ")
}

// shardLeaseWatch enqueues every HostedClusterPackage when a shard replica's lease changes
// between held and not held: on the lease's events, and when a held lease expires without a
// renewal (a replica that died sends nothing, so a timer waits for the earliest expiry).
// Renewals of a held lease enqueue nothing: replicas renew every few seconds, and each would
// otherwise re-plan every HostedClusterPackage. It reads the leases from the manager's
// informer, restricted to the lease namespace by Sharding.ConfigureCache.
type shardLeaseWatch struct {
	informers cache.Informers
	// enqueueAll adds every HostedClusterPackage to q.
	enqueueAll func(ctx context.Context, q queue)
	now        func() time.Time

	mu sync.Mutex
	// leases are the shard leases seen, by name.
	leases map[string]*coordinationv1.Lease
	kick   chan struct{}
}

// newShardLeaseWatch returns a watch of the leases of informers.
func newShardLeaseWatch(informers cache.Informers, now func() time.Time, enqueueAll func(context.Context, queue)) *shardLeaseWatch {
	return &shardLeaseWatch{informers: informers, now: now, enqueueAll: enqueueAll,
		leases: map[string]*coordinationv1.Lease{}, kick: make(chan struct{}, 1)}
}

// source returns the watch as a source of the controller.
func (w *shardLeaseWatch) source() source.Source {
	return source.Func(w.start)
}

// start registers the handlers on the Lease informer and runs the watch until ctx ends.
func (w *shardLeaseWatch) start(ctx context.Context, q queue) error {
	inf, err := w.informers.GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return fmt.Errorf("getting the Lease informer: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
		DeleteFunc: w.forget,
	})
	if err != nil {
		return fmt.Errorf("watching Leases: %w", err)
	}
	go w.run(ctx, q)
	return nil
}

// observe records a lease of a shard replica and wakes the watch.
func (w *shardLeaseWatch) observe(obj any) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || !isShardLease(l.Name) {
		return
	}
	w.mu.Lock()
	w.leases[l.Name] = l
	w.mu.Unlock()
	w.wake()
}

// forget drops a deleted lease and wakes the watch.
func (w *shardLeaseWatch) forget(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	w.mu.Lock()
	delete(w.leases, l.Name)
	w.mu.Unlock()
	w.wake()
}

// wake makes run look at the leases again.
func (w *shardLeaseWatch) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run looks at the leases on every wake and at the earliest expiry of a held one, and
// enqueues every HostedClusterPackage when one changed between held and not held.
func (w *shardLeaseWatch) run(ctx context.Context, q queue) {
	held := map[string]bool{}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		changed, next := w.check(held)
		if changed {
			w.enqueueAll(ctx, q)
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(w.now())+leaseExpiryMargin, 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		case <-timer.C:
		}
	}
}

// check updates held (by lease name) to the leases at now; it reports whether any changed,
// and the earliest expiry of a held lease (zero when none is held).
func (w *shardLeaseWatch) check(held map[string]bool) (changed bool, next time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	names := map[string]bool{}
	for name := range w.leases {
		names[name] = true
	}
	for name := range held {
		names[name] = true
	}
	for name := range names {
		l := w.leases[name]
		ok, _ := leaseHeld(l, now)
		if ok != held[name] {
			changed = true
		}
		held[name] = ok
		if !ok {
			continue
		}
		if expiry, _ := leaseExpiry(l); next.IsZero() || expiry.Before(next) {
			next = expiry
		}
	}
	return changed, next
}

// isShardLease reports whether name is the lease of a shard's replicas (ShardLeaseName).
func isShardLease(name string) bool { return convoyv1alpha1.IsShardLeaseName(name) }
