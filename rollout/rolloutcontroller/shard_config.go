package rolloutcontroller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// Keys of the shards ConfigMap (Sharding.ConfigMap).
const (
	// ShardsKey lists the shards, separated by commas or newlines; blanks around a name and
	// empty entries are ignored. An absent key, or one that lists nothing, shards nothing, as
	// an empty --shards does.
	ShardsKey = "shards"
	// RebalanceKey, "true" or "false", overrides --rebalance-shards while the ConfigMap says
	// it; absent keeps the flag's value.
	RebalanceKey = "rebalance"
)

// InvalidShardListEventReason is the reason of the Warning event on a shards ConfigMap whose
// data is refused.
const InvalidShardListEventReason = convoyv1alpha1.InvalidShardListReason

// ParseShardConfig returns the sharding that data (a shards ConfigMap's) names, on top of
// base (the flags): the shards of ShardsKey and the rebalance of RebalanceKey. It refuses, as
// a whole, data with an unknown key, a shard name that cannot be a label value, a name listed
// twice, or a rebalance that is neither "true" nor "false".
func ParseShardConfig(data map[string]string, base Sharding) (Sharding, error) {
	out := base
	out.Shards = nil
	for _, key := range slices.Sorted(maps.Keys(data)) {
		if key != ShardsKey && key != RebalanceKey {
			return Sharding{}, fmt.Errorf("key %q: unknown (the keys are %q and %q)", key, ShardsKey, RebalanceKey)
		}
	}
	for _, field := range strings.FieldsFunc(data[ShardsKey], func(r rune) bool { return r == ',' || r == '\n' }) {
		if name := strings.TrimSpace(field); name != "" {
			out.Shards = append(out.Shards, name)
		}
	}
	if err := out.validateShards(); err != nil {
		return Sharding{}, fmt.Errorf("key %q: %w", ShardsKey, err)
	}
	switch v, ok := data[RebalanceKey]; {
	case !ok:
	case v == "true" || v == "false":
		out.Rebalance = v == "true"
	default:
		return Sharding{}, fmt.Errorf("key %q: %q is neither \"true\" nor \"false\"", RebalanceKey, v)
	}
	return out, nil
}

// shardList is the sharding in force when the shards come from a ConfigMap: the last valid
// one read (nil before the first), and the newest data refused, announced once.
type shardList struct {
	mu       sync.Mutex
	inForce  *Sharding
	rejected string
}

// accept makes next the sharding in force.
func (l *shardList) accept(next Sharding) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inForce, l.rejected = &next, ""
}

// reject returns the sharding in force (nil when none was ever valid), and whether problem is
// new since the last data refused.
func (l *shardList) reject(problem string) (inForce *Sharding, isNew bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	isNew, l.rejected = l.rejected != problem, problem
	return l.inForce, isNew
}

// reconcileShards resolves the sharding of the pass into s.sharding, then reports on
// ShardsReady the shards of the Packages that have no live replica (markShardsReady).
func (r *HostedClusterPackageReconciler) reconcileShards(ctx context.Context, s *scope) error {
	if err := r.resolveSharding(ctx, s); err != nil {
		return err
	}
	return r.markShardsReady(ctx, s)
}

// resolveSharding sets s.sharding: the flags', or the ConfigMap's when one is named. Data the
// ConfigMap holds that is not valid is reported (s.shardProblem, a Warning event on the
// ConfigMap, the log) and ignored: the last valid list stays in force. When no valid list was
// read since the controller started, the pass stalls and changes no Package: any list would be
// a guess, and a wrong one would move Packages between shards; the Packages keep being
// reconciled by their shards meanwhile, and the ConfigMap's fix starts a pass.
func (r *HostedClusterPackageReconciler) resolveSharding(ctx context.Context, s *scope) error {
	key := r.Sharding.ConfigMap
	if key.Name == "" {
		s.sharding = r.Sharding
		return nil
	}
	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, key, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading the shards ConfigMap %s: %w", key, err)
	}
	next, err := ParseShardConfig(cm.Data, r.Sharding)
	if err == nil {
		r.shards.accept(next)
		s.sharding = next
		return nil
	}
	s.shardProblem = fmt.Sprintf("ConfigMap %s: %v", key, err)
	inForce, isNew := r.shards.reject(s.shardProblem)
	if isNew {
		ctrl.LoggerFrom(ctx).Error(err, "Refusing the shard list", "configMap", key.String())
		if r.Recorder != nil {
			r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, InvalidShardListEventReason, eventAction,
				"%s; the last valid shard list stays in force", s.shardProblem)
		}
	}
	if inForce == nil {
		return pass.Stallf(convoyv1alpha1.InvalidShardListReason,
			"%s; no valid shard list was read since the controller started, so no Package is changed until it is fixed", s.shardProblem)
	}
	s.sharding = *inForce
	return nil
}

// ConfigureCache restricts the manager's cache of ConfigMaps to the shards ConfigMap and of
// Leases to the lease namespace, when the sharding names them: the controller watches those
// and nothing else of their kinds, and a cluster has many. Call it on the cache options before
// creating the manager; other readers of ConfigMaps or Leases in the same manager must then use
// the API reader.
func (s Sharding) ConfigureCache(o *cache.Options) {
	if o.ByObject == nil {
		o.ByObject = map[client.Object]cache.ByObject{}
	}
	if s.ConfigMap.Name != "" {
		o.ByObject[&corev1.ConfigMap{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{s.ConfigMap.Namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", s.ConfigMap.Name),
		}
	}
	if s.LeaseNamespace != "" {
		o.ByObject[&coordinationv1.Lease{}] = cache.ByObject{Namespaces: map[string]cache.Config{s.LeaseNamespace: {}}}
	}
}

// isShardsConfigMap passes the events of the shards ConfigMap whose data changed.
func (r *HostedClusterPackageReconciler) isShardsConfigMap() predicate.Predicate {
	named := func(o client.Object) bool {
		return o.GetNamespace() == r.Sharding.ConfigMap.Namespace && o.GetName() == r.Sharding.ConfigMap.Name
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return named(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return named(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return named(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.ConfigMap)
			n, ok2 := e.ObjectNew.(*corev1.ConfigMap)
			return named(e.ObjectNew) && (!ok1 || !ok2 || !maps.Equal(o.Data, n.Data))
		},
	}
}

// requestsForAll returns every HostedClusterPackage, from the cache: the shards changed, or
// a shard's replica came or went.
func (r *HostedClusterPackageReconciler) requestsForAll(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &convoyv1alpha1.HostedClusterPackageList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing HostedClusterPackages")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
