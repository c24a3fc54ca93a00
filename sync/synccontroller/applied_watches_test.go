package synccontroller

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	cliobject "github.com/fluxcd/cli-utils/pkg/object"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sync/engine"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// recordingQueue records the adds of an event handler.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	now, later []reconcile.Request
}

func (q *recordingQueue) Add(r reconcile.Request) { q.now = append(q.now, r) }
func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	if d <= 0 {
		q.Add(r)
		return
	}
	q.later = append(q.later, r)
}

// appliedObject returns the metadata of an object applied by Package ns/owner.
func appliedObject(ns, owner string, generation int64, annotations map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent", Generation: generation,
		Annotations: annotations, Labels: map[string]string{
			convoyv1alpha1.PackageNameLabel: owner, convoyv1alpha1.PackageNamespaceLabel: ns}}}
}

// Status-only updates of a settled owner's objects are spaced by statusChurnDelay; every other
// update, and any update while the owner is not settled, enqueues the owner at once.
func TestStatusChurnOfASettledOwnerIsSpaced(t *testing.T) {
	settled := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "settled"}}
	pass.MarkTrue(settled, convoyv1alpha1.ReadyCondition, convoyv1alpha1.SucceededReason, "ok")
	pass.MarkTrue(settled, convoyv1alpha1.AvailableCondition, convoyv1alpha1.RevisionAvailableReason, "ok")
	busy := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "busy"}}
	c := &Common{Client: fake.NewClientBuilder().WithScheme(env.Scheme).WithObjects(settled, busy).Build()}
	h := c.enqueueOwner(&convoyv1alpha1.Package{})
	update := func(owner string, oldGen, newGen int64, annotations map[string]string) *recordingQueue {
		q := &recordingQueue{}
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: appliedObject("ns", owner, oldGen, nil),
			ObjectNew: appliedObject("ns", owner, newGen, annotations)}, q)
		return q
	}
	g := NewWithT(t)
	q := update("settled", 1, 1, nil)
	g.Expect(q.later).To(HaveLen(1), "status only, settled owner: spaced")
	g.Expect(q.now).To(BeEmpty())
	g.Expect(update("settled", 1, 2, nil).now).To(HaveLen(1), "spec changed")
	g.Expect(update("settled", 1, 1, map[string]string{"a": "b"}).now).To(HaveLen(1), "annotations changed")
	g.Expect(update("settled", 0, 0, nil).now).To(HaveLen(1), "a kind without generation")
	g.Expect(update("busy", 1, 1, nil).now).To(HaveLen(1), "status only, owner not settled")
}

func TestResourceVersionReadsTheInformersStore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a := startedWatches(t, g, cache.Options{Scheme: env.Scheme})
	ns := fleet.NewNamespaceIn(t, env.Client)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent", Labels: map[string]string{
		convoyv1alpha1.PackageNameLabel: "app", convoyv1alpha1.PackageNamespaceLabel: ns}}, Data: map[string]string{"v": "1"}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	id := cliobject.ObjMetadata{Namespace: ns, Name: "agent", GroupKind: schema.GroupKind{Kind: "ConfigMap"}}.String()
	a.ensure(ctx, []convoyv1alpha1.InventoryEntry{{ID: id, Version: "v1", Cluster: convoyv1alpha1.InventoryClusterManagement}})
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")

	resourceVersion := func(name string) func() string {
		return func() string { rv, _ := a.ResourceVersion(gvk, ns, name); return rv }
	}
	g.Eventually(resourceVersion("agent")).Should(Equal(cm.ResourceVersion))
	g.Expect(a.synced[gvk]).NotTo(BeNil(), "read from the informer's store")
	counted := a.events.Count("", ns, "app")
	g.Expect(counted).NotTo(BeZero(), "the object's addition counted for its owner before the kind is synced")
	cm.Data["v"] = "2"
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
	g.Eventually(resourceVersion("agent")).Should(Equal(cm.ResourceVersion))
	g.Eventually(func() uint64 { return a.events.Count("", ns, "app") }).Should(BeNumerically(">", counted), "the update counted")
	_, found := a.ResourceVersion(gvk, ns, "missing")
	g.Expect(found).To(BeFalse())
	_, found = a.ResourceVersion(corev1.SchemeGroupVersion.WithKind("Secret"), ns, "agent")
	g.Expect(found).To(BeFalse(), "a kind not watched")
}

