package engine

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests/probe"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// deployment builds the add-on's Deployment running image.
func deployment(namespace, image string) *unstructured.Unstructured {
	return kubetest.Object("apps/v1", "Deployment", namespace, "addon", map[string]any{
		"spec": map[string]any{
			"replicas": int64(2),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "addon"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "addon"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "addon", "image": image}}},
			},
		},
	})
}

// deploymentsAvailable judges Deployments available as soon as applied: the test API server
// runs no controller that would report their rollout.
func deploymentsAvailable(t *testing.T) []probe.Rule {
	t.Helper()
	rules, errs := probe.Compile([]convoyv1alpha1.ObjectSetProbe{{
		Selector: convoyv1alpha1.ProbeSelector{Kind: convoyv1alpha1.GroupKindSelector{Group: "apps", Kind: "Deployment"}},
		Probes:   []convoyv1alpha1.Probe{{CEL: &convoyv1alpha1.CELProbe{Rule: "true", Message: "never"}}},
	}}, field.NewPath("probes"))
	NewWithT(t).Expect(errs).To(BeEmpty())
	return rules
}

// applyAsFlux applies obj as Flux's kustomize-controller does: server-side apply with its
// field manager, forced, with the Kustomization's two labels (kustomize-controller's
// kustomization_controller.go, fluxcd/pkg/ssa's ResourceManager).
func applyAsFlux(g Gomega, obj *unstructured.Unstructured) {
	obj = obj.DeepCopy()
	obj.SetLabels(map[string]string{fluxNameLabel: "addons", fluxNamespaceLabel: "flux-system"})
	g.Expect(env.Client.Patch(context.Background(), obj, client.Apply, client.ForceOwnership,
		client.FieldOwner(fluxFieldManager))).To(Succeed())
}

// applyAsPKO applies obj as Package Operator's ObjectSetPhase does: server-side apply with its
// field manager, its cache label, its revision annotation and a controller owner reference to
// the ObjectSet (internal/constants FieldOwner and DynamicCacheLabel, the native owner
// strategy's SetControllerReference and the revision annotation of ObjectSets).
func applyAsPKO(g Gomega, obj *unstructured.Unstructured) {
	obj = obj.DeepCopy()
	obj.SetLabels(map[string]string{pkoCacheLabel: "True"})
	obj.SetAnnotations(map[string]string{pkoRevisionAnnotation: "3"})
	yes := true
	obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "package-operator.run/v1alpha1", Kind: "ObjectSet",
		Name: "addon-5d8f", UID: "6f1e0c1a-1111-2222-3333-444455556666", Controller: &yes, BlockOwnerDeletion: &yes}})
	g.Expect(env.Client.Patch(context.Background(), obj, client.Apply, client.ForceOwnership,
		client.FieldOwner(pkoFieldManager))).To(Succeed())
}

// managers returns the field managers of a live object.
func managers(live *unstructured.Unstructured) []string {
	var names []string
	for _, e := range live.GetManagedFields() {
		names = append(names, e.Manager+"/"+string(e.Operation))
	}
	return names
}

