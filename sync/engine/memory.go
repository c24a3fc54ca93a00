package engine

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// memory is the engine's performance memory: everything it keeps between passes. The
// pipeline (sync.go to teardown.go) asks it what a pass may skip and tells it what a pass
// did; nothing else reads or writes its parts. It is a cache: an empty memory (after a
// restart, or past its bounds) costs requests and never changes an outcome. Its terms are
// defined in doc.go; its parts are
//
//   - the ledger of what each owner applied or read (memory_ledger.go);
//   - the scopes of the management cluster's kinds (below);
//   - the quiet objects, found from the watch of the management cluster or from lists of a
//     hosted cluster, with the verdicts that make them so (memory_quiet.go);
//   - each owner's last settled pass (memory_settled.go).
type memory struct {
	controller  string
	concurrency int
	versions    ResourceVersions
	events      OwnerEvents
	ledger      *ledger
	scopes      *scopes
	settled     *settledPasses
}

// newMemory returns an empty memory for an engine of opts.
func newMemory(opts Options) *memory {
	quietObjects.WithLabelValues(opts.Controller) // the series exists before the first quiet object
	settledRepeats.WithLabelValues(opts.Controller)
	return &memory{controller: opts.Controller, concurrency: opts.Concurrency, versions: opts.Versions,
		events: opts.Events, ledger: newLedger(defaultLedgerSize), scopes: newScopes(),
		settled: newSettledPasses(defaultSettledOwners)}
}

// What a pass asks the memory, in the order it asks: Sync asks markOf and repeat
// (memory_settled.go); place and prepare ask isNamespaced; applyStage asks watched and
// markQuiet (memory_quiet.go), then directApplies; applyRead asks untouched.

// isNamespaced reports whether obj's kind is namespaced in c: the mapper's current answer
// when fresh is set, else the scope remembered if there is one.
func (m *memory) isNamespaced(c *cluster, obj *unstructured.Unstructured, fresh bool) (bool, error) {
	return m.scopes.isNamespaced(c, obj, fresh)
}

// directApplies splits states into those this owner applied before in another state, which
// may be applied without a read, and the rest.
func (m *memory) directApplies(c *cluster, states []desiredState) (direct, rest []desiredState) {
	return m.ledger.changedSinceApplied(c, states)
}

// untouched reports whether live is, unchanged since, what this owner applied as desired: it
// need not be written.
func (m *memory) untouched(c *cluster, desired desiredState, live *unstructured.Unstructured) bool {
	return m.ledger.untouched(c, desired, live)
}

// What a pass tells the memory: applyOne calls applying around each direct apply;
// applyStage calls recordApplied; syncPhase calls recordVerdicts (memory_quiet.go) for an
// available phase; Sync calls forgetSettled, then remember for a settled pass; prune and
// Teardown call forgetAll before deleting, and Teardown forgetSettled.

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

// forgetAll drops what the memory knows of the objects of entries, about to be deleted or
// released.
func (m *memory) forgetAll(c *cluster, entries []convoyv1alpha1.InventoryEntry) {
	for _, entry := range entries {
		if obj, err := metadataFor(entry); err == nil {
			m.ledger.forget(c, objectKey{gk: obj.GroupVersionKind().GroupKind(), namespace: obj.GetNamespace(), name: obj.GetName()})
		}
	}
}

// What the controllers ask, through Engine.AppliedByEngine and Engine.HoldsState.

// wroteManagement reports whether a watch event of obj comes from the engine's own apply.
func (m *memory) wroteManagement(obj client.Object) bool { return m.ledger.wroteManagement(obj) }

// holdsManagement reports whether a watch event of obj is of a state a pass of its owner saw.
func (m *memory) holdsManagement(obj client.Object, count func()) bool {
	return m.ledger.holdsManagement(obj, count)
}

// scopes remembers which kinds of the management cluster are namespaced. Asking the REST
// mapper merges the mappings of every API group and allocates a few KiB each time: once per
// object per pass, it was most of what a settled Package's pass allocated.
//
// A remembered answer can be stale: a CustomResourceDefinition deleted and created again with
// the other scope, which the mapper learns on its next reload. So remembered answers only
// serve to find the quiet objects of a pass, which are neither read nor written (an object
// whose kind changed scope is not where the watch saw it, so it is not quiet); every object a
// pass reads or writes, and every object a remembered answer would refuse, is placed with
// the mapper's current answer, which is remembered in turn. Errors are never remembered. The
// kinds of the management cluster bound the map. Hosted clusters come and go, and no watch
// tells when their objects change: they always ask their own mapper.
type scopes struct {
	mu         sync.RWMutex
	namespaced map[schema.GroupVersionKind]bool
}

func newScopes() *scopes {
	return &scopes{namespaced: map[schema.GroupVersionKind]bool{}}
}

// isNamespaced reports whether obj's kind is namespaced in c: the mapper's current answer
// when fresh is set, else the one remembered if there is one.
func (s *scopes) isNamespaced(c *cluster, obj *unstructured.Unstructured, fresh bool) (bool, error) {
	if c.hosted() {
		return c.client.IsObjectNamespaced(obj)
	}
	gvk := obj.GroupVersionKind()
	if !fresh {
		s.mu.RLock()
		namespaced, ok := s.namespaced[gvk]
		s.mu.RUnlock()
		if ok {
			return namespaced, nil
		}
	}
	namespaced, err := c.client.IsObjectNamespaced(obj)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	s.namespaced[gvk] = namespaced
	s.mu.Unlock()
	return namespaced, nil
}
