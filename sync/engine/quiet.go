package engine

import (
	"context"
	"crypto/sha256"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/convoy-gitops/convoy/manifests/probe"
)

// ResourceVersions is a watch of the objects the engine applied to the management cluster.
type ResourceVersions interface {
	// ResourceVersion tells, without a request, the resourceVersion the watch last saw of an
	// object. ok is false when it cannot tell: the kind is not watched, its watch has not
	// synced, or the object is not in it.
	ResourceVersion(gvk schema.GroupVersionKind, namespace, name string) (rv string, ok bool)
	// Synced reports whether the objects of kind gvk are watched and the watch has synced: from
	// then on every change of one of them is an event.
	Synced(gvk schema.GroupVersionKind) bool
}

// A quiet object is one a pass need not read: the ledger says this owner applied it as desired
// now and judged it available under the revision's probes at a resourceVersion, and the watch
// of the management cluster still sees that resourceVersion. Nothing changed it since (any
// write, status included, gives a new resourceVersion), so reading it again would only repeat
// the same verdict. A change the watch has not delivered yet is seen by the pass its event
// triggers. Hosted-cluster objects have no watch: a list tells where they are (hosted_quiet.go).

// rulesDigest identifies the probe rules an object is judged under.
func rulesDigest(rules []probe.Rule) [sha256.Size]byte { return probe.Digest(rules) }

// watched reports whether every object of states is of a kind the watch of the management
// cluster has synced: a change of any of them will then make an event.
func (e *Engine) watched(c *cluster, states []desiredState) bool {
	if len(states) == 0 {
		return true
	}
	if e.opts.Versions == nil || c.hosted() {
		return false
	}
	for _, s := range states {
		// The watch selects the owner's shard: an object whose manifest names another is not in it.
		if s.shard != c.target.Shard || !e.opts.Versions.Synced(s.obj.GroupVersionKind()) {
			return false
		}
	}
	return true
}

// markQuiet marks the quiet objects of a stage, and records them as unchanged and available
// without a read.
func (e *Engine) markQuiet(ctx context.Context, c *cluster, states []desiredState, out *phaseOutcome) {
	if out.rules == ([sha256.Size]byte{}) {
		return
	}
	var listed map[objectKey]seenAt
	switch {
	case c.hosted():
		if listed = e.listHosted(ctx, c, states, out.rules); len(listed) == 0 {
			return
		}
	case e.opts.Versions == nil:
		return
	}
	quiet := 0
	for i := range states {
		s := &states[i]
		seen, ok := e.lastSeen(c, s, listed)
		if s.quiet = ok && e.applied.availableAt(c, *s, seen, out.rules); s.quiet {
			out.observer.markQuiet(s.obj)
			quiet++
		}
	}
	if quiet == 0 {
		return
	}
	out.changes.Unchanged += quiet
	appliedObjects.WithLabelValues(e.opts.Controller, c.name, ssa.UnchangedAction.String()).Add(float64(quiet))
	quietObjects.WithLabelValues(e.opts.Controller).Add(float64(quiet))
}

// lastSeen tells where the object of s was last seen without reading it: in listed for a
// hosted cluster, by the watch of the management cluster otherwise.
func (e *Engine) lastSeen(c *cluster, s *desiredState, listed map[objectKey]seenAt) (seenAt, bool) {
	if c.hosted() {
		seen, ok := listed[keyOf(s.obj)]
		return seen, ok
	}
	rv, ok := e.opts.Versions.ResourceVersion(s.obj.GroupVersionKind(), s.namespace, s.obj.GetName())
	return seenAt{resourceVersion: rv}, ok
}

// loud returns the states that are not quiet.
func loud(states []desiredState) []desiredState {
	out := make([]desiredState, 0, len(states))
	for _, s := range states {
		if !s.quiet {
			out = append(out, s)
		}
	}
	return out
}

// recordVerdicts notes, for every object of out seen live, that it was judged available under
// rules at its resourceVersion, and adds to res those the watch of the management cluster
// vouches for (settled.go). Only called when the whole phase is available.
//   - A quiet object is vouched for: the watch holds the state it was judged at.
//   - An object judged at a state the ledger holds for this owner (applied or read by this
//     pass) and labelled for it is vouched for once the watch holds that state too: it is
//     added to res.unconfirmed, which the first repeat checks.
//
// Only a watch vouches: nothing in a hosted cluster is, however quiet a list found it.
func (e *Engine) recordVerdicts(c *cluster, out *phaseOutcome, res *Result) {
	if (e.opts.Versions == nil && !c.hosted()) || out.rules == ([sha256.Size]byte{}) {
		return
	}
	for _, obj := range out.objects {
		if out.observer.isQuiet(obj) {
			if !c.hosted() {
				res.vouched++
			}
			continue
		}
		live := out.observer.live(obj)
		if live == nil || !e.applied.judgedAvailable(c, live, out.rules) || c.hosted() || !c.owns(live) {
			continue
		}
		res.vouched++
		res.unconfirmed = append(res.unconfirmed, watchedState{gvk: obj.GroupVersionKind(),
			namespace: live.GetNamespace(), name: live.GetName(), resourceVersion: live.GetResourceVersion()})
	}
}

// markQuiet notes that obj was not read: it is as it was when judged available.
func (o *observer) markQuiet(obj *unstructured.Unstructured) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.quiet[keyOf(obj)] = true
}

// isQuiet reports whether obj was skipped as quiet.
func (o *observer) isQuiet(obj *unstructured.Unstructured) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.quiet[keyOf(obj)]
}
