package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/convoy-gitops/convoy/rollout/rolloutcontroller"
	"github.com/convoy-gitops/convoy/sync/synccontroller"
)

// shardOptions are the sharding flags of `convoy controller` (DESIGN §10).
type shardOptions struct {
	// shard is the convoy.dev/shard value this replica reconciles; empty is the unsharded
	// replica.
	shard string
	// rollout spreads the Packages of HostedClusterPackages over shards (unsharded replica).
	rollout rolloutcontroller.Sharding
}

// bindFlags registers the sharding flags on fs.
func (o *shardOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.shard, "shard", "", "Reconcile only the Packages and ObjectDeployments labelled convoy.dev/shard=<name>, "+
		"with leader election lease convoy-controller-<name>.convoy.dev; such a replica polls no GitSource, serves no webhook, "+
		"runs no HostedClusterPackage controller, and fetches the commits its Packages need into its own --storage-path. "+
		"Empty: the unsharded replica, which reconciles only objects without the label and runs the GitSource and HostedClusterPackage controllers.")
	fs.StringSliceVar(&o.rollout.Shards, "shards", nil, "Shards (comma-separated) over which the HostedClusterPackage controller spreads "+
		"the Packages it creates, by HCP namespace (label convoy.dev/shard); a Package keeps its shard while it is listed. "+
		"Empty: no label. Unsharded replica only.")
	fs.BoolVar(&o.rollout.Rebalance, "rebalance-shards", false, "Move each Package to the shard hashing gives its HCP namespace "+
		"when it is next applied, rather than keeping the shard it has (after adding a shard to --shards).")
}

// validate returns an error for flags that contradict each other or bad shard names.
func (o *shardOptions) validate() error {
	if o.shard != "" {
		if err := synccontroller.ValidateShardName(o.shard); err != nil {
			return fmt.Errorf("--shard %q: %w", o.shard, err)
		}
		if len(o.rollout.Shards) > 0 || o.rollout.Rebalance {
			return errors.New("--shards and --rebalance-shards are flags of the unsharded replica (no --shard): " +
				"only it runs the HostedClusterPackage controller")
		}
	}
	if err := o.rollout.Validate(); err != nil {
		return fmt.Errorf("--shards: %w", err)
	}
	return nil
}

// leaseName returns the leader election lease of the replicas of the shard.
func (o *shardOptions) leaseName() string {
	if o.shard == "" {
		return leaderElectionID
	}
	return "convoy-controller-" + o.shard + ".convoy.dev"
}

// configureCache restricts the manager's cache to the objects of the shard.
func (o *shardOptions) configureCache(c *cache.Options) {
	synccontroller.ConfigureShardCache(c, o.shard)
}
