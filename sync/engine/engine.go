package engine

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Defaults of Options.
const (
	// DefaultConcurrency is the default of Options.Concurrency.
	DefaultConcurrency = 4
	// DefaultProbeInterval is the default of Options.ProbeInterval.
	DefaultProbeInterval = 5 * time.Second
	// DefaultEstablishTimeout is the default of Options.EstablishTimeout.
	DefaultEstablishTimeout = 10 * time.Second
	// DefaultDeleteInterval is the default of Options.DeleteInterval.
	DefaultDeleteInterval = 2 * time.Second
)

// Options tune an Engine.
type Options struct {
	// Controller names the controller using the engine, in metrics.
	Controller string
	// Concurrency bounds the parallel reads and dry-runs of one phase; default 4. Direct applies
	// of one phase are sequential: the owners applied in parallel keep the API server busy.
	Concurrency int
	// ProbeInterval is the requeue delay while a phase is not available; default 5s.
	ProbeInterval time.Duration
	// EstablishTimeout bounds how long one pass waits for the CustomResourceDefinitions of a
	// phase to be established before returning a Waiting error; default 10s.
	EstablishTimeout time.Duration
	// DeleteInterval is the requeue delay while a teardown waits for objects to go; default 2s.
	DeleteInterval time.Duration
	// Watch, when set, tells which kinds of the management cluster the controller watches: a
	// pass whose objects are all of such kinds says so (Result.Watched), and no timer is needed
	// to notice a change of them.
	Watch Watch
	// Memory, when set, is what the engine keeps between passes to save requests
	// (sync/engine/memory): without it the engine is stateless and does every read and write.
	// It must not be a nil pointer in a non-nil interface.
	Memory Memory
}

// Watch tells which kinds of the management cluster a watch of the controller holds.
type Watch interface {
	// Synced reports whether the objects of kind gvk are watched and the watch has synced: from
	// then on every change of one of them is an event.
	Synced(gvk schema.GroupVersionKind) bool
}

// Engine applies revisions to targets. It is safe for concurrent use. Between calls it keeps
// only its memory (Options.Memory, reached through memory.go) and the scopes of the management
// cluster's kinds (prepare.go), caches that save work and never change an outcome.
type Engine struct {
	opts   Options
	memory Memory
	// scopes are the management cluster's kinds' scopes, asked of its mapper (prepare.go).
	scopes *scopes
}

// AppliedByEngine reports whether a watch event of obj, an object of the management cluster,
// comes from this engine's own apply, so that the controller can drop it: an apply of obj is
// in flight, or obj's resourceVersion is the one the engine's last apply answered.
func (e *Engine) AppliedByEngine(obj client.Object) bool {
	return e.memory.AppliedByEngine(obj)
}

// HoldsState reports whether a watch event of obj, an object of the management cluster, is of
// the state the engine last applied or read for the owner its ownership labels name, at the
// same resourceVersion and UID. Such an event tells that owner nothing its pass did not see,
// so OwnerEvents need not count it: a pass that applied objects can then be repeated as
// settled (sync/engine/memory). An event delivered while the engine applies obj for that owner is
// held until the apply ends; count is called then unless it was of the state the apply
// recorded.
func (e *Engine) HoldsState(obj client.Object, count func()) bool {
	return e.memory.HoldsState(obj, count)
}

// NewEngine returns an Engine with opts, defaulted.
func NewEngine(opts Options) *Engine {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	if opts.EstablishTimeout <= 0 {
		opts.EstablishTimeout = DefaultEstablishTimeout
	}
	if opts.DeleteInterval <= 0 {
		opts.DeleteInterval = DefaultDeleteInterval
	}
	mem := opts.Memory
	if mem == nil {
		mem = stateless{}
	}
	return &Engine{opts: opts, memory: mem, scopes: newScopes()}
}
