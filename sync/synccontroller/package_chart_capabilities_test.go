package synccontroller

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// serviceMonitorCRD is a minimal CustomResourceDefinition of Prometheus Operator's
// ServiceMonitor.
const serviceMonitorCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicemonitors.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, plural: servicemonitors, listKind: ServiceMonitorList, singular: servicemonitor}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// monitoredChartFiles is a chart package wholly in the hosted cluster that renders a
// ServiceMonitor only where the cluster serves the kind, beside a ConfigMap that is always
// there.
func monitoredChartFiles(name string) map[string]string {
	return map[string]string{
		"pkg/manifest.yaml": `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: monitored}
spec:
  chart: {path: chart, class: hosted-cluster, namespace: kube-system}
`,
		"pkg/chart/Chart.yaml": "apiVersion: v2\nname: monitored\nversion: 0.1.0\n",
		"pkg/chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n" +
			"data: {kube: {{ .Capabilities.KubeVersion.Version | quote }}}\n",
		"pkg/chart/templates/monitor.yaml": `{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: ` + name + `}
spec: {selector: {matchLabels: {app: ` + name + `}}, endpoints: [{port: metrics}]}
{{- end }}
`,
	}
}

// TestChartSeesTheHostedClustersAPIVersions: the same chart package, rolled out to two hosted
// clusters, renders its ServiceMonitor into the one whose API server serves the
// ServiceMonitor CRD and not into the one that does not; both Packages are Available.
func TestChartSeesTheHostedClustersAPIVersions(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	teal, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "teal"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = teal.StopAPIServer() })
	crd := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(serviceMonitorCRD), &crd.Object)).To(Succeed())
	g.Expect(blue.Client.Patch(ctx, crd, client.Apply, client.FieldOwner("test"), client.ForceOwnership)).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, err := blue.Client.RESTMapper().RESTMapping(monitorKind, "v1")
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed(), "blue serves ServiceMonitors")

	name := "monitored-" + fleet.NameSuffix()
	inventory := map[string][]string{}
	for _, hc := range []*fleet.HostedCluster{blue, teal} {
		ns := hcpNamespace(t, hc)
		repo := newGitSource(t, ns)
		commit, err := repo.Commit("main", "monitored", monitoredChartFiles(name))
		g.Expect(err).NotTo(HaveOccurred())
		key := newPackage(t, ns, "monitored", "pkg")
		for _, e := range expectAvailableAt(g, key, commit).Status.Inventory {
			inventory[hc.Name] = append(inventory[hc.Name], e.ID)
		}
		g.Expect(kubetest.Exists(g, hc.Client, kubetest.ConfigMap("kube-system", name, nil))).To(BeTrue())
	}
	g.Expect(inventory["blue"]).To(ConsistOf("kube-system_"+name+"__ConfigMap", "kube-system_"+name+"_monitoring.coreos.com_ServiceMonitor"))
	g.Expect(kubetest.Exists(g, blue.Client, kubetest.Object("monitoring.coreos.com/v1", "ServiceMonitor", "kube-system", name, nil))).To(BeTrue())
	g.Expect(inventory["teal"]).To(ConsistOf("kube-system_"+name+"__ConfigMap"), "teal does not serve ServiceMonitors: the chart renders none")
	_, err = teal.Client.RESTMapper().RESTMapping(monitorKind, "v1")
	g.Expect(err).To(HaveOccurred())
}

// monitorKind is the ServiceMonitor's group and kind.
var monitorKind = schema.GroupKind{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}

// splitMonitoredChartFiles is a chart split across both clusters: a ServiceMonitor and a
// ConfigMap in a hosted-cluster phase, a ConfigMap in the management phase; each ConfigMap
// records whether the chart saw ServiceMonitors served.
func splitMonitoredChartFiles(name string) map[string]string {
	seen := func(phase, namespace string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "-" + phase + "\n  namespace: " + namespace +
			"\n  annotations: {convoy.dev/phase: " + phase + "}\n" +
			"data: {monitors: {{ .Capabilities.APIVersions.Has \"monitoring.coreos.com/v1/ServiceMonitor\" | quote }}}\n"
	}
	return map[string]string{
		"split/manifest.yaml": `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: split}
spec:
  phases: [{name: monitors, class: hosted-cluster}, {name: controller}]
  chart: {path: chart, phases: {default: controller}}
`,
		"split/chart/Chart.yaml":             "apiVersion: v2\nname: split\nversion: 0.1.0\n",
		"split/chart/templates/hosted.yaml":  seen("monitors", "kube-system"),
		"split/chart/templates/managed.yaml": seen("controller", "{{ .Release.Namespace }}"),
		"split/chart/templates/monitor.yaml": `{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: ` + name + `, namespace: kube-system, annotations: {convoy.dev/phase: monitors}}
spec: {selector: {}, endpoints: [{port: metrics}]}
{{- end }}
`,
	}
}

