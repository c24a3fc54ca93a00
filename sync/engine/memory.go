package engine

import (
	"context"
	"crypto/sha256"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
)

// Memory is what the engine keeps between passes to save requests: the seam between the
// pipeline, which keeps nothing, and sync/engine/memory (memory.Store implements it). A pass
// reaches it at five points, each once per pass, stage or phase (doc.go), and speaks to it in
// the memory's own values, never in the pipeline's types. Whatever it answers, a pass ends
// with the outcome a stateless engine (Options.Memory unset) would have: it only saves
// requests.
type Memory interface {
	// Repeat is asked before a pass: its mark and, when it would repeat the owner's settled
	// pass, that pass's outcome.
	Repeat(p memory.Pass) (*memory.Mark, *memory.Settled)
	// Ask is asked per stage, once its objects are placed: which are quiet, which may be
	// applied directly or created without a read, and at which state each was left. The
	// objects it advises to apply without a read are in flight until Applied.
	Ask(ctx context.Context, c memory.Cluster, stage []memory.Desired) []memory.Advice
	// Applying is told of objects a stage found absent and creates: in flight until Applied.
	Applying(c memory.Cluster, stage []memory.Desired)
	// Applied is told per stage, at its end, what the stage applied or read, and per prune
	// or teardown what it is about to delete.
	Applied(c memory.Cluster, writes []memory.Write)
	// Judged is told the verdicts of each phase found available.
	Judged(mark *memory.Mark, c memory.Cluster, verdicts []memory.Verdict)
	// Settle is told how the pass begun at mark ended; it says whether the pass is stale.
	Settle(mark *memory.Mark, o memory.Outcome) (stale bool)
	// AppliedByEngine and HoldsState are what the controllers ask (Engine.AppliedByEngine,
	// Engine.HoldsState).
	AppliedByEngine(obj client.Object) bool
	HoldsState(obj client.Object, count func()) bool
}

var _ Memory = (*memory.Store)(nil)

// stateless is the memory of an engine without one: it advises nothing and keeps nothing, so
// every object is read, compared by a dry run and written if it differs, as fluxcd/pkg/ssa's
// ResourceManager does.
type stateless struct{}

func (stateless) Repeat(memory.Pass) (*memory.Mark, *memory.Settled) { return nil, nil }

func (stateless) Ask(_ context.Context, _ memory.Cluster, stage []memory.Desired) []memory.Advice {
	return make([]memory.Advice, len(stage))
}

func (stateless) Applying(memory.Cluster, []memory.Desired) {}

func (stateless) Applied(memory.Cluster, []memory.Write) {}

func (stateless) Judged(*memory.Mark, memory.Cluster, []memory.Verdict) {}

func (stateless) Settle(*memory.Mark, memory.Outcome) bool { return false }

func (stateless) AppliedByEngine(client.Object) bool { return false }

func (stateless) HoldsState(client.Object, func()) bool { return false }

// The pipeline's side of the seam: the memory's values made from the pipeline's types.

// memoryCluster is c as the memory sees it, judged under rules.
func (c *cluster) memoryCluster(rules [sha256.Size]byte) memory.Cluster {
	return memory.Cluster{Owner: c.target.owner(), Hosted: c.hosted(), Reader: c.client, Rules: rules, Previous: c.previous}
}

// desiredOf is the object of s as the memory sees it.
func desiredOf(s *desiredState) memory.Desired {
	return memory.Desired{GVK: s.obj.GroupVersionKind(), Namespace: s.namespace, Name: s.obj.GetName(),
		Shard: s.shard, Digest: s.digest, Known: s.ok}
}

// observedOf is the state of live as the memory sees it; zero for nil.
func observedOf(live *unstructured.Unstructured) memory.Observed {
	if live == nil {
		return memory.Observed{}
	}
	return memory.Observed{ResourceVersion: live.GetResourceVersion(), UID: live.GetUID()}
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

// verdictsOf is what the memory is told of a phase found available: each object's verdict.
func verdictsOf(c *cluster, out *phaseOutcome) []memory.Verdict {
	verdicts := make([]memory.Verdict, len(out.objects))
	for i, obj := range out.objects {
		v := memory.Verdict{GVK: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if v.Quiet = out.observer.isQuiet(obj); !v.Quiet {
			live := out.observer.live(obj)
			v.Live, v.Owned = observedOf(live), live != nil && c.owns(live)
		}
		verdicts[i] = v
	}
	return verdicts
}

// forgetting is what the memory is told of the objects of entries about to be deleted or
// released: to forget them. An entry that names nothing has no object.
func forgetting(entries []convoyv1alpha1.InventoryEntry) []memory.Write {
	writes := make([]memory.Write, 0, len(entries))
	for _, entry := range entries {
		if obj, err := metadataFor(entry); err == nil {
			writes = append(writes, memory.Write{Forget: true, Desired: memory.Desired{
				GVK: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}})
		}
	}
	return writes
}