// heldStates is a stateHolder of the resourceVersions a test names.
type heldStates map[string]bool

func (h heldStates) HoldsState(obj client.Object, _ func()) bool { return h[obj.GetResourceVersion()] }

// labelledHeld is a stateHolder of the objects labelled held, which records the kinds it is
// asked about.
type labelledHeld struct {
	mu    sync.Mutex
	kinds []string
}

func (h *labelledHeld) HoldsState(obj client.Object, _ func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kinds = append(h.kinds, obj.GetObjectKind().GroupVersionKind().Kind)
	return obj.GetLabels()["held"] == "true"
}

// ownedAt returns the metadata of an object of Package ns/owner at resourceVersion rv.
func ownedAt(ns, owner, rv string) *metav1.PartialObjectMetadata {
	obj := appliedObject(ns, owner, 1, nil)
	obj.ResourceVersion = rv
	return obj
}

// startedWatches returns the watches of applied objects on a cache of opts, started until the
// test ends.
func startedWatches(t *testing.T, g Gomega, opts cache.Options) *appliedWatches {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := cache.New(env.Config, opts)
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()
	return appliedWatchesOn(c)
}

// digestedRevision returns a revision of one phase of objs, digested as a render digests them.
func digestedRevision(g Gomega, id string, objs ...*unstructured.Unstructured) *engine.Revision {
	ph := engine.Phase{Name: "one", Objects: objs}
	for _, obj := range objs {
		d, ok := manifests.ObjectDigest(obj)
		g.Expect(ok).To(BeTrue())
		ph.Digests = append(ph.Digests, d)
	}
	return &engine.Revision{ID: id, Phases: []engine.Phase{ph}}
}

// An owner's count skips the events of the states its engine holds (its pass applied or read
// them) and resyncs, and counts every other event: a state nobody's pass saw, a move to another
// owner, a deletion.
func TestOwnerCountsSkipTheStatesAPassSaw(t *testing.T) {
	g := NewWithT(t)
	o := newOwnerEvents()
	o.skipStatesOf(heldStates{"2": true, "4": true})
	h := o.handler()
	count := func(owner string) uint64 { return o.Count("", "ns", owner) }
	moved := func(event func()) uint64 {
		before := count("app")
		event()
		return count("app") - before
	}

	g.Expect(moved(func() { h.OnAdd(ownedAt("ns", "app", "1"), false) })).NotTo(BeZero(), "a creation nobody's pass saw")
	g.Expect(moved(func() { h.OnAdd(ownedAt("ns", "app", "2"), false) })).To(BeZero(), "the engine's own creation")
	g.Expect(moved(func() { h.OnUpdate(ownedAt("ns", "app", "2"), ownedAt("ns", "app", "3")) })).NotTo(BeZero(), "a write by someone else")
	g.Expect(moved(func() { h.OnUpdate(ownedAt("ns", "app", "3"), ownedAt("ns", "app", "4")) })).To(BeZero(), "the engine's own write")
	g.Expect(moved(func() { h.OnUpdate(ownedAt("ns", "app", "5"), ownedAt("ns", "app", "5")) })).To(BeZero(), "a resync")
	g.Expect(moved(func() { h.OnDelete(ownedAt("ns", "app", "4")) })).NotTo(BeZero(), "a deletion")
	g.Expect(moved(func() {
		h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/agent", Obj: ownedAt("ns", "app", "4")})
	})).NotTo(BeZero(), "a deletion seen late")

	before := count("other")
	g.Expect(moved(func() { h.OnUpdate(ownedAt("ns", "app", "3"), ownedAt("ns", "other", "4")) })).NotTo(BeZero(),
		"labels moved to another owner: the owner left counts")
	g.Expect(count("other")).NotTo(Equal(before), "and the owner it joined")
}

