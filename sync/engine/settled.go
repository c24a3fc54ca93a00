package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/fluxcd/pkg/ssa"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
)

// OwnerEvents counts what the watch of the management cluster (Options.Versions) delivers
// about each owner's objects.
type OwnerEvents interface {
	// Count returns a number that moves with every event the watch delivers of an object whose
	// ownership labels name the owner of kind (a Target.Kind), namespace and name, before or
	// after the event. It has moved by the time Versions.Synced reports the object's kind synced,
	// and by the time the event makes the owner's pass. It may move without such an event; it
	// never stays when one is delivered.
	Count(kind, namespace, name string) uint64
}

// A settled pass is one that found every object of the revision quiet, every phase available
// and nothing left of the previous inventory to prune: it read and wrote nothing. Its outcome depends only on the revision,
// the target, the previous inventory and the objects' resourceVersions; the last is unchanged
// as long as the watch delivered nothing about the owner's objects (OwnerEvents). So when the
// next pass of the owner comes with the same revision, target and inventory, and the owner's
// count has not moved since the settled pass began, it returns the settled pass's outcome
// without placing, or looking up, a single object. The first change the watch delivers moves
// the count, and the pass that change triggers does the work. Only revisions whose render
// digested every object (Phase.Digests) are remembered, as their identity is then cheap. Each
// remembered pass holds a few hundred bytes: its mark, the digest of the inventory and the
// phases' statuses.

// settledPass is what the engine remembers of an owner's last settled pass.
type settledPass struct {
	mark      settledMark
	inventory manifests.Digest
	phases    []convoyv1alpha1.PhaseStatus
	objects   int
}

// settledMark is what a pass must match to repeat a settled one: the owner's event count read
// before the pass looked at anything, and the digest of the revision and target. owner is set
// even when ok is false.
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

// markOf reads the owner's event count, then digests the revision, its probe rules and the
// target; ok is false when the engine has no OwnerEvents or the revision has objects without
// digests.
func (e *Engine) markOf(t *Target, rev *Revision, rules [sha256.Size]byte) settledMark {
	m := settledMark{owner: ownerID(t)}
	if e.opts.Events == nil {
		return m
	}
	m.count = e.opts.Events.Count(t.Kind, t.Namespace, t.Name)
	var buf [digestBuffer]byte
	in := digestInput(buf[:0])
	in = in.strings(rev.ID, t.Kind, t.Namespace, t.Name, t.Shard)
	in = append(in, rules[:]...)
	for i := range rev.Phases {
		ph := &rev.Phases[i]
		if len(ph.Digests) != len(ph.Objects) {
			return settledMark{owner: m.owner}
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
func (e *Engine) repeat(m settledMark, previous []convoyv1alpha1.InventoryEntry) (*Result, bool) {
	if !m.ok {
		return nil, false
	}
	e.settled.mu.Lock()
	last, found := e.settled.passes[m.owner]
	e.settled.mu.Unlock()
	if !found || last.mark != m || last.inventory != inventoryDigest(previous) {
		return nil, false
	}
	res := &Result{Phases: slices.Clone(last.phases), Inventory: slices.Clone(previous), Available: true,
		Watched: true, Changes: Changes{Unchanged: last.objects}}
	appliedObjects.WithLabelValues(e.opts.Controller, convoyv1alpha1.InventoryClusterManagement, ssa.UnchangedAction.String()).
		Add(float64(last.objects))
	quietObjects.WithLabelValues(e.opts.Controller).Add(float64(last.objects))
	settledRepeats.WithLabelValues(e.opts.Controller).Inc()
	return res, true
}

// settledOutcome reports whether a pass that returned res and err was settled: it found every
// object quiet and every phase available, pruned nothing and left no entry of previous behind
// (an object being deleted, one it could not delete, a kind no watch sees).
func settledOutcome(res *Result, err error, previous []convoyv1alpha1.InventoryEntry) bool {
	return err == nil && res.Available && res.Watched && res.Pruned == 0 && len(res.Left) == 0 &&
		res.quiet == res.objects && len(res.Inventory) == len(res.applied) && slices.Equal(res.Inventory, previous)
}

// remember keeps the outcome of a settled pass begun at m, evicting any other owner's when
// full: a forgotten owner only does its next pass in full.
func (e *Engine) remember(m settledMark, res *Result, previous []convoyv1alpha1.InventoryEntry) {
	if !m.ok {
		return
	}
	last := settledPass{mark: m, inventory: inventoryDigest(previous), phases: slices.Clone(res.Phases), objects: res.objects}
	e.settled.mu.Lock()
	defer e.settled.mu.Unlock()
	if _, known := e.settled.passes[m.owner]; !known && len(e.settled.passes) >= e.settled.max {
		for owner := range e.settled.passes {
			delete(e.settled.passes, owner)
			break
		}
	}
	e.settled.passes[m.owner] = last
}

// forgetSettled forgets the last settled pass of owner (an ownerID): a pass in full begins, or
// the owner is torn down.
func (e *Engine) forgetSettled(owner string) {
	e.settled.mu.Lock()
	defer e.settled.mu.Unlock()
	delete(e.settled.passes, owner)
}
