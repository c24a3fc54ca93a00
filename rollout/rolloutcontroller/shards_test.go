package rolloutcontroller

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
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
}
