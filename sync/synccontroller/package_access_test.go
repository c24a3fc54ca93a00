package synccontroller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

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
