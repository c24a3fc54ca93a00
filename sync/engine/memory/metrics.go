package memory

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics of the memory, registered with controller-runtime's registry (served by the
// manager's metrics endpoint) beside the engine's.
var (
	quietObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_sync_quiet_objects_total",
		Help: "Management objects a pass did not read: the watch saw no change since they were judged available, by controller.",
	}, []string{"controller"})

	settledRepeats = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_sync_settled_repeats_total",
		Help: "Passes that repeated their owner's last settled pass without looking at an object: the watch delivered nothing about the owner's objects since, by controller.",
	}, []string{"controller"})
)

// stores exports the sizes of the memories' ledgers, so that a long run (`make soak`) sees
// whether what the engine keeps between passes stays within its bounds.
var stores = &storeCollector{byController: map[string]*Store{}}

func init() {
	metrics.Registry.MustRegister(quietObjects, settledRepeats, stores)
}

var (
	ledgerEntriesDesc = prometheus.NewDesc("convoy_sync_ledger_entries",
		"Objects the sync engine's ledger holds a state of, by controller (bounded; past the bound it starts over).",
		[]string{"controller"}, nil)
	ledgerApplyingDesc = prometheus.NewDesc("convoy_sync_ledger_applying",
		"Objects with an apply in flight in the sync engine's ledger, by controller.", []string{"controller"}, nil)
)

// storeCollector exports the ledger sizes of the last memory of each controller name.
type storeCollector struct {
	mu           sync.Mutex
	byController map[string]*Store
}

// add makes s the memory exported under its controller's name.
func (c *storeCollector) add(s *Store) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byController[s.controller] = s
}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- ledgerEntriesDesc
	ch <- ledgerApplyingDesc
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, s := range c.byController {
		entries, applying := s.ledger.size()
		ch <- prometheus.MustNewConstMetric(ledgerEntriesDesc, prometheus.GaugeValue, float64(entries), name)
		ch <- prometheus.MustNewConstMetric(ledgerApplyingDesc, prometheus.GaugeValue, float64(applying), name)
	}
}

// size returns the number of entries and of objects with applies in flight.
func (l *ledger) size() (entries, applying int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries), len(l.applying)
}
