package rolloutcontroller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sources/helmrepo"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// widgetChart is a chart of a "widget" add-on: its CRD (crds/) lands in the hosted cluster, its
// controller's ServiceAccount and config in the HCP namespace. (The controller's Deployment is
// left out: envtest runs no kube-controller-manager, so it would never be Available.)
var widgetChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: widget\nversion: 1.0.0\n",
	"values.yaml": "logLevel: info\nclusterName: unknown\n",
	"crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`,
	"templates/serviceaccount.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: widget-controller}\n",
	"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: widget-controller}
data:
  logLevel: {{ .Values.logLevel | quote }}
  cluster: {{ .Values.clusterName | quote }}
  namespace: {{ .Release.Namespace | quote }}
  chart: {{ .Chart.Version | quote }}
`,
}

// widgetManifest declares the CRDs' hosted-cluster phase and the controller's management phase;
// chart is the manifest's spec.chart, besides the per-cluster values file.
func widgetManifest(chart string) string {
	return `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: widget}
spec:
  phases:
  - {name: crds, class: hosted-cluster}
  - {name: controller}
  chart:
` + chart + `    phases: {crds: crds, default: controller}
    valuesFiles: [cluster-values.yaml.gotmpl]
`
}

// widgetCommit is the files of a commit of the widget package with a vendored chart.
func widgetCommit(logLevel string) map[string]string {
	files := map[string]string{
		"pkg/manifest.yaml":              widgetManifest("    path: chart\n    values: {logLevel: " + logLevel + "}\n"),
		"pkg/cluster-values.yaml.gotmpl": "clusterName: {{ .hostedCluster.name }}\n",
	}
	for p, c := range widgetChart {
		files["pkg/chart/"+p] = c
	}
	return files
}

// serveWidgetChart serves widgetChart at each version, packaged and indexed by the Helm SDK,
// from a file server, and returns its URL and the digest of each version's archive.
func serveWidgetChart(t *testing.T, versions ...string) (string, map[string]string) {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	digests := map[string]string{}
	for _, v := range versions {
		src := t.TempDir()
		for p, c := range widgetChart {
			if p == "Chart.yaml" {
				c = strings.Replace(c, "version: 1.0.0", "version: "+v, 1)
			}
			g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755)).To(Succeed())
			g.Expect(os.WriteFile(filepath.Join(src, p), []byte(c), 0o644)).To(Succeed())
		}
		ch, err := loader.LoadDir(src)
		g.Expect(err).NotTo(HaveOccurred())
		archive, err := chartutil.Save(ch, dir)
		g.Expect(err).NotTo(HaveOccurred())
		data, err := os.ReadFile(archive)
		g.Expect(err).NotTo(HaveOccurred())
		digests[v] = helmrepo.Digest(data)
	}
	idx, err := repo.IndexDirectory(dir, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644)).To(Succeed())
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL, digests
}

// pulledWidgetCommit is the changes of a commit of the widget package pulling the chart: the
// vendored chart is deleted.
func pulledWidgetCommit(url, version, digest, logLevel string) []gitserver.File {
	changes := []gitserver.File{
		{Path: "pkg/manifest.yaml", Content: widgetManifest("    repository: " + url + "\n    name: widget\n    version: " + version +
			"\n    digest: " + digest + "\n    values: {logLevel: " + logLevel + "}\n")},
		{Path: "pkg/cluster-values.yaml.gotmpl", Content: widgetCommit(logLevel)["pkg/cluster-values.yaml.gotmpl"]},
	}
	for p := range widgetChart {
		changes = append(changes, gitserver.File{Path: "pkg/chart/" + p, Delete: true})
	}
	return changes
}

// vendoredWidgetCommit is the changes of a commit of the widget package with a vendored chart.
func vendoredWidgetCommit(logLevel string) []gitserver.File {
	var changes []gitserver.File
	for p, c := range widgetCommit(logLevel) {
		changes = append(changes, gitserver.File{Path: p, Content: c})
	}
	return changes
}

// TestHelmChartRollsOutAcrossPartitions rolls a chart package out to three HostedClusters in two
// partitions: its CRD into each hosted cluster, its controller's config, with per-cluster
// values, into each HCP namespace. A values change rolls out as a new revision, and so does a
// move to the same chart pulled from a chart repository at a pinned digest; a version bump
// with a wrong digest is refused with a clear condition and changes nothing.
func TestHelmChartRollsOutAcrossPartitions(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	f := &rolloutFleet{t: t, name: "helm-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	url, digests := serveWidgetChart(t, "1.1.0", "1.2.0")
	f.addClusters(prefixed(f.name, []string{"h1:early", "h2:late", "h3:late"}, "")...)
	newHostedClusterPackage(t, f.name, f.ns)

	var last string
	for _, step := range []struct {
		changes           []gitserver.File
		logLevel, version string
	}{
		{vendoredWidgetCommit("info"), "info", "1.0.0"},
		{vendoredWidgetCommit("debug"), "debug", "1.0.0"},
		{pulledWidgetCommit(url, "1.1.0", digests["1.1.0"], "debug"), "debug", "1.1.0"},
	} {
		commit, err := f.repo.CommitFiles("main", "widget "+step.version+" "+step.logLevel, step.changes...)
		g.Expect(err).NotTo(HaveOccurred())
		f.expectComplete(g, commit, 3)
		f.expectWidget(g, step.logLevel, step.version)
		last = commit
	}

	wrong := digests["1.1.0"]
	bump, err := f.repo.CommitFiles("main", "bump the chart, with the digest of the previous version",
		pulledWidgetCommit(url, "1.2.0", wrong, "debug")...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		pkgs := packagesOf(g, f.name)
		g.Expect(onCommit(pkgs, bump)).To(HaveLen(1))
		for _, p := range pkgs {
			if p.Spec.Revision == bump {
				g.Expect(p.Status.Conditions).To(ContainElement(SatisfyAll(
					HaveField("Type", convoyv1alpha1.StalledCondition), HaveField("Status", metav1.ConditionTrue),
					HaveField("Reason", convoyv1alpha1.RenderFailedReason),
					HaveField("Message", SatisfyAll(ContainSubstring("chart-digest: chart widget version 1.2.0"),
						ContainSubstring("has digest "+digests["1.2.0"]+", not the pinned "+wrong),
						ContainSubstring("nothing is applied")))),
				))
			}
		}
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, f.name), last)).To(HaveLen(2))
	}, "3s").Should(Succeed())
	f.expectWidget(g, "debug", "1.1.0")
}

// expectWidget checks every cluster: the CRD in the hosted cluster, the controller's config
// in the HCP namespace with the cluster's own name, the logLevel and the chart's version.
func (f *rolloutFleet) expectWidget(g *WithT, logLevel, version string) {
	f.t.Helper()
	for _, hc := range f.clusters {
		g.Eventually(func(g Gomega) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(hc.Client.Get(context.Background(), client.ObjectKey{Name: "widgets.example.com"}, crd)).To(Succeed())
			g.Expect(crd.Annotations).To(HaveKeyWithValue(convoyv1alpha1.PruneAnnotation, "disabled"))
			cm := &corev1.ConfigMap{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: hc.HCPNamespace, Name: "widget-controller"}, cm)).To(Succeed())
			g.Expect(cm.Data).To(Equal(map[string]string{"logLevel": logLevel, "cluster": hc.Name,
				"namespace": hc.HCPNamespace, "chart": version}))
		}).Should(Succeed(), "cluster %s", hc.Name)
	}
}
