package engine

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

func TestARevisionWithoutObjectsIsRefusedAndPrunesNothing(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	rev1 := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "a", nil)}}}}
	res, err := engine.Sync(ctx, tgt, rev1, nil)
	g.Expect(err).NotTo(HaveOccurred())

	empty := &Revision{ID: "r2", Phases: []Phase{{Name: "one"}}}
	res, err = engine.Sync(ctx, tgt, empty, res.Inventory)
	g.Expect(isStalling(err)).To(BeTrue(), "%v", err)
	g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.EmptyRevisionReason))
	g.Expect(err.Error()).To(Equal("revision r2 renders no objects: refusing to apply it, as it would prune all 1 object of the inventory; delete the owner to remove them"))
	g.Expect(res.Inventory).To(HaveLen(1), "the inventory is kept")
	g.Expect(res.Pruned).To(BeZero())
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "a", nil))).To(BeTrue())
}

func TestDefinitionsArePrunedOnlyWhenTheyOptIn(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	suffix := fleet.NameSuffix()
	kept := crd("kept"+suffix+".convoy.dev", "Kept")
	allowed := crd("allowed"+suffix+".convoy.dev", "Allowed")
	allowed.SetAnnotations(map[string]string{convoyv1alpha1.PruneAnnotation: PruneEnabled})
	keptNS := kubetest.Object("v1", "Namespace", "", "kept-"+suffix, nil)
	rev1 := &Revision{ID: "r1", Phases: []Phase{{Name: "defs", Class: convoyv1alpha1.ClassHostedCluster,
		Objects: []*unstructured.Unstructured{kept, allowed, keptNS, kubetest.ConfigMap("default", "cm-"+suffix, nil)}}}}
	res, err := engine.Sync(ctx, tgt, rev1, nil)
	g.Expect(err).NotTo(HaveOccurred())

	rev2 := &Revision{ID: "r2", Phases: []Phase{{Name: "defs", Class: convoyv1alpha1.ClassHostedCluster,
		Objects: []*unstructured.Unstructured{kubetest.ConfigMap("default", "cm-"+suffix, nil)}}}}
	res, err = engine.Sync(ctx, tgt, rev2, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Pruned).To(Equal(1), "the CRD that opted in")
	g.Expect(kubetest.Exists(g, blue.Client, kept)).To(BeTrue())
	g.Expect(kubetest.Exists(g, blue.Client, keptNS)).To(BeTrue())
	g.Expect(res.Left).To(HaveLen(2))
	for _, l := range res.Left {
		g.Expect(l.String()).To(ContainSubstring("in the hosted cluster: a CustomResourceDefinition or Namespace is deleted only when annotated convoy.dev/prune: enabled (left in place)"))
	}
	g.Expect(res.Inventory).To(HaveLen(1), "the kept definitions are no longer managed")
	g.Eventually(func(g Gomega) {
		g.Expect(kubetest.Exists(g, blue.Client, allowed)).To(BeFalse())
	}).Should(Succeed())

	td, err := engine.Teardown(ctx, tgt, inventoryOf(res.Inventory, entryOf(t, kept, "defs")), TeardownOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(td.Left).To(HaveLen(1), "teardown keeps the CRD too")
	g.Expect(kubetest.Exists(g, blue.Client, kept)).To(BeTrue())
}

func TestAnEntryWhoseKindIsGoneIsTreatedAsGone(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	rev1 := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "a", nil)}}}}
	res, err := engine.Sync(ctx, tgt, rev1, nil)
	g.Expect(err).NotTo(HaveOccurred())
	inv := inventoryOf(res.Inventory, convoyv1alpha1.InventoryEntry{ID: tgt.Namespace + "_w_gone.convoy.dev_Widget", Version: "v1",
		Cluster: convoyv1alpha1.InventoryClusterManagement, Phase: "one"})

	t.Run("prune", func(t *testing.T) {
		g := NewWithT(t)
		res, err := engine.Sync(ctx, tgt, rev1, inv)
		g.Expect(err).NotTo(HaveOccurred(), "not Waiting for an API that will never come back")
		g.Expect(res.Left).To(ConsistOf(Left{ID: tgt.Namespace + "_w_gone.convoy.dev_Widget", Cluster: "management", Why: leftKindGone}))
		g.Expect(res.Inventory).To(HaveLen(1))
	})
	t.Run("teardown", func(t *testing.T) {
		g := NewWithT(t)
		td, err := engine.Teardown(ctx, tgt, inv, TeardownOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(td.Inventory).To(BeEmpty())
		g.Expect(td.Left).To(HaveLen(1))
		g.Expect(td.Left[0].String()).To(ContainSubstring("Widget in the management cluster: its kind or version no longer exists"))
	})
}

