package memory

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"sync"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// A quiet object is one a pass need not read: the ledger says this owner applied it as desired
// now and judged it available under the revision's probes at a resourceVersion, and the watch
// of the management cluster still sees that resourceVersion. Nothing changed it since (any
// write, status included, gives a new resourceVersion), so reading it again would only repeat
// the same verdict. A change the watch has not delivered yet is seen by the pass its event
// triggers. Hosted-cluster objects have no watch: a list tells where they are (below).

// seenAt is where an object was last seen without reading it: its resourceVersion and, from a
// source that tells it (a list does, the watch of the management cluster does not), its UID.
type seenAt struct {
	resourceVersion string
	uid             types.UID
	// uidKnown is set when uid must match: a source that tells UIDs always does.
	uidKnown bool
}

// sightings tells where the objects of a stage were last seen without a read: by the watch
// of the management cluster, or by the lists of the hosted cluster (listed).
type sightings struct {
	versions ResourceVersions
	hosted   bool
	listed   map[Key]seenAt
}

// sightingsOf lists, for a stage of a hosted cluster, what its lists cover (listHosted).
func (s *Store) sightingsOf(ctx context.Context, c Cluster, stage []Desired) sightings {
	if c.Hosted {
		return sightings{hosted: true, listed: s.listHosted(ctx, c, stage)}
	}
	return sightings{versions: s.versions}
}

// none reports sightings that see no object.
func (t sightings) none() bool {
	return (t.hosted && len(t.listed) == 0) || (!t.hosted && t.versions == nil)
}

// at tells where the object of d was last seen; ok is false when it was not.
func (t sightings) at(d *Desired) (seenAt, bool) {
	if t.hosted {
		seen, ok := t.listed[d.key()]
		return seen, ok
	}
	if t.versions == nil {
		return seenAt{}, false
	}
	rv, ok := t.versions.ResourceVersion(d.GVK, d.Namespace, d.Name)
	return seenAt{resourceVersion: rv}, ok
}

// sawState reports whether the object of d was last seen at the state of e: its
// resourceVersion and, when the source tells it, its UID.
func (t sightings) sawState(d *Desired, e ledgerEntry) bool {
	seen, ok := t.at(d)
	return ok && seen.resourceVersion == e.resourceVersion && (!seen.uidKnown || seen.uid == e.uid)
}

// markQuiet marks the quiet objects of a stage.
func (s *Store) markQuiet(c Cluster, stage []Desired, advice []Advice, seen sightings) {
	if c.Rules == ([sha256.Size]byte{}) || seen.none() {
		return
	}
	owner, quiet := c.Owner.id(), 0
	for i := range stage {
		at, ok := seen.at(&stage[i])
		if advice[i].Quiet = ok && s.ledger.availableAt(c, owner, &stage[i], at); advice[i].Quiet {
			quiet++
		}
	}
	if quiet > 0 {
		quietObjects.WithLabelValues(s.controller).Add(float64(quiet))
	}
}

// availableAt reports whether owner applied d as it is now and judged it available under the
// rules of c where it was seen: at its resourceVersion and, when the source tells it, with its
// UID.
func (l *ledger) availableAt(c Cluster, owner string, d *Desired, seen seenAt) bool {
	e, ok := l.verdict(c, owner, d)
	return ok && e.resourceVersion == seen.resourceVersion && (!seen.uidKnown || seen.uid == e.uid)
}

// markFresh marks the objects nothing says exist, which a stage creates without a read: not
// quiet, not applied before by this owner (Advice.UID), not in the owner's previous inventory,
// and not in the synced watch of the management cluster, which holds every object carrying an
// owner's labels (create.go of sync/engine says why this is safe).
func (s *Store) markFresh(c Cluster, stage []Desired, advice []Advice) {
	var inventoried map[string]bool // made for the first object that may be fresh
	for i := range stage {
		d := &stage[i]
		if advice[i].Quiet || advice[i].UID != "" {
			continue
		}
		if inventoried == nil {
			inventoried = c.inventoried()
		}
		advice[i].Fresh = !inventoried[d.inventoryID()] && !s.inWatch(c, d)
	}
}

// inventoried returns the IDs of the previous inventory's objects in c.
func (c Cluster) inventoried() map[string]bool {
	name := convoyv1alpha1.InventoryClusterManagement
	if c.Hosted {
		name = convoyv1alpha1.InventoryClusterHosted
	}
	ids := make(map[string]bool, len(c.Previous))
	for _, e := range c.Previous {
		if e.Cluster == name {
			ids[e.ID] = true
		}
	}
	return ids
}

