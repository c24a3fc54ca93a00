package synccontroller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

func TestPackageAppliesPhasesInOrderAcrossClusters(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ns := hcpNamespace(t, blue)
	hostedNS := fleet.NewNamespaceIn(t, blue.Client)
	group := fleet.NameSuffix() + ".test.convoy.dev"
	repo := newGitSource(t, ns)
	crdYAML := fmt.Sprintf(`---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.%[1]s, annotations: {convoy.dev/phase: crds}}
spec:
  group: %[1]s
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`, group)
	widget := fmt.Sprintf("---\napiVersion: %s/v1\nkind: Widget\nmetadata: {name: w1, namespace: %s, annotations: {convoy.dev/phase: configure}}\nspec: {size: 3}\n", group, hostedNS)
	commit, err := repo.Commit("main", "add the package", map[string]string{
		"pkg/manifest.yaml":  manifest("crds:hosted-cluster", "deploy", "configure:hosted-cluster"),
		"pkg/crds.yaml":      crdYAML + cmYAML("crds", hostedNS, "gate", "x", `test.convoy.dev/gate: "true"`),
		"pkg/deploy.yaml":    cmYAML("deploy", "", "settings", "1"),
		"pkg/configure.yaml": widget,
	})
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, "layered", "pkg")

	g.Eventually(func(g Gomega) {
		pkg := getPackage(g, key)
		g.Expect(pkg.Status.LastAttemptedRevision).To(Equal(commit))
		g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, "the gate is closed"))
		g.Expect(kstatusOf(g, pkg)).To(Equal(status.InProgressStatus))
	}).Should(Succeed())
	settings := kubetest.ConfigMap(ns, "settings", nil)
	g.Expect(kubetest.Exists(g, env.Client, settings)).To(BeFalse(), "phase 2 applied before phase 1's probes pass")
	g.Expect(kubetest.Exists(g, blue.Client, kubetest.Object(group+"/v1", "Widget", hostedNS, "w1", nil))).To(BeFalse())

	kubetest.OpenGate(g, blue.Client, hostedNS, "gate")
	pkg := expectAvailableAt(g, key, commit)
	g.Expect(kstatusOf(g, pkg)).To(Equal(status.CurrentStatus))
	g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.ProgressingCondition, metav1.ConditionFalse, ""))
	g.Expect(kubetest.Exists(g, env.Client, settings)).To(BeTrue())
	g.Expect(kubetest.Exists(g, blue.Client, kubetest.ConfigMap(ns, "settings", nil))).To(BeFalse())
	live := kubetest.Get(g, blue.Client, kubetest.Object(group+"/v1", "Widget", hostedNS, "w1", nil))
	g.Expect(live.GetLabels()).To(HaveKeyWithValue(convoyv1alpha1.HostedClusterLabel, ns))
	g.Expect(pkg.Status.Phases).To(HaveEach(HaveField("Available", BeTrue())))
	g.Expect(pkg.Status.Inventory).To(HaveLen(4))
}

