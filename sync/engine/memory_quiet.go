package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"sync"

	"github.com/fluxcd/pkg/ssa"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
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
// triggers. Hosted-cluster objects have no watch: a list tells where they are (below).

// watched reports whether every object of states is of a kind the watch of the management
// cluster has synced: a change of any of them will then make an event.
func (m *memory) watched(c *cluster, states []desiredState) bool {
	if len(states) == 0 {
		return true
	}
	if m.versions == nil || c.hosted() {
		return false
	}
	for _, s := range states {
		// The watch selects the owner's shard: an object whose manifest names another is not in it.
		if s.shard != c.target.Shard || !m.versions.Synced(s.obj.GroupVersionKind()) {
			return false
		}
	}
	return true
}

// askStage is what a stage asks the memory, once, after place and before prepare: it marks
// the quiet objects of states (markQuiet) and, of the others, those this owner applied before
// in another state, which may be applied without a read (markDirect). The marks are all the
// stage needs from the memory: prepare keeps every object where place put it (it places one
// again only to refuse it), so the keys asked under are those of the prepared objects.
func (m *memory) askStage(ctx context.Context, c *cluster, states []desiredState, out *phaseOutcome) {
	m.markQuiet(ctx, c, states, out)
	m.ledger.markDirect(c, states)
}

// markDirect gives each state that is not quiet and that this owner applied before in another
// state the UID the object had then: it may be applied directly, with that UID as a
// precondition (splitDirect).
func (l *ledger) markDirect(c *cluster, states []desiredState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	owner, cl := c.ownerID(), ledgerCluster(c)
	for i := range states {
		s := &states[i]
		if s.quiet {
			continue
		}
		e, found := l.entries[ledgerKey{cluster: cl, object: keyOf(s.obj)}]
		if s.ok && found && e.owner == owner && e.digest != s.digest && e.uid != "" {
			s.uid = e.uid
		}
	}
}

// markQuiet marks the quiet objects of a stage, and records them as unchanged and available
// without a read; out is unwatched from then on unless the watch tells of every object of
// the stage (watched).
func (m *memory) markQuiet(ctx context.Context, c *cluster, states []desiredState, out *phaseOutcome) {
	out.unwatched = out.unwatched || !m.watched(c, states)
	if out.rules == ([sha256.Size]byte{}) {
		return
	}
	var listed map[objectKey]seenAt
	switch {
	case c.hosted():
		if listed = m.listHosted(ctx, c, states, out.rules); len(listed) == 0 {
			return
		}
	case m.versions == nil:
		return
	}
	quiet := 0
	for i := range states {
		s := &states[i]
		seen, ok := m.lastSeen(c, s, listed)
		if s.quiet = ok && m.ledger.availableAt(c, *s, seen, out.rules); s.quiet {
			out.observer.markQuiet(s.obj)
			quiet++
		}
	}
	if quiet == 0 {
		return
	}
	out.changes.Unchanged += quiet
	appliedObjects.WithLabelValues(m.controller, c.name, ssa.UnchangedAction.String()).Add(float64(quiet))
	quietObjects.WithLabelValues(m.controller).Add(float64(quiet))
}

// lastSeen tells where the object of s was last seen without reading it: in listed for a
// hosted cluster, by the watch of the management cluster otherwise.
func (m *memory) lastSeen(c *cluster, s *desiredState, listed map[objectKey]seenAt) (seenAt, bool) {
	if c.hosted() {
		seen, ok := listed[keyOf(s.obj)]
		return seen, ok
	}
	rv, ok := m.versions.ResourceVersion(s.obj.GroupVersionKind(), s.namespace, s.obj.GetName())
	return seenAt{resourceVersion: rv}, ok
}

// recordVerdicts notes, for every object of out seen live, that it was judged available under
// rules at its resourceVersion, and adds to res those the watch of the management cluster
// vouches for (memory_settled.go). Only called when the whole phase is available.
//   - A quiet object is vouched for: the watch holds the state it was judged at.
//   - An object judged at a state the ledger holds for this owner (applied or read by this
//     pass) and labelled for it is vouched for once the watch holds that state too: it is
//     added to res.unconfirmed, which the first repeat checks.
//
// Only a watch vouches: nothing in a hosted cluster is, however quiet a list found it.
func (m *memory) recordVerdicts(c *cluster, out *phaseOutcome, res *Result) {
	if (m.versions == nil && !c.hosted()) || out.rules == ([sha256.Size]byte{}) {
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
		if live == nil || !m.ledger.judgedAvailable(c, live, out.rules) || c.hosted() || !c.owns(live) {
			continue
		}
		res.vouched++
		res.unconfirmed = append(res.unconfirmed, watchedState{gvk: obj.GroupVersionKind(),
			namespace: live.GetNamespace(), name: live.GetName(), resourceVersion: live.GetResourceVersion()})
	}
}

