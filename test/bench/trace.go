package bench

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// rolloutTrace records, from the Package watch, when each Package was first seen pinned to a
// commit (its spec updated by the HostedClusterPackage controller) and first seen progressed at
// it (applied, Available, status written): the timeline of one rollout as the API shows it.
type rolloutTrace struct {
	commit string
	start  time.Time
	mu     sync.Mutex
	pinned map[types.NamespacedName]time.Duration
	done   map[types.NamespacedName]time.Duration
}

// newRolloutTrace starts a trace of the rollout of commit, timed from start.
func newRolloutTrace(commit string, start time.Time) *rolloutTrace {
	return &rolloutTrace{commit: commit, start: start, pinned: map[types.NamespacedName]time.Duration{},
		done: map[types.NamespacedName]time.Duration{}}
}

// observe notes the state of p seen now.
func (t *rolloutTrace) observe(p *convoyv1alpha1.Package, now time.Time) {
	key := client.ObjectKeyFromObject(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.pinned[key]; !ok && p.Spec.Revision == t.commit {
		t.pinned[key] = now.Sub(t.start)
	}
	if _, ok := t.done[key]; !ok && progressedAt(t.commit)(p) {
		t.done[key] = now.Sub(t.start)
	}
}

// summary returns "first / median / last" of the pinned and progressed times, in seconds.
func (t *rolloutTrace) summary() (pinned, progressed string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return spread(t.pinned), spread(t.done)
}

// spread formats the first, median and last of ds.
func spread(m map[types.NamespacedName]time.Duration) string {
	if len(m) == 0 {
		return "none"
	}
	ds := make([]time.Duration, 0, len(m))
	for _, d := range m {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return fmt.Sprintf("%.2f / %.2f / %.2f s (%d)", ds[0].Seconds(), ds[len(ds)/2].Seconds(), ds[len(ds)-1].Seconds(), len(ds))
}

// setTrace makes the watch report every Package event to t (nil stops it).
func (w *packageWatch) setTrace(t *rolloutTrace) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.trace = t
}

// pinnedAt returns the q-quantile (0 the first, 1 the last) of the pinned times; zero when
// none was seen.
func (t *rolloutTrace) pinnedAt(q float64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return quantile(t.pinned, q)
}

// doneAt returns the q-quantile of the progressed times; zero when none was seen.
func (t *rolloutTrace) doneAt(q float64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return quantile(t.done, q)
}

// quantile returns the q-quantile of m's values (nearest rank), zero for an empty m.
func quantile(m map[types.NamespacedName]time.Duration, q float64) time.Duration {
	if len(m) == 0 {
		return 0
	}
	ds := make([]time.Duration, 0, len(m))
	for _, d := range m {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	i := min(len(ds)-1, max(0, int(q*float64(len(ds)-1)+0.5)))
	return ds[i]
}