func TestTeardownAfterItsCRDWasDeletedFinishes(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	hostedNS := fleet.NewNamespaceIn(t, blue.Client)
	group := "oob" + fleet.NameSuffix() + ".convoy.dev"
	def := crd(group, "Gadget")
	rev := &Revision{ID: "r1", Phases: []Phase{
		{Name: "defs", Class: convoyv1alpha1.ClassHostedCluster, Objects: []*unstructured.Unstructured{def}},
		{Name: "crs", Class: convoyv1alpha1.ClassHostedCluster, Objects: []*unstructured.Unstructured{
			kubetest.Object(group+"/v1", "Gadget", hostedNS, "g1", nil)}},
	}}
	res := &Result{}
	g.Eventually(func(g Gomega) {
		next, err := engine.Sync(ctx, tgt, rev, res.Inventory)
		if next != nil {
			res = next
		}
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed(), "discovery may serve the new kind a moment after its CRD is established")
	g.Expect(blue.Client.Delete(ctx, def)).To(Succeed(), "deleted out of band")
	g.Eventually(func(g Gomega) { g.Expect(kubetest.Exists(g, blue.Client, def)).To(BeFalse()) }).Should(Succeed())

	g.Eventually(func(g Gomega) {
		td, err := engine.Teardown(ctx, tgt, res.Inventory, TeardownOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(td.Inventory).To(BeEmpty())
	}).Should(Succeed(), "the teardown finishes instead of waiting for the API for ever")
}

func TestForbiddenDeleteIsRetriedNotStalled(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	rev := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "a", nil)}}}}
	res, err := engine.Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: tgt.Namespace, Name: "no-delete"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: tgt.Namespace, Name: "no-delete"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "no-delete"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "limited"}}})).To(Succeed())
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "limited"}
	limited, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	lt := *tgt
	lt.Management = limited

	td, err := engine.Teardown(ctx, &lt, res.Inventory, TeardownOptions{})
	var generic *pass.Generic
	g.Expect(errors.As(err, &generic)).To(BeTrue(), "transient, retried with backoff: %v", err)
	g.Expect(isStalling(err)).To(BeFalse())
	g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.DeleteFailedReason))
	g.Expect(err.Error()).To(And(ContainSubstring("refused a delete (retried with backoff)"), ContainSubstring("forbidden")))
	g.Expect(td.Inventory).To(HaveLen(1))

	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "delete")
	g.Expect(env.Client.Update(ctx, role)).To(Succeed())
	g.Eventually(func(g Gomega) {
		td, err := engine.Teardown(ctx, &lt, res.Inventory, TeardownOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(td.Inventory).To(BeEmpty())
	}).Should(Succeed(), "the retry succeeds once convoy may delete")
}

// inventoryOf returns inv with extra appended.
func inventoryOf(inv []convoyv1alpha1.InventoryEntry, extra ...convoyv1alpha1.InventoryEntry) []convoyv1alpha1.InventoryEntry {
	return append(append([]convoyv1alpha1.InventoryEntry{}, inv...), extra...)
}

// entryOf returns the hosted inventory entry of obj in phase.
func entryOf(t *testing.T, obj *unstructured.Unstructured, phase string) convoyv1alpha1.InventoryEntry {
	t.Helper()
	return entryFor(&cluster{name: convoyv1alpha1.InventoryClusterHosted}, phase, obj)
}
