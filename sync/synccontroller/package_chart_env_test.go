package synccontroller

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/sync/hosted"
)

// mapOpener opens the same tree at every commit.
type mapOpener fstest.MapFS

// Open implements Opener.
func (m mapOpener) Open(context.Context, sources.Key, string) (fs.FS, error) {
	return fstest.MapFS(m), nil
}

// versionChart returns, under dir, a chart package with the phases and chart fields given,
// whose template writes .Capabilities' Kubernetes version and .environment's into a ConfigMap.
func versionChart(dir, phases, chart string) fstest.MapFS {
	return fstest.MapFS{
		dir + "/manifest.yaml": {Data: []byte(`apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: versions}
spec:
` + phases + `
  chart: {path: chart, namespace: kube-system, valuesFiles: [env-values.yaml.gotmpl]` + chart + `}
`)},
		dir + "/env-values.yaml.gotmpl": {Data: []byte("environmentVersion: {{ .environment.kubernetes.version | quote }}\n")},
		dir + "/chart/Chart.yaml":       {Data: []byte("apiVersion: v2\nname: versions\nversion: 0.1.0\nkubeVersion: \">=1.20.0-0\"\n")},
		dir + "/chart/templates/cm.yaml": {Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: versions}
data:
  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}
  environmentVersion: {{ .Values.environmentVersion | quote }}
`)},
	}
}

// TestChartInTheHostedClusterRendersForItsEnvironment: a chart whose phases all land in the
// hosted cluster (class hosted-cluster, or hosted-cluster phases declared) sees the hosted
// cluster's Kubernetes version in .Capabilities and .environment; a chart with a management
// phase sees the management cluster's.
func TestChartInTheHostedClusterRendersForItsEnvironment(t *testing.T) {
	files := fstest.MapFS{}
	for dir, spec := range map[string][2]string{
		"class":  {"", ", class: hosted-cluster"},
		"phases": {"  phases: [{name: crds, class: hosted-cluster}, {name: deploy, class: hosted-cluster}]", ""},
		"split":  {"  phases: [{name: crds, class: hosted-cluster}, {name: deploy}]", ""},
	} {
		for p, f := range versionChart(dir, spec[0], spec[1]) {
			files[p] = f
		}
	}
	const ns = "clusters-a"
	hostedEnvs := &HostedEnvironments{}
	hostedEnvs.store(ns, &environmentRead{read: time.Now(),
		env: &manifests.Environment{Kubernetes: manifests.KubernetesEnvironment{Version: "v1.29.7"}}})
	r := &PackageReconciler{Store: mapOpener(files),
		Renders:            manifests.NewCacheWithOptions(manifests.CacheOptions{Budget: testRenderBudget}),
		Environment:        &ClusterEnvironment{Discovery: fixedVersion("v1.33.2"), Reader: fake.NewClientBuilder().Build(), Mapper: apimeta.NewDefaultRESTMapper(nil)},
		HostedEnvironments: hostedEnvs}
	for dir, want := range map[string]string{"class": "v1.29.7", "phases": "v1.29.7", "split": "v1.33.2"} {
		t.Run(dir, func(t *testing.T) {
			g := NewWithT(t)
			obj := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "versions"}}
			obj.Spec.Path = dir
			obj.Spec.SourceRef.Name = "src"
			s := &scope{obj: obj, status: &convoyv1alpha1.SyncStatus{}, desiredID: "c1",
				hostedCluster: &hosted.Cluster{Namespace: "clusters", Name: "a"}}
			g.Expect(r.reconcileRender(context.Background(), s)).To(Succeed())
			var data map[string]any
			for _, ph := range s.revision.Phases {
				for _, o := range ph.Objects {
					if o.GetKind() == "ConfigMap" {
						data = o.Object["data"].(map[string]any)
					}
				}
			}
			g.Expect(data).To(HaveKeyWithValue("kubeVersion", want), ".Capabilities.KubeVersion")
			g.Expect(data).To(HaveKeyWithValue("environmentVersion", want), ".environment of the values files")
		})
	}
}

// TestPulledChartsAreBoundedAsGitFiles: the controller fetches a pulled chart of at most the
// size of a file its Git store reads (--git-max-file-size).
func TestPulledChartsAreBoundedAsGitFiles(t *testing.T) {
	g := NewWithT(t)
	store, err := sources.NewStore(t.TempDir(), sources.StoreOptions{Limits: sources.Limits{MaxFileSize: 12345}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(maxFileSize(store)).To(Equal(int64(12345)))
	g.Expect(maxFileSize(mapOpener{})).To(BeZero(), "the fetcher's default: the Git store's default")
}
