package v1alpha1

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxShardNameLength bounds a shard name: a label value holds at most 63 characters.
const MaxShardNameLength = validation.DNS1123LabelMaxLength

const (
	shardLeasePrefix = "convoy-controller-"
	shardLeaseSuffix = ".convoy.dev"
)

// ShardLeaseName returns the leader election lease of the replicas of shard.
func ShardLeaseName(shard string) string {
	return shardLeasePrefix + shard + shardLeaseSuffix
}

// IsShardLeaseName reports whether name is the lease of the replicas of some shard
// (ShardLeaseName of a non-empty shard).
func IsShardLeaseName(name string) bool {
	shard, ok := strings.CutPrefix(name, shardLeasePrefix)
	if !ok {
		return false
	}
	shard, ok = strings.CutSuffix(shard, shardLeaseSuffix)
	return ok && shard != ""
}

// ValidateShardName returns an error when name cannot name a shard: it must be the value of
// the ShardLabel and make a valid lease name (ShardLeaseName), so a lowercase DNS label (a-z,
// 0-9 and '-', starting and ending with a letter or digit) of at most MaxShardNameLength
// characters. A name the API server would refuse in a Lease (Shard_A, a valid label value)
// would leave the shard's replica without leadership, retrying forever.
func ValidateShardName(name string) error {
	if name == "" {
		return errors.New("a shard name must not be empty")
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("not a lowercase DNS label of at most %d characters, as label %s and lease %s need: %s",
			MaxShardNameLength, ShardLabel, ShardLeaseName(name), strings.Join(errs, "; "))
	}
	return nil
}
