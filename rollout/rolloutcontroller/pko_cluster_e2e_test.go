package rolloutcontroller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// clusterPackageFiles returns a Cluster-scoped Package Operator package, as managed OpenShift
// operators ship theirs: a CRD, a Namespace, RBAC and a Deployment whose Progressing
// condition the Package reports, installable only on OpenShift 4.14 or later (and once per
// cluster, which convoy warns it does not check), and a ConfigMap that the next version drops.
func clusterPackageFiles() map[string]string {
	return map[string]string{
		"pkg/manifest.yaml": `apiVersion: manifests.package-operator.run/v1alpha1
kind: PackageManifest
metadata: {name: widget-operator}
spec:
  scopes: [Cluster]
  phases: [{name: crds}, {name: namespace}, {name: rbac}, {name: deploy}]
  constraints:
  - platformVersion: {name: OpenShift, range: ">=4.14"}
  - uniqueInScope: {}
  availabilityProbes:
  - selector: {kind: {group: apps, kind: Deployment}}
    probes:
    - condition: {type: Available, status: "True"}
    - fieldsEqual: {fieldA: .status.updatedReplicas, fieldB: .status.replicas}
`,
		"pkg/crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.e2e.convoy.dev
  annotations: {package-operator.run/phase: crds}
spec:
  group: e2e.convoy.dev
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`,
		"pkg/namespace.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: widget-operator
  annotations: {package-operator.run/phase: namespace}
`,
		"pkg/rbac.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: widget-operator
  namespace: widget-operator
  annotations: {package-operator.run/phase: rbac}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widget-operator
  annotations: {package-operator.run/phase: rbac}
rules:
- {apiGroups: [e2e.convoy.dev], resources: [widgets], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: widget-operator
  annotations: {package-operator.run/phase: rbac}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-operator}
subjects:
- {kind: ServiceAccount, name: widget-operator, namespace: widget-operator}
`,
		"pkg/deployment.yaml.gotmpl": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: widget-operator
  namespace: widget-operator
  annotations:
    package-operator.run/phase: deploy
    package-operator.run/condition-map: |
      Progressing => e2e.convoy.dev/Progressing
    openshift-version: "{{ .environment.openShift.version }}"
    package-namespace: "{{ .package.metadata.namespace }}"
spec:
  replicas: 1
  selector: {matchLabels: {app: widget-operator}}
  template:
    metadata: {labels: {app: widget-operator}}
    spec:
      serviceAccountName: widget-operator
      containers: [{name: operator, image: quay.io/example/widget-operator:v1}]
`,
		"pkg/dropped.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: dropped-later
  namespace: widget-operator
  annotations: {package-operator.run/phase: deploy}
`,
	}
}

// TestClusterScopedPKOPackageRollsOutIntoHostedClusters rolls a Cluster-scoped Package Operator
// package (CRD, Namespace, RBAC, Deployment) out to three hosted clusters, partition by
// partition, as ClusterPackages inside them: one cluster's OpenShift is too old for the
// package's constraints, so nothing is applied there while the others proceed. A newer version
// prunes the object it dropped; deleting the HostedClusterPackage tears everything down but
// the CRD and the Namespace, which are kept without convoy.dev/prune: enabled.
func TestClusterScopedPKOPackageRollsOutIntoHostedClusters(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &rolloutFleet{t: t, name: "cpkg-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	c1, err := f.repo.Commit("main", "add the widget operator", clusterPackageFiles())
	g.Expect(err).NotTo(HaveOccurred())
	f.addClusters("a:early", "b:normal", "c:late")
	for name, version := range map[string]string{"a": "4.16.2", "b": "4.12.9", "c": "4.15.0"} {
		installClusterVersion(g, f.clusters[name], version)
		go markDeploymentsAvailable(ctx, f.clusters[name])
	}
	newHostedClusterPackage(t, f.name, f.ns)
	defer func() {
		if t.Failed() {
			for name, p := range packagesOf(NewWithT(t), f.name) {
				t.Logf("Package of %s: %+v", name, p.Status)
			}
			t.Logf("HostedClusterPackage: %+v", getHCPkg(NewWithT(t), f.name).Status)
		}
	}()

	expectInstalled(g, f, c1, "a", "c")
	expectConstraintsNotMet(g, f, "b")
	expectPartitionOrder(g, f)
	cm := &corev1.ConfigMap{}
	g.Expect(f.clusters["a"].Client.Get(ctx, client.ObjectKey{Namespace: "widget-operator", Name: "dropped-later"}, cm)).To(Succeed())

	c2, err := f.repo.CommitFiles("main", "drop a ConfigMap", gitserver.File{Path: "pkg/dropped.yaml", Delete: true})
	g.Expect(err).NotTo(HaveOccurred())
	expectInstalled(g, f, c2, "a", "c")
	for _, name := range []string{"a", "c"} {
		g.Eventually(func(g Gomega) bool {
			return isGone(ctx, g, f.clusters[name].Client, &corev1.ConfigMap{}, "widget-operator", "dropped-later")
		}).Should(BeTrue(), "the ConfigMap the new version dropped is pruned from %s", name)
	}

	// The test API server has no garbage collector: the test deletes the Packages the
	// HostedClusterPackage owns, as the garbage collector does after it.
	g.Expect(env.Client.Delete(ctx, getHCPkg(g, f.name))).To(Succeed())
	for _, p := range packagesOf(g, f.name) {
		g.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, p))).To(Succeed())
	}
	g.Eventually(func(g Gomega) { g.Expect(packagesOf(g, f.name)).To(BeEmpty()) }).WithTimeout(time.Minute).Should(Succeed())
	for _, name := range []string{"a", "c"} {
		expectTornDown(ctx, g, f.clusters[name])
	}
}

// installClusterVersion makes hc look like an OpenShift cluster of version: a ClusterVersion
// (its CRD kept minimal) whose latest completed update is version.
func installClusterVersion(g *WithT, hc *fleet.HostedCluster, version string) {
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("clusterversions.config.openshift.io")
	crd.Object["spec"] = map[string]any{
		"group": "config.openshift.io", "scope": "Cluster",
		"names": map[string]any{"kind": "ClusterVersion", "plural": "clusterversions", "singular": "clusterversion", "listKind": "ClusterVersionList"},
		"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
	}
	g.Expect(hc.Client.Create(ctx, crd)).To(Succeed())
	cv := &unstructured.Unstructured{}
	cv.SetAPIVersion("config.openshift.io/v1")
	cv.SetKind("ClusterVersion")
	cv.SetName("version")
	cv.Object["status"] = map[string]any{"history": []any{map[string]any{"state": "Completed", "version": version}}}
	g.Eventually(func() error { return hc.Client.Create(ctx, cv) }).Should(Succeed())
}

// markDeploymentsAvailable plays the Deployment controller the hosted API servers lack:
// every Deployment of hc is reported available at its generation, until ctx ends.
func markDeploymentsAvailable(ctx context.Context, hc *fleet.HostedCluster) {
	for ctx.Err() == nil {
		list := &appsv1.DeploymentList{}
		if err := hc.Client.List(ctx, list); err == nil {
			for i := range list.Items {
				reportDeploymentAvailable(ctx, hc.Client, &list.Items[i])
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// reportDeploymentAvailable reports d available with all its replicas updated, if it is not already.
func reportDeploymentAvailable(ctx context.Context, c client.Client, d *appsv1.Deployment) {
	if d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == 1 {
		return
	}
	now := metav1.Now()
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1,
		AvailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", LastUpdateTime: now, LastTransitionTime: now},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
				Message: "ReplicaSet has successfully progressed.", LastUpdateTime: now, LastTransitionTime: now},
		}}
	_ = c.Status().Update(ctx, d)
}

// expectInstalled waits until the rollout of commit is complete and the clusters named hold
// every object of the package, in their own namespaces, rendered for their own environment,
// with the Deployment's Progressing condition mapped onto their Packages.
func expectInstalled(g *WithT, f *rolloutFleet, commit string, clusters ...string) {
	f.t.Helper()
	ctx := context.Background()
	f.expectComplete(g, commit, 3)
	versions := map[string]string{"a": "4.16.2", "c": "4.15.0"}
	for _, name := range clusters {
		hc := f.clusters[name]
		d := &appsv1.Deployment{}
		g.Expect(hc.Client.Get(ctx, client.ObjectKey{Namespace: "widget-operator", Name: "widget-operator"}, d)).To(Succeed())
		g.Expect(d.Annotations).To(HaveKeyWithValue("openshift-version", versions[name]), "the hosted cluster's own environment")
		g.Expect(d.Annotations).To(HaveKeyWithValue("package-namespace", ""), "a ClusterPackage has no namespace")
		g.Expect(d.Annotations).NotTo(HaveKey("package-operator.run/condition-map"))
		g.Expect(d.Labels).To(HaveKeyWithValue(convoyv1alpha1.HostedClusterLabel, hc.HCPNamespace))
		for _, obj := range []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}, &corev1.Namespace{}} {
			g.Expect(hc.Client.Get(ctx, client.ObjectKey{Name: "widget-operator"}, obj)).To(Succeed())
		}
		g.Expect(hc.Client.Get(ctx, client.ObjectKey{Namespace: "widget-operator", Name: "widget-operator"}, &corev1.ServiceAccount{})).To(Succeed())
		g.Expect(hc.Client.Get(ctx, client.ObjectKey{Name: "widgets.e2e.convoy.dev"}, crdObject())).To(Succeed())
		pkg := packagesOf(g, f.name)[name]
		g.Expect(pkg.Status.Conditions).To(haveCondition("e2e.convoy.dev/Progressing", metav1.ConditionTrue,
			"NewReplicaSetAvailable", "ReplicaSet has successfully progressed."))
		g.Expect(pkg.Status.Warnings).To(ConsistOf(ContainSubstring("uniqueInScope")), "warnings reach the Package's status")
		for _, ph := range pkg.Status.Phases {
			g.Expect(ph.Class).To(Equal(convoyv1alpha1.ClassHostedCluster), "every phase of a ClusterPackage lands in the hosted cluster")
		}
	}
}

// expectConstraintsNotMet checks that the Package of cluster name reports its unmet
// constraints and that nothing was applied there.
func expectConstraintsNotMet(g *WithT, f *rolloutFleet, name string) {
	f.t.Helper()
	ctx := context.Background()
	pkg := packagesOf(g, f.name)[name]
	stalled := apimeta.FindStatusCondition(pkg.Status.Conditions, convoyv1alpha1.StalledCondition)
	g.Expect(stalled).NotTo(BeNil())
	g.Expect(stalled.Reason).To(Equal(convoyv1alpha1.ConstraintsNotMetReason))
	g.Expect(stalled.Message).To(ContainSubstring("OpenShift 4.12.9 does not meet constraint >=4.14"))
	g.Expect(pkg.Status.Inventory).To(BeEmpty())
	hc := f.clusters[name]
	g.Expect(isGone(ctx, g, hc.Client, crdObject(), "", "widgets.e2e.convoy.dev")).To(BeTrue())
	g.Expect(isGone(ctx, g, hc.Client, &corev1.Namespace{}, "", "widget-operator")).To(BeTrue())
}

// expectPartitionOrder checks that each partition's Package was created only once the
// previous partition's had progressed.
func expectPartitionOrder(g *WithT, f *rolloutFleet) {
	pkgs := packagesOf(g, f.name)
	availableAt := func(name string) time.Time {
		c := apimeta.FindStatusCondition(pkgs[name].Status.Conditions, convoyv1alpha1.ReadyCondition)
		if name == "b" {
			c = apimeta.FindStatusCondition(pkgs[name].Status.Conditions, convoyv1alpha1.StalledCondition)
		}
		g.Expect(c).NotTo(BeNil(), name)
		return c.LastTransitionTime.Time
	}
	g.Expect(pkgs["b"].CreationTimestamp.Time).NotTo(BeTemporally("<", availableAt("a")))
	g.Expect(pkgs["c"].CreationTimestamp.Time).NotTo(BeTemporally("<", availableAt("b")))
}

// expectTornDown waits until the package's objects are gone from hc, but for the CRD and the
// Namespace, which teardown leaves without convoy.dev/prune: enabled.
func expectTornDown(ctx context.Context, g *WithT, hc *fleet.HostedCluster) {
	g.Eventually(func(g Gomega) {
		g.Expect(isGone(ctx, g, hc.Client, &appsv1.Deployment{}, "widget-operator", "widget-operator")).To(BeTrue())
		g.Expect(isGone(ctx, g, hc.Client, &corev1.ServiceAccount{}, "widget-operator", "widget-operator")).To(BeTrue())
		g.Expect(isGone(ctx, g, hc.Client, &rbacv1.ClusterRole{}, "", "widget-operator")).To(BeTrue())
		g.Expect(isGone(ctx, g, hc.Client, &rbacv1.ClusterRoleBinding{}, "", "widget-operator")).To(BeTrue())
	}).Should(Succeed(), "cluster %s", hc.Name)
	g.Expect(hc.Client.Get(ctx, client.ObjectKey{Name: "widgets.e2e.convoy.dev"}, crdObject())).To(Succeed(), "the CRD is kept")
	g.Expect(hc.Client.Get(ctx, client.ObjectKey{Name: "widget-operator"}, &corev1.Namespace{})).To(Succeed(), "the Namespace is kept")
}

// crdObject is an empty CustomResourceDefinition to read into.
func crdObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	return u
}

// isGone reports whether the object of that name is absent, failing on any other error.
func isGone(ctx context.Context, g Gomega, c client.Client, obj client.Object, namespace, name string) bool {
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return true
	}
	g.Expect(err).NotTo(HaveOccurred(), fmt.Sprintf("%s/%s", namespace, name))
	return false
}
