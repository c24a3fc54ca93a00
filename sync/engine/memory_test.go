package engine

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// scopeClient answers IsObjectNamespaced from scopes and counts the questions; an unknown kind
// is an error.
type scopeClient struct {
	client.Client
	scopes map[string]bool
	asked  int
}

func (c *scopeClient) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	c.asked++
	namespaced, ok := c.scopes[obj.GetObjectKind().GroupVersionKind().Kind]
	if !ok {
		return false, errors.New("no match")
	}
	return namespaced, nil
}

// threeConfigMaps is a one-phase revision of ConfigMaps a, b and c holding the given values.
func threeConfigMaps(id, a, b, c string) *Revision {
	return &Revision{ID: id, Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "a", map[string]string{"v": a}), kubetest.ConfigMap("", "b", map[string]string{"v": b}),
		kubetest.ConfigMap("", "c", map[string]string{"v": c})}}}}
}

// A changed object the watch still holds at the state this owner left it is applied without a
// read; without a watch nothing says it is still that object (it may have been replaced by one
// that is not this owner's), and it is read and compared first.
func TestSyncAppliesChangedObjectsWithoutReadingThem(t *testing.T) {
	env.Require(t)
	for name, tc := range map[string]struct {
		versions       memory.ResourceVersions
		changed, again map[string]int
	}{
		"watched": {versions: &liveVersions{}, changed: map[string]int{"PATCH": 2}, again: map[string]int{}},
		"no watch": {changed: map[string]int{"GET": 3, "PATCH(dry-run)": 2, "PATCH": 2},
			again: map[string]int{"GET": 3}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			tgt, counter := countedTarget(t)
			engine := memoryEngine(Options{Controller: "test"}, tc.versions, nil)
			res, err := engine.Sync(ctx, tgt, threeConfigMaps("r1", "1", "1", "1"), nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(counter.takeWithoutDiscovery()).To(Equal(map[string]int{"PATCH": 3}), "new objects: a create-only apply, no read")

			res, err = engine.Sync(ctx, tgt, threeConfigMaps("r2", "1", "2", "2"), res.Inventory)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Changes).To(Equal(Changes{Configured: 2, Unchanged: 1}))
			g.Expect(counter.takeWithoutDiscovery()).To(Equal(tc.changed))
			g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "b", nil)).Object["data"]).To(HaveKeyWithValue("v", "2"))

			res, err = engine.Sync(ctx, tgt, threeConfigMaps("r2", "1", "2", "2"), res.Inventory)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Changes).To(Equal(Changes{Unchanged: 3}))
			g.Expect(counter.takeWithoutDiscovery()).To(Equal(tc.again), "a no-op pass reads each object at most once")
		})
	}
}

func TestSyncStillRestoresDriftOfObjectsItApplied(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt, counter := countedTarget(t)
	engine := memoryEngine(Options{Controller: "test"}, nil, nil)
	rev := threeConfigMaps("r1", "1", "1", "1")
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())

	edited := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "a", nil))
	g.Expect(unstructured.SetNestedField(edited.Object, "edited", "data", "v")).To(Succeed())
	g.Expect(env.Client.Update(ctx, edited)).To(Succeed())
	counter.take()

	res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changes).To(Equal(Changes{Configured: 1, Unchanged: 2}))
	g.Expect(counter.takeWithoutDiscovery()).To(Equal(map[string]int{"GET": 3, "PATCH(dry-run)": 1, "PATCH": 1}),
		"only the object changed behind the engine's back is dry-run")
	g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "a", nil)).Object["data"]).To(HaveKeyWithValue("v", "1"))

	restarted := memoryEngine(Options{Controller: "test"}, nil, nil)
	res, err = restarted.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changes).To(Equal(Changes{Unchanged: 3}))
	g.Expect(counter.takeWithoutDiscovery()).To(Equal(map[string]int{"GET": 3, "PATCH(dry-run)": 3}),
		"a restarted engine knows nothing and compares every object")
}

