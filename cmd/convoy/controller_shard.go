package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/rolloutcontroller"
	"github.com/convoy-gitops/convoy/sync/synccontroller"
)

// shardOptions are the sharding flags of `convoy controller` (docs/operations/sharding.md).
type shardOptions struct {
	// shard is the convoy.dev/shard value this replica reconciles; empty is the unsharded
	// replica.
	shard string
	// configMap is --shards-configmap, NAMESPACE/NAME; validate parses it into rollout.
	configMap string
	// rollout spreads the Packages of HostedClusterPackages over shards (unsharded replica).
	rollout rolloutcontroller.Sharding
}

// serviceAccountNamespaceFile holds the pod's namespace, where leader election keeps its
// leases unless --leader-election-namespace says otherwise.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// bindFlags registers the sharding flags on fs.
func (o *shardOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.shard, "shard", "", "Reconcile only the Packages and ObjectDeployments labelled convoy.dev/shard=<name>, "+
		"with leader election lease convoy-controller-<name>.convoy.dev (so <name> is a lowercase DNS label); such a replica polls no GitSource, serves no webhook, "+
		"runs no HostedClusterPackage controller, and fetches the commits its Packages need into its own --storage-path. "+
		"Empty: the unsharded replica, which reconciles only objects without the label and runs the GitSource and HostedClusterPackage controllers.")
	fs.StringSliceVar(&o.rollout.Shards, "shards", nil, "Shards (comma-separated) over which the HostedClusterPackage controller spreads "+
		"the Packages it creates, by HCP namespace (label convoy.dev/shard); a Package keeps its shard while it is listed. "+
		"Empty: no label, and a labelled Package moves back to the unsharded replica once its shard has no live replica. At most 256. Unsharded replica only.")
	fs.StringVar(&o.configMap, "shards-configmap", "", "ConfigMap NAMESPACE/NAME whose key \"shards\" names the shards (comma- or newline-separated), "+
		"read at run time instead of --shards; its optional key \"rebalance\" (true/false) overrides --rebalance-shards. "+
		"A list that is not valid is reported and ignored, the last valid one staying in force; an absent ConfigMap shards nothing "+
		"(a labelled Package moves back to the unsharded replica once its shard has no live replica). "+
		"Unsharded replica only.")
	fs.BoolVar(&o.rollout.Rebalance, "rebalance-shards", false, "Move each Package to the shard hashing gives its HCP namespace, "+
		"rather than keeping the shard it has (after adding a shard to --shards): every misplaced Package is relabelled at its "+
		"HostedClusterPackage's next pass, at once and outside the budget (a relabel keeps the revision).")
}

// validate returns an error for flags that contradict each other or bad shard names.
func (o *shardOptions) validate() error {
	if o.shard != "" {
		if err := convoyv1alpha1.ValidateShardName(o.shard); err != nil {
			return fmt.Errorf("--shard %q: %w", o.shard, err)
		}
		if len(o.rollout.Shards) > 0 || o.rollout.Rebalance || o.configMap != "" {
			return errors.New("--shards, --shards-configmap and --rebalance-shards are flags of the unsharded replica (no --shard): " +
				"only it runs the HostedClusterPackage controller")
		}
	}
	if o.configMap != "" {
		if len(o.rollout.Shards) > 0 {
			return fmt.Errorf("--shards and --shards-configmap %q both name the shards: use one", o.configMap)
		}
		ns, name, ok := strings.Cut(o.configMap, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("--shards-configmap %q: want NAMESPACE/NAME", o.configMap)
		}
		o.rollout.ConfigMap = types.NamespacedName{Namespace: ns, Name: name}
	}
	if err := o.rollout.Validate(); err != nil {
		return fmt.Errorf("--shards: %w", err)
	}
	return nil
}

// setLeaseNamespace makes the HostedClusterPackage controller of the unsharded replica check
// the shard replicas' leases in namespace (the leader election namespace, default the pod's),
// even with no shard named: Packages left on a shard whose replicas are gone are reported, and
// moved back to this replica when no shard is in force. Without leader election there are no
// leases to check.
func (o *shardOptions) setLeaseNamespace(leaderElect bool, namespace string) {
	if o.shard != "" || !leaderElect {
		return
	}
	if namespace == "" {
		data, err := os.ReadFile(serviceAccountNamespaceFile)
		if err != nil {
			ctrl.Log.WithName("controller").Info("Not checking the shard replicas' leases: no --leader-election-namespace and not in a pod", "error", err.Error())
			return
		}
		namespace = strings.TrimSpace(string(data))
	}
	o.rollout.LeaseNamespace = namespace
}

// leaseName returns the leader election lease of the replicas of the shard.
func (o *shardOptions) leaseName() string {
	if o.shard == "" {
		return leaderElectionID
	}
	return rolloutcontroller.ShardLeaseName(o.shard)
}

// configureCache restricts the manager's cache to the objects of the shard and, on the
// unsharded replica, its ConfigMaps to the shards ConfigMap and its Leases to the lease
// namespace.
func (o *shardOptions) configureCache(c *cache.Options) {
	synccontroller.ConfigureShardCache(c, o.shard)
	o.rollout.ConfigureCache(c)
}