// TestSplitChartSeesEachClustersAPIVersions: a chart split across the hosted cluster and the
// management cluster renders its hosted-cluster phase with the hosted cluster's API versions
// (blue serves ServiceMonitors: the ServiceMonitor is applied there) and its management phase
// with the management cluster's (which does not serve them).
func TestSplitChartSeesEachClustersAPIVersions(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(serviceMonitorCRD), &crd.Object)).To(Succeed())
	g.Expect(blue.Client.Patch(ctx, crd, client.Apply, client.FieldOwner("test"), client.ForceOwnership)).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, err := blue.Client.RESTMapper().RESTMapping(monitorKind, "v1")
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed(), "blue serves ServiceMonitors")

	name := "split-" + fleet.NameSuffix()
	ns := hcpNamespace(t, blue)
	repo := newGitSource(t, ns)
	commit, err := repo.Commit("main", "split", splitMonitoredChartFiles(name))
	g.Expect(err).NotTo(HaveOccurred())
	expectAvailableAt(g, newPackage(t, ns, "split", "split"), commit)
	hostedCM := kubetest.Get(g, blue.Client, kubetest.ConfigMap("kube-system", name+"-monitors", nil))
	g.Expect(hostedCM.Object["data"]).To(HaveKeyWithValue("monitors", "true"), "the hosted-cluster phase sees the hosted cluster")
	g.Expect(kubetest.Exists(g, blue.Client, kubetest.Object("monitoring.coreos.com/v1", "ServiceMonitor", "kube-system", name, nil))).To(BeTrue())
	managedCM := kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, name+"-controller", nil))
	g.Expect(managedCM.Object["data"]).To(HaveKeyWithValue("monitors", "false"), "the management phase sees the management cluster")
}

// countingTransport counts the requests that pass through it.
type countingTransport struct {
	next  http.RoundTripper
	count *atomic.Int32
}

// RoundTrip counts req and passes it on.
func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.count.Add(1)
	return t.next.RoundTrip(req)
}

// TestAPIVersionsAreReadOncePerClusterNotPerRender: the management cluster's API versions come
// from its discovery (convoy's own kinds and ConfigMaps among them), read once and reused by
// every render until apiVersionsTTL passes.
func TestAPIVersionsAreReadOncePerClusterNotPerRender(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	var requests atomic.Int32
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, count: &requests} }
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	ce := &ClusterEnvironment{Resources: disc}
	first, err := ce.APIVersions(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Has("v1/ConfigMap")).To(BeTrue())
	g.Expect(first.Has("convoy.dev/v1alpha1/Package")).To(BeTrue())
	g.Expect(first.Has("monitoring.coreos.com/v1")).To(BeFalse())
	read := requests.Load()
	g.Expect(read).To(BeNumerically(">", 0))
	for range 50 {
		again, err := ce.APIVersions(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again.Digest()).To(Equal(first.Digest()))
	}
	g.Expect(requests.Load()).To(Equal(read), "50 more renders, no discovery request")
}

// TestChartRendersAgainWhenItsAPIGoesAway: a chart that rendered a ServiceMonitor because its
// hosted cluster served the CRD is rendered again without it once the CRD is deleted: the
// failed apply makes the next pass read the cluster's API versions again (well before
// apiVersionsTTL), and the Package is Available without the ServiceMonitor.
func TestChartRendersAgainWhenItsAPIGoesAway(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(serviceMonitorCRD), &crd.Object)).To(Succeed())
	g.Expect(blue.Client.Patch(ctx, crd, client.Apply, client.FieldOwner("test"), client.ForceOwnership)).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, err := blue.Client.RESTMapper().RESTMapping(monitorKind, "v1")
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed(), "blue serves ServiceMonitors")

	name := "goes-away-" + fleet.NameSuffix()
	ns := hcpNamespace(t, blue)
	repo := newGitSource(t, ns)
	commit, err := repo.Commit("main", "monitored", monitoredChartFiles(name))
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, "monitored", "pkg", func(p *convoyv1alpha1.Package) {
		p.Spec.Interval = &metav1.Duration{Duration: 2 * time.Second}
	})
	monitorID := "kube-system_" + name + "_monitoring.coreos.com_ServiceMonitor"
	g.Expect(inventoryIDs(expectAvailableAt(g, key, commit))).To(ContainElement(monitorID))

	start := time.Now()
	g.Expect(blue.Client.Delete(ctx, crd)).To(Succeed())
	g.Eventually(func(g Gomega) {
		pkg := getPackage(g, key)
		g.Expect(inventoryIDs(pkg)).To(ConsistOf("kube-system_" + name + "__ConfigMap"))
		g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, metav1.ConditionTrue, ""))
	}).WithTimeout(90*time.Second).Should(Succeed(), "rendered again without the ServiceMonitor")
	g.Expect(time.Since(start)).To(BeNumerically("<", apiVersionsTTL), "before the API versions expire")
}

// inventoryIDs returns the ids of a Package's inventory.
func inventoryIDs(pkg *convoyv1alpha1.Package) []string {
	var out []string
	for _, e := range pkg.Status.Inventory {
		out = append(out, e.ID)
	}
	return out
}