func TestSyncChecksOwnershipOfAnObjectAdoptedSinceItsApply(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := memoryEngine(Options{Controller: "test"}, nil, nil)
	first := engineTarget(t)
	res, err := engine.Sync(ctx, first, threeConfigMaps("r1", "1", "1", "1"), nil)
	g.Expect(err).NotTo(HaveOccurred())

	second := &Target{Namespace: first.Namespace, Name: "other", Management: env.Client}
	adopted := kubetest.ConfigMap("", "b", map[string]string{"v": "adopted"})
	adopted.SetAnnotations(map[string]string{convoyv1alpha1.AdoptAnnotation: "true"})
	_, err = engine.Sync(ctx, second, &Revision{ID: "o1", Phases: []Phase{{Name: "one",
		Objects: []*unstructured.Unstructured{adopted}}}}, nil)
	g.Expect(err).NotTo(HaveOccurred())

	_, err = engine.Sync(ctx, first, threeConfigMaps("r2", "2", "2", "2"), res.Inventory)
	g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.CollisionReason), "%v", err)
	live := kubetest.Get(g, env.Client, kubetest.ConfigMap(first.Namespace, "b", nil))
	g.Expect(live.Object["data"]).To(HaveKeyWithValue("v", "adopted"))
	g.Expect(live.GetLabels()).To(HaveKeyWithValue(convoyv1alpha1.PackageNameLabel, "other"))
}

func TestSyncFallsBackWhenADirectApplyIsInvalid(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := memoryEngine(Options{Controller: "test"}, nil, nil)
	tgt := engineTarget(t)
	secret := func(typ string) *Revision {
		return &Revision{ID: typ, Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
			kubetest.Object("v1", "Secret", "", "s", map[string]any{"type": typ, "stringData": map[string]any{"k": typ}})}}}}
	}
	res, err := engine.Sync(ctx, tgt, secret("a.example/one"), nil)
	g.Expect(err).NotTo(HaveOccurred())

	_, err = engine.Sync(ctx, tgt, secret("a.example/two"), res.Inventory)
	g.Expect(isStalling(err)).To(BeTrue(), "an immutable field without convoy.dev/force: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("Secret/" + tgt.Namespace + "/s dry-run failed"))
	live := kubetest.Get(g, env.Client, kubetest.Object("v1", "Secret", tgt.Namespace, "s", nil))
	g.Expect(live.Object["type"]).To(Equal("a.example/one"))
	g.Expect(client.ObjectKeyFromObject(live).Namespace).To(Equal(tgt.Namespace))
}

func TestSyncDoesNotTakeOverAnObjectReplacedSinceItsApply(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := memoryEngine(Options{Controller: "test"}, nil, nil)
	tgt := engineTarget(t)
	res, err := engine.Sync(ctx, tgt, threeConfigMaps("r1", "1", "1", "1"), nil)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(env.Client.Delete(ctx, kubetest.ConfigMap(tgt.Namespace, "b", nil))).To(Succeed())
	g.Expect(env.Client.Create(ctx, kubetest.ConfigMap(tgt.Namespace, "b", map[string]string{"v": "someone else's"}))).To(Succeed())
	g.Expect(env.Client.Delete(ctx, kubetest.ConfigMap(tgt.Namespace, "c", nil))).To(Succeed())

	res2, err := engine.Sync(ctx, tgt, threeConfigMaps("r2", "2", "2", "2"), res.Inventory)
	g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.CollisionReason), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("ConfigMap " + tgt.Namespace + "/b (not managed by convoy)"))
	live := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "b", nil))
	g.Expect(live.Object["data"]).To(HaveKeyWithValue("v", "someone else's"), "a replaced object is not written")
	g.Expect(live.GetLabels()).NotTo(HaveKey(convoyv1alpha1.PackageNameLabel))

	g.Expect(env.Client.Delete(ctx, live)).To(Succeed())
	_, err = engine.Sync(ctx, tgt, threeConfigMaps("r2", "2", "2", "2"), res2.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"a", "b", "c"} {
		g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, name, nil)).Object["data"]).To(HaveKeyWithValue("v", "2"))
	}
}
