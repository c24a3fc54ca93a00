package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/gittest"
)

// previousCRDs holds the CRDs of the latest release (its name in RELEASE); make release
// refreshes it.
const previousCRDs = "testdata/previous-crds"

// TestCRDsUpgradeFromThePreviousRelease applies the previous release's CRDs, creates objects
// with them (a HostedClusterPackage of no gates among them), applies the CRDs of deploy/ over
// them and runs the controller: the objects are still valid, reconciled to Ready, and accept an
// update.
func TestCRDsUpgradeFromThePreviousRelease(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	release, err := os.ReadFile(previousCRDs + "/RELEASE")
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("upgrading from the CRDs of %s", strings.TrimSpace(string(release)))
	previous, err := loadCRDs(previousCRDs)
	g.Expect(err).NotTo(HaveOccurred())
	next, err := loadCRDs(deployDir + "/crds")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(upgradeProblems(previous, next)).To(BeEmpty())

	applyCRDs(ctx, g, previous)
	t.Cleanup(func() { applyCRDs(ctx, NewWithT(t), next) })
	srv, repo := gittest.NewServer(t)
	gittest.Commit(t, repo, "config", map[string]string{"config/manifest.yaml": manifest("config"),
		"config/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  annotations: {convoy.dev/phase: deploy}\n"})
	ns := env.NewNamespace(t)
	src := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "addons"},
		Spec: convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"), Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval: &metav1.Duration{Duration: time.Second}}}
	g.Expect(env.Client.Create(ctx, src)).To(Succeed())
	pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "config"},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
			SourceRef: convoyv1alpha1.SourceReference{Name: "addons"}, Path: "config"}}}
	g.Expect(env.Client.Create(ctx, pkg)).To(Succeed())
	hcpkg := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "upgraded-" + ns},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"convoy.dev/upgrade-test": ns}},
			Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Name: "addons", Namespace: ns}, Path: "config"}}}}
	g.Expect(env.Client.Create(ctx, hcpkg)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, hcpkg) })

	applyCRDs(ctx, g, next)
	startControllerAs(t, serviceAccountKubeconfig(t))
	for _, obj := range []client.Object{src, pkg, hcpkg} {
		key := client.ObjectKeyFromObject(obj)
		g.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, key, obj)).To(Succeed())
			conditions := conditionsOf(g, obj)
			g.Expect(apimeta.IsStatusConditionTrue(conditions, convoyv1alpha1.ReadyCondition)).To(BeTrue(), "%v", conditions)
		}, settleTimeout, time.Second).Should(Succeed(), "%T %s", obj, key)
		obj.SetLabels(map[string]string{"upgraded": "true"})
		g.Expect(env.Client.Update(ctx, obj)).To(Succeed(), "an object of the previous release accepts an update")
	}
}

func TestUpgradeProblemsNameTheCRDTheFieldAndTheRule(t *testing.T) {
	g := NewWithT(t)
	previous, err := loadCRDs(previousCRDs)
	g.Expect(err).NotTo(HaveOccurred())
	next, err := loadCRDs(previousCRDs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(upgradeProblems(previous, next)).To(BeEmpty())

	spec := next["gitsources.convoy.dev"].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Required = append(spec.Required, "interval", "suspend")
	interval := spec.Properties["interval"]
	interval.Default = &apiextensionsv1.JSON{Raw: []byte(`"1m"`)}
	spec.Properties["interval"] = interval
	next["gitsources.convoy.dev"].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	next["packages.convoy.dev"].Spec.Versions[0].Served = false
	delete(next, "objectdeployments.convoy.dev")
	g.Expect(upgradeProblems(previous, next)).To(ConsistOf(
		"CRD gitsources.convoy.dev version v1alpha1: .spec.suspend is required but was not, and has no default: "+
			"objects stored without it would fail validation on their next update; give it a default or make it optional",
		"CRD objectdeployments.convoy.dev: removed; users' objects of it would be deleted",
		"CRD packages.convoy.dev version v1alpha1: no longer served; clients of it would break",
	))
}

// applyCRDs applies crds and waits until each is established.
func applyCRDs(ctx context.Context, g Gomega, crds map[string]*apiextensionsv1.CustomResourceDefinition) {
	for _, crd := range crds {
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		g.Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{Object: raw}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		g.Expect(applyAll(ctx, env.Client, []*unstructured.Unstructured{u})).To(Succeed(), crd.Name)
	}
	for name := range crds {
		g.Eventually(func(g Gomega) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
			established := false
			for _, c := range crd.Status.Conditions {
				established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
			}
			g.Expect(established).To(BeTrue())
		}, 30*time.Second).Should(Succeed(), name)
	}
}

// conditionsOf returns the status conditions of a GitSource or a Package.
func conditionsOf(g Gomega, obj client.Object) []metav1.Condition {
	switch o := obj.(type) {
	case *convoyv1alpha1.GitSource:
		return o.Status.Conditions
	case *convoyv1alpha1.Package:
		return o.Status.Conditions
	case *convoyv1alpha1.HostedClusterPackage:
		return o.Status.Conditions
	}
	g.Expect(obj).To(BeNil(), "no conditions for %T", obj)
	return nil
}
