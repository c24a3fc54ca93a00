package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
)

// OwnerEvents counts what the watch of the management cluster (Options.Versions) delivers
// about each owner's objects.
type OwnerEvents interface {
	// Count returns a number that moves with each event the watch delivers of an object whose
	// ownership labels name the owner of kind (a Target.Kind), namespace and name, before or
	// after the event. Two kinds of event need not move it: one of the state the engine holds
	// for that owner when it is delivered (Engine.HoldsState), and an update to the same
	// resourceVersion. Any other has moved it by the time the event makes the owner's pass,
	// and, for an object in the watch's first list, by the time Versions.Synced reports its
	// kind synced; one delivered while the engine applies the object for that owner, by the
	// time that apply ends. It may move without an event; it never stays when one it counts is
	// delivered.
	Count(kind, namespace, name string) uint64
}

// A settled pass is one that ended with every phase available, every object of the revision
// judged available at a state the ledger holds for its owner (quiet, or applied or read by the
// pass: recordVerdicts), pruned nothing and left nothing of the previous inventory behind. The
// next pass with the same revision and target, and the inventory it wrote, would find every
// object quiet and do nothing, as long as no object moved from the state its pass saw.
//
// Once the watch holds each of those states, every move from them is an event the owner's count
// counts (OwnerEvents), while the events of the states the pass saw are not counted. So when
// the owner's count has not moved since the settled pass began, and the watch holds the state
// of each object the pass applied or read (checked at the first repeat, from the watch's store:
// settledPass.unconfirmed), that next pass returns the settled pass's outcome without placing,
// or looking up, a single object. The first change the watch delivers moves the count, and the
// pass that change triggers does the work.
//
// The check matters: until the watch holds a state, nothing says a change will be an event. An
// object out of the watch (labelled for no shard of this replica) never is one, and a watch
// that relists after a break does not tell of an object created and deleted while it was away.
//
// So the pass after an apply is a repeat already: the applied objects need not be found quiet
// once first. An event of an object delivered while its owner applies it is held until the
// apply ends (Engine.HoldsState). Each of these costs one pass in full more: the watch not yet
// holding an applied state at the first repeat's check, an object applied through the
// resource manager (read first: its own events are counted), and a CustomResourceDefinition
// judged at the state polled until it was established (not one the ledger holds).
//
// Only revisions whose render digested every object (Phase.Digests) are remembered, as their
// identity is then cheap. Each remembered pass holds a few hundred bytes: its mark, the digest
// of the inventory, the phases' statuses and, until its first repeat, the states to check (one
// per object applied or read, at most the revision's objects).

// settledPass is what the engine remembers of an owner's last settled pass.
type settledPass struct {
	mark      settledMark
	inventory manifests.Digest
	phases    []convoyv1alpha1.PhaseStatus
	objects   int
	// unconfirmed are the states the watch must hold before the first repeat; none after it.
	unconfirmed []watchedState
}

// watchedState is an object of the management cluster at a resourceVersion.
type watchedState struct {
	gvk             schema.GroupVersionKind
	namespace, name string
	resourceVersion string
}

// settledMark is what a pass must match to repeat a settled one: the owner's event count read
// before the pass looked at anything, and the digest of the revision and target. owner and
// count are set even when ok is false.
type settledMark struct {
	owner  string
	count  uint64
	digest manifests.Digest
	ok     bool
}

// defaultSettledOwners bounds the owners whose settled pass an engine remembers.
const defaultSettledOwners = 100_000

// settledPasses remembers the last settled pass of each owner, at most max of them.
type settledPasses struct {
	mu     sync.Mutex
	passes map[string]settledPass
	max    int
}

// newSettledPasses returns an empty memory of at most max owners.
func newSettledPasses(max int) *settledPasses {
	return &settledPasses{passes: map[string]settledPass{}, max: max}
}

// beginPass is what Sync asks the memory before a pass: the mark of the pass, taken before
// it looks at any object, and the outcome of the owner's settled pass when the pass would
// repeat it (nil otherwise). A pass that is not a repeat forgets the owner's settled pass
// first: whatever it does, even if it panics, that one is past.
func (mem *memory) beginPass(t *Target, rev *Revision, rules [sha256.Size]byte, previous []convoyv1alpha1.InventoryEntry) (settledMark, *Result) {
	mark := mem.markOf(t, rev, rules)
	if res, ok := mem.repeat(mark, previous); ok {
		return mark, res
	}
	mem.forgetSettled(mark.owner)
	return mark, nil
}

// endPass is what Sync tells the memory after a pass begun at mark that returned res and err:
// res is stale when the pass applied objects directly while the owner's event count moved,
// and a settled pass is remembered.
func (mem *memory) endPass(t *Target, mark settledMark, res *Result, err error) {
	res.Stale = res.appliedDirectly && mem.movedSince(t, mark)
	if settledOutcome(res, err) {
		mem.remember(mark, res)
	}
}

// markOf reads the owner's event count, then digests the revision, its probe rules and the
// target; ok is false when the engine has no OwnerEvents or the revision has objects without
// digests.
func (mem *memory) markOf(t *Target, rev *Revision, rules [sha256.Size]byte) settledMark {
	m := settledMark{owner: ownerID(t)}
	if mem.events == nil {
		return m
	}
	m.count = mem.events.Count(t.Kind, t.Namespace, t.Name)
	var buf [digestBuffer]byte
	in := digestInput(buf[:0])
	in = in.strings(rev.ID, t.Kind, t.Namespace, t.Name, t.Shard)
	in = append(in, rules[:]...)
	for i := range rev.Phases {
		ph := &rev.Phases[i]
		if len(ph.Digests) != len(ph.Objects) {
			return settledMark{owner: m.owner, count: m.count}
		}
		in = in.strings(ph.Name, ph.Class).length(len(ph.Digests))
		for _, d := range ph.Digests {
			in = append(in, d[:]...)
		}
	}
	m.digest, m.ok = sha256.Sum256(in), true
	return m
}

