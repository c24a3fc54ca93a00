package synccontroller

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// TestPackageHostedClusterOutageRotationAndDeletion follows one hosted cluster through an
// outage, a kubeconfig rotation and its deletion by HyperShift.
func TestPackageHostedClusterOutageRotationAndDeletion(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	red, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "red"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = red.StopAPIServer() })
	ns := red.HCPNamespace
	name := "outage-" + fleet.NameSuffix()
	repo := newGitSource(t, ns)
	c1, err := repo.Commit("main", "one", map[string]string{
		"pkg/manifest.yaml": manifest("inside:hosted-cluster", "outside"),
		"pkg/objects.yaml":  cmYAML("inside", "default", name, "1") + cmYAML("outside", "", "out", "1"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, "app", "pkg", func(p *convoyv1alpha1.Package) {
		p.Spec.Interval = &metav1.Duration{Duration: 2 * time.Second}
	})
	expectAvailableAt(g, key, c1)
	g.Expect(kubetest.Exists(g, red.Client, kubetest.ConfigMap("default", name, nil))).To(BeTrue())
	other := healthyPackage(t)

	// Outage: the Package is not Available and says why; another Package is unaffected.
	g.Expect(red.StopAPIServer()).To(Succeed())
	g.Eventually(func(g Gomega) {
		pkg := getPackage(g, key)
		g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, metav1.ConditionFalse,
			"hosted cluster of namespace "+ns+" is unreachable"))
		g.Expect(conditionOf(pkg.Status.Conditions, convoyv1alpha1.AvailableCondition).Reason).To(Equal(convoyv1alpha1.HostedClusterUnreachableReason))
	}).Should(Succeed())
	g.Expect(getPackage(g, other).Status.Conditions).To(haveCondition(convoyv1alpha1.ReadyCondition, metav1.ConditionTrue, ""))

	// Rotation: the Secret now points at another API server; the new client is used.
	writeKubeconfig(g, ns, blue)
	g.Eventually(func(g Gomega) {
		g.Expect(kubetest.Exists(g, blue.Client, kubetest.ConfigMap("default", name, nil))).To(BeTrue())
		pkg := getPackage(g, key)
		g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, metav1.ConditionTrue, ""))
	}).WithTimeout(10*time.Second).Should(Succeed(), "the Secret watch requeues the Package")

	// Deletion: HyperShift deletes the hosted cluster; deleting the Package completes at once.
	g.Expect(env.BeginDeletion(ctx, red)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}})).To(Succeed())
	expectGone(g, key, 10*time.Second)
	g.Expect(env.FinishDeletion(ctx, red)).To(Succeed())
}

// healthyPackage creates an available Package on the blue hosted cluster and returns its key.
func healthyPackage(t *testing.T) client.ObjectKey {
	t.Helper()
	key, _ := availableHostedPackage(t, "healthy")
	return key
}

// availableHostedPackage creates an available Package name on the blue hosted cluster, whose
// ConfigMap name it applies into a new namespace of that cluster; it returns the Package's key
// and that namespace.
func availableHostedPackage(t *testing.T, name string, opts ...func(*convoyv1alpha1.Package)) (client.ObjectKey, string) {
	t.Helper()
	g := NewWithT(t)
	ns := hcpNamespace(t, blue)
	hostedNS := fleet.NewNamespaceIn(t, blue.Client)
	repo := newGitSource(t, ns)
	c, err := repo.Commit("main", "one", map[string]string{
		"pkg/manifest.yaml": manifest("inside:hosted-cluster"),
		"pkg/objects.yaml":  cmYAML("inside", hostedNS, name, "1"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, name, "pkg", opts...)
	expectAvailableAt(g, key, c)
	return key, hostedNS
}

// writeKubeconfig replaces the kubeconfig Secret of namespace with one reaching hc.
func writeKubeconfig(g Gomega, namespace string, hc *fleet.HostedCluster) {
	ctx := context.Background()
	kubeconfig, err := simfleet.KubeConfigFor(hc.Config, hc.Name)
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: convoyv1alpha1.KubeconfigSecretName}, secret)).To(Succeed())
	secret.Data[convoyv1alpha1.KubeconfigSecretKey] = kubeconfig
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())
}

