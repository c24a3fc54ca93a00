package manifests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// parityCharts are the real charts vendored in testdata/charts (see each SOURCE).
var parityCharts = []string{"cert-manager", "external-dns", "metrics-server", "kube-state-metrics",
	"prometheus-node-exporter", "ingress-nginx"}

// Render parameters shared by convoy and Helm in the parity tests.
const (
	parityNamespace   = "addons"
	parityKubeVersion = "v1.33.2"
)

// TestChartRenderParity renders each vendored chart with convoy and with the Helm SDK's own
// install action (helm template: client-only dry run, CRDs included) and compares the object
// sets: same objects, same content, whatever the order. It runs in `make e2e`;
// TestChartRenderParityOfMetricsServer is its short version.
func TestChartRenderParity(t *testing.T) {
	expectRenderParity(t, parityCharts...)
}

// TestChartRenderParityOfMetricsServer is TestChartRenderParity on one chart.
func TestChartRenderParityOfMetricsServer(t *testing.T) {
	expectRenderParity(t, "metrics-server")
}

// expectRenderParity compares convoy's render of each named chart with helm template's.
func expectRenderParity(t *testing.T, charts ...string) {
	for _, name := range charts {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			dir := filepath.Join("testdata", "charts", name)
			r, err := Load(os.DirFS(dir), ".", parityData(name))
			g.Expect(err).NotTo(HaveOccurred())
			convoy := convoyObjects(r)
			helm := helmTemplate(t, dir, name)
			g.Expect(len(convoy)).To(BeNumerically(">=", 3))
			g.Expect(sortedKeys(convoy)).To(Equal(sortedKeys(helm)))
			for k, obj := range helm {
				g.Expect(convoy[k]).To(Equal(obj), "object %s", k)
			}
		})
	}
}

// parityData is the template data of a parity render.
func parityData(name string) TemplateData {
	return TemplateData{
		Package:     PackageRef{Name: name, Namespace: parityNamespace},
		Environment: &Environment{Kubernetes: KubernetesEnvironment{Version: parityKubeVersion}},
	}
}

// convoyObjects keys convoy's objects by identity, without the annotation convoy adds to CRDs
// and Helm-kept objects.
func convoyObjects(r *Rendered) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, ph := range r.Phases {
		for _, o := range ph.Objects {
			u := o.DeepCopy()
			removeAnnotations(u, convoyv1alpha1.PruneAnnotation)
			out[identity(u.Object)] = normalizeJSON(u.Object)
		}
	}
	return out
}

// helmTemplate renders the chart of a parity package as helm template does, with the values
// of its manifest, and keys the objects by identity: the release's manifest and its install
// and upgrade hooks (without Helm's hook annotations, as convoy applies them), not its tests.
func helmTemplate(t *testing.T, dir, name string) map[string]map[string]any {
	t.Helper()
	ch, err := loader.LoadDir(filepath.Join(dir, "chart"))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: common.DefaultCapabilities,
	})
	install.DryRunStrategy = action.DryRunClient
	install.Replace = true
	install.IncludeCRDs = true
	install.ReleaseName = name
	install.Namespace = parityNamespace
	install.KubeVersion, err = common.ParseKubeVersion(parityKubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := install.RunWithContext(context.Background(), ch, manifestValues(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	r := rel.(*release.Release)
	out := map[string]map[string]any{}
	addDocuments(t, out, r.Manifest)
	for _, h := range r.Hooks {
		if installHook(h) {
			addDocuments(t, out, h.Manifest)
		}
	}
	return out
}

// installHook reports whether a hook runs on install or upgrade and is not a test.
func installHook(h *release.Hook) bool {
	for _, e := range h.Events {
		switch e {
		case release.HookTest:
			return false
		case release.HookPreInstall, release.HookPostInstall, release.HookPreUpgrade, release.HookPostUpgrade:
			return true
		}
	}
	return false
}

// manifestValues reads spec.chart.values of a parity package's manifest.
func manifestValues(t *testing.T, dir string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Spec struct {
			Chart struct {
				Values map[string]any `json:"values"`
			} `json:"chart"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Spec.Chart.Values == nil {
		return map[string]any{}
	}
	return m.Spec.Chart.Values
}

// addDocuments decodes a multi-document manifest into out, without Helm's hook annotations
// and without null annotations.
func addDocuments(t *testing.T, out map[string]map[string]any, manifest string) {
	t.Helper()
	for _, doc := range strings.Split(manifest, "\n---") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("helm output: %v\n%s", err, doc)
		}
		if len(obj) == 0 {
			continue
		}
		if meta, ok := obj["metadata"].(map[string]any); ok {
			// convoy drops "annotations: null" (setting the phase annotation and removing
			// it again); to the API server null and absent are the same.
			if v, ok := meta["annotations"]; ok && v == nil {
				delete(meta, "annotations")
			}
			if ann, ok := meta["annotations"].(map[string]any); ok {
				delete(ann, helmHookAnnotation)
				delete(ann, helmHookWeightAnnotation)
				delete(ann, helmHookDeletePolicyAnnotation)
				if len(ann) == 0 {
					delete(meta, "annotations")
				}
			}
		}
		out[identity(obj)] = normalizeJSON(obj)
	}
}

// identity formats an object's apiVersion, kind, namespace and name.
func identity(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v %v/%v", obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
}

// normalizeJSON round-trips an object through JSON, so that numbers compare alike.
func normalizeJSON(obj map[string]any) map[string]any {
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	return out
}

// sortedKeys lists a map's keys in order.
func sortedKeys(m map[string]map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
