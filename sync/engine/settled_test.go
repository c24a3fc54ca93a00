package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// countedVersions is a liveVersions that counts the objects it is asked about.
type countedVersions struct {
	liveVersions
	asked atomic.Int64
}

func (v *countedVersions) ResourceVersion(gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	v.asked.Add(1)
	return v.liveVersions.ResourceVersion(gvk, namespace, name)
}

// manualEvents is an OwnerEvents whose count moves only when a test says so, as if the watch
// had delivered a change.
type manualEvents struct {
	mu     sync.Mutex
	counts map[string]uint64
}

func (m *manualEvents) Count(kind, namespace, name string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[kind+"/"+namespace+"/"+name]
}

func (m *manualEvents) deliver(t *Target) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts[ownerID(t)]++
}

// digested gives every phase of rev its render digests, as a render does.
func digested(g Gomega, rev *Revision) *Revision {
	for i := range rev.Phases {
		ph := &rev.Phases[i]
		ph.Digests = make([]manifests.Digest, len(ph.Objects))
		for j, obj := range ph.Objects {
			d, ok := manifests.ObjectDigest(obj)
			g.Expect(ok).To(BeTrue())
			ph.Digests[j] = d
		}
	}
	return rev
}

// A pass that would repeat the owner's last settled pass looks at no object, until the watch
// delivers a change of one of them.
func TestASettledPassIsRepeatedUntilTheWatchDeliversAChange(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt, counter := countedTarget(t)
	versions, events := &countedVersions{}, &manualEvents{counts: map[string]uint64{}}
	engine := NewEngine(Options{Controller: "settled-test", Versions: versions, Events: events})
	repeats := func() float64 { return testutil.ToFloat64(settledRepeats.WithLabelValues("settled-test")) }
	rev := digested(g, &Revision{ID: "r1", Probes: gateRules(t), Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "a", map[string]string{"v": "1"}), kubetest.Gate("", "gate")}}}})

	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(isWaiting(err)).To(BeTrue(), "the gate is closed: %v", err)
	kubetest.OpenGate(g, env.Client, tgt.Namespace, "gate")
	res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	res, err = engine.Sync(ctx, tgt, rev, res.Inventory) // judged at the watch's resourceVersions
	g.Expect(err).NotTo(HaveOccurred())
	settled := res
	res, err = engine.Sync(ctx, tgt, rev, settled.Inventory) // every object quiet: a settled pass
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changes).To(Equal(Changes{Unchanged: 2}))
	before := repeats()
	counter.take()
	versions.asked.Store(0)

	t.Run("repeated without looking at an object", func(t *testing.T) {
		g := NewWithT(t)
		again, err := engine.Sync(ctx, tgt, rev, settled.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repeats()).To(Equal(before + 1))
		g.Expect(versions.asked.Load()).To(BeZero())
		g.Expect(counter.takeWithoutDiscovery()).To(BeEmpty())
		g.Expect(again.Available).To(BeTrue())
		g.Expect(again.Watched).To(BeTrue())
		g.Expect(again.Changes).To(Equal(Changes{Unchanged: 2}))
		g.Expect(again.Inventory).To(Equal(settled.Inventory))
		g.Expect(again.Phases).To(Equal(res.Phases))
	})
	t.Run("a change the watch delivers is seen", func(t *testing.T) {
		g := NewWithT(t)
		closeGate(g, tgt.Namespace, "gate")
		events.deliver(tgt)
		_, err := engine.Sync(ctx, tgt, rev, settled.Inventory)
		g.Expect(isWaiting(err)).To(BeTrue(), "%v", err)
		g.Expect(repeats()).To(Equal(before + 1))
		kubetest.OpenGate(g, env.Client, tgt.Namespace, "gate")
		events.deliver(tgt)
		for range 2 { // judged again, then settled again
			_, err = engine.Sync(ctx, tgt, rev, settled.Inventory)
			g.Expect(err).NotTo(HaveOccurred())
		}
		_, err = engine.Sync(ctx, tgt, rev, settled.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repeats()).To(Equal(before + 2))
	})
	t.Run("another revision, probes, inventory or target is a pass in full", func(t *testing.T) {
		g := NewWithT(t)
		changed := digested(g, &Revision{ID: "r2", Probes: rev.Probes, Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
			kubetest.ConfigMap("", "a", map[string]string{"v": "2"}), kubetest.Gate("", "gate")}}}})
		otherProbes := &Revision{ID: rev.ID, Phases: rev.Phases}
		sharded := *tgt
		sharded.Shard = "a"
		for _, tc := range []struct {
			rev      *Revision
			tgt      *Target
			previous int
		}{{rev: changed, tgt: tgt, previous: 2}, {rev: otherProbes, tgt: tgt, previous: 2}, {rev: rev, tgt: tgt, previous: 1},
			{rev: rev, tgt: &sharded, previous: 2}} {
			settleAgain(g, engine, tgt, rev, settled.Inventory, repeats)
			start := repeats()
			_, _ = engine.Sync(ctx, tc.tgt, tc.rev, settled.Inventory[:tc.previous])
			g.Expect(repeats()).To(Equal(start), "revision %s, shard %q, %d previous", tc.rev.ID, tc.tgt.Shard, tc.previous)
			g.Expect(versions.asked.Load()).NotTo(BeZero())
			versions.asked.Store(0)
		}
	})
	t.Run("a revision without digests is a pass in full", func(t *testing.T) {
		g := NewWithT(t)
		plain := &Revision{ID: rev.ID, Probes: rev.Probes, Phases: []Phase{{Name: "one", Objects: rev.Phases[0].Objects}}}
		for range 3 {
			_, err := engine.Sync(ctx, tgt, plain, settled.Inventory)
			g.Expect(err).NotTo(HaveOccurred())
		}
		g.Expect(engine.markOf(tgt, plain, rulesDigest(plain.Probes)).ok).To(BeFalse())
	})
}

