package manifests

import (
	"fmt"
	"io/fs"
	"testing"

	. "github.com/onsi/gomega"
)

// monitorChart is a chart whose ServiceMonitor is rendered only where the cluster serves the
// kind, and whose ConfigMap records .Release.Namespace, the Kubernetes version and a value.
// class is the chart's class; valuesFiles lists the package's values files.
func monitorChart(class, valuesFiles string, extra map[string]string) map[string]string {
	files := map[string]string{
		"manifest.yaml": `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: monitor}
spec:
  chart: {path: chart, class: "` + class + `", valuesFiles: [` + valuesFiles + `]}
`,
		"chart/Chart.yaml":  "apiVersion: v2\nname: monitor\nversion: 0.1.0\n",
		"chart/values.yaml": "tier: standard\n",
		"chart/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: monitor, namespace: kube-system}
data:
  releaseNamespace: {{ .Release.Namespace | quote }}
  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}
  tier: {{ .Values.tier | quote }}
`,
		"chart/templates/monitor.yaml": `{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: monitor, namespace: kube-system}
{{- end }}
`,
	}
	for p, c := range extra {
		files[p] = c
	}
	return files
}

// withMonitoring is a cluster's API versions with Prometheus Operator's ServiceMonitor.
var withMonitoring = NewAPIVersions([]string{"v1", "v1/ConfigMap", "monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"})

// kindsOf returns the kinds of a render's objects.
func kindsOf(r *Rendered) []string {
	var out []string
	for _, ph := range r.Phases {
		for _, o := range ph.Objects {
			out = append(out, o.GetKind())
		}
	}
	return out
}

// configMapData returns the data of the render's ConfigMap.
func configMapData(r *Rendered) map[string]any {
	for _, ph := range r.Phases {
		for _, o := range ph.Objects {
			if o.GetKind() == "ConfigMap" {
				return o.Object["data"].(map[string]any)
			}
		}
	}
	return nil
}

// TestChartSeesTheClustersAPIVersions: .Capabilities.APIVersions is the set of the environment
// the chart is rendered for (Helm's built-in set without one), and the render cache keeps
// renders for different sets apart.
func TestChartSeesTheClustersAPIVersions(t *testing.T) {
	fsys := pkgFS(monitorChart("hosted-cluster", "", nil))
	c := NewCacheWithOptions(CacheOptions{Budget: DefaultRenderBudget})
	load := func(env *Environment) *Rendered {
		r, err := c.Load(Key{Source: "s", Commit: "c1", Dir: "."}, TemplateData{Environment: env}, func() (fs.FS, error) { return fsys, nil })
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		return r
	}
	t.Run("served", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(kindsOf(load(&Environment{APIVersions: withMonitoring}))).To(ConsistOf("ConfigMap", "ServiceMonitor"))
	})
	t.Run("not served", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(kindsOf(load(&Environment{APIVersions: NewAPIVersions([]string{"v1", "v1/ConfigMap"})}))).To(ConsistOf("ConfigMap"))
	})
	t.Run("Helm's built-in set", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(kindsOf(load(nil))).To(ConsistOf("ConfigMap"))
		g.Expect(kindsOf(load(&Environment{APIVersions: DefaultAPIVersionsWith([]string{"monitoring.coreos.com/v1/ServiceMonitor"})}))).
			To(ConsistOf("ConfigMap", "ServiceMonitor"), "as helm template --api-versions")
	})
	g := NewWithT(t)
	g.Expect(c.Stats().ChartRenders).To(BeEquivalentTo(4))
}

// TestAPIVersionsAreASortedSet: the digest does not depend on the order or repetitions.
func TestAPIVersionsAreASortedSet(t *testing.T) {
	g := NewWithT(t)
	a := NewAPIVersions([]string{"v1", "apps/v1", "apps/v1/Deployment", "v1", ""})
	b := NewAPIVersions([]string{"apps/v1/Deployment", "apps/v1", "v1"})
	g.Expect(a.List()).To(Equal([]string{"apps/v1", "apps/v1/Deployment", "v1"}))
	g.Expect(a.Digest()).To(Equal(b.Digest()))
	g.Expect(a.Has("apps/v1/Deployment")).To(BeTrue())
	g.Expect(a.Has("apps/v2")).To(BeFalse())
	g.Expect(NewAPIVersions([]string{"v1"}).Digest()).NotTo(Equal(a.Digest()))
	g.Expect((*APIVersions)(nil).Digest()).To(BeEmpty())
}

// TestChartRenderIsSharedByClustersWithEqualInputs: n Packages of a chart wholly in the hosted
// clusters, each in its own HCP namespace and HostedCluster, loaded concurrently, render the
// chart once when what reaches the chart is equal (values, release, capabilities), once per
// group of clusters with equal values, and once per cluster when a per-cluster values file
// gives each its own values. The release namespace of a chart wholly in the hosted cluster is
// Helm's default, never the HCP namespace; a chart in management phases gets the HCP namespace,
// so each cluster renders its own.
func TestChartRenderIsSharedByClustersWithEqualInputs(t *testing.T) {
	const n = 4
	values := func(text string) map[string]string { return map[string]string{"values.yaml.gotmpl": text} }
	for _, tc := range []struct {
		name      string
		class     string
		files     map[string]string
		renders   int64
		releaseNS string
	}{
		{name: "equal values", class: "hosted-cluster", files: values("tier: gold\n"), renders: 1, releaseNS: "default"},
		{name: "values templated alike for every cluster", class: "hosted-cluster", files: values("tier: {{ .revision }}\n"), renders: 1, releaseNS: "default"},
		{name: "values per group of clusters", class: "hosted-cluster",
			files: values("tier: {{ if lt (atoi (index .hostedCluster.labels \"id\")) 2 }}gold{{ else }}silver{{ end }}\n"), renders: 2, releaseNS: "default"},
		{name: "values per cluster", class: "hosted-cluster", files: values("tier: {{ .hostedCluster.name }}\n"), renders: n, releaseNS: "default"},
		{name: "management phases: the HCP namespace reaches the output", class: "", files: values("tier: gold\n"), renders: n, releaseNS: "clusters-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			fsys := pkgFS(monitorChart(tc.class, "values.yaml.gotmpl", tc.files))
			c := NewCacheWithOptions(CacheOptions{Budget: DefaultRenderBudget})
			datas := make([]TemplateData, n)
			for i := range datas {
				datas[i] = followerData(i, nil)
			}
			results, errs := loadAll(c, Key{Source: "s", Commit: "c1", Dir: "."}, datas, func() (fs.FS, error) { return fsys, nil }, true)
			for i := range n {
				g.Expect(errs[i]).NotTo(HaveOccurred())
			}
			st := c.Stats()
			g.Expect(st.Misses).To(BeEquivalentTo(n), "each Package loads its own package (its values files)")
			g.Expect(st.ChartRenders).To(Equal(tc.renders), "chart render processes")
			g.Expect(st.ChartHits).To(Equal(n-tc.renders), "chart renders shared")
			g.Expect(st.Entries).To(Equal(n), "the Packages' renders; chart renders are kept apart")
			g.Expect(configMapData(results[0])).To(HaveKeyWithValue("releaseNamespace", tc.releaseNS))
		})
	}
}

// TestSplitChartRendersEachPartForItsCluster: a chart with CRDs in the hosted cluster and its
// controller in the management cluster renders the objects of each phase with the
// .Capabilities of the phase's cluster; values files and templates see the management
// cluster's .environment.
func TestSplitChartRendersEachPartForItsCluster(t *testing.T) {
	g := NewWithT(t)
	manifest := `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: split}
