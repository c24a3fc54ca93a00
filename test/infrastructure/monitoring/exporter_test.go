package monitoring_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPrometheusReadsEachHostedClustersErrorRatioAsItChanges(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	const name = "health-query"
	east, west := clusters[0], clusters[1]
	setErrorRatio(g, east, name, "0.02")
	startExporter(t, name)

	g.Eventually(errorRatios).Should(Equal(map[string]float64{"east": 0.02}),
		"west has no ConfigMap, so no series")

	setErrorRatio(g, east, name, "0.5")
	setErrorRatio(g, west, name, "0.1")
	g.Eventually(errorRatios).Should(Equal(map[string]float64{"east": 0.5, "west": 0.1}))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: addonNamespace, Name: name}}
	g.Expect(east.Client.Delete(context.Background(), cm)).To(Succeed())
	setErrorRatio(g, west, name, "not a number")
	g.Eventually(errorRatios).Should(BeEmpty(), "a deleted ConfigMap or a bad value ends the series at once")
}