func TestPackageRevisionUpdate(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ns := fleet.NewNamespaceIn(t, env.Client)
	repo := newGitSource(t, ns)
	c1, err := repo.Commit("main", "one", map[string]string{
		"pkg/manifest.yaml": manifest("one", "two"),
		"pkg/objects.yaml":  cmYAML("one", "", "a", "1") + cmYAML("one", "", "b", "1") + cmYAML("two", "", "c", "1"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, "app", "pkg")
	expectAvailableAt(g, key, c1)
	a1 := kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, "a", nil))

	c2, err := repo.Commit("main", "two", map[string]string{
		"pkg/objects.yaml": cmYAML("one", "", "a", "1") + cmYAML("one", "", "b", "2") +
			cmYAML("two", "", "gate", "x", `test.convoy.dev/gate: "true"`),
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		pkg := getPackage(g, key)
		g.Expect(pkg.Status.LastAttemptedRevision).To(Equal(c2))
		g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, "the gate is closed"))
		g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, "b", nil)).Object["data"]).To(Equal(map[string]any{"v": "2"}))
	}).Should(Succeed())
	g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, "a", nil)).GetResourceVersion()).To(Equal(a1.GetResourceVersion()), "unchanged, not written")
	g.Consistently(func(g Gomega) {
		g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(ns, "c", nil))).To(BeTrue(), "pruned before the revision is available")
	}).WithTimeout(2 * time.Second).Should(Succeed())
	g.Expect(getPackage(g, key).Status.Revision).To(Equal(c1))

	kubetest.OpenGate(g, env.Client, ns, "gate")
	pkg := expectAvailableAt(g, key, c2)
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(ns, "c", nil))).To(BeFalse())
	g.Expect(pkg.Status.Inventory).To(HaveLen(3))

	c3, err := repo.Commit("main", "three", map[string]string{
		"pkg/objects.yaml": cmYAML("one", "", "a", "1") + "---\nkind: [broken\n",
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		pkg := getPackage(g, key)
		g.Expect(pkg.Status.LastAttemptedRevision).To(Equal(c3))
		g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.StalledCondition, metav1.ConditionTrue, "objects.yaml"))
		g.Expect(kstatusOf(g, pkg)).To(Equal(status.FailedStatus))
	}).Should(Succeed())
	pkg = getPackage(g, key)
	g.Expect(pkg.Status.Revision).To(Equal(c2))
	g.Expect(conditionOf(pkg.Status.Conditions, convoyv1alpha1.ReadyCondition).Reason).To(Equal(convoyv1alpha1.RenderFailedReason))
	g.Expect(pkg.Status.Inventory).To(HaveLen(3), "a failed render prunes nothing")
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(ns, "b", nil))).To(BeTrue())
}

func TestPackagePausedStopsApplyAndPrune(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := fleet.NewNamespaceIn(t, env.Client)
	repo := newGitSource(t, ns)
	c1, err := repo.Commit("main", "one", map[string]string{
		"pkg/manifest.yaml": manifest("one"),
		"pkg/objects.yaml":  cmYAML("one", "", "a", "1") + cmYAML("one", "", "b", "1"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, "app", "pkg")
	expectAvailableAt(g, key, c1)

	pkg := getPackage(g, key)
	pkg.Spec.Paused = true
	g.Expect(env.Client.Update(ctx, pkg)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getPackage(g, key).Status.Conditions).To(haveCondition(convoyv1alpha1.PausedCondition, metav1.ConditionTrue, ""))
	}).Should(Succeed())
	_, err = repo.Commit("main", "two", map[string]string{"pkg/objects.yaml": cmYAML("one", "", "a", "2")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Consistently(func(g Gomega) {
		g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, "a", nil)).Object["data"]).To(Equal(map[string]any{"v": "1"}))
		g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(ns, "b", nil))).To(BeTrue())
		g.Expect(getPackage(g, key).Status.Revision).To(Equal(c1))
	}).WithTimeout(3 * time.Second).Should(Succeed())

	pkg = getPackage(g, key)
	pkg.Spec.Paused = false
	g.Expect(env.Client.Update(ctx, pkg)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, "a", nil)).Object["data"]).To(Equal(map[string]any{"v": "2"}))
		g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(ns, "b", nil))).To(BeFalse())
		pkg := getPackage(g, key)
		g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.PausedCondition, metav1.ConditionFalse, ""))
		g.Expect(kstatusOf(g, pkg)).To(Equal(status.CurrentStatus))
	}).Should(Succeed())
}

func TestPackageRefusesForeignAndClusterScopedObjects(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ns := fleet.NewNamespaceIn(t, env.Client)
	repo := newGitSource(t, ns)
	_, err := repo.Commit("main", "one", map[string]string{
		"foreign/manifest.yaml": manifest("one"),
		"foreign/objects.yaml":  cmYAML("one", "kube-system", "x", "1"),
		"cluster/manifest.yaml": manifest("one"),
		"cluster/objects.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: x-" + fleet.NameSuffix() +
			", annotations: {convoy.dev/phase: one}}\nrules: []\n",
	})
	g.Expect(err).NotTo(HaveOccurred())
	for path, want := range map[string]string{
		"foreign": "ConfigMap kube-system/x is in namespace kube-system: management phases may only hold objects of namespace " + ns,
		"cluster": "is cluster-scoped: management phases may only hold objects of namespace " + ns,
	} {
		key := newPackage(t, ns, path, path)
		g.Eventually(func(g Gomega) {
			pkg := getPackage(g, key)
			g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.StalledCondition, metav1.ConditionTrue, want))
			g.Expect(conditionOf(pkg.Status.Conditions, convoyv1alpha1.ReadyCondition).Reason).To(Equal(convoyv1alpha1.ForbiddenTargetReason))
		}).Should(Succeed())
	}
}