func TestTakeoverKeepsTheObjectAndDropsTheOldOwner(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		tool  convoyv1alpha1.AdoptOwner
		apply func(Gomega, *unstructured.Unstructured)
		owner string
	}{
		{"from Flux", convoyv1alpha1.AdoptFromFlux, applyAsFlux, "managed by Flux Kustomization flux-system/addons"},
		{"from Package Operator", convoyv1alpha1.AdoptFromPackageOperator, applyAsPKO, "managed by Package Operator ObjectSet addon-5d8f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			engine := testEngine(Options{Controller: "test"})
			tgt := engineTarget(t)
			tc.apply(g, deployment(tgt.Namespace, "addon:v1"))
			tc.apply(g, kubetest.ConfigMap(tgt.Namespace, "settings", map[string]string{"level": "info"}))
			before := kubetest.Get(g, env.Client, deployment(tgt.Namespace, ""))
			rev := &Revision{ID: "r1", Probes: deploymentsAvailable(t), Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
				deployment("", "addon:v1"), kubetest.ConfigMap("", "settings", map[string]string{"level": "info"})}}}}

			_, err := engine.Sync(ctx, tgt, rev, nil)
			g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.CollisionReason), "no adoption without spec.adopt")
			g.Expect(err.Error()).To(ContainSubstring("Deployment " + tgt.Namespace + "/addon (" + tc.owner + ")"))

			tgt.AdoptFrom = []convoyv1alpha1.AdoptOwner{tc.tool}
			res, err := engine.Sync(ctx, tgt, rev, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Changes.TakenOver).To(Equal(2))
			g.Expect(res.Inventory).To(HaveLen(2))

			after := kubetest.Get(g, env.Client, deployment(tgt.Namespace, ""))
			g.Expect(after.GetUID()).To(Equal(before.GetUID()), "the object is not re-created")
			g.Expect(after.GetGeneration()).To(Equal(before.GetGeneration()), "the spec is not written: no new ReplicaSet")
			g.Expect(after.Object["spec"]).To(Equal(before.Object["spec"]))
			g.Expect(after.GetLabels()).To(Equal(map[string]string{convoyv1alpha1.PackageNameLabel: "pkg",
				convoyv1alpha1.PackageNamespaceLabel: tgt.Namespace, convoyv1alpha1.AdoptedFromLabel: string(tc.tool)}))
			g.Expect(after.GetAnnotations()).To(Equal(before.GetAnnotations()), "a Deployment's generation moves with them")
			g.Expect(after.GetOwnerReferences()).To(BeEmpty())
			g.Expect(managers(after)).NotTo(ContainElement(HavePrefix(fluxFieldManager + "/")))
			g.Expect(managers(after)).NotTo(ContainElement(HavePrefix(pkoFieldManager + "/")))
			g.Expect(managers(after)).To(ContainElement(FieldManager + "/Apply"))

			res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Changes).To(Equal(Changes{Unchanged: 2}), "taken over once")

			// A later commit is convoy's to roll out, and Git dropping a field the old owner set
			// drops it: convoy's field manager holds the old owner's fields.
			rev2 := &Revision{ID: "r2", Probes: rev.Probes, Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
				deployment("", "addon:v2"), kubetest.ConfigMap("", "settings", nil)}}}}
			_, err = engine.Sync(ctx, tgt, rev2, res.Inventory)
			g.Expect(err).NotTo(HaveOccurred())
			rolled := kubetest.Get(g, env.Client, deployment(tgt.Namespace, ""))
			g.Expect(rolled.GetUID()).To(Equal(before.GetUID()))
			g.Expect(rolled.GetGeneration()).To(Equal(before.GetGeneration() + 1))
			cm := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "settings", nil))
			g.Expect(cm.Object).NotTo(HaveKey("data"), "the old owner's field went with Git")
		})
	}
}

func TestTakeoverStopsWhenTheOldOwnerComesBack(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	g := NewWithT(t)
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	tgt.AdoptFrom = []convoyv1alpha1.AdoptOwner{convoyv1alpha1.AdoptFromFlux}
	applyAsFlux(g, deployment(tgt.Namespace, "addon:v1"))
	rev := &Revision{ID: "r1", Probes: deploymentsAvailable(t), Phases: []Phase{{Name: "one",
		Objects: []*unstructured.Unstructured{deployment("", "addon:v2")}}}}
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())

	// Flux, resumed by mistake, applies its own commit again.
	applyAsFlux(g, deployment(tgt.Namespace, "addon:v1"))
	flipped := kubetest.Get(g, env.Client, deployment(tgt.Namespace, ""))
	for range 3 {
		_, err = engine.Sync(ctx, tgt, rev, res.Inventory)
		g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.TakeoverContestedReason), "%v", err)
		g.Expect(isStalling(err)).To(BeTrue())
		g.Expect(err.Error()).To(ContainSubstring("Deployment " + tgt.Namespace + "/addon (managed by Flux Kustomization flux-system/addons)"))
	}
	live := kubetest.Get(g, env.Client, deployment(tgt.Namespace, ""))
	g.Expect(live.GetGeneration()).To(BeNumerically("<=", flipped.GetGeneration()+1), "at most one write back, not a loop")

	// Once Flux is stopped again and the label removed, convoy takes the object over anew.
	l := live.GetLabels()
	delete(l, convoyv1alpha1.AdoptedFromLabel)
	live.SetLabels(l)
	live.SetManagedFields(nil)
	g.Expect(env.Client.Update(ctx, live)).To(Succeed())
	res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changes.TakenOver).To(Equal(1))
	taken := kubetest.Get(g, env.Client, deployment(tgt.Namespace, ""))
	g.Expect(taken.GetLabels()).NotTo(HaveKey(fluxNameLabel))
	g.Expect(taken.GetUID()).To(Equal(flipped.GetUID()))
}

