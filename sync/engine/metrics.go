package engine

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics of the engine, registered with controller-runtime's registry (served by the
// manager's metrics endpoint).
var (
	appliedObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_sync_objects_total",
		Help: "Objects handled by the sync engine, by controller, cluster (management or hosted) and action (created, configured, unchanged, deleted).",
	}, []string{"controller", "cluster", "action"})

	probeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_sync_probe_failures_total",
		Help: "Phases found not available by their probes, by controller and cluster.",
	}, []string{"controller", "cluster"})
)

func init() {
	metrics.Registry.MustRegister(appliedObjects, probeFailures)
}
