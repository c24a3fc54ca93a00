package monitoring_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convoy-gitops/convoy/test/infrastructure/monitoring"
)

func TestPrometheusReadsEachHostedClustersErrorRatioAsItChanges(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	deleteErrorRatiosAtCleanup(t)
	east, west := clusters[0], clusters[1]

	setErrorRatio(g, east, "0.02")
	g.Eventually(errorRatios).Should(Equal(map[string]float64{"east": 0.02}),
		"west has no ConfigMap, so no series")

	setErrorRatio(g, east, "0.5")
	setErrorRatio(g, west, "0.1")
	g.Eventually(errorRatios).Should(Equal(map[string]float64{"east": 0.5, "west": 0.1}))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: addonNamespace, Name: healthConfigMap}}
	g.Expect(east.Client.Delete(context.Background(), cm)).To(Succeed())
	setErrorRatio(g, west, "not a number")
	g.Eventually(errorRatios).Should(BeEmpty(), "a deleted ConfigMap or a bad value ends the series at once")
}

func TestSetTargetsReplacesWhatPrometheusScrapes(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	deleteErrorRatiosAtCleanup(t)
	setErrorRatio(g, clusters[0], "0.3")
	second, err := monitoring.StartAddonExporter(monitoring.ExporterOptions{ConfigMapNamespace: addonNamespace},
		monitoring.HostedClusters(clusters[0])...)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(second.Stop()).To(Succeed()) }()

	g.Expect(servers.SetTargets(ctx, exporter.Address, second.Address)).To(Succeed())
	g.Eventually(instances).Should(ConsistOf(exporter.Address, second.Address))

	g.Expect(servers.SetTargets(ctx, exporter.Address)).To(Succeed())
	g.Eventually(instances).Should(ConsistOf(exporter.Address), "the removed target's series end")
}

// instances lists the targets whose series Prometheus has now.
func instances(g Gomega) []string {
	samples, err := servers.Query(context.Background(), monitoring.AddonErrorRatioMetric)
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, s := range samples {
		out = append(out, s.Metric["instance"])
	}
	return out
}
