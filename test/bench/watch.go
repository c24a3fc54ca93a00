package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// packageWatch keeps the latest state of every Package from one watch, so that waiting for a
// thousand Packages costs the API server one watch rather than repeated lists.
type packageWatch struct {
	mu      sync.Mutex
	pkgs    map[types.NamespacedName]*convoyv1alpha1.Package
	changed chan struct{}
	// trace, when set, sees every Package event (setTrace).
	trace *rolloutTrace
}

// watchPackages lists then watches every Package until ctx is done, re-listing when the watch
// ends.
func watchPackages(ctx context.Context, c client.WithWatch) (*packageWatch, error) {
	w := &packageWatch{pkgs: map[types.NamespacedName]*convoyv1alpha1.Package{}, changed: make(chan struct{}, 1)}
	rv, err := w.relist(ctx, c)
	if err != nil {
		return nil, err
	}
	go w.run(ctx, c, rv)
	return w, nil
}

// relist replaces the state with a fresh list and returns its resourceVersion.
func (w *packageWatch) relist(ctx context.Context, c client.WithWatch) (string, error) {
	list := &convoyv1alpha1.PackageList{}
	if err := c.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing Packages: %w", err)
	}
	w.mu.Lock()
	w.pkgs = map[types.NamespacedName]*convoyv1alpha1.Package{}
	for i := range list.Items {
		p := &list.Items[i]
		w.pkgs[client.ObjectKeyFromObject(p)] = p
	}
	w.mu.Unlock()
	w.notify()
	return list.ResourceVersion, nil
}

// run applies watch events until ctx is done.
func (w *packageWatch) run(ctx context.Context, c client.WithWatch, rv string) {
	for ctx.Err() == nil {
		wi, err := c.Watch(ctx, &convoyv1alpha1.PackageList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err == nil {
			rv = w.consume(wi)
			wi.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil || rv == "" {
			time.Sleep(time.Second)
			if rv, err = w.relist(ctx, c); err != nil {
				rv = ""
			}
		}
	}
}

// consume applies events until the watch ends; it returns the last resourceVersion seen, or
// "" when the watch must be re-listed.
func (w *packageWatch) consume(wi watch.Interface) string {
	rv := ""
	for ev := range wi.ResultChan() {
		p, ok := ev.Object.(*convoyv1alpha1.Package)
		if !ok {
			return "" // an error event, e.g. a compacted resourceVersion
		}
		rv = p.ResourceVersion
		w.mu.Lock()
		if ev.Type == watch.Deleted {
			delete(w.pkgs, client.ObjectKeyFromObject(p))
		} else {
			w.pkgs[client.ObjectKeyFromObject(p)] = p
			if w.trace != nil {
				w.trace.observe(p, time.Now())
			}
		}
		w.mu.Unlock()
		w.notify()
	}
	return rv
}

func (w *packageWatch) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// count returns how many Packages in namespaces satisfy pred, and how many there are.
func (w *packageWatch) count(namespaces map[string]bool, pred func(*convoyv1alpha1.Package) bool) (ok, total int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, p := range w.pkgs {
		if !namespaces[key.Namespace] {
			continue
		}
		total++
		if pred(p) {
			ok++
		}
	}
	return ok, total
}

// waitAll waits until every namespace holds at least one Package and every Package there
// satisfies pred; it returns when that was first seen.
func (w *packageWatch) waitAll(ctx context.Context, namespaces map[string]bool, pred func(*convoyv1alpha1.Package) bool, timeout time.Duration) (time.Time, error) {
	deadline := time.After(timeout)
	for {
		ok, total := w.count(namespaces, pred)
		if total >= len(namespaces) && ok == total {
			return time.Now(), nil
		}
		select {
		case <-w.changed:
		case <-time.After(time.Second):
		case <-deadline:
			return time.Time{}, fmt.Errorf("after %s, %d of %d Packages satisfy the condition (%d namespaces)", timeout, ok, total, len(namespaces))
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// progressedAt returns a predicate: the Package applied commit, is Available and not
// Progressing (the rollout controller's definition of progressed).
func progressedAt(commit string) func(*convoyv1alpha1.Package) bool {
	return func(p *convoyv1alpha1.Package) bool {
		if p.Status.Revision != commit || (p.Spec.Revision != "" && p.Spec.Revision != commit) {
			return false
		}
		return apimeta.IsStatusConditionTrue(p.Status.Conditions, convoyv1alpha1.AvailableCondition) &&
			apimeta.IsStatusConditionFalse(p.Status.Conditions, convoyv1alpha1.ProgressingCondition)
	}
}

// progressed reports whether the Package ns/name satisfies pred.
func (w *packageWatch) progressed(ns, name string, pred func(*convoyv1alpha1.Package) bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pkgs[types.NamespacedName{Namespace: ns, Name: name}]
	return ok && pred(p)
}
