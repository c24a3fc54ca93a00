package engine

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

const testFinalizer = "test.convoy.dev/hold"

func TestTeardownDeletesPhasesInReverseOrder(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	hostedNS := fleet.NewNamespaceIn(t, blue.Client)
	held := kubetest.ConfigMap("", "held", nil)
	held.SetFinalizers([]string{testFinalizer})
	rev := &Revision{ID: "r1", Phases: []Phase{
		{Name: "first", Class: convoyv1alpha1.ClassHostedCluster, Objects: []*unstructured.Unstructured{kubetest.ConfigMap(hostedNS, "h1", nil)}},
		{Name: "second", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "m1", nil), held}},
	}}
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())

	td, err := engine.Teardown(ctx, tgt, res.Inventory, TeardownOptions{})
	inv := td.Inventory
	g.Expect(isWaiting(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(`waiting for 1 object of phase "second" to be deleted`))
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "m1", nil))).To(BeFalse())
	g.Expect(kubetest.Exists(g, blue.Client, kubetest.ConfigMap(hostedNS, "h1", nil))).To(BeTrue(), "phase 1 deleted before phase 2 is gone")
	g.Expect(inv).To(HaveLen(2))

	live := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "held", nil))
	live.SetFinalizers(nil)
	g.Expect(env.Client.Update(ctx, live)).To(Succeed())
	td, err = engine.Teardown(ctx, tgt, inv, TeardownOptions{})
	inv = td.Inventory
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inv).To(BeEmpty())
	g.Expect(kubetest.Exists(g, blue.Client, kubetest.ConfigMap(hostedNS, "h1", nil))).To(BeFalse())
}

func TestTeardownAbandonsAndKeeps(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	hostedNS := fleet.NewNamespaceIn(t, blue.Client)
	kept := kubetest.ConfigMap("", "kept", nil)
	kept.SetAnnotations(map[string]string{convoyv1alpha1.PruneAnnotation: "disabled"})
	rev := &Revision{ID: "r1", Phases: []Phase{
		{Name: "first", Class: convoyv1alpha1.ClassHostedCluster, Objects: []*unstructured.Unstructured{kubetest.ConfigMap(hostedNS, "h1", nil)}},
		{Name: "second", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "m1", nil), kept}},
	}}
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())

	gone := *tgt
	gone.Hosted = nil
	td, err := engine.Teardown(ctx, &gone, res.Inventory, TeardownOptions{AbandonHosted: true})
	inv := td.Inventory
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inv).To(BeEmpty())
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "m1", nil))).To(BeFalse())
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "kept", nil))).To(BeTrue())
	g.Expect(kubetest.Exists(g, blue.Client, kubetest.ConfigMap(hostedNS, "h1", nil))).To(BeTrue(), "abandoned, not deleted")
}

func TestPruneKeepsObjectsNoLongerOurs(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	disabled := kubetest.ConfigMap("", "disabled", nil)
	disabled.SetAnnotations(map[string]string{convoyv1alpha1.PruneAnnotation: "disabled"})
	rev1 := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "stays", nil), kubetest.ConfigMap("", "handed-over", nil), disabled, kubetest.ConfigMap("", "removed", nil)}}}}
	res, err := engine.Sync(ctx, tgt, rev1, nil)
	g.Expect(err).NotTo(HaveOccurred())

	handedOver := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "handed-over", nil))
	handedOver.SetLabels(map[string]string{convoyv1alpha1.PackageNameLabel: "someone-else", convoyv1alpha1.PackageNamespaceLabel: tgt.Namespace})
	g.Expect(env.Client.Update(ctx, handedOver)).To(Succeed())

	rev2 := &Revision{ID: "r2", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "stays", nil)}}}}
	res, err = engine.Sync(ctx, tgt, rev2, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Pruned).To(Equal(1))
	g.Expect(res.Inventory).To(HaveLen(1))
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "removed", nil))).To(BeFalse())
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "handed-over", nil))).To(BeTrue())
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "disabled", nil))).To(BeTrue())
}
