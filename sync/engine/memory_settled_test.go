package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// countedVersions is a liveVersions that counts the objects it is asked about.
type countedVersions struct {
	liveVersions
	asked atomic.Int64
	// hidden names an object the watch does not hold, as if it were out of it.
	hidden atomic.Value
}

func (v *countedVersions) ResourceVersion(gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	v.asked.Add(1)
	if hidden, _ := v.hidden.Load().(string); hidden == name {
		return "", false
	}
	return v.liveVersions.ResourceVersion(gvk, namespace, name)
}

// hide makes the watch hold no object named name from now on; "" hides none.
func (v *countedVersions) hide(name string) { v.hidden.Store(name) }

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
	m.counts[t.Kind+"/"+t.Namespace+"/"+t.Name]++
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
	engine := memoryEngine(Options{Controller: "settled-test"}, versions, events)
	repeats := func() float64 {
		return kubetest.ControllerMetricSum(g, "convoy_sync_settled_repeats_total", "settled-test")
	}
	rev := digested(g, &Revision{ID: "r1", Probes: gateRules(t), Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "a", map[string]string{"v": "1"}), kubetest.Gate("", "gate")}}}})

	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(isWaiting(err)).To(BeTrue(), "the gate is closed: %v", err)
	kubetest.OpenGate(g, env.Client, tgt.Namespace, "gate")
	res, err = engine.Sync(ctx, tgt, rev, res.Inventory) // judged at the states it read: settled
	g.Expect(err).NotTo(HaveOccurred())
	settled := res
	g.Expect(res.Changes).To(Equal(Changes{Unchanged: 2}))
	versions.asked.Store(0)
	_, err = engine.Sync(ctx, tgt, rev, settled.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(versions.asked.Load()).To(Equal(int64(2)), "the first repeat checks that the watch holds what the pass read")
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
		_, err = engine.Sync(ctx, tgt, rev, settled.Inventory) // judged again: settled again
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repeats()).To(Equal(before + 1))
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
		start := repeats()
		for range 3 {
			_, err := engine.Sync(ctx, tgt, plain, settled.Inventory)
			g.Expect(err).NotTo(HaveOccurred())
		}
		g.Expect(repeats()).To(Equal(start), "never repeated")
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
	engine := memoryEngine(Options{Controller: "settled-prune-test"}, &liveVersions{}, &manualEvents{counts: map[string]uint64{}})
	repeats := func() float64 {
		return kubetest.ControllerMetricSum(g, "convoy_sync_settled_repeats_total", "settled-prune-test")
	}
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

