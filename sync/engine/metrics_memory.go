package engine

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// memories exports the sizes of the engines' ledgers, so that a long run (`make soak`) sees
// whether what the engine keeps between passes stays within its bounds.
var memories = &memoryCollector{byController: map[string]*memory{}}

func init() {
	metrics.Registry.MustRegister(memories)
}

var (
	ledgerEntriesDesc = prometheus.NewDesc("convoy_sync_ledger_entries",
		"Objects the sync engine's ledger holds a state of, by controller (bounded; past the bound it starts over).",
		[]string{"controller"}, nil)
	ledgerApplyingDesc = prometheus.NewDesc("convoy_sync_ledger_applying",
		"Objects with an apply in flight in the sync engine's ledger, by controller.", []string{"controller"}, nil)
)

// memoryCollector exports the ledger sizes of the last engine of each controller name.
type memoryCollector struct {
	mu           sync.Mutex
	byController map[string]*memory
}

// add makes m the memory exported under its controller's name.
func (c *memoryCollector) add(m *memory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byController[m.controller] = m
}

// Describe implements prometheus.Collector.
func (c *memoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- ledgerEntriesDesc
	ch <- ledgerApplyingDesc
}

// Collect implements prometheus.Collector.
func (c *memoryCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, m := range c.byController {
		entries, applying := m.ledger.size()
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