// inWatch reports whether the synced watch of the management cluster holds the object of d:
// it exists and carries an owner's labels.
func (s *Store) inWatch(c Cluster, d *Desired) bool {
	if s.versions == nil || c.Hosted || d.Shard != c.Owner.Shard || !s.versions.Synced(d.GVK) {
		return false
	}
	_, held := s.versions.ResourceVersion(d.GVK, d.Namespace, d.Name)
	return held
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
// hosted objects is ever repeated as settled. The same lists tell whether an object this owner
// applied in another state is still the one it applied, at the state it left, and so may be
// applied directly (ledger.advise): a scope of such an object is listed even alone, as a list
// and an apply cost less than a read, a dry run and an apply.

// listScope is what one list covers: a kind in a namespace ("" for a cluster-scoped kind).
type listScope struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// listHosted lists, metadata only, the owner's objects of the kinds and namespaces of the
// objects of stage that were judged available under the rules of c or that this owner applied
// in another state, and returns where each of them was seen; nil when there is none or a list
// failed. A scope of one object judged available is not listed: a read costs the same
// request. One of an object applied in another state is: without a list it is read and
// compared by a dry run before its apply.
func (s *Store) listHosted(ctx context.Context, c Cluster, stage []Desired) map[Key]seenAt {
	wanted, changed := map[listScope]map[Key]bool{}, map[listScope]bool{}
	for i := range stage {
		d := &stage[i]
		judged, applied := s.ledger.listable(c, d)
		if !judged && !applied {
			continue
		}
		scope := listScope{gvk: d.GVK, namespace: d.Namespace}
		if wanted[scope] == nil {
			wanted[scope] = map[Key]bool{}
		}
		wanted[scope][d.key()] = true
		changed[scope] = changed[scope] || applied
	}
	maps.DeleteFunc(wanted, func(scope listScope, keys map[Key]bool) bool { return len(keys) < 2 && !changed[scope] })
	if len(wanted) == 0 || c.Reader == nil {
		return nil
	}
	seen := &listed{at: map[Key]seenAt{}}
	lists, listCtx := errgroup.WithContext(ctx)
	lists.SetLimit(s.concurrency)
	selector := ownerSelector(c.Owner)
	for scope, keys := range wanted {
		lists.Go(func() error { return seen.list(listCtx, c.Reader, scope, selector, keys) })
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
	at map[Key]seenAt
}

// list lists the objects of scope that selector selects, metadata only, at most as many as
// wanted has: what it reads is bounded by the owner's own objects, as reading them one by one
// would be, whatever else carries the ownership labels (objects beyond the limit are then
// read). It notes where those of wanted were seen.
func (l *listed) list(ctx context.Context, r client.Reader, scope listScope, selector labels.Selector, wanted map[Key]bool) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(scope.gvk.GroupVersion().WithKind(scope.gvk.Kind + "List"))
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: selector}, client.Limit(int64(len(wanted)))}
	if scope.namespace != "" {
		opts = append(opts, client.InNamespace(scope.namespace))
	}
	if err := r.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("listing %s in %q: %w", scope.gvk.Kind, scope.namespace, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range list.Items {
		item := &list.Items[i]
		key := Key{GK: scope.gvk.GroupKind(), Namespace: item.Namespace, Name: item.Name}
		if wanted[key] && item.UID != "" {
			l.at[key] = seenAt{resourceVersion: item.ResourceVersion, uid: item.UID, uidKnown: true}
		}
	}
	return nil
}

// ownerSelector selects the objects that carry the ownership labels of o.
func ownerSelector(o Owner) labels.Selector {
	selector := labels.SelectorFromSet(labels.Set{
		convoyv1alpha1.PackageNameLabel:      o.Name,
		convoyv1alpha1.PackageNamespaceLabel: o.Namespace,
	})
	var kind *labels.Requirement
	var err error
	if o.Kind == "" {
		kind, err = labels.NewRequirement(convoyv1alpha1.OwnerKindLabel, selection.DoesNotExist, nil)
	} else {
		kind, err = labels.NewRequirement(convoyv1alpha1.OwnerKindLabel, selection.Equals, []string{o.Kind})
	}
	if err != nil { // a kind that is no label value: the ledger still tells owners apart
		return selector
	}
	return selector.Add(*kind)
}
