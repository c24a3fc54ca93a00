package longwait

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// wheels exports how many items wait on the wheels of this process, per controller, through
// controller-runtime's registry (served by the manager's metrics endpoint). The work queue's
// own depth counts only the items that are ready.
var wheels = &wheelCollector{queues: map[waiter]string{}}

func init() {
	metrics.Registry.MustRegister(wheels)
}

var waitingDesc = prometheus.NewDesc("convoy_requeue_wheel_items",
	"Items whose long requeue (a settled object's next interval pass) waits on the wheel, outside the work queue.",
	[]string{"controller"}, nil)

// waiter is a queue whose wheel is exported.
type waiter interface{ Waiting() int }

// wheelCollector exports the wheels of the queues made by NewQueue and not shut down.
type wheelCollector struct {
	mu     sync.Mutex
	queues map[waiter]string // the queue's controller
}

// add exports q's wheel under controller.
func (w *wheelCollector) add(controller string, q waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queues[q] = controller
}

// remove stops exporting q's wheel.
func (w *wheelCollector) remove(q waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.queues, q)
}

// Describe implements prometheus.Collector.
func (w *wheelCollector) Describe(ch chan<- *prometheus.Desc) { ch <- waitingDesc }

// Collect implements prometheus.Collector: one gauge per controller, summing its queues (a
// process runs one per controller; tests may run several).
func (w *wheelCollector) Collect(ch chan<- prometheus.Metric) {
	w.mu.Lock()
	perController := map[string]int{}
	for q, controller := range w.queues {
		perController[controller] += q.Waiting()
	}
	w.mu.Unlock()
	for controller, n := range perController {
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(n), controller)
	}
}
