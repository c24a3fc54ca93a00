package kubetest

import (
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ControllerMetric returns the values of the series of metric name, a counter or a gauge of
// controller-runtime's registry, whose label "controller" is controller: one per series.
func ControllerMetric(g Gomega, name, controller string) []float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var out []float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					out = append(out, m.GetCounter().GetValue()+m.GetGauge().GetValue())
				}
			}
		}
	}
	return out
}

// ControllerMetricSum returns the sum of ControllerMetric's values; 0 without a series.
func ControllerMetricSum(g Gomega, name, controller string) float64 {
	sum := 0.0
	for _, v := range ControllerMetric(g, name, controller) {
		sum += v
	}
	return sum
}