spec:
  phases: [{name: crds, class: hosted-cluster}, {name: controller}]
  chart: {path: chart, phases: {crds: crds, default: controller}, valuesFiles: [env.yaml.gotmpl]}
`
	crd := func(name string) string {
		return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s
  annotations: {kube: {{ .Capabilities.KubeVersion.Version | quote }}, monitoring: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" | quote }}, environment: {{ .Values.environment | quote }}}
`, name)
	}
	fsys := pkgFS(map[string]string{
		"manifest.yaml":                manifest,
		"env.yaml.gotmpl":              "environment: {{ .environment.kubernetes.version }}\n",
		"chart/Chart.yaml":             "apiVersion: v2\nname: split\nversion: 0.1.0\n",
		"chart/templates/crd.yaml":     crd("widgets.example.com"),
		"chart/templates/monitor.yaml": `{{ if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}{apiVersion: monitoring.coreos.com/v1, kind: ServiceMonitor, metadata: {name: controller}}{{ end }}`,
		"chart/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: controller}
data: {kube: {{ .Capabilities.KubeVersion.Version | quote }}, monitoring: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" | quote }}, environment: {{ .Values.environment | quote }}}
`,
	})
	data := TemplateData{
		Environment:       &Environment{Kubernetes: KubernetesEnvironment{Version: "v1.33.2"}, APIVersions: NewAPIVersions([]string{"v1"})},
		HostedEnvironment: &Environment{Kubernetes: KubernetesEnvironment{Version: "v1.29.7"}, APIVersions: withMonitoring},
	}
	r := mustLoad(t, fsys, data)
	g.Expect(r.Phases).To(HaveLen(2))
	crds, controller := r.Phases[0], r.Phases[1]
	g.Expect(crds.Objects).To(HaveLen(1))
	g.Expect(crds.Objects[0].GetAnnotations()).To(And(HaveKeyWithValue("kube", "v1.29.7"), HaveKeyWithValue("monitoring", "true"),
		HaveKeyWithValue("environment", "v1.33.2")), "hosted-cluster phase: the hosted cluster's capabilities; values of the management environment")
	g.Expect(controller.Objects).To(HaveLen(1), "no ServiceMonitor: the management cluster does not serve it")
	g.Expect(controller.Objects[0].Object["data"]).To(And(HaveKeyWithValue("kube", "v1.33.2"), HaveKeyWithValue("monitoring", "false"),
		HaveKeyWithValue("environment", "v1.33.2")), "management phase: the management cluster's capabilities")

	g.Expect(kindsOf(mustLoad(t, fsys, TemplateData{Environment: data.Environment}))).To(ConsistOf("CustomResourceDefinition", "ConfigMap"),
		"without the hosted environment, every part renders for the management cluster")
}
