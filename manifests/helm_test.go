package manifests

import (
	"testing"

	. "github.com/onsi/gomega"

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
