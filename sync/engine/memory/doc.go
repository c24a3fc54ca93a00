// Package memory is the sync engine's memory: what sync/engine keeps between passes to save
// requests, and nothing else. The engine reaches it through one interface (engine.Memory) at
// four points of a pass, and the controllers through two questions about watch events; an
// engine without a memory is stateless and does every read and write, as fluxcd/pkg/ssa
// does. The memory is a cache: empty (after a restart, or past its bounds) it costs requests,
// and it never changes an outcome.
//
// It speaks in its own values, which the engine fills in: Owner and Cluster (whose objects,
// where), Key (an object in a cluster), Desired (an object as a pass wants it, digested),
// Observed (a resourceVersion and UID the API server answered), Advice (what a stage may skip),
// Write (what a stage did to an object), Verdict (an object judged available) and Mark (what a
// repeat of a settled pass must match). Its parts:
//
//   - store.go: the Store and the four points, in the order a pass visits them;
//   - ledger.go: per object and cluster, the owner that last applied or read it as desired, the
//     digest of that state, the resourceVersion and UID answered, its verdict, and the applies
//     in flight, whose watch events the controllers drop or hold (AppliedByEngine, HoldsState);
//   - quiet.go: the objects a stage need not read, found from the watch of the management
//     cluster or from lists of a hosted cluster;
//   - settled.go: each owner's last settled pass, which the next pass may repeat.
//
// The terms (ledger, direct apply, untouched, verdict, quiet, vouched, unconfirmed, settled,
// mark, stale) are defined in sync/engine's doc.go.
package memory
