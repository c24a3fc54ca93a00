package statusmetrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// seriesMemo keeps the condition series of each object from one scrape to the next, by UID,
// with the resourceVersion they were made at: an object whose resourceVersion has not moved has
// the same conditions, and its series are sent again as they were. Making them anew at every
// scrape was most of what a scrape allocated, about 6 MB at 10,000 Packages. Entries of objects
// a scrape did not see are dropped at its end: the memo holds at most the objects of the last
// scrape. It is not safe for concurrent use; Collect serializes the scrapes.
type seriesMemo struct {
	entries map[types.UID]*memoEntry
	scrape  uint64
}

// memoEntry is the series of one object at one resourceVersion, and the last scrape that saw it.
type memoEntry struct {
	resourceVersion string
	series          []prometheus.Metric
	seen            uint64
}

// begin starts a scrape.
func (m *seriesMemo) begin() {
	if m.entries == nil {
		m.entries = map[types.UID]*memoEntry{}
	}
	m.scrape++
}

// seriesOf returns the series of obj: those the memo holds at its resourceVersion, else the
// ones newSeries makes, remembered. An object without a UID or a resourceVersion is not
// remembered.
func (m *seriesMemo) seriesOf(obj client.Object, newSeries func() []prometheus.Metric) []prometheus.Metric {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	if uid == "" || rv == "" {
		return newSeries()
	}
	e := m.entries[uid]
	if e == nil || e.resourceVersion != rv {
		e = &memoEntry{resourceVersion: rv, series: newSeries()}
		m.entries[uid] = e
	}
	e.seen = m.scrape
	return e.series
}

// end drops the entries of the objects the scrape did not see.
func (m *seriesMemo) end() {
	for uid, e := range m.entries {
		if e.seen != m.scrape {
			delete(m.entries, uid)
		}
	}
}
