package synccontroller

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/convoy-gitops/convoy/manifests"
)

// renderCaches exports the render cache counters of the Package controllers of this process,
// through controller-runtime's registry (served by the manager's metrics endpoint). Reconcile
// counts and durations per controller come from controller-runtime itself.
var renderCaches = &renderCacheCollector{}

func init() {
	metrics.Registry.MustRegister(renderCaches)
}

// renderCacheCollector exports the counters of the render caches of the Package controllers
// set up in this process.
type renderCacheCollector struct {
	mu     sync.Mutex
	caches []*manifests.Cache
}

var (
	rendersDesc = prometheus.NewDesc("convoy_render_cache_renders_total",
		"Package renders performed: one per (source, commit, path, template data) while cached.", nil, nil)
	renderHitsDesc = prometheus.NewDesc("convoy_render_cache_hits_total",
		"Package loads answered by the render cache without rendering.", nil, nil)
	renderEntriesDesc = prometheus.NewDesc("convoy_render_cache_entries",
		"Renders the render cache holds (bounded by its size in bytes).", nil, nil)
	renderBytesDesc = prometheus.NewDesc("convoy_render_cache_bytes",
		"Size of the renders the render cache holds, as it counts it against its bound.", nil, nil)
)

// add makes c count in the exported totals.
func (r *renderCacheCollector) add(c *manifests.Cache) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.caches = append(r.caches, c)
}

// Describe implements prometheus.Collector.
func (r *renderCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rendersDesc
	ch <- renderHitsDesc
	ch <- renderEntriesDesc
	ch <- renderBytesDesc
}

// Collect implements prometheus.Collector.
func (r *renderCacheCollector) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	var total manifests.CacheStats
	for _, c := range r.caches {
		st := c.Stats()
		total.Misses += st.Misses
		total.Hits += st.Hits
		total.Entries += st.Entries
		total.Bytes += st.Bytes
	}
	r.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(rendersDesc, prometheus.CounterValue, float64(total.Misses))
	ch <- prometheus.MustNewConstMetric(renderHitsDesc, prometheus.CounterValue, float64(total.Hits))
	ch <- prometheus.MustNewConstMetric(renderEntriesDesc, prometheus.GaugeValue, float64(total.Entries))
	ch <- prometheus.MustNewConstMetric(renderBytesDesc, prometheus.GaugeValue, float64(total.Bytes))
}
