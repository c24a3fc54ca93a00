package main

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
)

// TestShardsConfigMapFlag: --shards-configmap names NAMESPACE/NAME, excludes --shards and is a
// flag of the unsharded replica; with leader election, the lease namespace is the election's.
func TestShardsConfigMapFlag(t *testing.T) {
	g := NewWithT(t)
	parse := func(args ...string) (*shardOptions, error) {
		o := &shardOptions{}
		fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
		o.bindFlags(fs)
		g.Expect(fs.Parse(args)).To(Succeed())
		return o, o.validate()
	}
	o, err := parse("--shards-configmap=convoy-system/convoy-shards")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.rollout.ConfigMap).To(Equal(types.NamespacedName{Namespace: "convoy-system", Name: "convoy-shards"}))
	o.setLeaseNamespace(true, "convoy-system")
	g.Expect(o.rollout.LeaseNamespace).To(Equal("convoy-system"))

	_, err = parse("--shards=a,b", "--shards-configmap=convoy-system/convoy-shards")
	g.Expect(err).To(MatchError(`--shards and --shards-configmap "convoy-system/convoy-shards" both name the shards: use one`))
	for _, bad := range []string{"convoy-shards", "/convoy-shards", "convoy-system/", "a/b/c"} {
		_, err = parse("--shards-configmap=" + bad)
		g.Expect(err).To(MatchError(ContainSubstring("want NAMESPACE/NAME")), bad)
	}
	_, err = parse("--shard=a", "--shards-configmap=convoy-system/convoy-shards")
	g.Expect(err).To(MatchError(ContainSubstring("flags of the unsharded replica")))
	_, err = parse("--shard=Shard_A")
	g.Expect(err).To(MatchError(ContainSubstring("lease convoy-controller-Shard_A.convoy.dev")), "a shard names a lease")

	o, err = parse("--shards=a")
	g.Expect(err).NotTo(HaveOccurred())
	o.setLeaseNamespace(false, "convoy-system")
	g.Expect(o.rollout.LeaseNamespace).To(BeEmpty(), "no leader election, no lease to check")
	o, err = parse()
	g.Expect(err).NotTo(HaveOccurred())
	o.setLeaseNamespace(true, "convoy-system")
	g.Expect(o.rollout.LeaseNamespace).To(Equal("convoy-system"),
		"nothing sharded, leases still watched: Packages left on a shard whose replicas are gone move back")
	o, err = parse("--shard=a")
	g.Expect(err).NotTo(HaveOccurred())
	o.setLeaseNamespace(true, "convoy-system")
	g.Expect(o.rollout.LeaseNamespace).To(BeEmpty(), "a shard replica runs no HostedClusterPackage controller")
}
