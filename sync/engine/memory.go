package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/sync/engine/memory"
)

// Memory is what the engine keeps between passes to save requests: the seam between the
// pipeline, which keeps nothing, and sync/engine/memory (memory.Store implements it). A pass
// reaches it at four points, each once per pass or stage (doc.go), and speaks to it in
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
	// Settle is told how the pass begun at mark ended, with the verdicts of each phase found
	// available; it says whether the pass is stale.
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

func (stateless) Settle(*memory.Mark, memory.Outcome) bool { return false }

func (stateless) AppliedByEngine(client.Object) bool { return false }

func (stateless) HoldsState(client.Object, func()) bool { return false }

// The memory's values made from the pipeline's types. Each step makes the rest of what it tells
// the memory where it tells it: the stage (stage.go), the judge (judge.go), the prune (prune.go).

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
