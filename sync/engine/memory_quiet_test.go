package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// liveVersions is a ResourceVersions that reads the API server (as a synced watch would see
// it), or answers nothing while blind is set.
type liveVersions struct {
	mu    sync.Mutex
	blind bool
}

func (v *liveVersions) ResourceVersion(gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.blind {
		return "", false
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, live); err != nil {
		return "", false
	}
	return live.GetResourceVersion(), true
}

func (v *liveVersions) Synced(schema.GroupVersionKind) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return !v.blind
}

func (v *liveVersions) setBlind(blind bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.blind = blind
}

// closeGate removes the ready annotation of a gate, as someone breaking it would.
func closeGate(g Gomega, namespace, name string) {
	gate := kubetest.Gate(namespace, name)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, kubetest.ReadyAnnotation)
	g.Expect(env.Client.Patch(context.Background(), gate, client.RawPatch("application/merge-patch+json", []byte(patch)))).To(Succeed())
}

// A pass does not read the management objects the watch saw unchanged since they were judged
// available; it reads the one that changed, and judges it again.
func TestSettledPassReadsOnlyWhatTheWatchSawChange(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt, counter := countedTarget(t)
	versions := &liveVersions{}
	engine := memoryEngine(Options{Controller: "test"}, versions, nil)
	rev := &Revision{ID: "r1", Probes: gateRules(t), Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "a", map[string]string{"v": "1"}), kubetest.ConfigMap("", "b", map[string]string{"v": "1"}),
		kubetest.Gate("", "gate")}}}}

	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(isWaiting(err)).To(BeTrue(), "the gate is closed: %v", err)
	g.Expect(res.Watched).To(BeFalse())
	kubetest.OpenGate(g, env.Client, tgt.Namespace, "gate")
	res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Watched).To(BeTrue(), "every object seen by the watch as it was judged")
	counter.take()

	t.Run("a settled pass reads nothing", func(t *testing.T) {
		g := NewWithT(t)
		res, err := engine.Sync(ctx, tgt, rev, res.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Available).To(BeTrue())
		g.Expect(res.Changes).To(Equal(Changes{Unchanged: 3}))
		g.Expect(res.Inventory).To(HaveLen(3))
		g.Expect(counter.takeWithoutDiscovery()).To(BeEmpty())
	})
	t.Run("a changed object is read and judged again", func(t *testing.T) {
		g := NewWithT(t)
		closeGate(g, tgt.Namespace, "gate")
		_, err := engine.Sync(ctx, tgt, rev, res.Inventory)
		g.Expect(isWaiting(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("the gate is closed"))
		g.Expect(counter.takeWithoutDiscovery()).To(Equal(map[string]int{"GET": 1, "PATCH(dry-run)": 1}), "only the gate is read")
		kubetest.OpenGate(g, env.Client, tgt.Namespace, "gate")
		_, err = engine.Sync(ctx, tgt, rev, res.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
	})
	t.Run("objects the watch cannot tell about are read", func(t *testing.T) {
		g := NewWithT(t)
		versions.setBlind(true)
		defer versions.setBlind(false)
		counter.take()
		res, err := engine.Sync(ctx, tgt, rev, res.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Watched).To(BeFalse())
		g.Expect(counter.takeWithoutDiscovery()).To(Equal(map[string]int{"GET": 3}))
	})
	t.Run("a pass that writes objects of watched kinds needs no timer", func(t *testing.T) {
		g := NewWithT(t)
		changed := &Revision{ID: "r2", Probes: rev.Probes, Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
			kubetest.ConfigMap("", "a", map[string]string{"v": "2"}), rev.Phases[0].Objects[1], rev.Phases[0].Objects[2]}}}}
		res, err := engine.Sync(ctx, tgt, changed, res.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Changes.Configured).To(Equal(1))
		g.Expect(res.Watched).To(BeTrue(), "a change of any object will make an event")
		_, err = engine.Sync(ctx, tgt, rev, res.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
	})
	t.Run("other probes judge again", func(t *testing.T) {
		g := NewWithT(t)
		counter.take()
		other := &Revision{ID: "r1", Phases: rev.Phases}
		_, err := engine.Sync(ctx, tgt, other, res.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(counter.takeWithoutDiscovery()).To(Equal(map[string]int{"GET": 3}))
	})
}

// hostedCountedTarget returns an engineTarget whose hosted client, of blue, counts its requests.
func hostedCountedTarget(t *testing.T) (*Target, *requestCounter) {
	tgt := engineTarget(t)
	hosted, counter := countingClient(t, blue.Config)
	tgt.Hosted = hosted
	return tgt, counter
}