// A pass that applies a revision and ends with every object available at the state it applied
// is settled already: the owner's next pass repeats it without looking at an object, unless
// the watch delivered a change since.
func TestAnApplyPassThatEndsAvailableIsRepeated(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt, counter := countedTarget(t)
	versions, events := &countedVersions{}, &manualEvents{counts: map[string]uint64{}}
	engine := memoryEngine(Options{Controller: "settled-apply-test"}, versions, events)
	repeats := func() float64 {
		return kubetest.ControllerMetricSum(g, "convoy_sync_settled_repeats_total", "settled-apply-test")
	}
	revision := func(id, v string) *Revision {
		return digested(g, &Revision{ID: id, Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
			kubetest.ConfigMap("", "a", map[string]string{"v": v}), kubetest.ConfigMap("", "b", nil)}}}})
	}
	// expectRepeated expects the next two passes to repeat the last: the first checks that the
	// watch holds the states the pass applied, the second looks at nothing.
	expectRepeated := func(g Gomega, rev *Revision, inventory []convoyv1alpha1.InventoryEntry, applied int64) {
		for _, asks := range []int64{applied, 0} {
			start := repeats()
			counter.take()
			versions.asked.Store(0)
			again, err := engine.Sync(ctx, tgt, rev, inventory)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(repeats()).To(Equal(start + 1))
			g.Expect(versions.asked.Load()).To(Equal(asks))
			g.Expect(counter.takeWithoutDiscovery()).To(BeEmpty())
			g.Expect(again.Changes).To(Equal(Changes{Unchanged: 2}))
			g.Expect(again.Inventory).To(Equal(inventory))
		}
	}

	installed, err := engine.Sync(ctx, tgt, revision("r1", "1"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(installed.Changes).To(Equal(Changes{Created: 2}))
	expectRepeated(g, revision("r1", "1"), installed.Inventory, 2)

	upgraded, err := engine.Sync(ctx, tgt, revision("r2", "2"), installed.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(upgraded.Changes).To(Equal(Changes{Configured: 1, Unchanged: 1}))
	expectRepeated(g, revision("r2", "2"), upgraded.Inventory, 1)

	t.Run("not once the watch delivered a change", func(t *testing.T) {
		g := NewWithT(t)
		rolled, err := engine.Sync(ctx, tgt, revision("r3", "3"), upgraded.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		events.deliver(tgt)
		start := repeats()
		_, err = engine.Sync(ctx, tgt, revision("r3", "3"), rolled.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repeats()).To(Equal(start), "a pass in full")
	})
	t.Run("not for an inventory other than the one it wrote", func(t *testing.T) {
		g := NewWithT(t)
		rolled, err := engine.Sync(ctx, tgt, revision("r4", "4"), upgraded.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		start := repeats()
		_, err = engine.Sync(ctx, tgt, revision("r4", "4"), rolled.Inventory[:1])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repeats()).To(Equal(start), "its status was not written: a pass in full")
	})
	t.Run("not until the watch holds what the pass applied", func(t *testing.T) {
		g := NewWithT(t)
		versions.hide("a")
		rolled, err := engine.Sync(ctx, tgt, revision("r6", "6"), upgraded.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		start := repeats()
		for range 3 { // each a pass in full, whose apply the watch does not hold either
			_, err = engine.Sync(ctx, tgt, revision("r6", "6"), rolled.Inventory)
			g.Expect(err).NotTo(HaveOccurred())
		}
		g.Expect(repeats()).To(Equal(start))
		g.Expect(env.Client.Delete(ctx, kubetest.ConfigMap(tgt.Namespace, "a", nil))).To(Succeed())
		again, err := engine.Sync(ctx, tgt, revision("r6", "6"), rolled.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again.Changes.Created).To(Equal(1), "a deletion the watch never told of is repaired")
		versions.hide("")
		_, err = engine.Sync(ctx, tgt, revision("r6", "6"), again.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repeats()).To(Equal(start+1), "once the watch holds it")
	})
	t.Run("not when a kind is not watched", func(t *testing.T) {
		g := NewWithT(t)
		versions.setBlind(true)
		defer versions.setBlind(false)
		rolled, err := engine.Sync(ctx, tgt, revision("r5", "5"), upgraded.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rolled.Watched).To(BeFalse())
		start := repeats()
		_, err = engine.Sync(ctx, tgt, revision("r5", "5"), rolled.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repeats()).To(Equal(start))
	})
}

// HoldsState tells the watch events of the states a pass applied or read for the owner the
// object's labels name, and no other.
func TestHoldsStateTellsTheStatesAPassSaw(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt := engineTarget(t)
	engine := memoryEngine(Options{Controller: "holds-state-test"}, &liveVersions{}, nil)
	rev := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "a", map[string]string{"v": "1"})}}}}
	metadata := func(g Gomega) *metav1.PartialObjectMetadata {
		live := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "a", nil))
		m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}
		m.ObjectMeta = metav1.ObjectMeta{Namespace: live.GetNamespace(), Name: live.GetName(), UID: live.GetUID(),
			ResourceVersion: live.GetResourceVersion(), Labels: live.GetLabels()}
		return m
	}

	_, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())
	applied := metadata(g)
	g.Expect(engine.HoldsState(applied, nil)).To(BeTrue(), "the state the apply answered")
	g.Expect(memoryEngine(Options{}, nil, nil).HoldsState(applied, nil)).To(BeFalse(), "another engine applied nothing")

	other := applied.DeepCopy()
	other.Labels = map[string]string{convoyv1alpha1.PackageNameLabel: "other", convoyv1alpha1.PackageNamespaceLabel: tgt.Namespace}
	g.Expect(engine.HoldsState(other, nil)).To(BeFalse(), "labels that name another owner")
	replaced := applied.DeepCopy()
	replaced.UID = "another-uid"
	g.Expect(engine.HoldsState(replaced, nil)).To(BeFalse(), "an object made again")

	live := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "a", nil))
	g.Expect(unstructured.SetNestedField(live.Object, "edited", "data", "v")).To(Succeed())
	g.Expect(env.Client.Update(ctx, live)).To(Succeed())
	g.Expect(engine.HoldsState(metadata(g), nil)).To(BeFalse(), "a write by someone else")
}

// changeDuringApply is a client that, before each apply, has the watch deliver a change of the
// owner's objects, as if someone else wrote one while the engine applied it.
type changeDuringApply struct {
	client.Client
	deliver func()
}

func (c changeDuringApply) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.deliver()
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// A pass that applied objects while the owner's count moved says its outcome may be stale, and
// is never repeated; a pass during which nothing moved says neither.
func TestAPassDuringWhichTheWatchDeliveredAChangeIsStale(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt := engineTarget(t)
	events := &manualEvents{counts: map[string]uint64{}}
	engine := memoryEngine(Options{Controller: "stale-test"}, &liveVersions{}, events)
	repeats := func() float64 {
		return kubetest.ControllerMetricSum(g, "convoy_sync_settled_repeats_total", "stale-test")
	}
	rev := digested(g, &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "a", nil)}}}})

	plain := tgt.Management
	tgt.Management = changeDuringApply{Client: plain, deliver: func() { events.deliver(tgt) }}
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Stale).To(BeTrue())

	tgt.Management = plain
	start := repeats()
	res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Stale).To(BeFalse())
	g.Expect(repeats()).To(Equal(start), "the stale pass was not repeated")
	res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Stale).To(BeFalse())
	g.Expect(repeats()).To(Equal(start+1), "the pass after it was")
}
