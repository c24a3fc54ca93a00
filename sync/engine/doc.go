// Package engine applies rendered revisions to their targets with server-side apply: the sync
// engine under the Package and ObjectDeployment controllers (sync/synccontroller).
//
// # The pipeline
//
// Engine.Sync takes one Revision (ordered phases of objects plus availability probes), a
// Target (the management cluster namespace of the owner and, for phases of class
// hosted-cluster, the hosted cluster of that namespace) and the owner's previous inventory. A
// revision goes through these steps, one file each; each calls the next, so a pass goes down
// the list and back up it:
//
//   - sync.go: Sync asks the memory whether the pass would repeat the owner's settled pass, and
//     returns its outcome if so (the seam, below). Otherwise it refuses what no pass could
//     apply (a revision without objects, which would prune everything; an owner name that is
//     no label value; hosted-cluster phases without a hosted cluster; management objects of
//     another namespace), then runs the phases in order and, once every phase is available,
//     the prune.
//   - phase.go: a phase is split into two stages, its CustomResourceDefinitions and Namespaces
//     first and the rest second, applied one after the other; between them the pass waits
//     briefly for the CustomResourceDefinitions to be established. The phase is then judged.
//   - stage.go: a stage is placed, asked about (the memory says which objects are quiet, which
//     may be applied without a read), prepared and applied, and what it did is told.
//   - prepare.go: each object of a stage is placed (management objects in the owner's
//     namespace, refused elsewhere or when cluster-scoped; hosted objects where the manifest
//     says) and digested without being copied; only the objects the pass will read or write
//     are copied and given the ownership labels, and management objects the owner's shard
//     (Target.Shard). The revision's objects are shared between owners and never changed.
//   - apply.go: the objects that are not quiet are applied with server-side apply (field
//     manager "convoy"). An object the owner applied before in another state is applied
//     directly, one request; one nothing says exists is created without a read (create.go);
//     the others are read first (the observer), and an existing object that is not labelled as
//     this owner's is refused unless the desired object carries convoy.dev/adopt: "true" or
//     the only tools holding it are those the owner adopts from (Target.AdoptFrom: Flux,
//     Package Operator); those are taken over first (takeover.go).
//     Absent ones are created with one apply each, one found as the owner left it is not
//     written, and the rest go through fluxcd/pkg/ssa, whose dry-run comparison leaves
//     unchanged objects unwritten. Objects are only recreated on an immutable-field error when
//     annotated convoy.dev/force: "true".
//   - judge.go: availability is judged from the live objects the pass just read or wrote
//     (manifests/probe), without extra requests; quiet objects keep their verdict. The first
//     phase that is not available ends the pass with a Waiting error: the controller requeues
//     instead of blocking a worker.
//   - prune.go: once every phase is available, objects of the previous inventory that left
//     the revision are deleted in reverse phase order, only while they still carry the owner's
//     labels and are not annotated convoy.dev/prune: disabled.
//   - teardown.go: Engine.Teardown deletes an inventory in reverse phase order, phase by
//     phase, waiting for each to be gone.
//
// Prune and teardown leave a CustomResourceDefinition or a Namespace in place unless it is
// annotated convoy.dev/prune: enabled, treat an entry whose kind no longer exists as gone, and
// report both (Result.Left, TeardownResult.Left); a Forbidden delete is retried with backoff.
// A pass that wrote objects, a prune that deleted some and a teardown pass log one line each
// ("Applied revision", "Pruned objects", "Tore down") with the logger of the context; passes
// that change nothing log nothing.
//
// A pass enters each of these files at most twice (pipeline_trace_test.go traces a few passes
// and counts): sync.go calls phase.go once and prune.go once; phase.go calls stage.go and
// judge.go; stage.go calls prepare.go twice (place, then prepare, around the memory's advice)
// and apply.go once. Helpers of another file whose own calls stay in it (a key, a label, a
// live state the observer holds) are read where they are called.
//
// # The seam
//
// The pipeline keeps nothing between passes: what the engine keeps is its memory
// (Options.Memory, package sync/engine/memory), reached through one interface, Memory
// (memory.go), at four points, each visited once per pass or stage, by the step that makes
// what it tells the memory. A pass that applies a revision reaches it from four places in the
// pipeline (a stage's calls are made from the same place for every stage), from a fifth when
// it prunes, and from a sixth when a stage creates objects its read found absent;
// pipeline_trace_test.go counts them on a few passes:
//
//  1. may this pass repeat a settled one (Memory.Repeat, by Sync, before it looks at any
//     object): if so, Sync returns the settled pass's outcome;
//  2. which objects of a stage are quiet, may be applied directly or created without a read,
//     and at which state each was left (Memory.Ask, by applyStage in stage.go, once the stage
//     is placed);
//  3. what the stage applied or read (Memory.Applied, by applyStage at the stage's end, even
//     when it fails; by prune and teardown, of what they are about to delete: prune.go);
//  4. what the pass judged and settled (Memory.Settle, by Sync, after the pass, with the
//     verdicts judge.go made of each phase syncPhase found available, in phase.go): the
//     memory notes the verdicts, remembers a settled pass, and says whether the pass is stale
//     (Result.Stale).
//
// Memory.Applying, told of objects a stage found absent and creates, belongs to the third
// point. The memory speaks in its own values (the object's key and desired digest, the state
// the API server answered, the verdict, the mark of a pass), never in the pipeline's types, and
// its answers only let the pipeline skip requests: a nil memory gives a stateless engine that
// reads, dry-runs and writes every object, as fluxcd/pkg/ssa does, and ends every pass with the
// same outcome (differential_test.go runs both through random histories). The controllers ask
// the memory through Engine.AppliedByEngine, which lets them drop the watch events of the
// engine's own applies, and Engine.HoldsState, which lets an owner's event count skip the
// events of states a pass saw; a stateless engine answers no to both.
//
// Which file holds what, besides the steps: sync.go also holds the Result, the digest of a
// revision's probes, the inventory entry of an applied object and the two sides of a target
// (cluster, and the cluster as the memory sees it), which every step works on; phase.go what
// applying a phase did (phaseOutcome); prepare.go the ownership labels and the scopes of the
// management cluster's kinds (scopes), which place and prepare ask; apply.go the applies and
// the ownership check; takeover.go the takeover of objects another tool applied (one JSON
// patch that moves the ownership marks and the tool's managed fields to this owner) and the
// refusal of objects whose old tool applies them again (TakeoverContested); claims.go who holds
// a live object, read from the marks each tool leaves; create.go the create-only apply of objects nothing says exist (an
// install's), one request each, and its undoing on a collision; observer.go the client the
// applies go through (the observer: one read per object, every answer seen) and the keys of
// objects in a pass (objectKey); memory.go the seam (Memory), the stateless memory and the
// values of an object and its state as the memory sees them; prune.go the inventory entries
// (grouping, merging, naming them and the keys of their objects), which teardown.go and
// preview.go use too. engine.go holds Options, the Engine and what the controllers ask it;
// revision.go the inputs (Revision, Phase, Target); errors.go the classification of errors,
// the one place that decides what is Stalling (only the user can fix it: collisions,
// contested takeovers, forbidden targets, invalid objects), Waiting (clears by itself: probes, CRDs being
// established, an unreachable hosted cluster) or transient, as internal/pass defines them;
// preview.go DryRun, which previews a Sync with server-side dry runs and writes nothing
// (`convoy diff --package`); metrics.go the metrics.
//
// # The memory
//
// The memory (sync/engine/memory) is a cache that saves requests and never changes an outcome:
// empty after a restart, or past its bounds, it costs requests. Its parts: the ledger of what
// each owner applied or read, with its verdicts and the applies in flight; the quiet objects of
// both clusters; the settled passes. Besides it the engine keeps only the scopes of the
// management cluster's kinds (prepare.go), which place quiet objects without asking the REST
// mapper.
//
// # Glossary
//
//   - ledger: per object and cluster, the owner that last applied or read it as desired, the
//     digest of that desired state, the resourceVersion and UID the API server answered, and
//     the digest of the probes it was last judged available under (its verdict).
//   - direct apply: the apply of an object the ledger says this owner applied in another state,
//     and that the watch of the management cluster, or a list of the hosted cluster, last saw
//     at the state that apply left: no read and no dry-run, with the recorded UID as a
//     precondition. An object seen otherwise (changed, deleted, replaced by one that may not
//     be this owner's) is read and its ownership checked, as a stateless pass would.
//   - untouched: an object read at the resourceVersion and UID the ledger holds for its owner
//     and desired state: nobody changed it, so it is not written.
//   - verdict: that an object, at a resourceVersion, was judged available under a digest of
//     probes (the rules of the revision).
//   - quiet: an object a pass neither reads nor copies, because it is where its verdict was
//     taken: the watch of the management cluster (memory.Options.Versions) still sees that
//     resourceVersion, or one list of the owner's objects of its kind and namespace in a
//     hosted cluster, metadata only, shows that resourceVersion and UID.
//   - scope: whether a kind of the management cluster is namespaced, remembered to place
//     quiet objects without asking the REST mapper; what a pass reads or writes is placed by
//     the mapper's current answer.
//   - vouched: an object the watch of the management cluster tells every change of: a quiet
//     management object, or one judged at a state the ledger holds for its owner, once the
//     watch holds that state. Nothing in a hosted cluster is vouched for.
//   - unconfirmed: the states of vouched objects that the first repeat of a settled pass
//     checks the watch's store for.
//   - settled: a pass that ended with every phase available, every object vouched for, nothing
//     pruned and nothing of the previous inventory left behind. The owner's next pass with the
//     same revision, target and inventory repeats its outcome without placing or looking up
//     an object, as long as the owner's event count (memory.Options.Events) has not moved since the
//     settled pass began and the watch holds the unconfirmed states.
//   - mark: what a repeat must match: the owner's event count, read before the pass looks at
//     any object, and the digest of the revision, its probes and the target.
//   - frontier: the rollout's word (rollout/planner.go) for its first partition that is not
//     done, not the engine's. Its counterpart here is the first phase that is not available:
//     the phases before it are applied and judged, it and those after it wait ("waiting for
//     phase …"), and nothing is pruned until a pass gets past every phase.
//   - stale: a pass that applied management objects directly while the owner's event count
//     moved (Result.Stale): the controller follows it with another pass soon.
package engine
