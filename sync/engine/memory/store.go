package memory

import (
	"context"
)

// Options configure a Store.
type Options struct {
	// Controller names the controller of the engine, in metrics.
	Controller string
	// Concurrency bounds the parallel lists of a stage in a hosted cluster; default 1.
	Concurrency int
	// Versions, when set, is a watch of the management objects the engine applied: a stage
	// does not read the objects it saw unchanged since they were judged available (quiet.go),
	// and creates without a read the objects it does not hold.
	Versions ResourceVersions
	// Events, when set with Versions, counts the watch's deliveries per owner: a pass that would
	// repeat the owner's last settled pass returns its outcome without looking at any object
	// (settled.go).
	Events OwnerEvents
}

// Store is the memory of one engine. It is safe for concurrent use; a pass visits it at four
// points, in this order (the methods below), and the controllers ask it about watch events.
type Store struct {
	controller  string
	concurrency int
	versions    ResourceVersions
	events      OwnerEvents
	ledger      *ledger
	settled     *settledPasses
}

// New returns an empty memory.
func New(opts Options) *Store {
	quietObjects.WithLabelValues(opts.Controller) // the series exists before the first quiet object
	settledRepeats.WithLabelValues(opts.Controller)
	s := &Store{controller: opts.Controller, concurrency: max(opts.Concurrency, 1), versions: opts.Versions,
		events: opts.Events, ledger: newLedger(defaultLedgerSize), settled: newSettledPasses(defaultSettledOwners)}
	stores.add(s)
	return s
}

// Repeat is asked once before a pass, before it looks at any object: may it repeat the owner's
// settled pass? It returns the pass's mark and, when the pass would repeat that settled pass,
// its outcome (nil otherwise). A pass that is not a repeat forgets the owner's settled pass
// first: whatever it does, even if it panics, that one is past.
func (s *Store) Repeat(p Pass) (*Mark, *Settled) {
	mark := s.markOf(p)
	if settled := s.repeat(mark, p.Previous); settled != nil {
		return mark, settled
	}
	s.forgetSettled(mark.owner)
	return mark, nil
}

// Ask is asked once per stage, after its objects are placed and before any is read: which are
// quiet, which may be applied directly, which are fresh, and at which state each was left. The
// management objects it advises to apply without a read are in flight from then until
// Applied is told of them (AppliedByEngine, HoldsState).
func (s *Store) Ask(ctx context.Context, c Cluster, stage []Desired) []Advice {
	advice := make([]Advice, len(stage))
	seen := s.sightingsOf(ctx, c, stage)
	s.markQuiet(c, stage, advice, seen)
	s.ledger.advise(c, stage, advice, seen)
	s.markFresh(c, stage, advice)
	s.ledger.beginAdvised(c, stage, advice)
	return advice
}

// Applying notes applies in flight of objects a stage found absent and creates without a
// further read; Applied ends them.
func (s *Store) Applying(c Cluster, stage []Desired) {
	s.ledger.begin(c, stage)
}

// Applied is told once per stage what the stage did: the state each object it applied or read
// holds now, or that what the memory knows of one no longer holds (Write.Forget). It ends the
// owner's applies in flight of those objects, and counts the watch events held meanwhile
// that were not of the states recorded. Told of an object to forget, the memory forgets the
// owner's settled pass too: a prune or a teardown deletes objects.
func (s *Store) Applied(c Cluster, writes []Write) {
	if s.ledger.tell(c, writes) {
		s.forgetSettled(c.Owner.id())
	}
}

// Settle is told once after a pass begun at mark how it ended. The verdicts of the phases it
// found available go to the ledger first, and mark what the watch vouches for (settled.go).
// It returns whether the pass is stale: it applied management objects directly while the
// owner's event count moved. A settled pass is remembered for the next one.
func (s *Store) Settle(mark *Mark, o Outcome) (stale bool) {
	for _, j := range o.Judged {
		s.recordVerdicts(mark, j.Cluster, j.Verdicts)
	}
	stale = o.AppliedDirectly && s.movedSince(mark)
	if o.Clean && mark.vouched == o.Objects {
		s.remember(mark, o)
	}
	return stale
}