// No watch sees a hosted cluster: a pass lists the owner's objects there, metadata only, one
// request per kind and namespace, and reads only those that changed since they were judged
// available, or that the lists could not tell about. A kind and namespace of one object is read,
// not listed: the same one request. Such a pass is never repeated as settled, however quiet.
func TestSettledHostedPassListsInsteadOfReading(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt, counter := hostedCountedTarget(t)
	ns := tgt.Namespace // a namespace the hosted cluster does not have yet
	engine := memoryEngine(Options{Controller: "test"}, &liveVersions{}, &manualEvents{counts: map[string]uint64{}})
	rev := digested(g, &Revision{ID: "r1", Phases: []Phase{{Name: "in", Class: convoyv1alpha1.ClassHostedCluster,
		Objects: []*unstructured.Unstructured{kubetest.Object("v1", "Namespace", "", ns, nil),
			kubetest.ConfigMap(ns, "a", map[string]string{"v": "1"}), kubetest.ConfigMap(ns, "b", map[string]string{"v": "1"})}}}})
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())
	inventory := res.Inventory
	counter.take()
	syncAgain := func(g Gomega) (Changes, map[string]int) {
		res, err := engine.Sync(ctx, tgt, rev, inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Available).To(BeTrue())
		g.Expect(res.Watched).To(BeFalse(), "no watch tells about a hosted cluster: the owner still needs its timer")
		return res.Changes, counter.takeWithoutDiscovery()
	}
	settled := func(g Gomega) {
		changes, counts := syncAgain(g)
		g.Expect(changes).To(Equal(Changes{Unchanged: 3}))
		g.Expect(counts).To(Equal(map[string]int{"GET": 1, "LIST": 1}), "the namespace is read, the ConfigMaps listed")
	}

	t.Run("a settled pass lists, one request per kind and namespace", func(t *testing.T) {
		settled(NewWithT(t))
		settled(NewWithT(t)) // and is not repeated without a look
	})
	t.Run("a changed object is read and applied again", func(t *testing.T) {
		g := NewWithT(t)
		patch := []byte(`{"data":{"v":"drifted"}}`)
		g.Expect(blue.Client.Patch(ctx, kubetest.ConfigMap(ns, "a", nil), client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		changes, counts := syncAgain(g)
		g.Expect(changes).To(Equal(Changes{Configured: 1, Unchanged: 2}))
		g.Expect(counts).To(HaveKeyWithValue("LIST", 1))
		g.Expect(counts).To(HaveKeyWithValue("GET", 2), "the namespace and the changed object are read")
		g.Expect(kubetest.Get(g, blue.Client, kubetest.ConfigMap(ns, "a", nil)).Object["data"]).To(HaveKeyWithValue("v", "1"))
		settled(g)
	})
	t.Run("a deleted object is created again", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(blue.Client.Delete(ctx, kubetest.ConfigMap(ns, "b", nil))).To(Succeed())
		changes, counts := syncAgain(g)
		g.Expect(changes).To(Equal(Changes{Created: 1, Unchanged: 2}))
		g.Expect(counts).To(Equal(map[string]int{"LIST": 1, "GET": 2, "PATCH": 1}))
		settled(g)
	})
	t.Run("objects a failed list cannot tell about are read", func(t *testing.T) {
		g := NewWithT(t)
		counter.setFailLists(true)
		defer counter.setFailLists(false)
		changes, counts := syncAgain(g)
		g.Expect(changes).To(Equal(Changes{Unchanged: 3}))
		g.Expect(counts).To(Equal(map[string]int{"LIST": 1, "GET": 3}))
	})
	t.Run("other probes judge again", func(t *testing.T) {
		g := NewWithT(t)
		other := &Revision{ID: "r1", Probes: gateRules(t), Phases: rev.Phases}
		_, err := engine.Sync(ctx, tgt, other, inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(counter.takeWithoutDiscovery()).To(Equal(map[string]int{"GET": 3}), "no verdict under these probes: nothing to list")
	})
}

// An ObjectDeployment's hosted objects are listed by its own ownership labels.
func TestHostedListSelectsTheOwnersKind(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt, counter := hostedCountedTarget(t)
	tgt.Kind = "ObjectDeployment"
	ns := fleet.NewNamespaceIn(t, blue.Client)
	engine := memoryEngine(Options{Controller: "test"}, nil, nil)
	rev := &Revision{ID: "r1", Phases: []Phase{{Name: "in", Class: convoyv1alpha1.ClassHostedCluster,
		Objects: []*unstructured.Unstructured{kubetest.ConfigMap(ns, "a", nil), kubetest.ConfigMap(ns, "b", nil)}}}}
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())
	counter.take()
	res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changes).To(Equal(Changes{Unchanged: 2}))
	g.Expect(counter.takeWithoutDiscovery()).To(Equal(map[string]int{"LIST": 1}))
}

// A sharded owner labels its management objects with its shard, which its replica's watch
// selects, but keeps a shard the manifest names (on a Package, it picks the replica): such an
// object is outside the watch, so the pass is not Watched.
func TestOwnerShardLabelsObjectsButKeepsTheManifests(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt := engineTarget(t)
	tgt.Shard = "a"
	engine := memoryEngine(Options{Controller: "test"}, &liveVersions{}, nil)
	other := kubetest.ConfigMap("", "other", map[string]string{"v": "1"})
	other.SetLabels(map[string]string{convoyv1alpha1.ShardLabel: "b"})
	rev := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "mine", map[string]string{"v": "1"}), other}}}}
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "mine", nil)).GetLabels()).To(
		HaveKeyWithValue(convoyv1alpha1.ShardLabel, "a"))
	g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "other", nil)).GetLabels()).To(
		HaveKeyWithValue(convoyv1alpha1.ShardLabel, "b"))
	g.Expect(res.Watched).To(BeFalse(), "the object of shard b is not in shard a's watch")

	rev.Phases[0].Objects = rev.Phases[0].Objects[:1]
	res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Watched).To(BeTrue())
}
