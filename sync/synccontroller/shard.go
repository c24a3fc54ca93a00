package synccontroller

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
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