// judgedAvailable notes that live, as it is, was judged available under rules, if the ledger
// holds it for this owner at its resourceVersion and UID; it reports whether it does.
func (l *ledger) judgedAvailable(c *cluster, live *unstructured.Unstructured, rules [sha256.Size]byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := ledgerKey{cluster: ledgerCluster(c), object: keyOf(live)}
	e, found := l.entries[key]
	if !found || !e.isState(c.ownerID(), live.GetResourceVersion(), live.GetUID()) {
		return false
	}
	e.availableUnder = rules
	l.entries[key] = e
	return true
}

// No watch sees the objects of a hosted cluster: a thousand hosted clusters must not mean a
// thousand watch caches (sync/hosted). A pass would then read each of them, every
// health-check interval, for as long as its owner lives. Instead, before reading, a pass lists
// the owner's objects of each kind and namespace, metadata only, selected by the ownership
// labels: one request per kind and namespace, whatever the number of objects. An object listed
// at the resourceVersion and UID at which this owner judged it available under the same
// probes is quiet, as a management object the watch saw unchanged is: nothing changed it
// since. The UID tells an object apart from one recreated in another cluster that answers for
// the same namespace, whose resourceVersions start over. The rest (changed, replaced, absent,
// past the list's bound) are read one by one, as before. A list that fails marks nothing quiet:
// the reads that follow meet and classify the fault. A list returns at most as many objects as
// the owner has in its scope, so that objects a tenant labels as ours cost no more than reading
// ours would. Quiet or not, a hosted object is looked at again at the next pass: no pass with
// hosted objects is ever repeated as settled.

// listScope is what one list covers: a kind in a namespace ("" for a cluster-scoped kind).
type listScope struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// listHosted lists, metadata only, the owner's objects of the kinds and namespaces of the
// states that were judged available under rules, and returns where each of those states'
// objects was seen; nil when there is none or a list failed. A scope of one such object is not
// listed: a read costs the same request.
func (m *memory) listHosted(ctx context.Context, c *cluster, states []desiredState, rules [sha256.Size]byte) map[objectKey]seenAt {
	wanted := map[listScope]map[objectKey]bool{}
	for i := range states {
		s := &states[i]
		if !m.ledger.judged(c, *s, rules) {
			continue
		}
		scope := listScope{gvk: s.obj.GroupVersionKind(), namespace: s.namespace}
		if wanted[scope] == nil {
			wanted[scope] = map[objectKey]bool{}
		}
		wanted[scope][objectKey{gk: scope.gvk.GroupKind(), namespace: s.obj.GetNamespace(), name: s.obj.GetName()}] = true
	}
	maps.DeleteFunc(wanted, func(_ listScope, keys map[objectKey]bool) bool { return len(keys) < 2 })
	if len(wanted) == 0 {
		return nil
	}
	seen := &listed{at: map[objectKey]seenAt{}}
	lists, listCtx := errgroup.WithContext(ctx)
	lists.SetLimit(max(m.concurrency, 1))
	selector := c.ownerSelector()
	for scope, keys := range wanted {
		lists.Go(func() error { return seen.list(listCtx, c.client, scope, selector, keys) })
	}
	if err := lists.Wait(); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Listing hosted objects failed: reading them one by one", "error", err.Error())
		return nil
	}
	return seen.at
}

// listed collects where the lists of a pass saw the objects they looked for.
type listed struct {
	mu sync.Mutex
	at map[objectKey]seenAt
}

// list lists the objects of scope that selector selects, metadata only, at most as many as
// wanted has: what it reads is bounded by the owner's own objects, as reading them one by one
// would be, whatever else carries the ownership labels (objects beyond the limit are then
// read). It notes where those of wanted were seen.
func (l *listed) list(ctx context.Context, cl client.Client, scope listScope, selector labels.Selector, wanted map[objectKey]bool) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(scope.gvk.GroupVersion().WithKind(scope.gvk.Kind + "List"))
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: selector}, client.Limit(int64(len(wanted)))}
	if scope.namespace != "" {
		opts = append(opts, client.InNamespace(scope.namespace))
	}
	if err := cl.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("listing %s in %q: %w", scope.gvk.Kind, scope.namespace, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range list.Items {
		item := &list.Items[i]
		key := objectKey{gk: scope.gvk.GroupKind(), namespace: item.Namespace, name: item.Name}
		if wanted[key] && item.UID != "" {
			l.at[key] = seenAt{resourceVersion: item.ResourceVersion, uid: item.UID, uidKnown: true}
		}
	}
	return nil
}

// ownerSelector selects the objects that carry this target's ownership labels (see owns).
func (c *cluster) ownerSelector() labels.Selector {
	selector := labels.SelectorFromSet(labels.Set{
		convoyv1alpha1.PackageNameLabel:      c.target.Name,
		convoyv1alpha1.PackageNamespaceLabel: c.target.Namespace,
	})
	var kind *labels.Requirement
	var err error
	if c.target.Kind == "" {
		kind, err = labels.NewRequirement(convoyv1alpha1.OwnerKindLabel, selection.DoesNotExist, nil)
	} else {
		kind, err = labels.NewRequirement(convoyv1alpha1.OwnerKindLabel, selection.Equals, []string{c.target.Kind})
	}
	if err != nil { // a kind that is no label value: the ledger still tells owners apart
		return selector
	}
	return selector.Add(*kind)
}