// The events of the watch of applied objects carry their kind, by which an engine finds the
// state it holds.
func TestOwnerCountsAskTheEngineWithTheKind(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	a := startedWatches(t, g, cache.Options{Scheme: env.Scheme})
	holder := &labelledHeld{}
	a.skipStatesOf(holder)
	ns := fleet.NewNamespaceIn(t, env.Client)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent", Labels: map[string]string{
		convoyv1alpha1.PackageNameLabel: "app", convoyv1alpha1.PackageNamespaceLabel: ns}}, Data: map[string]string{"v": "1"}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	a.ensure(ctx, []convoyv1alpha1.InventoryEntry{{ID: ns + "_agent__ConfigMap", Version: "v1", Cluster: convoyv1alpha1.InventoryClusterManagement}})
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	g.Eventually(func() bool { return a.Synced(gvk) }).Should(BeTrue())
	created := a.events.Count("", ns, "app")

	cm.Labels["held"] = "true" // a state the engine holds
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
	delete(cm.Labels, "held")
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
	count := func() uint64 { return a.events.Count("", ns, "app") }
	g.Eventually(count).Should(Equal(created+2), "the held state skipped, the other counted for the owner before and after")
	g.Consistently(count).WithTimeout(300 * time.Millisecond).Should(Equal(created + 2))
	holder.mu.Lock()
	defer holder.mu.Unlock()
	g.Expect(holder.kinds).To(ContainElement("ConfigMap"))
	g.Expect(holder.kinds).To(HaveEach("ConfigMap"))
}

// With the real watch of applied objects, the pass after an apply repeats it as settled, and a
// write by someone else after it is a pass in full that repairs it.
func TestThePassAfterAnApplyRepeatsUntilSomeoneElseWrites(t *testing.T) {
	env.Require(t)
	requireMemory(t)
	g := NewWithT(t)
	ctx := context.Background()
	a := startedWatches(t, g, cache.Options{Scheme: env.Scheme})
	eng := engineOf(engine.Options{Controller: "apply-repeat-test"}, a, true)
	repeats := func() float64 { return settledRepeatsOf(g, "apply-repeat-test") }
	ns := fleet.NewNamespaceIn(t, env.Client)
	tgt := &engine.Target{Namespace: ns, Name: "app", Management: env.Client}
	revision := func(v int) *engine.Revision {
		return digestedRevision(g, strconv.Itoa(v),
			kubetest.ConfigMap("", "a", map[string]string{"v": strconv.Itoa(v)}), kubetest.ConfigMap("", "b", nil))
	}
	// caughtUp waits until the watch has seen each object as it is.
	caughtUp := func(g Gomega) {
		for _, name := range []string{"a", "b"} {
			live := kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, name, nil))
			g.Eventually(func() string { rv, _ := a.ResourceVersion(live.GroupVersionKind(), ns, name); return rv }).
				Should(Equal(live.GetResourceVersion()))
		}
	}

	res, err := eng.Sync(ctx, tgt, revision(1), nil)
	g.Expect(err).NotTo(HaveOccurred())
	a.ensure(ctx, res.Inventory) // as the controller does: the kind is watched from its first apply
	g.Eventually(func() bool { return a.Synced(corev1.SchemeGroupVersion.WithKind("ConfigMap")) }).Should(BeTrue())
	caughtUp(g)
	res, err = eng.Sync(ctx, tgt, revision(1), res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())

	// The apply's own events, delivered before or after its response, leave the owner's count
	// where it was: once the watch holds what the apply wrote, the next passes repeat it.
	for v := 2; v <= 4; v++ {
		res, err = eng.Sync(ctx, tgt, revision(v), res.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Changes.Configured).To(Equal(1))
		caughtUp(g)
		start := repeats()
		for range 2 {
			again, err := eng.Sync(ctx, tgt, revision(v), res.Inventory)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again.Changes.Written()).To(BeFalse())
		}
		g.Expect(repeats()).To(Equal(start+2), "both passes after the apply repeat it")
	}

	edited := kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, "a", nil))
	g.Expect(unstructured.SetNestedField(edited.Object, "edited", "data", "v")).To(Succeed())
	g.Expect(env.Client.Update(ctx, edited)).To(Succeed())
	caughtUp(g)
	start := repeats()
	repaired, err := eng.Sync(ctx, tgt, revision(4), res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repeats()).To(Equal(start), "a pass in full")
	g.Expect(repaired.Changes.Configured).To(Equal(1), "the edit is repaired")
	g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, "a", nil)).Object["data"]).To(HaveKeyWithValue("v", "4"))
}

