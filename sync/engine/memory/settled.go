package memory

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sync"

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
	// for that owner when it is delivered (Store.HoldsState), and an update to the same
	// resourceVersion. Any other has moved it by the time the event makes the owner's pass,
	// and, for an object in the watch's first list, by the time Versions.Synced reports its
	// kind synced; one delivered while the engine applies the object for that owner, by the
	// time that apply ends. It may move without an event; it never stays when one it counts is
	// delivered.
	Count(kind, namespace, name string) uint64
}

// A settled pass is one that ended with every phase available, every object of the revision
// judged available at a state the ledger holds for its owner (quiet, or applied or read by the
// pass: Outcome.Judged), pruned nothing and left nothing of the previous inventory behind. The
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
// apply ends (Store.HoldsState). Each of these costs one pass in full more: the watch not yet
// holding an applied state at the first repeat's check, an object applied through the
// resource manager (read first: its own events are counted), and a CustomResourceDefinition
// judged at the state polled until it was established (not one the ledger holds).
//
// Only revisions whose render digested every object (Phase.Digests) are remembered, as their
// identity is then cheap. Each remembered pass holds a few hundred bytes: its mark, the digest
// of the inventory, the phases' statuses and, until its first repeat, the states to check (one
// per object applied or read, at most the revision's objects).

// settledPass is what the memory remembers of an owner's last settled pass.
type settledPass struct {
	mark      identity
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

// Mark is what a pass must match to repeat a settled one, and what its verdicts vouch for. A
// pass carries it from Repeat to Settle, which adds the verdicts of its phases.
type Mark struct {
	identity
	// who is the owner, whose event count Settle reads again.
	who Owner
	// vouched counts the objects of the revision judged available at a state the watch of the
	// management cluster tells every change of, or will once it holds the states of
	// unconfirmed.
	vouched     int
	unconfirmed []watchedState
}

// identity is the owner's event count read before the pass looked at anything, and the digest
// of the revision and target. owner and count are set even when ok is false.
type identity struct {
	owner  string
	count  uint64
	digest manifests.Digest
	ok     bool
}

// defaultSettledOwners bounds the owners whose settled pass a memory remembers.
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

// markOf reads the owner's event count, then digests the revision, its probe rules and the
// target; ok is false when the memory has no OwnerEvents or the revision has objects without
// digests.
func (s *Store) markOf(p Pass) *Mark {
	m := &Mark{identity: identity{owner: p.Owner.id()}, who: p.Owner}
	if s.events == nil {
		return m
	}
	m.count = s.events.Count(p.Owner.Kind, p.Owner.Namespace, p.Owner.Name)
	var buf [digestBuffer]byte
	in := digestInput(buf[:0])
	in = in.strings(p.Revision, p.Owner.Kind, p.Owner.Namespace, p.Owner.Name, p.Owner.Shard)
	in = append(in, p.Rules[:]...)
	for i := range p.Phases {
		ph := &p.Phases[i]
		if !ph.Complete {
			return m
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

// repeat returns the outcome of the owner's settled pass when m and previous match it; nil
// otherwise.
func (s *Store) repeat(m *Mark, previous []convoyv1alpha1.InventoryEntry) *Settled {
	if !m.ok {
		return nil
	}
	s.settled.mu.Lock()
	last, found := s.settled.passes[m.owner]
	s.settled.mu.Unlock()
	if !found || last.mark != m.identity || last.inventory != inventoryDigest(previous) || !s.watchHolds(last.unconfirmed) {
		return nil
	}
	if len(last.unconfirmed) > 0 {
		s.settled.confirm(m.identity)
	}
	quietObjects.WithLabelValues(s.controller).Add(float64(last.objects))
	settledRepeats.WithLabelValues(s.controller).Inc()
	return &Settled{Phases: slices.Clone(last.phases), Objects: last.objects}
}

// remember keeps the outcome o of a settled pass begun at m, for the next pass that comes with
// the inventory it wrote, evicting any other owner's when full: a forgotten owner only does its
// next pass in full.
func (s *Store) remember(m *Mark, o Outcome) {
	if !m.ok {
		return
	}
	// Cloned to their length: the list grew by appends, and is kept until the first repeat,
	// which for a settled Package may be its spec.interval later.
	last := settledPass{mark: m.identity, inventory: inventoryDigest(o.Inventory), phases: slices.Clone(o.Phases),
		objects: o.Objects, unconfirmed: slices.Clone(m.unconfirmed)}
	s.settled.mu.Lock()
	defer s.settled.mu.Unlock()
	if _, known := s.settled.passes[m.owner]; !known && len(s.settled.passes) >= s.settled.max {
		for owner := range s.settled.passes {
			delete(s.settled.passes, owner)
			break
		}
	}
	s.settled.passes[m.owner] = last
}

// movedSince reports whether the event count of m's owner moved since m was taken.
func (s *Store) movedSince(m *Mark) bool {
	return s.events != nil && s.events.Count(m.who.Kind, m.who.Namespace, m.who.Name) != m.count
}

// watchHolds reports whether the watch of the management cluster holds each of states, as its
// store has it now.
func (s *Store) watchHolds(states []watchedState) bool {
	if len(states) > 0 && s.versions == nil {
		return false
	}
	for _, w := range states {
		if rv, ok := s.versions.ResourceVersion(w.gvk, w.namespace, w.name); !ok || rv != w.resourceVersion {
			return false
		}
	}
	return true
}

// confirm notes that the watch held the states of the settled pass begun at m: later repeats
// need not check them, as every move from them is now an event.
func (p *settledPasses) confirm(m identity) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, found := p.passes[m.owner]; found && last.mark == m {
		last.unconfirmed = nil
		p.passes[m.owner] = last
	}
}

// forgetSettled forgets the last settled pass of owner: a pass in full begins, or the owner's
// objects are being deleted.
func (s *Store) forgetSettled(owner string) {
	s.settled.mu.Lock()
	defer s.settled.mu.Unlock()
	delete(s.settled.passes, owner)
}