func TestPackageExamples(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	green, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "green", Labels: map[string]string{"tier": "gold"}})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = green.StopAPIServer() })

	t.Run("extra-component", func(t *testing.T) {
		g := NewWithT(t)
		ns := hcpNamespace(t, green)
		repo := newGitSource(t, ns)
		commit, err := repo.Commit("main", "add", exampleFiles(t, "extra-component", "packages/extra-component"))
		g.Expect(err).NotTo(HaveOccurred())
		key := newPackage(t, ns, "extra-component", "packages/extra-component")
		pkg := expectAvailableAt(g, key, commit)
		g.Expect(pkg.Status.Phases).To(HaveLen(3))

		cfg := kubetest.Object("extra.convoy.dev/v1", "ExtraComponentConfig", "extra-component", "cluster", nil)
		g.Expect(kubetest.Exists(g, green.Client, cfg)).To(BeTrue())
		info := kubetest.Get(g, green.Client, kubetest.ConfigMap("extra-component", "extra-component-cluster-info", nil))
		g.Expect(info.Object["data"]).To(HaveKeyWithValue("hostedCluster", "clusters/green"))
		g.Expect(info.Object["data"]).To(HaveKeyWithValue("label.tier", "gold"))
		g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(ns, "extra-component-config", nil))).To(BeTrue())
		g.Expect(kubetest.Exists(g, green.Client, kubetest.ConfigMap(ns, "extra-component-config", nil))).To(BeFalse())

		g.Expect(env.Client.Delete(ctx, pkg)).To(Succeed())
		g.Eventually(func(g Gomega) {
			finalizeNamespaces(g, green.Client, "extra-component")
			g.Expect(client.IgnoreNotFound(env.Client.Get(ctx, key, &convoyv1alpha1.Package{}))).To(Succeed())
			g.Expect(kubetest.Exists(g, env.Client, kubetest.Object("convoy.dev/v1alpha1", "Package", ns, "extra-component", nil))).To(BeFalse())
		}).Should(Succeed())
		g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(ns, "extra-component-config", nil))).To(BeFalse())
		g.Expect(kubetest.Exists(g, green.Client, kubetest.Object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "extra-component", nil))).To(BeFalse())
		g.Expect(kubetest.Exists(g, green.Client, kubetest.Object("v1", "Namespace", "", "extra-component", nil))).To(BeFalse())
	})

	t.Run("log-collector in Package Operator's format", func(t *testing.T) {
		g := NewWithT(t)
		ns := hcpNamespace(t, green)
		repo := newGitSource(t, ns)
		commit, err := repo.Commit("main", "add", exampleFiles(t, "log-collector-pko", "pko/log-collector"))
		g.Expect(err).NotTo(HaveOccurred())
		key := newPackage(t, ns, "log-collector", "pko/log-collector")
		pkg := expectAvailableAt(g, key, commit)
		g.Expect(pkg.Status.Phases).To(HaveLen(3))

		g.Expect(kubetest.Exists(g, green.Client, kubetest.Object("v1", "ServiceAccount", "openshift-log-collector", "log-collector", nil))).To(BeTrue())
		g.Expect(kubetest.Exists(g, green.Client, kubetest.Object("rbac.authorization.k8s.io/v1", "RoleBinding", "kube-system", "log-collector", nil))).To(BeTrue())
		collector := kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, "log-collector", nil))
		g.Expect(collector.Object["data"]).To(HaveKeyWithValue("retention", "7d"))
		version, err := discovery.NewDiscoveryClientForConfigOrDie(env.Config).ServerVersion()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(collector.Object["data"]).To(HaveKeyWithValue("kubernetesVersion", version.GitVersion),
			".environment.kubernetes is the management cluster's, from discovery")
		g.Expect(collector.Object["data"]).To(HaveKeyWithValue("cluster", green.Name), ".environment.hyperShift is the HostedCluster")
		g.Expect(collector.GetAnnotations()).NotTo(HaveKey(convoyv1alpha1.PKOPhaseAnnotation))
		g.Expect(collector.GetLabels()).To(HaveKeyWithValue(convoyv1alpha1.PackageNameLabel, "log-collector"))
	})
}

// TestHostedObjectGrownPastTheResponseLimitIsReported: the tenant of a hosted cluster grows an
// object of a Package past what the controller reads of one answer. The Package says so,
// keeps the object, and the Packages of other clusters are unaffected.
func TestHostedObjectGrownPastTheResponseLimitIsReported(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	key, hostedNS := availableHostedPackage(t, "grown", func(p *convoyv1alpha1.Package) {
		p.Spec.Interval = &metav1.Duration{Duration: 2 * time.Second}
	})
	ns := key.Namespace
	other := healthyPackage(t)

	grown := &corev1.ConfigMap{}
	g.Expect(blue.Client.Get(ctx, client.ObjectKey{Namespace: hostedNS, Name: "grown"}, grown)).To(Succeed())
	grown.Data["blob"] = strings.Repeat("x", testMaxResponseBytes)
	g.Expect(blue.Client.Update(ctx, grown)).To(Succeed())
	g.Eventually(func(g Gomega) {
		avail := conditionOf(getPackage(g, key).Status.Conditions, convoyv1alpha1.AvailableCondition)
		g.Expect(avail).NotTo(BeNil())
		g.Expect(avail.Reason).To(Equal(convoyv1alpha1.HostedResponseTooLargeReason))
		g.Expect(avail.Message).To(MatchRegexp(`^hosted cluster of namespace %s: https://\S+ answered GET /api/v1/namespaces/%s/configmaps/grown with more than %d bytes, counting 64 for each JSON value \(--hosted-max-response-bytes\); the rest was not read$`,
			ns, hostedNS, testMaxResponseBytes))
	}).Should(Succeed(), "noticed at the next health check")
	g.Expect(kubetest.Exists(g, blue.Client, kubetest.ConfigMap(hostedNS, "grown", nil))).To(BeTrue(), "kept")
	g.Expect(getPackage(g, other).Status.Conditions).To(haveCondition(convoyv1alpha1.ReadyCondition, metav1.ConditionTrue, ""))
}
