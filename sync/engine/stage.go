package engine

import (
	"context"

	"github.com/fluxcd/pkg/ssa"

	"github.com/convoy-gitops/convoy/sync/engine/memory"
)

// A stage is where the pipeline meets its memory: it asks about the placed objects before it
// reads or writes any (Memory.Ask) and tells what it did at its end (Memory.Applied), the
// second and third points of the seam (doc.go).

// applyStage places the objects of states and asks the memory about them (ask), then prepares,
// reads, checks ownership of and applies those that are not quiet, and tells the memory what it
// did (tell). Quiet ones are neither copied nor read (nothing changed them since they were
// judged available); objects the memory says this owner applied in another state are applied
// directly; objects nothing says exist are created without a read (create.go); the others are
// read first, and those found as this owner left them are not written.
func (e *Engine) applyStage(ctx context.Context, c *cluster, ph *Phase, states []desiredState, out *phaseOutcome) error {
	if len(states) == 0 {
		return nil
	}
	p, err := e.place(c, ph, states)
	if err != nil {
		return err
	}
	stage := e.ask(ctx, c, states, out)
	completed := false
	defer func() { e.tell(stage, states, out, completed) }() // even on a panic: applies in flight end
	if err := e.prepare(c, ph, states, p); err != nil {
		return err
	}
	if err := e.writeStage(ctx, c, ph, states, out); err != nil {
		return err
	}
	completed = true
	e.countQuiet(c, states, out)
	return nil
}

// ask asks the memory about the placed objects of a stage, once, and follows its advice: it
// marks the quiet objects, those to apply directly and those to create without a read. It
// returns what it asked, for tell. out is unwatched from then on unless the watch tells of
// every object of the stage (watched).
func (e *Engine) ask(ctx context.Context, c *cluster, states []desiredState, out *phaseOutcome) []memory.Desired {
	out.unwatched = out.unwatched || !e.watched(c, states)
	stage := make([]memory.Desired, len(states))
	for i := range states {
		stage[i] = desiredOf(&states[i])
	}
	for i, a := range e.memory.Ask(ctx, out.at, stage) {
		s := &states[i]
		s.quiet, s.uid, s.createOnly, s.recorded = a.Quiet, a.UID, a.Fresh, a.Recorded
		if s.quiet {
			out.observer.markQuiet(s.obj)
		}
	}
	return stage
}

// countQuiet counts the quiet objects of a stage that completed as unchanged: they are as they
// were when judged available. A stage that did not complete counts none, as a stateless pass,
// which reads them, would not.
func (e *Engine) countQuiet(c *cluster, states []desiredState, out *phaseOutcome) {
	quiet := 0
	for i := range states {
		if states[i].quiet {
			quiet++
		}
	}
	if quiet > 0 {
		out.changes.Unchanged += quiet
		appliedObjects.WithLabelValues(e.opts.Controller, c.name, ssa.UnchangedAction.String()).Add(float64(quiet))
	}
}

// watched reports whether every object of states is of a kind the watch of the management
// cluster has synced: a change of any of them will then make an event.
func (e *Engine) watched(c *cluster, states []desiredState) bool {
	if len(states) == 0 {
		return true
	}
	if e.opts.Watch == nil || c.hosted() {
		return false
	}
	for _, s := range states {
		// The watch selects the owner's shard: an object whose manifest names another is not in it.
		if s.shard != c.target.Shard || !e.opts.Watch.Synced(s.obj.GroupVersionKind()) {
			return false
		}
	}
	return true
}

// tell tells the memory, once at the end of a stage it asked about, what the stage did to each
// object that was not quiet. A stage that completed tells the state each holds now, as the
// observer last saw it; one that did not, only the answers of its direct applies, and to
// forget the objects a direct apply refused or the stage deleted again: what it read may not
// be what it wanted.
func (e *Engine) tell(stage []memory.Desired, states []desiredState, out *phaseOutcome, completed bool) {
	writes := make([]memory.Write, 0, len(states))
	for i := range states {
		s := &states[i]
		if s.quiet {
			continue
		}
		w := memory.Write{Desired: stage[i]}
		key := keyOf(s.obj)
		switch {
		case completed:
			w.Live = observedOf(out.observer.live(s.obj))
		case out.forgotten[key]:
			w.Forget = true
		case out.answered[key]:
			w.Live = observedOf(out.observer.live(s.obj))
		}
		writes = append(writes, w)
	}
	e.memory.Applied(out.at, writes)
}
