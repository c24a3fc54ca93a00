package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	engine := NewEngine(Options{Controller: "test", Versions: versions})
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

// Hosted-cluster objects have no watch: every pass reads them.
func TestHostedObjectsAreAlwaysRead(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt := engineTarget(t)
	hosted, counter := countingClient(t, blue.Config)
	tgt.Hosted = hosted
	hostedNS := fleet.NewNamespaceIn(t, blue.Client)
	engine := NewEngine(Options{Controller: "test", Versions: &liveVersions{}})
	rev := &Revision{ID: "r1", Phases: []Phase{{Name: "in", Class: convoyv1alpha1.ClassHostedCluster,
		Objects: []*unstructured.Unstructured{kubetest.ConfigMap(hostedNS, "a", map[string]string{"v": "1"})}}}}
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())
	counter.take()
	res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Watched).To(BeFalse())
	g.Expect(counter.takeWithoutDiscovery()).To(Equal(map[string]int{"GET": 1}))
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
	engine := NewEngine(Options{Controller: "test", Versions: &liveVersions{}})
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
