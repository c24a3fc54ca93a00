// Package engine applies rendered revisions to their targets: the sync engine under the
// Package and ObjectDeployment controllers (sync/synccontroller).
//
// The Engine takes one Revision (ordered phases of objects plus availability probes), a Target
// (the management cluster namespace of the owner and, for phases of class hosted-cluster, the
// hosted cluster of that namespace) and the owner's previous inventory. Per phase, in order, it:
//
//   - prepares the objects: management objects are defaulted into the owner's namespace and
//     refused elsewhere or when cluster-scoped; every object gets the ownership labels, and
//     management objects the owner's shard (Target.Shard);
//   - refuses collisions: an existing object that is not labelled as this owner's is left
//     alone unless the desired object carries convoy.dev/adopt: "true";
//   - applies with server-side apply (field manager "convoy"), CustomResourceDefinitions and
//     Namespaces first, waiting briefly for CRDs to be established. An object this owner
//     applied before in another state (the engine's ledger, a cache) is applied directly, one
//     request; the others are read first: absent ones are created with one apply each, one
//     whose resourceVersion is still the one the ledger recorded is left alone, and the rest
//     go through fluxcd/pkg/ssa, whose dry-run comparison leaves unchanged objects unwritten;
//     objects are only recreated on an immutable-field error when annotated
//     convoy.dev/force: "true";
//   - judges availability from the live objects it just read or wrote (manifests/probe),
//     without extra requests. A management object that the watch of applied objects
//     (Options.Versions) sees at the resourceVersion at which it was judged available under the
//     same probes is not read at all: nothing changed it since (memory_quiet.go). Nor is a
//     hosted-cluster object that one list of the owner's objects of its kind and namespace,
//     metadata only, shows at that resourceVersion and UID (hosted_quiet.go). Such a quiet object
//     is not even copied: a pass decides where each object lands and its digest from the
//     revision's object, read-only (Phase.Digests, computed once per render, spares encoding
//     it), and copies and labels only what it reads or writes. The revision's objects are
//     shared between owners and never changed.
//
// A pass that ends with every phase available, every object judged at a state the ledger
// holds for the owner (found quiet, or applied or read by the pass), and nothing to prune is
// settled, whether it wrote or not. The engine remembers it, and the owner's next pass with the
// same revision, target and the inventory it wrote repeats its outcome without placing or
// looking up a single object, as long as the watch has delivered no event of the owner's
// objects since it began, other than events of the states the pass itself saw, and, checked
// once from the watch's store, the watch holds each of those states (Options.Events,
// Engine.HoldsState, memory_settled.go).
//
// The first phase that is not available ends the pass with a Waiting error: the controller
// requeues instead of blocking a worker. Once every phase is available, objects of the previous
// inventory that left the revision are pruned in reverse phase order, only while they still
// carry the owner's labels and are not annotated convoy.dev/prune: disabled. Teardown deletes
// an inventory in reverse phase order, phase by phase. Both leave a CustomResourceDefinition or
// a Namespace in place unless it is annotated convoy.dev/prune: enabled, treat an entry whose
// kind no longer exists as gone, and report both (Result.Left, TeardownResult.Left); a
// revision without objects is refused rather than pruning everything, and a Forbidden delete is
// retried with backoff.
//
// Errors are the classified errors of internal/pass: Stalling for what only the user can fix
// (collisions, forbidden targets, invalid objects), Waiting for what clears by itself (probes,
// CRDs being established, an unreachable hosted cluster), anything else is transient.
//
// The exported surface is small: NewEngine, Engine.Sync, Engine.Teardown, DryRun (which
// previews a Sync with server-side dry runs and writes nothing, for `convoy diff --package`) and
// Engine.AppliedByEngine, which lets a controller drop the watch events of the engine's own
// applies, and Engine.HoldsState, which lets an owner's event count skip them.
package engine
