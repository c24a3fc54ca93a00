package engine

import (
	"crypto/sha256"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// memory is the engine's performance memory: everything it keeps between passes. The
// pipeline (sync.go to teardown.go) asks it what a pass may skip and tells it what a pass
// did; nothing else reads or writes its parts. It is a cache: an empty memory (after a
// restart, or past its bounds) costs requests and never changes an outcome. Its terms are
// defined in doc.go; its parts are
//
//   - the ledger of what each owner applied or read (below);
//   - the quiet objects, found from the watch of the management cluster or from lists of a
//     hosted cluster, with the verdicts that make them so, and the one question a stage asks
//     (askStage: the quiet objects and those to apply directly) (memory_quiet.go);
//   - each owner's last settled pass (memory_settled.go).
type memory struct {
	controller  string
	concurrency int
	versions    ResourceVersions
	events      OwnerEvents
	ledger      *ledger
	settled     *settledPasses
}

// newMemory returns an empty memory for an engine of opts.
func newMemory(opts Options) *memory {
	quietObjects.WithLabelValues(opts.Controller) // the series exists before the first quiet object
	settledRepeats.WithLabelValues(opts.Controller)
	m := &memory{controller: opts.Controller, concurrency: opts.Concurrency, versions: opts.Versions,
		events: opts.Events, ledger: newLedger(defaultLedgerSize),
		settled: newSettledPasses(defaultSettledOwners)}
	memories.add(m)
	return m
}

// What a pass asks the memory, in the order it asks: Sync asks beginPass (memory_settled.go);
// per stage, prepareStage asks askStage (memory_quiet.go), which marks the quiet objects and
// those to apply directly; applyRead asks untouched of each object it read.

// untouched reports whether live is, unchanged since, what this owner applied as desired: it
// need not be written.
func (m *memory) untouched(c *cluster, desired desiredState, live *unstructured.Unstructured) bool {
	return m.ledger.untouched(c, desired, live)
}

// What a pass tells the memory: applyOne calls applying around each direct apply (the apply
// is in flight until it ends, so it cannot wait for the stage's end); applyStage calls
// recordApplied; syncPhase calls recordVerdicts (memory_quiet.go) for an available phase;
// Sync calls endPass (memory_settled.go), which remembers a settled pass; deleteGroup (prune
// and Teardown) calls forgetAll before deleting, and Teardown forgetSettled.

// applying notes an apply of desired in flight; the returned function ends it with the
// applied object, as the API server answered it, and the apply's error.
func (m *memory) applying(c *cluster, desired desiredState) func(applied *unstructured.Unstructured, err error) {
	return m.ledger.begin(c, desired)
}

// recordApplied records what the objects of states now hold, as the observer last saw them.
func (m *memory) recordApplied(c *cluster, obs *observer, states []desiredState) {
	for _, s := range states {
		m.ledger.record(c, s, obs.live(s.obj))
	}
}

// forget drops what the memory knows of one object: a direct apply refused it.
func (m *memory) forget(c *cluster, key objectKey) { m.ledger.forget(c, key) }

// forgetAll drops what the memory knows of the objects of keys, about to be deleted or
// released.
func (m *memory) forgetAll(c *cluster, keys []objectKey) {
	for _, key := range keys {
		m.ledger.forget(c, key)
	}
}

// What the controllers ask, through Engine.AppliedByEngine and Engine.HoldsState.

// wroteManagement reports whether a watch event of obj comes from the engine's own apply.
func (m *memory) wroteManagement(obj client.Object) bool { return m.ledger.wroteManagement(obj) }

// holdsManagement reports whether a watch event of obj is of a state a pass of its owner saw.
func (m *memory) holdsManagement(obj client.Object, count func()) bool {
	return m.ledger.holdsManagement(obj, count)
}

// defaultLedgerSize bounds the entries of a ledger; past it the ledger starts over.
const defaultLedgerSize = 200_000

// ledger remembers, for every object the engine applied or found matching, which owner
// applied it, a digest of what was applied and the resourceVersion the API server answered.
// It lets a pass skip the reads a fluxcd/pkg/ssa apply would make:
//
//   - an object whose desired state changed since this owner applied it is applied directly:
//     no read (ownership was checked when it was first applied) and no dry-run, with the UID
//     it had as a precondition, so that an object deleted or replaced since is not written;
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
// cluster of a namespace.
type ledgerKey struct {
	cluster string
	object  objectKey
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

// ledgerCluster names a cluster in ledger keys: hosted clusters are told apart by namespace.
func ledgerCluster(c *cluster) string {
	if c.hosted() {
		return convoyv1alpha1.InventoryClusterHosted + "/" + c.target.Namespace
	}
	return convoyv1alpha1.InventoryClusterManagement
}

// managementKey is the ledger's key of obj, an object of the management cluster.
func managementKey(obj client.Object) ledgerKey {
	return ledgerKey{cluster: convoyv1alpha1.InventoryClusterManagement, object: objectKey{
		gk: obj.GetObjectKind().GroupVersionKind().GroupKind(), namespace: obj.GetNamespace(), name: obj.GetName()}}
}

// untouched reports whether live is, unchanged since, what this owner applied as desired.
func (l *ledger) untouched(c *cluster, desired desiredState, live *unstructured.Unstructured) bool {
	if !desired.ok || live == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, found := l.entries[ledgerKey{cluster: ledgerCluster(c), object: keyOf(desired.obj)}]
	return found && e.digest == desired.digest && e.isState(c.ownerID(), live.GetResourceVersion(), live.GetUID())
}

// record notes that desired is what live, as the API server answered, holds for this owner.
func (l *ledger) record(c *cluster, desired desiredState, live *unstructured.Unstructured) {
	if !desired.ok || live == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) >= l.max {
		clear(l.entries)
	}
	l.entries[ledgerKey{cluster: ledgerCluster(c), object: keyOf(desired.obj)}] = ledgerEntry{
		owner: c.ownerID(), digest: desired.digest, resourceVersion: live.GetResourceVersion(),
		uid: live.GetUID(),
	}
}

// seenAt is where an object was last seen without reading it: its resourceVersion and, from a
// source that tells it (a list does, the watch of the management cluster does not), its UID.
type seenAt struct {
	resourceVersion string
	uid             types.UID
	// uidKnown is set when uid must match: a source that tells UIDs always does.
	uidKnown bool
}

// availableAt reports whether this owner applied desired as it is now and judged it available
// under rules where it was seen: at its resourceVersion and, when the source tells it, with its
// UID.
func (l *ledger) availableAt(c *cluster, desired desiredState, seen seenAt, rules [sha256.Size]byte) bool {
	e, ok := l.verdict(c, desired, rules)
	return ok && e.resourceVersion == seen.resourceVersion && (!seen.uidKnown || seen.uid == e.uid)
}

// judged reports whether this owner applied desired as it is now and judged it available
// under rules, at whatever resourceVersion.
func (l *ledger) judged(c *cluster, desired desiredState, rules [sha256.Size]byte) bool {
	_, ok := l.verdict(c, desired, rules)
	return ok
}

// verdict returns the entry of desired when this owner applied it as it is now and judged it
// available under rules (which are never zero: see probe.Digest).
func (l *ledger) verdict(c *cluster, desired desiredState, rules [sha256.Size]byte) (ledgerEntry, bool) {
	if !desired.ok || rules == ([sha256.Size]byte{}) {
		return ledgerEntry{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, found := l.entries[ledgerKey{cluster: ledgerCluster(c), object: keyOf(desired.obj)}]
	return e, found && e.owner == c.ownerID() && e.digest == desired.digest && e.availableUnder == rules
}

// begin notes an apply of desired in flight; the returned function ends it with the
// response, records it when the apply succeeded, and counts the watch events delivered
// meanwhile that were not of the state recorded.
func (l *ledger) begin(c *cluster, desired desiredState) func(applied *unstructured.Unstructured, err error) {
	key, owner := ledgerKey{cluster: ledgerCluster(c), object: keyOf(desired.obj)}, c.ownerID()
	l.mu.Lock()
	f := l.applying[key]
	if f == nil {
		f = &inFlight{applies: map[string]int{}}
		l.applying[key] = f
	}
	f.applies[owner]++
	l.mu.Unlock()
	return func(applied *unstructured.Unstructured, err error) {
		if err == nil {
			l.record(c, desired, applied)
		}
		for _, count := range l.end(key, owner) {
			count()
		}
	}
}

// end notes that an apply of key by owner ended. Once none of owner's is in flight, it returns
// the counts of owner's events delivered meanwhile that are not of the state the ledger holds
// for it; they are called outside the lock.
func (l *ledger) end(key ledgerKey, owner string) []func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.applying[key]
	if f.applies[owner]--; f.applies[owner] > 0 {
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

// forget drops what the ledger knows of an object.
func (l *ledger) forget(c *cluster, key objectKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, ledgerKey{cluster: ledgerCluster(c), object: key})
}
