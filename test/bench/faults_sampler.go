package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// sampler counts, every 50 ms, the Packages that are unavailable or updating, and notes when
// every Package first progressed at the new commit.
type sampler struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	max     int
	samples int
	allDone time.Time
}

// startSampler samples the Packages of namespaces until stop.
func startSampler(ctx context.Context, e *env, namespaces map[string]bool, tgt *target) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			commit := tgt.get()
			busy, _ := e.watch.count(namespaces, unavailableOrUpdating(commit))
			progressed, total := e.watch.count(namespaces, progressedAt(commit))
			s.mu.Lock()
			s.max, s.samples = max(s.max, busy), s.samples+1
			switch done := total >= len(namespaces) && progressed == total; {
			case done && s.allDone.IsZero():
				s.allDone = time.Now()
			case !done:
				s.allDone = time.Time{} // not settled yet: a controller may still act on a stale view
			}
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the highest count, the number of samples and when every
// Package first progressed (zero if never).
func (s *sampler) stop() (int, int, time.Time) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max, s.samples, s.allDone
}

// unavailableOrUpdating is the budget's definition: a Package not Available at its
// generation, or updated to commit and not progressed at it yet.
func unavailableOrUpdating(commit string) func(*convoyv1alpha1.Package) bool {
	progressed := progressedAt(commit)
	return func(p *convoyv1alpha1.Package) bool {
		avail := apimeta.FindStatusCondition(p.Status.Conditions, convoyv1alpha1.AvailableCondition)
		if avail == nil || avail.Status != metav1.ConditionTrue || avail.ObservedGeneration != p.Generation {
			return true
		}
		return p.Spec.Revision == commit && !progressed(p)
	}
}

// countProgressed returns the number of Packages progressed at commit.
func countProgressed(e *env, commit string) int {
	ok, _ := e.watch.count(e.namespaces, progressedAt(commit))
	return ok
}

// describeWrong describes the first Package not progressed at commit.
func describeWrong(e *env, commit string) string {
	e.watch.mu.Lock()
	defer e.watch.mu.Unlock()
	for key, p := range e.watch.pkgs {
		if e.namespaces[key.Namespace] && !progressedAt(commit)(p) {
			return fmt.Sprintf("; e.g. %s: spec.revision %.8s, status.revision %.8s, want %.8s", key, p.Spec.Revision, p.Status.Revision, commit)
		}
	}
	return ""
}

// countLost returns how many objects of the management package are missing in the HCP
// namespaces.
func countLost(ctx context.Context, e *env) (int, error) {
	var mu sync.Mutex
	lost := 0
	err := e.forEachNamespace(ctx, func(ns string) error {
		for _, o := range managementObjects(ns, "", e.rev) {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(o.GroupVersionKind())
			err := e.admin.Get(ctx, client.ObjectKeyFromObject(o), m)
			if client.IgnoreNotFound(err) != nil {
				return err
			}
			if err != nil {
				mu.Lock()
				lost++
				mu.Unlock()
			}
		}
		return nil
	})
	return lost, err
}
