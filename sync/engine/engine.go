package engine

import (
	"time"

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
	// Versions, when set, is a watch of the management objects the engine applied: a pass
	// does not read the objects it saw unchanged since they were judged available (memory_quiet.go).
	Versions ResourceVersions
	// Events, when set with Versions, counts the watch's deliveries per owner: a pass that would
	// repeat the owner's last settled pass returns its outcome without looking at any object
	// (memory_settled.go).
	Events OwnerEvents
}

// Engine applies revisions to targets. It is safe for concurrent use. Between calls it keeps
// only its memory (memory.go) and the scopes of the management cluster's kinds (prepare.go),
// caches that save work and never change an outcome.
type Engine struct {
	opts   Options
	memory *memory
	// scopes are the management cluster's kinds' scopes, asked of its mapper (prepare.go).
	scopes *scopes
}

// AppliedByEngine reports whether a watch event of obj, an object of the management cluster,
// comes from this engine's own apply, so that the controller can drop it: an apply of obj is
// in flight, or obj's resourceVersion is the one the engine's last apply answered.
func (e *Engine) AppliedByEngine(obj client.Object) bool {
	return e.memory.wroteManagement(obj)
}

// HoldsState reports whether a watch event of obj, an object of the management cluster, is of
// the state the engine last applied or read for the owner its ownership labels name, at the
// same resourceVersion and UID. Such an event tells that owner nothing its pass did not see,
// so OwnerEvents need not count it: a pass that applied objects can then be repeated as
// settled (memory_settled.go). An event delivered while the engine applies obj for that owner is
// held until the apply ends; count is called then unless it was of the state the apply
// recorded.
func (e *Engine) HoldsState(obj client.Object, count func()) bool {
	return e.memory.holdsManagement(obj, count)
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
	return &Engine{opts: opts, memory: newMemory(opts), scopes: newScopes()}
}