// digestBuffer is the size of the stack buffer a digest's input starts in: that of a package
// of about 30 objects, or an inventory of about 20; a larger one grows on the heap.
const digestBuffer = 2048

// digestInput is what a digest is taken of: strings and counts, each length-prefixed, so that
// no two sequences of them give the same input.
type digestInput []byte

// strings appends each of ss.
func (in digestInput) strings(ss ...string) digestInput {
	for _, s := range ss {
		in = append(in.length(len(s)), s...)
	}
	return in
}

// length appends n.
func (in digestInput) length(n int) digestInput {
	return binary.LittleEndian.AppendUint64(in, uint64(n))
}

// inventoryDigest digests an inventory.
func inventoryDigest(inv []convoyv1alpha1.InventoryEntry) manifests.Digest {
	var buf [digestBuffer]byte
	in := digestInput(buf[:0])
	if size := 128 * len(inv); size > digestBuffer {
		in = make(digestInput, 0, size)
	}
	for _, e := range inv {
		in = in.strings(e.ID, e.Version, e.Cluster, e.Phase)
	}
	return sha256.Sum256(in)
}

// repeat returns the outcome of the owner's settled pass when m and previous match it.
func (mem *memory) repeat(m settledMark, previous []convoyv1alpha1.InventoryEntry) (*Result, bool) {
	if !m.ok {
		return nil, false
	}
	mem.settled.mu.Lock()
	last, found := mem.settled.passes[m.owner]
	mem.settled.mu.Unlock()
	if !found || last.mark != m || last.inventory != inventoryDigest(previous) || !mem.watchHolds(last.unconfirmed) {
		return nil, false
	}
	if len(last.unconfirmed) > 0 {
		mem.settled.confirm(m)
	}
	res := &Result{Phases: slices.Clone(last.phases), Inventory: slices.Clone(previous), Available: true,
		Watched: true, Changes: Changes{Unchanged: last.objects}}
	appliedObjects.WithLabelValues(mem.controller, convoyv1alpha1.InventoryClusterManagement, ssa.UnchangedAction.String()).
		Add(float64(last.objects))
	quietObjects.WithLabelValues(mem.controller).Add(float64(last.objects))
	settledRepeats.WithLabelValues(mem.controller).Inc()
	return res, true
}

// settledOutcome reports whether a pass that returned res and err was settled: every phase
// available, every object vouched for by the watch, nothing pruned and no entry of the previous
// inventory left behind (an object being deleted, one it could not delete, a kind no watch
// sees).
func settledOutcome(res *Result, err error) bool {
	return err == nil && res.Available && res.Watched && res.Pruned == 0 && len(res.Left) == 0 &&
		res.vouched == res.objects && len(res.Inventory) == len(res.applied)
}

// remember keeps the outcome of a settled pass begun at m, for the next pass that comes with
// the inventory it wrote, evicting any other owner's when full: a forgotten owner only does its
// next pass in full.
func (mem *memory) remember(m settledMark, res *Result) {
	if !m.ok {
		return
	}
	// Cloned to their length: the list grew by appends, and is kept until the first repeat,
	// which for a settled Package may be its spec.interval later.
	last := settledPass{mark: m, inventory: inventoryDigest(res.Inventory), phases: slices.Clone(res.Phases), objects: res.objects,
		unconfirmed: slices.Clone(res.unconfirmed)}
	mem.settled.mu.Lock()
	defer mem.settled.mu.Unlock()
	if _, known := mem.settled.passes[m.owner]; !known && len(mem.settled.passes) >= mem.settled.max {
		for owner := range mem.settled.passes {
			delete(mem.settled.passes, owner)
			break
		}
	}
	mem.settled.passes[m.owner] = last
}

// movedSince reports whether the event count of t's owner moved since m was taken.
func (mem *memory) movedSince(t *Target, m settledMark) bool {
	return mem.events != nil && mem.events.Count(t.Kind, t.Namespace, t.Name) != m.count
}

// watchHolds reports whether the watch of the management cluster holds each of states, as its
// store has it now.
func (mem *memory) watchHolds(states []watchedState) bool {
	if len(states) > 0 && mem.versions == nil {
		return false
	}
	for _, w := range states {
		if rv, ok := mem.versions.ResourceVersion(w.gvk, w.namespace, w.name); !ok || rv != w.resourceVersion {
			return false
		}
	}
	return true
}

// confirm notes that the watch held the states of the settled pass begun at m: later repeats
// need not check them, as every move from them is now an event.
func (s *settledPasses) confirm(m settledMark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if last, found := s.passes[m.owner]; found && last.mark == m {
		last.unconfirmed = nil
		s.passes[m.owner] = last
	}
}

// forgetSettled forgets the last settled pass of owner (an ownerID): a pass in full begins, or
// the owner is torn down.
func (mem *memory) forgetSettled(owner string) {
	mem.settled.mu.Lock()
	defer mem.settled.mu.Unlock()
	delete(mem.settled.passes, owner)
}
