package memory

import (
	"crypto/sha256"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// defaultLedgerSize bounds the entries of a ledger; past it the ledger starts over.
const defaultLedgerSize = 200_000

// ledger remembers, for every object the engine applied or found matching, which owner
// applied it, a digest of what was applied and the resourceVersion the API server answered.
// It lets a pass skip the reads a fluxcd/pkg/ssa apply would make:
//
//   - an object whose desired state changed since this owner applied it, and that was last
//     seen without a read (the watch of the management cluster, a list of the hosted cluster)
//     at the state that apply left, is applied directly: no read (it is still the object
//     whose ownership was checked when it was first applied) and no dry-run, with the UID it
//     had as a precondition, so that an object deleted or replaced since is not written;
//   - an object whose desired state did not change is read, and when its resourceVersion is
//     still the one recorded nobody changed it: it is unchanged without a dry-run.
//
// It is a cache: empty after a restart (every object then goes the full way once), and an
// entry that is wrong (the object deleted, or changed by someone else) only sends the object
// the full way. Objects another owner took over through convoy.dev/adopt are recorded under
// that owner, so the fast path never fights an adoption made by this process. It also tells
// which watch events are of a state a pass saw (holdsManagement): an entry names a state by its
// resourceVersion and UID, so it cannot mistake another state for it.
type ledger struct {
	mu      sync.Mutex
	max     int
	entries map[ledgerKey]ledgerEntry
	// applying holds the applies in flight per object: their watch events may come before
	// their responses.
	applying map[ledgerKey]*inFlight
}

// inFlight is the applies of one object in flight, per owner, and the watch events delivered
// meanwhile that may be of the state an apply's response will tell (holdsManagement).
type inFlight struct {
	applies map[string]int
	events  []pendingEvent
}

// pendingEvent is a watch event of an object delivered while its owner applied it: count
// counts it for that owner, unless it turns out to be of the state the apply recorded.
type pendingEvent struct {
	owner, resourceVersion string
	uid                    types.UID
	count                  func()
}

// maxPendingEvents bounds the events an object's applies in flight hold; later ones are
// judged at once against what the ledger holds.
const maxPendingEvents = 8

// ledgerKey identifies an object in one cluster: the management cluster, or the hosted
// cluster of a namespace (Cluster.name).
type ledgerKey struct {
	cluster string
	object  Key
}

// ledgerEntry is what was last applied to an object.
type ledgerEntry struct {
	owner           string
	digest          [sha256.Size]byte
	resourceVersion string
	uid             types.UID
	// availableUnder, when not zero, is the digest of the probe rules under which the object,
	// at resourceVersion, was judged available.
	availableUnder [sha256.Size]byte
}

// isState reports whether e is owner's record of the object at resourceVersion and uid.
func (e ledgerEntry) isState(owner, resourceVersion string, uid types.UID) bool {
	return e.owner == owner && e.resourceVersion == resourceVersion && e.uid == uid
}

func newLedger(max int) *ledger {
	return &ledger{max: max, entries: map[ledgerKey]ledgerEntry{}, applying: map[ledgerKey]*inFlight{}}
}

// managementKey is the ledger's key of obj, an object of the management cluster.
func managementKey(obj client.Object) ledgerKey {
	return ledgerKey{cluster: convoyv1alpha1.InventoryClusterManagement, object: Key{
		GK: obj.GetObjectKind().GroupVersionKind().GroupKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}

// advise gives each object of stage that is not quiet the state this owner left it at as
// desired now (Advice.Recorded) or, when this owner applied it in another state and it was
// last seen without a read at the state that apply left (seen: the watch of the management
// cluster, a list of the hosted cluster), the UID it had then: it may be applied directly,
// with that UID as a precondition. An object seen at another state, or not seen, was changed,
// deleted or replaced since, perhaps by an object that is not this owner's: it is read first,
// its ownership checked, as a pass without a memory would.
func (l *ledger) advise(c Cluster, stage []Desired, advice []Advice, seen sightings) {
	entries := l.ownEntries(c, stage, advice)
	for i := range stage {
		e := entries[i]
		switch {
		case e == nil:
		case e.digest == stage[i].Digest:
			advice[i].Recorded = Observed{ResourceVersion: e.resourceVersion, UID: e.uid}
		case e.uid != "" && seen.sawState(&stage[i], *e):
			advice[i].UID = e.uid
		}
	}
}

// ownEntries returns the entry this owner holds for each object of stage that is not quiet
// and encodes; nil where there is none.
func (l *ledger) ownEntries(c Cluster, stage []Desired, advice []Advice) []*ledgerEntry {
	owner, cl := c.Owner.id(), c.name()
	entries := make([]*ledgerEntry, len(stage))
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range stage {
		d := &stage[i]
		if advice[i].Quiet || !d.Known {
			continue
		}
		if e, found := l.entries[ledgerKey{cluster: cl, object: d.key()}]; found && e.owner == owner {
			entries[i] = &e
		}
	}
	return entries
}

// record notes, under the lock, that d is what live holds for owner.
func (l *ledger) record(key ledgerKey, owner string, d *Desired, live Observed) {
	if len(l.entries) >= l.max {
		clear(l.entries)
	}
	l.entries[key] = ledgerEntry{owner: owner, digest: d.Digest, resourceVersion: live.ResourceVersion, uid: live.UID}
}

// verdict returns the entry of d when owner applied it as it is now and judged it available
// under rules (which are never zero: see probe.Digest).
func (l *ledger) verdict(c Cluster, owner string, d *Desired) (ledgerEntry, bool) {
	if !d.Known || c.Rules == ([sha256.Size]byte{}) {
		return ledgerEntry{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, found := l.entries[ledgerKey{cluster: c.name(), object: d.key()}]
	return e, found && e.owner == owner && e.digest == d.Digest && e.availableUnder == c.Rules
}

// listable reports whether owner judged d available as it is now under the rules of c
// (judged: it may be quiet), or applied it in another state (applied: it may be applied
// directly), which a list of the hosted cluster tells.
func (l *ledger) listable(c Cluster, d *Desired) (judged, applied bool) {
	if !d.Known {
		return false, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, found := l.entries[ledgerKey{cluster: c.name(), object: d.key()}]
	if !found || e.owner != c.Owner.id() {
		return false, false
	}
	if e.digest != d.Digest {
		return false, e.uid != ""
	}
	return c.Rules != ([sha256.Size]byte{}) && e.availableUnder == c.Rules, false
}

// beginAdvised notes applies in flight of the management objects advice says to apply without
// a read.
func (l *ledger) beginAdvised(c Cluster, stage []Desired, advice []Advice) {
	if c.Hosted {
		return // no watch sees a hosted object: no event to drop or hold
	}
	owner := c.Owner.id()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range stage {
		if advice[i].UID != "" || advice[i].Fresh {
			l.beginLocked(ledgerKey{cluster: c.name(), object: stage[i].key()}, owner)
		}
	}
}

// begin notes applies in flight of the management objects of stage.
func (l *ledger) begin(c Cluster, stage []Desired) {
	if c.Hosted {
		return
	}
	owner := c.Owner.id()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range stage {
		l.beginLocked(ledgerKey{cluster: c.name(), object: stage[i].key()}, owner)
	}
}

// beginLocked notes an apply of key by owner in flight, under the lock.
func (l *ledger) beginLocked(key ledgerKey, owner string) {
	f := l.applying[key]
	if f == nil {
		f = &inFlight{applies: map[string]int{}}
		l.applying[key] = f
	}
	f.applies[owner]++
}

// tell records what a stage's writes hold, forgets what they say to, ends owner's applies in
// flight of their objects and then counts, outside the lock, the watch events held meanwhile
// that are not of the states recorded. It reports whether a write said to forget.
func (l *ledger) tell(c Cluster, writes []Write) (forgot bool) {
	owner, cl := c.Owner.id(), c.name()
	var counts []func()
	l.mu.Lock()
	for i := range writes {
		w := &writes[i]
		key := ledgerKey{cluster: cl, object: w.Desired.key()}
		switch {
		case w.Forget:
			delete(l.entries, key)
			forgot = true
		case w.Desired.Known && w.Live != (Observed{}):
			l.record(key, owner, &w.Desired, w.Live)
		}
		counts = append(counts, l.end(key, owner)...)
	}
	l.mu.Unlock()
	for _, count := range counts {
		count()
	}
	return forgot
}

// end notes, under the lock, that owner's applies of key ended. It returns the counts of
// owner's events delivered meanwhile that are not of the state the ledger holds for it.
func (l *ledger) end(key ledgerKey, owner string) []func() {
	f := l.applying[key]
	if f == nil || f.applies[owner] == 0 {
		return nil
	}
	delete(f.applies, owner)
	e, found := l.entries[key]
	var counts []func()
	kept := f.events[:0]
	for _, p := range f.events {
		switch {
		case p.owner != owner:
			kept = append(kept, p)
		case !found || !e.isState(p.owner, p.resourceVersion, p.uid):
			counts = append(counts, p.count)
		}
	}
	clear(f.events[len(kept):])
	f.events = kept
	if len(f.applies) == 0 {
		delete(l.applying, key)
	}
	return counts
}

// wroteManagement reports whether a watch event of obj, an object of the management cluster,
// comes from the engine's own apply: one is in flight, or obj's resourceVersion is the one the
// last apply answered.
//
// Note: an event dropped while an apply is in flight may be of a write after the apply. When
// the counting handler sees it while the owner's apply is in flight too, it moves the owner's
// count when the apply ends (holdsManagement), during the pass, which then says its outcome is
// stale (Result.Stale) and is followed by another pass soon. The two handlers run apart, so a
// write seen by the counting handler only after the pass, or labelled for another owner than
// the one applying, still waits for a later event or the owner's interval.
func (l *ledger) wroteManagement(obj client.Object) bool {
	key := managementKey(obj)
	l.mu.Lock()
	defer l.mu.Unlock()
	e, found := l.entries[key]
	return l.applying[key] != nil || (found && e.resourceVersion == obj.GetResourceVersion())
}

// holdsManagement reports whether obj, an object of the management cluster as a watch
// delivered it, is at the resourceVersion and UID the ledger holds for the owner its ownership
// labels name: a state a pass of that owner applied or read. Otherwise, while that owner
// applies obj, the event may be of the apply's state: it is held until the owner's applies of
// obj end, and count is called then unless it was of the state recorded.
func (l *ledger) holdsManagement(obj client.Object, count func()) bool {
	labels := obj.GetLabels()
	name, namespace := labels[convoyv1alpha1.PackageNameLabel], labels[convoyv1alpha1.PackageNamespaceLabel]
	if name == "" || namespace == "" || obj.GetResourceVersion() == "" {
		return false
	}
	owner := ownerKey(labels[convoyv1alpha1.OwnerKindLabel], namespace, name)
	key := managementKey(obj)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, found := l.entries[key]; found && e.isState(owner, obj.GetResourceVersion(), obj.GetUID()) {
		return true
	}
	f := l.applying[key]
	if count == nil || f == nil || f.applies[owner] == 0 || len(f.events) >= maxPendingEvents {
		return false
	}
	f.events = append(f.events, pendingEvent{owner: owner, resourceVersion: obj.GetResourceVersion(), uid: obj.GetUID(), count: count})
	return true
}

// AppliedByEngine reports whether a watch event of obj, an object of the management cluster,
// comes from the engine's own apply, so that the controller can drop it: an apply of obj is
// in flight, or obj's resourceVersion is the one the engine's last apply answered.
func (s *Store) AppliedByEngine(obj client.Object) bool { return s.ledger.wroteManagement(obj) }

// HoldsState reports whether a watch event of obj, an object of the management cluster, is of
// the state the engine last applied or read for the owner its ownership labels name, at the
// same resourceVersion and UID. Such an event tells that owner nothing its pass did not see,
// so OwnerEvents need not count it: a pass that applied objects can then be repeated as
// settled (settled.go). An event delivered while the engine applies obj for that owner is
// held until the apply ends; count is called then unless it was of the state the apply
// recorded.
func (s *Store) HoldsState(obj client.Object, count func()) bool {
	return s.ledger.holdsManagement(obj, count)
}
