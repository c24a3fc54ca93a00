package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// engineTarget returns a target named after the test in a new management namespace, with the
// blue hosted cluster.
func engineTarget(t *testing.T) *Target {
	return &Target{Namespace: fleet.NewNamespaceIn(t, env.Client), Name: "pkg", Management: env.Client, Hosted: blue.Client}
}

// countedTarget returns an engineTarget whose management client counts its requests.
func countedTarget(t *testing.T) (*Target, *requestCounter) {
	tgt := engineTarget(t)
	mgmt, counter := countingClient(t, env.Config)
	tgt.Management = mgmt
	return tgt, counter
}

func reasonOf(err error) string { return pass.ReasonOf(err) }

func isWaiting(err error) bool {
	var w *pass.Waiting
	return errors.As(err, &w)
}

func isStalling(err error) bool {
	var s *pass.Stalling
	return errors.As(err, &s)
}

func TestSyncAppliesPhasesInOrderAcrossClusters(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt := engineTarget(t)
	hostedNS := fleet.NewNamespaceIn(t, blue.Client)
	group := fleet.NameSuffix() + ".test.convoy.dev"
	rev := &Revision{ID: "r1", Probes: gateRules(t), Phases: []Phase{
		{Name: "crds", Class: convoyv1alpha1.ClassHostedCluster, Objects: []*unstructured.Unstructured{
			crd(group, "Widget"), kubetest.Gate(hostedNS, "gate")}},
		{Name: "deploy", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "settings", map[string]string{"a": "1"})}},
		{Name: "configure", Class: convoyv1alpha1.ClassHostedCluster, Objects: []*unstructured.Unstructured{
			kubetest.Object(group+"/v1", "Widget", hostedNS, "w1", map[string]any{"spec": map[string]any{"size": int64(3)}})}},
	}}
	engine := testEngine(Options{Controller: "test"})

	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(isWaiting(err)).To(BeTrue(), "%v", err)
	g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.ProbeFailedReason))
	g.Expect(err.Error()).To(ContainSubstring("the gate is closed"))
	g.Expect(res.Phases[0].Available).To(BeFalse())
	g.Expect(res.Phases[1].Message).To(Equal(`waiting for phase "crds"`))
	g.Expect(kubetest.Exists(g, blue.Client, rev.Phases[0].Objects[1])).To(BeTrue())
	settings := kubetest.ConfigMap(tgt.Namespace, "settings", nil)
	g.Expect(kubetest.Exists(g, env.Client, settings)).To(BeFalse(), "phase 2 applied before phase 1 is available")
	g.Expect(res.Inventory).To(HaveLen(2))

	kubetest.OpenGate(g, blue.Client, hostedNS, "gate")
	res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Available).To(BeTrue())
	g.Expect(res.Changes.Created).To(Equal(2))
	g.Expect(res.Inventory).To(HaveLen(4))

	live := kubetest.Get(g, env.Client, settings)
	g.Expect(live.GetLabels()).To(Equal(map[string]string{
		convoyv1alpha1.PackageNameLabel: "pkg", convoyv1alpha1.PackageNamespaceLabel: tgt.Namespace}))
	g.Expect(kubetest.Exists(g, blue.Client, kubetest.ConfigMap(tgt.Namespace, "settings", nil))).To(BeFalse())
	widget := kubetest.Get(g, blue.Client, rev.Phases[2].Objects[0])
	g.Expect(widget.GetLabels()).To(HaveKeyWithValue(convoyv1alpha1.HostedClusterLabel, tgt.Namespace))
	g.Expect(kubetest.Exists(g, env.Client, rev.Phases[2].Objects[0].DeepCopy())).To(BeFalse())
	g.Expect(res.Inventory[3]).To(Equal(convoyv1alpha1.InventoryEntry{
		ID: hostedNS + "_w1_" + group + "_Widget", Version: "v1", Cluster: "hosted", Phase: "configure"}))
}