// An object the watch of applied objects does not hold (labelled convoy.dev/shard with an
// empty value, which the unsharded replica's watch leaves out) never makes an event: a pass
// that applied it is never repeated, and its deletion is repaired by the next pass.
func TestAnObjectOutOfTheWatchIsNeverVouchedFor(t *testing.T) {
	env.Require(t)
	requireMemory(t)
	g := NewWithT(t)
	ctx := context.Background()
	a := startedWatches(t, g, cache.Options{Scheme: env.Scheme, DefaultLabelSelector: ShardSelector("")})
	eng := engineOf(engine.Options{Controller: "out-of-watch-test"}, a, true)
	repeats := func() float64 { return settledRepeatsOf(g, "out-of-watch-test") }
	ns := fleet.NewNamespaceIn(t, env.Client)
	tgt := &engine.Target{Namespace: ns, Name: "app", Management: env.Client}
	outside := kubetest.ConfigMap("", "outside", map[string]string{"v": "1"})
	outside.SetLabels(map[string]string{convoyv1alpha1.ShardLabel: ""})
	rev := digestedRevision(g, "1", kubetest.ConfigMap("", "inside", nil), outside)

	res, err := eng.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())
	a.ensure(ctx, res.Inventory)
	g.Eventually(func() bool { return a.Synced(corev1.SchemeGroupVersion.WithKind("ConfigMap")) }).Should(BeTrue())
	start := repeats()
	for range 3 {
		res, err = eng.Sync(ctx, tgt, rev, res.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(repeats()).To(Equal(start), "every pass in full")

	g.Expect(env.Client.Delete(ctx, kubetest.ConfigMap(ns, "outside", nil))).To(Succeed())
	res, err = eng.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changes.Created).To(Equal(1), "the deletion no event told of is repaired")
	g.Expect(repeats()).To(Equal(start))
}

// A watch that starts after an apply lists the states the engine applied: their additions leave
// the owner's count where it was, and a write by someone else moves it.
func TestOwnerCountSkipsTheListedStatesTheEngineApplied(t *testing.T) {
	env.Require(t)
	requireMemory(t)
	g := NewWithT(t)
	ctx := context.Background()
	eng := engineOf(engine.Options{Controller: "held-list-test"}, nil, false)
	ns := fleet.NewNamespaceIn(t, env.Client)
	tgt := &engine.Target{Namespace: ns, Name: "app", Management: env.Client}
	res, err := eng.Sync(ctx, tgt, digestedRevision(g, "1", kubetest.ConfigMap("", "a", nil), kubetest.ConfigMap("", "b", nil)), nil)
	g.Expect(err).NotTo(HaveOccurred())

	a := startedWatches(t, g, cache.Options{Scheme: env.Scheme})
	a.skipStatesOf(eng)
	a.ensure(ctx, res.Inventory)
	g.Eventually(func() bool { return a.Synced(corev1.SchemeGroupVersion.WithKind("ConfigMap")) }).Should(BeTrue())
	count := func() uint64 { return a.events.Count("", ns, "app") }
	g.Expect(count()).To(BeZero(), "both listed at the states the engine applied")

	edited := kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, "b", nil))
	g.Expect(unstructured.SetNestedField(edited.Object, "edited", "data", "v")).To(Succeed())
	g.Expect(env.Client.Update(ctx, edited)).To(Succeed())
	g.Eventually(count).ShouldNot(BeZero(), "a write by someone else")
}
