package rolloutcontroller

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Sharding spreads the Packages the HostedClusterPackage controller creates over the shard
// replicas of the Package controller (convoy.dev/shard, docs/operations/sharding.md). All the
// Packages of one HCP namespace go to the same shard, chosen by rendezvous hashing of the
// namespace over the shard names: even, and independent of the order of the names and of the
// other namespaces.
// The label is sticky: a Package keeps the shard it has while that shard is listed, so adding
// a shard moves nothing; Rebalance moves each Package to its rendezvous choice, which moves to a
// new shard only its fair share. With no shard listed, a labelled Package moves back to the
// unsharded replica once its shard has no live replica (scope.shardFor). Moves are relabels,
// at the next pass of each HostedClusterPackage.
//
// The shards are named either in Shards or, read at run time, in a ConfigMap (see
// shard_config.go); the HostedClusterPackage controller reports on each HostedClusterPackage
// the shards whose replica holds no lease (ShardsReady, see shard_replicas.go).
type Sharding struct {
	// Shards names the shards (--shards); empty stamps no label, and removes it from Packages
	// whose shard has no live replica, so that the unsharded replica reconciles them.
	Shards []string
	// Rebalance moves Packages off the shard they have when it is not their rendezvous choice
	// (--rebalance-shards).
	Rebalance bool
	// ConfigMap names the ConfigMap whose key ShardsKey lists the shards, in place of Shards
	// (--shards-configmap); zero reads Shards.
	ConfigMap types.NamespacedName
	// LeaseNamespace holds the leader election leases of the shard replicas
	// (ShardLeaseName); empty checks no lease, and ShardsReady reports only the shard list.
	LeaseNamespace string
}

// Validate returns an error naming the first shard name that is not valid
// (convoyv1alpha1.ValidateShardName), or a name listed twice, or a ConfigMap named together
// with Shards.
func (s Sharding) Validate() error {
	if s.ConfigMap != (types.NamespacedName{}) {
		if len(s.Shards) > 0 {
			return fmt.Errorf("the shards are named either in a list or in ConfigMap %s, not both", s.ConfigMap)
		}
		if s.ConfigMap.Namespace == "" || s.ConfigMap.Name == "" {
			return fmt.Errorf("ConfigMap %q: both a namespace and a name are needed", s.ConfigMap)
		}
	}
	return s.validateShards()
}

// validateShards returns an error naming the first shard name that is not valid, or a name
// listed twice, or more than MaxShards names.
func (s Sharding) validateShards() error {
	if len(s.Shards) > MaxShards {
		return fmt.Errorf("%d shards: at most %d may be listed", len(s.Shards), MaxShards)
	}
	seen := map[string]bool{}
	for _, name := range s.Shards {
		if err := convoyv1alpha1.ValidateShardName(name); err != nil {
			return fmt.Errorf("shard %q: %w", name, err)
		}
		if seen[name] {
			return fmt.Errorf("shard %q is listed twice", name)
		}
		seen[name] = true
	}
	return nil
}

// MaxShards bounds the shards listed. Each HostedClusterPackage pass hashes a Package's
// namespace once per shard when it chooses the Package's shard, so that a list written by
// mistake (or by someone hostile) cannot make every pass slow.
const MaxShards = 256

// shardFor returns the shard of a Package in namespace whose current convoy.dev/shard label is
// current ("" when it has none or does not exist yet), or "" when sharding is off.
func (s Sharding) shardFor(namespace, current string) string {
	if len(s.Shards) == 0 {
		return ""
	}
	if current != "" && !s.Rebalance && slices.Contains(s.Shards, current) {
		return current
	}
	return rendezvous(namespace, s.Shards)
}

// rendezvous returns the shard of highest hash weight for key (highest random weight hashing):
// removing a shard moves only its keys, adding one takes its share from every other.
func rendezvous(key string, shards []string) string {
	best, bestWeight := "", uint64(0)
	for _, shard := range shards {
		sum := sha256.Sum256([]byte(key + "\x00" + shard))
		w := binary.BigEndian.Uint64(sum[:8])
		if best == "" || w > bestWeight || (w == bestWeight && shard < best) {
			best, bestWeight = shard, w
		}
	}
	return best
}

// shardLabelOf returns the convoy.dev/shard label of pkg, "" when pkg is nil.
func shardLabelOf(pkg *convoyv1alpha1.Package) string {
	if pkg == nil {
		return ""
	}
	return pkg.Labels[convoyv1alpha1.ShardLabel]
}

// ShardLeaseName returns the leader election lease of the replicas of shard.
func ShardLeaseName(shard string) string { return convoyv1alpha1.ShardLeaseName(shard) }
