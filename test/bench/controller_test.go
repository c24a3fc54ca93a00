package bench

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestCounterSumAddsEveryResultOfOneController reads the Package controller's reconciles the
// way controller-runtime exposes them: one series per result, beside other controllers'.
func TestCounterSumAddsEveryResultOfOneController(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	reconciles := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "controller_runtime_reconcile_total"},
		[]string{"result", "controller"})
	reg.MustRegister(reconciles)
	reconciles.WithLabelValues("success", "package").Add(3)
	reconciles.WithLabelValues("requeue_after", "package").Add(4)
	reconciles.WithLabelValues("success", "hostedclusterpackage").Add(100)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	c := &Controller{metricsAddr: strings.TrimPrefix(srv.URL, "http://")}
	got, err := c.CounterSum(context.Background(), packageReconcilesMetric)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(7.0))
}
