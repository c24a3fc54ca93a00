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
	// waiters are the changes each waitAll under way has yet to look at.
	waiters map[*changes]struct{}
}

// changes are the Packages that changed since a waiter last looked; all says that every
// Package may have (a re-list).
type changes struct {
	keys map[types.NamespacedName]struct{}
	all  bool
}

// watchPackages lists then watches every Package until ctx is done, re-listing when the watch
// ends.
func watchPackages(ctx context.Context, c client.WithWatch) (*packageWatch, error) {
	w := &packageWatch{pkgs: map[types.NamespacedName]*convoyv1alpha1.Package{}, changed: make(chan struct{}, 1),
		waiters: map[*changes]struct{}{}}
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
	w.replace(list.Items)
	return list.ResourceVersion, nil
}

// replace makes items the state, as a list gives it.
func (w *packageWatch) replace(items []convoyv1alpha1.Package) {
	w.mu.Lock()
	w.pkgs = map[types.NamespacedName]*convoyv1alpha1.Package{}
	for i := range items {
		p := &items[i]
		w.pkgs[client.ObjectKeyFromObject(p)] = p
	}
	for c := range w.waiters {
		c.all = true
	}
	w.mu.Unlock()
	w.notify()
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
		key := client.ObjectKeyFromObject(p)
		w.mu.Lock()
		for c := range w.waiters {
			c.keys[key] = struct{}{}
		}
		if ev.Type == watch.Deleted {
			delete(w.pkgs, key)
		} else {
			w.pkgs[key] = p
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
//
// Note: it looks again only at the Packages that changed since it last looked. Counting all
// of them at every event costs the benchmark the square of the fleet (5,000 Packages times
// their 20,000 events of a rollout: half a minute of CPU), taken from the cores the measured
// rollout runs on.
func (w *packageWatch) waitAll(ctx context.Context, namespaces map[string]bool, pred func(*convoyv1alpha1.Package) bool, timeout time.Duration) (time.Time, error) {
	deadline := time.After(timeout)
	c := &changes{keys: map[types.NamespacedName]struct{}{}, all: true}
	w.mu.Lock()
	w.waiters[c] = struct{}{}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.waiters, c)
		w.mu.Unlock()
	}()
	t := tally{namespaces: namespaces, pred: pred}
	for {
		ok, total := w.look(c, &t)
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

// tally is what waitAll knows of the Packages in namespaces: whether each satisfies pred.
type tally struct {
	namespaces map[string]bool
	pred       func(*convoyv1alpha1.Package) bool
	satisfies  map[types.NamespacedName]bool
	ok         int
}

// look brings t up to date with the changes c collected, and returns how many Packages in
// t's namespaces satisfy its predicate, and how many there are.
func (w *packageWatch) look(c *changes, t *tally) (ok, total int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.all {
		t.satisfies, t.ok = map[types.NamespacedName]bool{}, 0
		for key := range w.pkgs {
			t.update(key, w.pkgs[key])
		}
	} else {
		for key := range c.keys {
			t.update(key, w.pkgs[key])
		}
	}
	clear(c.keys)
	c.all = false
	return t.ok, len(t.satisfies)
}

// update records the state of the Package key, p, nil when it is gone.
func (t *tally) update(key types.NamespacedName, p *convoyv1alpha1.Package) {
	if !t.namespaces[key.Namespace] {
		return
	}
	if was, seen := t.satisfies[key]; seen && was {
		t.ok--
	}
	if p == nil {
		delete(t.satisfies, key)
		return
	}
	now := t.pred(p)
	t.satisfies[key] = now
	if now {
		t.ok++
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