func TestSyncUpdatesOnlyChangedObjectsAndPrunesAfterAvailable(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt, counter := countedTarget(t)
	engine := testEngine(Options{Controller: "test"})
	rev1 := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "a", map[string]string{"v": "1"}), kubetest.ConfigMap("", "b", map[string]string{"v": "1"}),
		kubetest.ConfigMap("", "c", map[string]string{"v": "1"})}}}}
	res1, err := engine.Sync(ctx, tgt, rev1, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res1.Changes).To(Equal(Changes{Created: 3}))
	a1 := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "a", nil))
	counter.take()

	rev2 := &Revision{ID: "r2", Probes: gateRules(t), Phases: []Phase{
		{Name: "one", Objects: []*unstructured.Unstructured{
			kubetest.ConfigMap("", "a", map[string]string{"v": "1"}), kubetest.ConfigMap("", "b", map[string]string{"v": "2"})}},
		{Name: "two", Objects: []*unstructured.Unstructured{kubetest.Gate("", "gate")}},
	}}
	res2, err := engine.Sync(ctx, tgt, rev2, res1.Inventory)
	g.Expect(isWaiting(err)).To(BeTrue(), "%v", err)
	g.Expect(res2.Changes).To(Equal(Changes{Created: 1, Configured: 1, Unchanged: 1}))
	g.Expect(counter.take()["PATCH"]).To(Equal(2), "only b and the gate are written")
	g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "a", nil)).GetResourceVersion()).To(Equal(a1.GetResourceVersion()))
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "c", nil))).To(BeTrue(), "pruned before the revision is available")
	g.Expect(res2.Inventory).To(HaveLen(4))

	kubetest.OpenGate(g, env.Client, tgt.Namespace, "gate")
	res3, err := engine.Sync(ctx, tgt, rev2, res2.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res3.Pruned).To(Equal(1))
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "c", nil))).To(BeFalse())
	g.Expect(res3.Inventory).To(HaveLen(3))
	counter.take()

	res4, err := engine.Sync(ctx, tgt, rev2, res3.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res4.Changes).To(Equal(Changes{Unchanged: 3}))
	g.Expect(writes(counter.take())).To(BeZero(), "a no-op pass writes nothing")
}

func TestSyncRefusesCollisionsUnlessAdopted(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})

	t.Run("an object convoy did not create", func(t *testing.T) {
		g := NewWithT(t)
		tgt := engineTarget(t)
		g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: objectMeta(tgt.Namespace, "theirs")})).To(Succeed())
		rev := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
			kubetest.ConfigMap("", "mine", nil), kubetest.ConfigMap("", "theirs", map[string]string{"x": "y"})}}}}
		res, err := engine.Sync(ctx, tgt, rev, nil)
		g.Expect(isStalling(err)).To(BeTrue(), "%v", err)
		g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.CollisionReason))
		g.Expect(err.Error()).To(ContainSubstring("ConfigMap " + tgt.Namespace + "/theirs (not managed by convoy)"))
		g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "mine", nil))).To(BeFalse(), "nothing of the phase is applied")
		g.Expect(res.Inventory).To(BeEmpty())

		adopted := kubetest.ConfigMap("", "theirs", map[string]string{"x": "y"})
		adopted.SetAnnotations(map[string]string{convoyv1alpha1.AdoptAnnotation: "true"})
		rev.Phases[0].Objects[1] = adopted
		_, err = engine.Sync(ctx, tgt, rev, nil)
		g.Expect(err).NotTo(HaveOccurred())
		live := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "theirs", nil))
		g.Expect(live.GetLabels()).To(HaveKeyWithValue(convoyv1alpha1.PackageNameLabel, "pkg"))
	})

	t.Run("an object of another Package", func(t *testing.T) {
		g := NewWithT(t)
		tgt := engineTarget(t)
		other := *tgt
		other.Name = "other"
		rev := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "shared", nil)}}}}
		_, err := engine.Sync(ctx, &other, rev, nil)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = engine.Sync(ctx, tgt, rev, nil)
		g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.CollisionReason))
		g.Expect(err.Error()).To(ContainSubstring("(managed by Package " + tgt.Namespace + "/other)"))
	})

	t.Run("an object of an ObjectDeployment of the same name", func(t *testing.T) {
		g := NewWithT(t)
		tgt := engineTarget(t)
		deployment := *tgt
		deployment.Kind = "ObjectDeployment"
		rev := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "shared", nil)}}}}
		_, err := engine.Sync(ctx, &deployment, rev, nil)
		g.Expect(err).NotTo(HaveOccurred())
		live := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "shared", nil))
		g.Expect(live.GetLabels()).To(HaveKeyWithValue(convoyv1alpha1.OwnerKindLabel, "ObjectDeployment"))

		_, err = engine.Sync(ctx, tgt, rev, nil)
		g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.CollisionReason))
		g.Expect(err.Error()).To(ContainSubstring("(managed by ObjectDeployment " + tgt.Namespace + "/pkg)"))
	})
}