func TestPackageDriftIsCorrected(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ns := hcpNamespace(t, blue)
	hostedNS := fleet.NewNamespaceIn(t, blue.Client)
	repo := newGitSource(t, ns)
	c1, err := repo.Commit("main", "one", map[string]string{
		"pkg/manifest.yaml": manifest("inside:hosted-cluster", "outside"),
		"pkg/objects.yaml":  cmYAML("inside", hostedNS, "in", "1") + cmYAML("outside", "", "out", "1"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, "app", "pkg", func(p *convoyv1alpha1.Package) {
		p.Spec.Interval = &metav1.Duration{Duration: 2 * time.Second}
	})
	pkg := expectAvailableAt(g, key, c1)

	// Steady state: passes every interval write nothing, neither objects nor status.
	in := kubetest.Get(g, blue.Client, kubetest.ConfigMap(hostedNS, "in", nil))
	g.Consistently(func(g Gomega) {
		g.Expect(getPackage(g, key).ResourceVersion).To(Equal(pkg.ResourceVersion))
		g.Expect(kubetest.Get(g, blue.Client, kubetest.ConfigMap(hostedNS, "in", nil)).GetResourceVersion()).To(Equal(in.GetResourceVersion()))
	}).WithTimeout(5 * time.Second).Should(Succeed())

	// Drift in the hosted cluster (not watched) is corrected within the interval.
	editData(g, blue.Client, kubetest.ConfigMap(hostedNS, "in", nil))
	g.Eventually(func(g Gomega) {
		g.Expect(kubetest.Get(g, blue.Client, kubetest.ConfigMap(hostedNS, "in", nil)).Object["data"]).To(Equal(map[string]any{"v": "1"}))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func TestPackageWatchesItsManagementObjects(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ns := fleet.NewNamespaceIn(t, env.Client)
	repo := newGitSource(t, ns)
	c1, err := repo.Commit("main", "one", map[string]string{
		"pkg/manifest.yaml": manifest("outside"),
		"pkg/objects.yaml":  cmYAML("outside", "", "out", "1"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, "app", "pkg") // the default interval is 10m: only the watch can be quick
	expectAvailableAt(g, key, c1)

	expectEditRepaired(g, ns, "out")
	expectDeletionRepaired(g, ns, "out")
}

// expectEditRepaired edits the data of the Package's ConfigMap ns/name by hand, and waits until
// the Package has put back its value "1".
func expectEditRepaired(g Gomega, ns, name string) {
	editData(g, env.Client, kubetest.ConfigMap(ns, name, nil))
	g.Eventually(func(g Gomega) {
		g.Expect(kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, name, nil)).Object["data"]).To(Equal(map[string]any{"v": "1"}))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// expectDeletionRepaired deletes the Package's ConfigMap ns/name by hand, and waits until the
// Package has made it again.
func expectDeletionRepaired(g Gomega, ns, name string) {
	g.Expect(env.Client.Delete(context.Background(), kubetest.ConfigMap(ns, name, nil))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(ns, name, nil))).To(BeTrue())
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// editData changes the data of a live ConfigMap by hand.
func editData(g Gomega, c client.Client, obj *unstructured.Unstructured) {
	live := kubetest.Get(g, c, obj)
	live.Object["data"] = map[string]any{"v": "edited"}
	g.Expect(c.Update(context.Background(), live)).To(Succeed())
}

// TestPackageCrossNamespaceSourceIsOptIn: a Package of a tenant namespace may not use the
// GitSource of another namespace, nor get in by forging an owner reference, until the
// GitSource's accessFrom selects its namespace; a Package owned by a HostedClusterPackage may.
func TestPackageCrossNamespaceSourceIsOptIn(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	sourceNS := fleet.NewNamespaceIn(t, env.Client)
	repo := newGitSource(t, sourceNS)
	commit, err := repo.Commit("main", "one", map[string]string{
		"pkg/manifest.yaml": manifest("deploy"),
		"pkg/objects.yaml":  cmYAML("deploy", "", "shared", "1"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	fromSource := func(p *convoyv1alpha1.Package) { p.Spec.SourceRef.Namespace = sourceNS }

	tenant := fleet.NewNamespaceIn(t, env.Client)
	key := newPackage(t, tenant, "tenant", "pkg", fromSource)
	expectRefused(g, key, sourceNS, tenant)
	forged := newPackage(t, tenant, "forged", "pkg", fromSource, func(p *convoyv1alpha1.Package) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: convoyv1alpha1.GroupVersion.String(), Kind: "HostedClusterPackage",
			Name: "forged", UID: types.UID("00000000-0000-0000-0000-000000000000"), Controller: ptrTo(true)}}
	})
	expectRefused(g, forged, sourceNS, tenant)
	// The forged Package goes, so that once the namespace is allowed only the tenant's Package
	// applies the ConfigMap (two Packages applying one object collide).
	g.Expect(env.Client.Delete(ctx, &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: forged.Namespace, Name: forged.Name}})).To(Succeed())
	expectGone(g, forged, 30*time.Second)

	t.Run("owned by a HostedClusterPackage", func(t *testing.T) {
		g := NewWithT(t)
		hcpkg := &convoyv1alpha1.HostedClusterPackage{
			ObjectMeta: metav1.ObjectMeta{Name: "xns-" + fleet.NameSuffix()},
			Spec: convoyv1alpha1.HostedClusterPackageSpec{
				HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"selects": "nothing"}},
				Strategy:              convoyv1alpha1.HostedClusterPackageStrategy{Instant: &convoyv1alpha1.InstantStrategy{}},
				Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
					SourceRef: convoyv1alpha1.SourceReference{Namespace: sourceNS, Name: gitSourceName}, Path: "pkg"}},
			},
		}
		g.Expect(env.Client.Create(ctx, hcpkg)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(ctx, hcpkg) })
		owned := newPackage(t, fleet.NewNamespaceIn(t, env.Client), hcpkg.Name, "pkg", fromSource, func(p *convoyv1alpha1.Package) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: convoyv1alpha1.GroupVersion.String(), Kind: "HostedClusterPackage",
				Name: hcpkg.Name, UID: hcpkg.UID, Controller: ptrTo(true)}}
		})
		expectAvailableAt(g, owned, commit)
	})

	t.Run("allowed by the GitSource's accessFrom", func(t *testing.T) {
		g := NewWithT(t)
		nsObj := &corev1.Namespace{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: tenant}, nsObj)).To(Succeed())
		nsObj.Labels["tenant"] = "blue"
		g.Expect(env.Client.Update(ctx, nsObj)).To(Succeed())
		gs := &convoyv1alpha1.GitSource{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: sourceNS, Name: gitSourceName}, gs)).To(Succeed())
		gs.Spec.AccessFrom = &convoyv1alpha1.AccessFrom{NamespaceSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"tenant": "red"}},
			{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tenant", Operator: metav1.LabelSelectorOpIn, Values: []string{"blue"}}}},
		}}
		g.Expect(env.Client.Update(ctx, gs)).To(Succeed())
		expectAvailableAt(g, key, commit)
		g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tenant, "shared", nil))).To(BeTrue())
	})
}

// expectRefused waits until the Package key is Stalled for naming the GitSource of sourceNS,
// and checks it applied nothing.
func expectRefused(g Gomega, key client.ObjectKey, sourceNS, tenant string) {
	g.Eventually(func(g Gomega) {
		stalled := conditionOf(getPackage(g, key).Status.Conditions, convoyv1alpha1.StalledCondition)
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(stalled.Reason).To(Equal(convoyv1alpha1.CrossNamespaceRefRefusedReason))
		g.Expect(stalled.Message).To(And(ContainSubstring("GitSource "+sourceNS+"/"+gitSourceName),
			ContainSubstring("namespace "+tenant), ContainSubstring("spec.accessFrom.namespaceSelectors")))
	}).Should(Succeed())
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tenant, "shared", nil))).To(BeFalse())
}

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }
