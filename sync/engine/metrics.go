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

	quietObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_sync_quiet_objects_total",
		Help: "Management objects a pass did not read: the watch saw no change since they were judged available, by controller.",
	}, []string{"controller"})

	settledRepeats = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_sync_settled_repeats_total",
		Help: "Passes that repeated their owner's last settled pass without looking at an object: the watch delivered nothing about the owner's objects since, by controller.",
	}, []string{"controller"})
)

func init() {
	metrics.Registry.MustRegister(appliedObjects, probeFailures, quietObjects, settledRepeats)
}
