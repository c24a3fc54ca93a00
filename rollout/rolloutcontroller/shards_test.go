package rolloutcontroller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestShardingSpreadsNamespacesEvenlyAndStably: 3,000 HCP namespaces over three shards land
// within 10% of a third each, whatever the order of the names; adding a fourth shard moves
// none of them, and asking for a rebalance moves to it only its share, from every shard.
func TestShardingSpreadsNamespacesEvenlyAndStably(t *testing.T) {
	g := NewWithT(t)
	three := Sharding{Shards: []string{"a", "b", "c"}}
	reordered := Sharding{Shards: []string{"c", "a", "b"}}
	const n = 3000
	assigned := map[string]string{}
	count := map[string]int{}
	for i := range n {
		ns := fmt.Sprintf("clusters-hc-%04d", i)
		shard := three.shardFor(ns, "")
		g.Expect(reordered.shardFor(ns, "")).To(Equal(shard), "the order of --shards does not matter")
		assigned[ns] = shard
		count[shard]++
	}
	for _, shard := range three.Shards {
		g.Expect(count[shard]).To(BeNumerically("~", n/3, n/30), "shard %s", shard)
	}
	four := Sharding{Shards: []string{"a", "b", "c", "d"}}
	rebalance := Sharding{Shards: four.Shards, Rebalance: true}
	moved := map[string]int{}
	for ns, shard := range assigned {
		g.Expect(four.shardFor(ns, shard)).To(Equal(shard), "adding a shard moves nothing unless asked")
		if to := rebalance.shardFor(ns, shard); to != shard {
			g.Expect(to).To(Equal("d"), "a rebalance moves only to the new shard")
			moved[shard]++
		}
	}
	total := moved["a"] + moved["b"] + moved["c"]
	g.Expect(total).To(BeNumerically("~", n/4, n/40))
	for _, shard := range three.Shards {
		g.Expect(moved[shard]).To(BeNumerically(">", 0), "the new shard takes from every shard")
	}
	g.Expect(four.shardFor("clusters-x", "gone")).To(BeElementOf(four.Shards), "a Package on an unlisted shard is reassigned")
	g.Expect(Sharding{}.shardFor("clusters-x", "a")).To(BeEmpty(), "no shards, no label")
}

// TestShardingRefusesBadNames names the shard that cannot be a label value.
func TestShardingRefusesBadNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Sharding{Shards: []string{"a", "b c"}}.Validate()).To(MatchError(ContainSubstring(`shard "b c"`)))
	g.Expect(Sharding{Shards: []string{"a", "a"}}.Validate()).To(MatchError(ContainSubstring("listed twice")))
	g.Expect(Sharding{Shards: []string{""}}.Validate()).To(HaveOccurred())
	g.Expect(Sharding{Shards: []string{"a", "b"}}.Validate()).To(Succeed())

	// A shard names a lease too: a label value that no lease name can hold is refused, else the
	// shard's replica would retry taking its lease forever.
	g.Expect(Sharding{Shards: []string{"Shard_A"}}.Validate()).To(MatchError(ContainSubstring("convoy-controller-Shard_A.convoy.dev")))
	g.Expect(Sharding{Shards: []string{strings.Repeat("a", 64)}}.Validate()).To(MatchError(ContainSubstring("at most 63")))
	g.Expect(Sharding{Shards: []string{strings.Repeat("a", 63)}}.Validate()).To(Succeed())
	many := make([]string, MaxShards+1)
	for i := range many {
		many[i] = fmt.Sprintf("s%d", i)
	}
	g.Expect(Sharding{Shards: many}.Validate()).To(MatchError(ContainSubstring("at most 256")))
	g.Expect(Sharding{Shards: many[:MaxShards]}.Validate()).To(Succeed())
}