// TestBackingOutOfATakeoverDeletesNothing: Flux resumed after convoy took an object over,
// then the Package deleted (the way back): the teardown releases the object Flux runs again
// instead of deleting it, and so does a prune of it.
func TestBackingOutOfATakeoverDeletesNothing(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	g := NewWithT(t)
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	tgt.AdoptFrom = []convoyv1alpha1.AdoptOwner{convoyv1alpha1.AdoptFromFlux}
	applyAsFlux(g, deployment(tgt.Namespace, "addon:v1"))
	applyAsFlux(g, kubetest.ConfigMap(tgt.Namespace, "settings", map[string]string{"level": "info"}))
	rev := &Revision{ID: "r1", Probes: deploymentsAvailable(t), Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		deployment("", "addon:v1"), kubetest.ConfigMap("", "settings", map[string]string{"level": "info"})}}}}
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changes.TakenOver).To(Equal(2))

	// Flux resumed: its labels are back on both objects.
	applyAsFlux(g, deployment(tgt.Namespace, "addon:v1"))
	applyAsFlux(g, kubetest.ConfigMap(tgt.Namespace, "settings", map[string]string{"level": "info"}))
	pruning := &Revision{ID: "r2", Probes: rev.Probes, Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		deployment("", "addon:v1")}}}}
	_, err = engine.Sync(ctx, tgt, pruning, res.Inventory)
	g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.TakeoverContestedReason), "%v", err)
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "settings", nil))).To(BeTrue(), "not pruned")

	td, err := engine.Teardown(ctx, tgt, res.Inventory, TeardownOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(td.Inventory).To(BeEmpty())
	g.Expect(kubetest.Exists(g, env.Client, deployment(tgt.Namespace, ""))).To(BeTrue(), "Flux runs it again: released, not deleted")
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "settings", nil))).To(BeTrue())
}

func TestTakeoverRefusesOtherOwners(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	for _, tc := range []struct {
		name  string
		mark  func(*unstructured.Unstructured)
		owner string
	}{
		{"Helm beside Flux", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{helmReleaseAnnotation: "addon", helmNamespaceAnnotaton: "kube-system"})
		}, "managed by Flux Kustomization flux-system/addons; managed by Helm release kube-system/addon"},
		{"another controller beside Flux", func(u *unstructured.Unstructured) {
			yes := true
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs",
				UID: "0b7e4c2a-1111-2222-3333-444455556666", Controller: &yes}})
		}, "managed by Flux Kustomization flux-system/addons; owned by ReplicaSet rs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tgt := engineTarget(t)
			tgt.AdoptFrom = []convoyv1alpha1.AdoptOwner{convoyv1alpha1.AdoptFromFlux, convoyv1alpha1.AdoptFromPackageOperator}
			cm := kubetest.ConfigMap(tgt.Namespace, "shared", nil)
			tc.mark(cm)
			applyAsFluxKeeping(g, cm)
			rev := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "shared", nil)}}}}
			_, err := engine.Sync(ctx, tgt, rev, nil)
			g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.CollisionReason))
			g.Expect(err.Error()).To(ContainSubstring("ConfigMap " + tgt.Namespace + "/shared (" + tc.owner + ")"))
			live := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "shared", nil))
			g.Expect(live.GetLabels()).To(HaveKey(fluxNameLabel), "left as it was")
		})
	}
}

// applyAsFluxKeeping applies obj as Flux does, keeping the marks obj carries already.
func applyAsFluxKeeping(g Gomega, obj *unstructured.Unstructured) {
	obj = obj.DeepCopy()
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[fluxNameLabel], l[fluxNamespaceLabel] = "addons", "flux-system"
	obj.SetLabels(l)
	g.Expect(env.Client.Patch(context.Background(), obj, client.Apply, client.ForceOwnership,
		client.FieldOwner(fluxFieldManager))).To(Succeed())
}