func TestSyncRefusesManagementObjectsOutsideTheNamespace(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	cases := map[string]struct {
		obj  func(ns string) *unstructured.Unstructured
		want string
	}{
		"another namespace": {
			obj:  func(string) *unstructured.Unstructured { return kubetest.ConfigMap("kube-system", "x", nil) },
			want: "ConfigMap kube-system/x is in namespace kube-system: management phases may only hold objects of namespace",
		},
		"cluster-scoped": {
			obj: func(string) *unstructured.Unstructured {
				return kubetest.Object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "x-"+fleet.NameSuffix(), nil)
			},
			want: "is cluster-scoped: management phases may only hold objects of namespace",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tgt := engineTarget(t)
			rev := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
				kubetest.ConfigMap("", "fine", nil), tc.obj(tgt.Namespace)}}}}
			_, err := engine.Sync(ctx, tgt, rev, nil)
			g.Expect(isStalling(err)).To(BeTrue(), "%v", err)
			g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.ForbiddenTargetReason))
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
			g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "fine", nil))).To(BeFalse())
		})
	}
}

func TestSyncRecreatesOnImmutableFieldsOnlyWhenForced(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	immutable := func(v string) *unstructured.Unstructured {
		cm := kubetest.ConfigMap("", "frozen", map[string]string{"v": v})
		cm.Object["immutable"] = true
		return cm
	}
	rev := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{immutable("1")}}}}
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())
	uid := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "frozen", nil)).GetUID()

	rev.Phases[0].Objects[0] = immutable("2")
	_, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(isStalling(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(`convoy.dev/force: "true"`))
	g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "frozen", nil)).GetUID()).To(Equal(uid))

	forced := immutable("2")
	forced.SetAnnotations(map[string]string{convoyv1alpha1.ForceAnnotation: "true"})
	rev.Phases[0].Objects[0] = forced
	_, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	live := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "frozen", nil))
	g.Expect(live.GetUID()).NotTo(Equal(uid))
	g.Expect(live.Object["data"]).To(Equal(map[string]any{"v": "2"}))
}

func TestSyncAppliesACustomResourceWithItsDefinition(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt := engineTarget(t)
	hostedNS := fleet.NewNamespaceIn(t, blue.Client)
	group := fleet.NameSuffix() + ".test.convoy.dev"
	widget := kubetest.Object(group+"/v1", "Gadget", hostedNS, "g1", map[string]any{"spec": map[string]any{"size": int64(1)}})
	rev := &Revision{ID: "r1", Phases: []Phase{{Name: "all", Class: convoyv1alpha1.ClassHostedCluster,
		Objects: []*unstructured.Unstructured{widget, crd(group, "Gadget")}}}}
	engine := testEngine(Options{Controller: "test"})
	res, err := engine.Sync(ctx, tgt, rev, nil)
	if isWaiting(err) && reasonOf(err) == convoyv1alpha1.DependencyNotReadyReason {
		// The API server's discovery may serve the new kind a moment after the definition is
		// Established: the pass waits, and the next one, as the controller requeues it, applies.
		created := res.Changes.Created
		g.Eventually(func() error {
			res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
			return err
		}).WithTimeout(10 * time.Second).Should(Succeed())
		res.Changes.Created += created
	}
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changes.Created).To(Equal(2))
	g.Expect(kubetest.Exists(g, blue.Client, widget)).To(BeTrue())
}

// A Cluster-scoped package lands wholly in the hosted cluster: its cluster-scoped objects are
// owned, protected against collisions and adopted like any other.
func TestSyncProtectsClusterScopedObjectsOfAHostedCluster(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	name := "collision-" + fleet.NameSuffix()
	theirs := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
	g.Expect(blue.Client.Create(ctx, theirs)).To(Succeed())
	t.Cleanup(func() { _ = blue.Client.Delete(ctx, theirs) })
	role := func(annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("rbac.authorization.k8s.io/v1")
		u.SetKind("ClusterRole")
		u.SetName(name)
		u.SetAnnotations(annotations)
		return u
	}
	rev := &Revision{ID: "r1", Phases: []Phase{{Name: "rbac", Class: convoyv1alpha1.ClassHostedCluster,
		Objects: []*unstructured.Unstructured{role(nil)}}}}
	_, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.CollisionReason))
	g.Expect(err.Error()).To(ContainSubstring("ClusterRole " + name + " (not managed by convoy)"))

	rev.Phases[0].Objects[0] = role(map[string]string{convoyv1alpha1.AdoptAnnotation: "true"})
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Inventory).To(ConsistOf(HaveField("Cluster", convoyv1alpha1.InventoryClusterHosted)))
	live := kubetest.Get(g, blue.Client, role(nil))
	g.Expect(live.GetLabels()).To(HaveKeyWithValue(convoyv1alpha1.HostedClusterLabel, tgt.Namespace))
}
