// Package rolloutcontroller is the HostedClusterPackage controller: it feeds the pure planner of
// package rollout with what the manager's cache holds (the HostedClusterPackage, every
// HostedCluster, the Packages it owns, its ControllerRevisions, its approvals and its
// GitSource's artifact), applies the resulting Plan, and writes the status only when it changed.
//
// A pass runs these steps, the first error stopping it:
//
//  1. shards: the shards in force (Sharding: a list, or the last valid list of a ConfigMap the
//     controller watches), and the condition ShardsReady naming each shard holding Packages whose
//     replica holds no leader election lease (shardLeaseWatch re-plans when one is taken or lost).
//  2. source: the update revision is (template spec, commit of the GitSource's artifact).
//  3. revisions: each revision is an apps/v1 ControllerRevision "<hcpkg>-<hash>" (64 bits; one
//     a release before named with 40 bits keeps its name while its commit and template stay), in the
//     GitSource's namespace, owned by the HostedClusterPackage and labelled
//     convoy.dev/hostedclusterpackage; its data holds the commit and the template. A revision
//     whose ControllerRevision carries rollout.RejectedAnnotation is rejected.
//  4. input: the planner's input, with the PartitionApprovals (and legacy RolloutApprovals)
//     whose spec.hostedClusterPackage names the HostedClusterPackage (a cache index; an approval
//     coming or going starts a pass; rollout.Approval.Approves says which count) and the results of the checks in status.partitions[].checks.
//  5. checks (check_runner.go): the checks of the spec (spec.checks, partition.policies[].checks)
//     are compiled once per generation through rollout/checks's table of kinds, which also names
//     the Secret and the timeout of each; one that does not compile stalls with InvalidSpec
//     naming the check, its field and the rule, before any I/O. rollout.DueChecks says which are
//     due; the Secrets their secretRef names are read (one GET each, never cached; a missing
//     Secret or key makes the evaluation inconclusive, naming the Secret, never a pass). The
//     pass never waits for an evaluation: it records those that finished, with DueCheck.Record,
//     into the input, and so into status.partitions[].checks, and starts the due checks not
//     under way in goroutines of their own (checkRuns), at most CheckConcurrency per
//     HostedClusterPackage, each within its kind's timeout (an HTTP check's timeoutSeconds,
//     else 10s); the planner wakes the HostedClusterPackage at least every second while its checks
//     run. A slow or silent server so holds no reconcile worker. A template that does not
//     render with the partition stalls with InvalidSpec.
//  6. plan: rollout.Compute, with the HostedClusterPackage's rollout.Memo, which its passes
//     share: a pass compares with the revisions' templates only the Packages that changed since
//     the last. A spec it refuses (an invalid selector, budget or window) stalls with
//     InvalidSpec.
//  7. reject: when the Plan says Reject, one patch sets rollout.RejectedAnnotation (the reason)
//     on the update revision's ControllerRevision, before any Package moves back.
//  8. status: the Plan is written into the status (status.gate, status.rejectedRevision
//     included), and what it changes since the status the pass started from is announced, each
//     once, by an event and a log line: "Partition started", "Partition completed", "Rollout
//     gated" (event Gated, when a gate starts holding the rollout; a rollout stopped by
//     failures has a Warning event only, as "Rollout stalled" tells it), "Revision rejected"
//     (a Warning event RevisionRejected), "Package missed its progress deadline", "Check
//     passed" (event CheckPassed), "Check failed" (a Warning event CheckFailed, once per check
//     and revision), "Check inconclusive" (a Warning event CheckInconclusive, when a check
//     becomes Inconclusive), "Rollout completed". A failed check has no HostedCluster: its
//     messages name the partition and the check. Warnings have a budget of their own (internal/eventrec), so the progress of
//     many clusters never silences the stop.
//  9. apply: Packages are created and updated with server-side apply (field manager
//     "convoy-rollout"), owned by the HostedClusterPackage, labelled, stamped with
//     rollout.SpecUpdatedAtAnnotation, and given convoy.dev/shard when sharding; Packages of
//     targets that are gone are deleted. Each write is logged: "Created Package", "Updated
//     Package", "Deleted Package".
//  10. history: revisions beyond revisionHistoryLimit are pruned, never the current or update
//     revision nor one a Package still uses.
//
// The log lines are at the default verbosity, with the keys "package" (namespace/name),
// "cluster" (the HostedCluster), "partition", "check", "revision" (the ControllerRevision),
// "commit", "value" (what a check saw) and "reason"; a pass that decides nothing logs nothing.
//
// A deferred function records the metrics, logs "Rollout stalled" when the rollout newly
// stalls, hands the outcome to the commit status reporter when the GitSource has
// spec.commitStatus (rollout/commitstatus: pending, success or failure on the update
// revision's commit, sent beside the rollout, never waited for), and hands the outcome to the status finalizer of internal/pass: Ready=True once
// the rollout completed, Ready=False with Reconciling=True while it progresses, is paused or is
// held by a gate (reason Gated, the gate in the message), Stalled=True while failed Packages
// stop it or a check failed (RolloutBlocked; the message names the check, what it asks and
// the value it saw), or once its update revision is rejected (RolloutRejected). The next
// pass comes from watches, or at Plan.RequeueAfter (a deadline, a soak's end, a window's
// opening, a check's next evaluation).
//
// Before planning, a pass checks that the cache shows the writes of the previous pass; if not,
// it waits for the Package watch instead, so that a budget slot is never spent twice.
//
// Package events are batched (packageEventDelay): the first after a quiet spell starts a pass
// at once, the next wait until 250 ms after the last pass started, a second when its plan left
// only the Packages' progress to wait for (every target pinned). Since a pass reads and plans
// the whole fleet, these grow in proportion beyond 1,000 HostedClusters or Packages, up to 2 s
// and 10 s: the passes per rollout then stay about as many at 5,000 clusters as at 1,000,
// instead of growing with the fleet. Other events (HostedClusters, the GitSource, approvals)
// start a pass at once.
package rolloutcontroller
