package manifests

import (
	"io/fs"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// chartManifest declares a chart at chart/ and no phases: convoy's default ones.
const chartManifest = `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata:
  name: demo
spec:
  chart:
    path: chart
    values:
      replicas: 2
`

// demoChart is a small chart: a CRD in crds/, a namespace, RBAC, a deployment using values
// and .Capabilities, a test and a post-install hook.
var demoChart = map[string]string{
	"chart/Chart.yaml":         "apiVersion: v2\nname: demo\nversion: 1.2.3\n",
	"chart/values.yaml":        "replicas: 1\nimage: demo:1\nhook: false\n",
	"chart/values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 0}}}`,
	"chart/.helmignore":        "ignored.yaml\n",
	"chart/ignored.yaml":       "not: an object\n",
	"chart/crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
	"chart/templates/_helpers.tpl": `{{- define "demo.name" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}`,
	"chart/templates/ns.yaml":      "apiVersion: v1\nkind: Namespace\nmetadata: {name: {{ .Release.Namespace }}}\n",
	"chart/templates/sa.yaml":      "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: {{ include \"demo.name\" . }}}\n",
	"chart/templates/widget.yaml":  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
	"chart/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "demo.name" . }}
  annotations:
    kube: {{ .Capabilities.KubeVersion.Version | quote }}
    image: {{ .Values.image | quote }}
    lookup: {{ lookup "v1" "Secret" "kube-system" "x" | toJson | quote }}
spec:
  replicas: {{ .Values.replicas }}
`,
	"chart/templates/tests/t.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations: {helm.sh/hook: test}\n",
	"chart/templates/hook.yaml": `{{- if .Values.hook }}
apiVersion: batch/v1
kind: Job
metadata:
  name: hook
  annotations: {helm.sh/hook: post-install, helm.sh/hook-weight: "1"}
{{- end }}
`,
	"chart/templates/NOTES.txt": "installed {{ .Release.Name }}",
}

// chartPkg is demoChart with a manifest and extra files.
func chartPkg(manifest string, extra map[string]string) map[string]string {
	files := map[string]string{"manifest.yaml": manifest}
	for p, c := range demoChart {
		files[p] = c
	}
	for p, c := range extra {
		files[p] = c
	}
	return files
}

func TestChartRendersIntoDefaultPhases(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(chartPkg(chartManifest, nil)), TemplateData{
		Package:     PackageRef{Name: "demo", Namespace: "clusters-a"},
		Environment: &Environment{Kubernetes: KubernetesEnvironment{Version: "v1.31.4"}},
	})
	g.Expect(objectNames(r)).To(ConsistOf(
		"crds/CustomResourceDefinition/widgets.example.com",
		"namespaces/Namespace/clusters-a",
		"rbac/ServiceAccount/demo-demo",
		"deploy/Deployment/demo-demo",
		"deploy/Widget/w",
	))
	dep := r.Phases[3].Objects[0]
	g.Expect(dep.GetAnnotations()).To(HaveKeyWithValue("kube", "v1.31.4"))
	g.Expect(dep.GetAnnotations()).To(HaveKeyWithValue("lookup", "{}"))
	g.Expect(dep.Object["spec"]).To(HaveKeyWithValue("replicas", BeNumerically("==", 2)))
	g.Expect(r.Phases[0].Objects[0].GetAnnotations()).To(HaveKeyWithValue(convoyv1alpha1.PruneAnnotation, "disabled"))
}

func TestChartValuesOrder(t *testing.T) {
	g := NewWithT(t)
	m := chartManifest + "    valuesFiles: [cluster-values.yaml.gotmpl]\n"
	fsys := pkgFS(chartPkg(m, map[string]string{
		"cluster-values.yaml.gotmpl": "image: {{ .hostedCluster.name }}:1\n",
	}))
	r := mustLoad(t, fsys, TemplateData{
		Config:        map[string]any{"replicas": 3},
		Package:       PackageRef{Name: "demo", Namespace: "clusters-a"},
		HostedCluster: &HostedClusterRef{Name: "a", Namespace: "clusters"},
	})
	dep := r.Phases[3].Objects[0]
	g.Expect(dep.Object["spec"]).To(HaveKeyWithValue("replicas", BeNumerically("==", 3)))
	g.Expect(dep.GetAnnotations()).To(HaveKeyWithValue("image", "a:1"))
	g.Expect(objectNames(r)).To(HaveLen(5))
}

func TestChartValuesSchemaRefusesConfig(t *testing.T) {
	errs := loadErrors(t, pkgFS(chartPkg(chartManifest, nil)), TemplateData{Config: map[string]any{"replicas": -1}})
	NewWithT(t).Expect(errs).To(haveProblem("chart", RuleChart, "values.schema.json"))
}

func TestChartHooksRefusedOrMapped(t *testing.T) {
	g := NewWithT(t)
	errs := loadErrors(t, pkgFS(chartPkg(chartManifest, nil)), TemplateData{Config: map[string]any{"hook": true}})
	g.Expect(errs).To(haveProblem("chart/templates/hook.yaml", RuleChartHook, "post-install hook"))

	m := chartManifest + "    hooks: {policy: Phases}\n"
	r := mustLoad(t, pkgFS(chartPkg(m, nil)), TemplateData{Config: map[string]any{"hook": true}})
	g.Expect(objectNames(r)).To(ContainElement("deploy/Job/hook"))
}

func TestChartHostedClusterClassGetsNamespaces(t *testing.T) {
	g := NewWithT(t)
	m := chartManifest + "    class: hosted-cluster\n    namespace: demo-system\n"
	r := mustLoad(t, pkgFS(chartPkg(m, nil)), TemplateData{Package: PackageRef{Name: "demo", Namespace: "clusters-a"}})
	for _, ph := range r.Phases {
		g.Expect(ph.Class).To(Equal(convoyv1alpha1.ClassHostedCluster))
	}
	g.Expect(r.Phases[2].Objects[0].GetNamespace()).To(Equal("demo-system"))
	g.Expect(r.Phases[3].Objects[1].GetNamespace()).To(BeEmpty(), "Widget is cluster-scoped by its CRD")
}

// TestExampleChartPackageRendersPerCluster loads the example package of examples/charts: the
// whole chart in the hosted cluster, namespaced objects in kube-system, each cluster's labels
// on its pods.
func TestExampleChartPackageRendersPerCluster(t *testing.T) {
	g := NewWithT(t)
	r, err := Load(os.DirFS("../examples/charts/metrics-server"), ".", TemplateData{
		Config:  map[string]any{"replicas": 3},
		Package: PackageRef{Name: "metrics-server", Namespace: "clusters-demo"},
		HostedCluster: &HostedClusterRef{Name: "demo", Namespace: "clusters",
			Labels: map[string]string{"hypershift.openshift.io/risk-group": "early"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	clusterScoped := chartClusterScoped(nil)
	for _, ph := range r.Phases {
		g.Expect(ph.Class).To(Equal(convoyv1alpha1.ClassHostedCluster))
		for _, o := range ph.Objects {
			if !clusterScoped[o.GroupVersionKind().GroupKind()] {
				g.Expect(o.GetNamespace()).To(Equal("kube-system"), "%s %s", o.GetKind(), o.GetName())
			}
			if o.GetKind() == "Deployment" {
				g.Expect(o.Object["spec"]).To(HaveKeyWithValue("replicas", BeNumerically("==", 3)))
				labels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
				g.Expect(labels).To(HaveKeyWithValue("hosted-cluster", "demo"))
				g.Expect(labels).To(HaveKeyWithValue("risk-group", "early"))
			}
		}
	}
}

// TestCacheRendersAChartOncePerValues checks the render cache on a chart package: one render
// per distinct template data (config, Package, HostedCluster), whatever the number of loads.
func TestCacheRendersAChartOncePerValues(t *testing.T) {
	g := NewWithT(t)
	fsys := pkgFS(chartPkg(chartManifest, nil))
	c := NewCache(0)
	open := func() (fs.FS, error) { return fsys, nil }
	key := Key{Source: "ns/src", Commit: "c1", Dir: "."}
	for _, data := range []TemplateData{
		{Config: map[string]any{"replicas": 1}}, {Config: map[string]any{"replicas": 1}},
		{Config: map[string]any{"replicas": 2}}, {Config: map[string]any{"replicas": 2}},
		{Config: map[string]any{"replicas": 2}, HostedCluster: &HostedClusterRef{Name: "a"}},
	} {
		_, err := c.Load(key, data, open)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(c.Stats().Misses).To(BeEquivalentTo(3))
	g.Expect(c.Stats().Hits).To(BeEquivalentTo(2))
}