// settleAgain passes until a pass repeats the settled one.
func settleAgain(g Gomega, engine *Engine, tgt *Target, rev *Revision, previous []convoyv1alpha1.InventoryEntry, repeats func() float64) {
	start := repeats()
	for range 3 {
		_, err := engine.Sync(context.Background(), tgt, rev, previous)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(repeats()).To(BeNumerically(">", start), "settled again, and repeated")
}

// An object of the previous inventory that is still being deleted is no settled pass: it must be
// looked at again until it is gone.
func TestAPassWithAnObjectLeftToPruneIsNeverRepeated(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt := engineTarget(t)
	engine := NewEngine(Options{Controller: "settled-prune-test", Versions: &liveVersions{}, Events: &manualEvents{counts: map[string]uint64{}}})
	repeats := func() float64 { return testutil.ToFloat64(settledRepeats.WithLabelValues("settled-prune-test")) }
	held := kubetest.ConfigMap("", "held", map[string]string{"v": "1"})
	held.SetFinalizers([]string{"test.convoy.dev/hold"})
	keep := kubetest.ConfigMap("", "keep", map[string]string{"v": "1"})
	both := digested(g, &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{keep, held}}}})
	res, err := engine.Sync(ctx, tgt, both, nil)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		live := kubetest.Get(NewWithT(t), env.Client, kubetest.ConfigMap(tgt.Namespace, "held", nil))
		live.SetFinalizers(nil)
		_ = env.Client.Update(context.Background(), live)
	})

	// Someone deletes it; its finalizer holds it.
	g.Expect(env.Client.Delete(ctx, kubetest.ConfigMap(tgt.Namespace, "held", nil))).To(Succeed())
	one := digested(g, &Revision{ID: "r2", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{keep}}}})
	res, err = engine.Sync(ctx, tgt, one, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Inventory).To(HaveLen(2), "the held object stays in the inventory while it is deleted")
	start := repeats()
	for range 4 {
		res, err = engine.Sync(ctx, tgt, one, res.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Inventory).To(HaveLen(2))
	}
	g.Expect(repeats()).To(Equal(start))
}
