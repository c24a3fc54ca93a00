package monitoring_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/convoy-gitops/convoy/test/infrastructure/monitoring"
)

func TestExporterServesOneSeriesPerClusterWithANumber(t *testing.T) {
	g := NewWithT(t)
	health := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "addon", Name: "addon-health"}, Data: data}
	}
	unreachable := fake.NewClientBuilder().WithObjects(health(map[string]string{"errorRatio": "1"})).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey,
			client.Object, ...client.GetOption) error {
			return errors.New("connection refused")
		}}).Build()
	exp, err := monitoring.StartAddonExporter(monitoring.ExporterOptions{ConfigMapNamespace: "addon"},
		monitoring.ExportedCluster{Name: "a", Namespace: "clusters-a",
			Client: fake.NewClientBuilder().WithObjects(health(map[string]string{"errorRatio": " 0.25\n"})).Build()},
		monitoring.ExportedCluster{Name: "no-key", Namespace: "clusters-no-key",
			Client: fake.NewClientBuilder().WithObjects(health(map[string]string{"other": "1"})).Build()},
		monitoring.ExportedCluster{Name: "no-number", Namespace: "clusters-no-number",
			Client: fake.NewClientBuilder().WithObjects(health(map[string]string{"errorRatio": "high"})).Build()},
		monitoring.ExportedCluster{Name: "no-configmap", Namespace: "clusters-no-configmap",
			Client: fake.NewClientBuilder().Build()},
		monitoring.ExportedCluster{Name: "unreachable", Namespace: "clusters-unreachable", Client: unreachable},
		monitoring.ExportedCluster{Name: "no-client", Namespace: "clusters-no-client"},
	)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(exp.Stop()).To(Succeed()) }()

	g.Expect(seriesOf(g, exp)).To(ConsistOf(
		`convoy_test_addon_error_ratio{hosted_cluster="a",namespace="clusters-a"} 0.25`))

	exp.SetClusters()
	g.Expect(seriesOf(g, exp)).To(BeEmpty())
}

func TestExporterNeedsTheConfigMapsNamespace(t *testing.T) {
	g := NewWithT(t)
	_, err := monitoring.StartAddonExporter(monitoring.ExporterOptions{})
	g.Expect(err).To(MatchError(ContainSubstring("namespace")))
}

// seriesOf scrapes exp and returns the lines of its gauge's samples.
func seriesOf(g Gomega, exp *monitoring.AddonExporter) []string {
	resp, err := http.Get("http://" + exp.Address + "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, monitoring.AddonErrorRatioMetric+"{") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}