// TestParseShardConfigReadsTheListOrRefusesItWhole: commas and newlines separate the names,
// blanks and empty entries are ignored, rebalance overrides the flag; an unknown key, a bad or
// repeated name, or a rebalance that is not a boolean refuses the data as a whole.
func TestParseShardConfigReadsTheListOrRefusesItWhole(t *testing.T) {
	g := NewWithT(t)
	base := Sharding{Rebalance: true, LeaseNamespace: "convoy-system"}
	got, err := ParseShardConfig(map[string]string{ShardsKey: " a, b\nc,\n\n"}, base)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(Sharding{Shards: []string{"a", "b", "c"}, Rebalance: true, LeaseNamespace: "convoy-system"}))
	got, err = ParseShardConfig(map[string]string{ShardsKey: "a", RebalanceKey: "false"}, base)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Rebalance).To(BeFalse(), "the ConfigMap overrides --rebalance-shards")
	for _, data := range []map[string]string{nil, {}, {ShardsKey: " ,\n"}} {
		got, err = ParseShardConfig(data, base)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Shards).To(BeEmpty(), "no list shards nothing, as an empty --shards: %v", data)
	}
	for want, data := range map[string]map[string]string{
		`key "shards": shard "b c": not a lowercase DNS label`:         {ShardsKey: "a,b c"},
		`key "shards": shard "a" is listed twice`:                      {ShardsKey: "a\na"},
		`key "shard": unknown (the keys are "shards" and "rebalance")`: {"shard": "a"},
		`key "rebalance": "yes" is neither "true" nor "false"`:         {ShardsKey: "a", RebalanceKey: "yes"},
	} {
		_, err := ParseShardConfig(data, base)
		g.Expect(err).To(MatchError(HavePrefix(want)))
	}
}

// TestShardingRefusesAListAndAConfigMap: the shards come from one place.
func TestShardingRefusesAListAndAConfigMap(t *testing.T) {
	g := NewWithT(t)
	cm := types.NamespacedName{Namespace: "convoy-system", Name: "convoy-shards"}
	g.Expect(Sharding{Shards: []string{"a"}, ConfigMap: cm}.Validate()).To(MatchError(ContainSubstring("not both")))
	g.Expect(Sharding{ConfigMap: types.NamespacedName{Name: "x"}}.Validate()).To(MatchError(ContainSubstring("namespace")))
	g.Expect(Sharding{ConfigMap: cm}.Validate()).To(Succeed())
}

// TestLeaseHeld: a lease is held while it has a holder and renewTime + leaseDurationSeconds is
// ahead; ShardLeaseName and isShardLease agree.
func TestLeaseHeld(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lease := func(holder string, renewed time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder,
			LeaseDurationSeconds: ptr.To(int32(15)), RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)}}}
	}
	held, why := leaseHeld(lease("pod-1", 14*time.Second), now)
	g.Expect(held).To(BeTrue(), why)
	held, why = leaseHeld(lease("pod-1", 15*time.Second), now)
	g.Expect(held).To(BeFalse())
	g.Expect(why).To(Equal("expired at 2026-01-02T03:04:05Z"))
	_, why = leaseHeld(lease("", 0), now)
	g.Expect(why).To(Equal("released"))
	_, why = leaseHeld(nil, now)
	g.Expect(why).To(Equal("absent"))
	_, why = leaseHeld(&coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("x")}}, now)
	g.Expect(why).To(Equal("never renewed"))
	g.Expect(isShardLease(ShardLeaseName("a-1"))).To(BeTrue())
	for _, name := range []string{"convoy-controller.convoy.dev", "convoy-controller-.convoy.dev", "kube-scheduler"} {
		g.Expect(isShardLease(name)).To(BeFalse(), name)
	}
}

// TestShardLeaseWatchEnqueuesOnlyWhenALeaseIsTakenOrLost: renewals of a held lease enqueue
// nothing; its expiry without renewal is seen at the expiry, and a renewal after it.
func TestShardLeaseWatchEnqueuesOnlyWhenALeaseIsTakenOrLost(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w := newShardLeaseWatch(nil, func() time.Time { return now }, nil)
	held := map[string]bool{}
	renew := func(at time.Time) {
		w.observe(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: ShardLeaseName("a")},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod"), LeaseDurationSeconds: ptr.To(int32(10)),
				RenewTime: &metav1.MicroTime{Time: at}}})
	}
	renew(now)
	changed, next := w.check(held)
	g.Expect(changed).To(BeTrue(), "a lease taken")
	g.Expect(next).To(Equal(now.Add(10 * time.Second)))
	now = now.Add(2 * time.Second)
	renew(now)
	changed, next = w.check(held)
	g.Expect(changed).To(BeFalse(), "a renewal")
	g.Expect(next).To(Equal(now.Add(10 * time.Second)))
	now = next
	changed, next = w.check(held)
	g.Expect(changed).To(BeTrue(), "the lease expired")
	g.Expect(next.IsZero()).To(BeTrue(), "nothing left to wait for")
	renew(now)
	changed, _ = w.check(held)
	g.Expect(changed).To(BeTrue(), "the lease was taken again")
	w.forget(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: ShardLeaseName("a")}})
	changed, _ = w.check(held)
	g.Expect(changed).To(BeTrue(), "the lease was deleted")
}
