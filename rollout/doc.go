// Package rollout plans the progressive rollout of a HostedClusterPackage: which Packages to
// create, update or delete so that a new revision spreads across the fleet of HostedClusters
// partition by partition, within a budget of unavailable Packages, and what the
// HostedClusterPackage status says about it.
//
// The planner is a pure function. Compute reads a snapshot of the world (the
// HostedClusterPackage, every HostedCluster, the Packages it owns, its revisions and the clock)
// and returns a Plan; it holds no state between calls, reads no clock and calls no API server.
// The one exception changes no answer: Input.Memo lets a plan reuse what the previous plan of
// the same HostedClusterPackage concluded of the Packages that have not changed since (which
// revision each spec matches), so that a pass compares templates in proportion to what
// changed, not to the fleet. Planning with and without it gives the same plan.
// Everything the rollout needs to remember lives on the objects themselves: the revision a
// Package is pinned to is its spec, and the moment its spec last changed is the
// SpecUpdatedAtAnnotation that the controller stamps on every create and update.
//
// Rules. They are numbered, and comments, tests and docs cite them as "rule N of package
// rollout". Every change to a live cluster (create, update, delete) goes through spec.paused,
// the budget and the partition barrier; only what cannot hurt a cluster, or what HyperShift
// must not wait for, is exempt:
//
//  1. Revisions: a revision is the pair of the template's spec and the commit its GitSource
//     resolved. The controller stores each as an apps/v1 ControllerRevision "<hcpkg>-<hash>"
//     owned by the HostedClusterPackage, which status.currentRevision and status.updateRevision
//     name, as a DaemonSet's do; a new commit or a template edit makes a new update revision.
//     The planner reads them as Input.CurrentRevision (the revision of the last completed
//     rollout, none before the first) and Input.UpdateRevision (the one it rolls out).
//  2. Targets: the HostedClusters matching the selector. A target whose HostedCluster is not
//     Available, is being deleted, whose Package was paused by hand, or whose HCP namespace
//     holds a Package of the same name that the HostedClusterPackage does not own (a conflict)
//     is skipped: it keeps what it has, holds no partition barrier and consumes no budget, and
//     status counts and names it (status.skippedPackages, status.skipped, per partition too). A
//     foreign Package is never changed; there is no adoption.
//  3. Packages: each target has one Package, named after the HostedClusterPackage, in the
//     target's HCP namespace ("<namespace>-<name with '.' replaced by '-'>"), owned by the
//     HostedClusterPackage and labelled convoy.dev/hostedclusterpackage, its spec.revision
//     pinned to the commit of the revision it has. The planner says which Packages to create,
//     update and delete; the controller applies them.
//  4. Partitions: partitions come from a label, in static or natural alphanumeric order, with
//     the implicit "unknown" partition last. In a static order "*" places every unlisted value,
//     as one partition; without it unlisted values join "unknown". A partition is done when
//     every eligible target is on the update revision and has progressed for minReadySeconds; no
//     later partition is touched before (but see rule 20, failure tolerance).
//  5. Budget: the budget is maxUnavailable (an integer, or a percentage of eligible targets
//     rounded down, at least 1). It is held by every eligible Package that is unavailable,
//     updating or installing (not progressed for minReadySeconds yet) or being deleted, and by
//     every Package of a deselected, live HostedCluster being deleted.
//  6. Order of changes: updating an unavailable or updating Package costs nothing, so they go
//     first in reached partitions; then deselected Packages are deleted, then missing Packages
//     are created and available ones updated in rollout order while slots are free.
//  7. New targets: a target without a Package gets the revision its partition has reached:
//     the update revision once the rollout reached it, else the current one (none before the
//     first rollout completes, so the first rollout creates Packages partition by partition).
//     Creating it at the completed current revision is free (a cluster joining a settled fleet);
//     creating it at a revision still rolling out takes a slot, like an update, so a broken
//     first install reaches maxUnavailable clusters, not a partition.
//  8. Deletions: the Package of a HostedCluster that is gone, or that is being deleted and no
//     longer selected, is deleted at once, even under spec.paused, at no cost. A selected
//     HostedCluster being deleted is skipped: its Package stays until the garbage collector or
//     the HostedCluster's namespace takes it, and its finalizer lets go of the objects at once
//     rather than tear them down. Either way HyperShift's deletion never waits for convoy. The
//     Package of a live HostedCluster that is no longer selected (a selector edit or a relabel)
//     is deleted in rollout order, one slot each until it is gone, and never under spec.paused
//     (status.pendingDeletions counts those waiting). Deleting the HostedClusterPackage itself
//     deletes every Package at once through the garbage collector, as deleting a Deployment
//     deletes its Pods.
//  9. Held targets: a target skipped because its HostedCluster is not Available still holds
//     its slot, its partition's barrier and its deadline while its Package is at a revision of
//     the rollout in progress and has not been ready since (held): the update may be what took
//     the cluster down. A deselected HostedCluster that is not Available keeps its Package until
//     it is back (its teardown could not reach it); a deletion in flight past
//     progressDeadlineSeconds is reported as a failure.
//  10. Progress deadline: a Package that has not progressed for progressDeadlineSeconds has
//     failed: it is reported (status.failures, an event, a metric) and keeps its slot. Only one
//     that failed at a revision of this rollout (numbered after the current one, superseded
//     since) gets the update revision before anything else, whatever its partition and its soak
//     (not when the update revision is rejected, the rollout is outside its windows, or its
//     partition waits for an approval); one broken at the current revision, or at an older one,
//     waits for its partition like any other.
//  11. Supersession: only the update revision is ever rolled out, so a newer revision
//     supersedes an older one and the rollout starts again at the first partition.
//  12. Instant strategy: the instant strategy treats every partition as reached and has no
//     budget.
//  13. Paused: spec.paused starts nothing at the update revision, deletes nothing of a live
//     cluster and rolls nothing back; updates in flight finish, and new targets still get the
//     completed current revision.
//  14. Template metadata: a change of template.metadata reaches every owned Package at the
//     revision it has (TemplateMetadataAnnotation records what it was applied with): no new
//     revision, no slot.
//  15. Status conditions: Plan.Conditions holds three conditions, with exact messages.
//     Available is True (EnoughPackagesAvailable) while the targets without an available
//     Package are at most the budget (0 under the instant strategy), else False
//     (NotEnoughPackagesAvailable): "<available>/<total> packages available.". Progressing is
//     False (AllPackagesProgressed) once every target's Package is updated and progressed, else
//     True (NotAllPackagesProgressed): "<progressed>/<total> packages progressed.".
//     HasPausedPackage is True (AtLeastOnePackagePaused) or False (NoPackagePaused):
//     "<paused>/<total> packages paused.". A Package is updated when its spec is the update
//     revision's; available when Available=True at its current generation, or when its
//     package's constraints do not hold on its cluster (nothing to install there); progressed
//     when its status.revision is its spec.revision and Available=True and Progressing=False at
//     its current generation (Progressed).
//  16. Status: the controller writes Plan.WriteStatus only when it changed. Ready,
//     Reconciling and Stalled follow kstatus: Ready once the rollout completed, naming the
//     targets it skipped; Stalled while failed Packages or a failed check stop the rollout, or
//     its revision is rejected; Reconciling while it progresses, is paused or a gate holds it.
//     Skipped targets are counted and named (a bounded sample), overall and per partition.
//  17. Gates: the soak, the checks, the failure tolerance, the rollback, the approvals, the
//     windows (rules 18 to 23) and the promotion (rule 25) are optional, and each one's
//     default keeps the rules above as they are. What holds the rollout shows in status.gate and the partitions' states, in
//     `convoy plan`, the dashboard and the metrics. A partition has started once one of its
//     targets is on the update revision. The gates hold only a partition that has not
//     started; once it started, its Packages remember that its gates were passed, and nothing
//     else is stored.
//  18. Soak: a partition after a done one starts only once that one's soak is over:
//     partition.policies[].soakSeconds, else strategy.rollingUpgrade.soakSeconds, from the
//     moment its last Package progressed. Meanwhile it shows Soaking until the soak ends and
//     status.gate names the partition it holds. A Package of the soaking partition that stops
//     being available at the commit it had progressed at, while no later partition has started,
//     fails at once (SoakRegression): a failure of the soaking partition, not of the next one.
//     The last partition has no soak, nor has the instant strategy.
//  19. Checks: a partition's checks are partition.policies[].checks when not empty, none
//     under its skipChecks, else spec.checks. They start when the partition passes (every
//     eligible target done, or failed within the tolerance), the moment its soak starts, and
//     run alongside it; a partition none of whose Packages progressed at the update revision
//     has nothing to judge and runs none. DueChecks returns the checks due at Input.Now with
//     the partition's clusters on the update revision, its start (the earliest spec update of
//     its Packages on the update revision, for the alerts' since) and when the check started
//     and ends: a check without a result is due at once, else an interval after its last
//     evaluation, and no later than the end of its duration. The controller evaluates them and
//     records each with DueCheck.Record into Input.CheckResults before Compute: a pass or a
//     failure ends a run of inconclusive evaluations; failures beyond failureLimit fail the
//     check, inconclusive evaluations in a row beyond inconclusiveLimit make it Inconclusive
//     until one is conclusive, and its first passing evaluation at or after the end of its
//     duration passes it; a check that passed or failed is not evaluated again. Results are
//     those of the update revision (another revision's are dropped: the check starts over),
//     carried in status.partitions[].checks, so a partition that loses every target loses them
//     too. Under a rolling upgrade a partition starts only once the checks of every partition
//     before it passed: meanwhile, once the soak is over, the checking partition shows Checking
//     until its longest check's duration ends, and the Check gate names the partition it holds.
//     The rollout completes only once every partition's checks passed; while the last ones run
//     the Check gate names their partition. A Failed check is a failure at the update revision
//     that no maxFailures tolerates: it leads Plan.Failed (CheckFailedReason, naming the check,
//     what it asks and the value it saw), its partition shows Blocked and stops the rollout as
//     a canary's failure does, and under a Rollback policy rejects the revision (rollbackScope
//     Failed moves back every Package of the partition whose check failed). Checks do not judge
//     the completed current revision nor a rejected one; they go on under spec.paused and
//     outside the windows, which only hold changes.
//  20. Failure tolerance: failurePolicy.maxFailures (an integer, or a percentage of eligible
//     targets rounded down; 0 by default) failed Packages are tolerated. Counting failures in
//     rollout order, a partition whose targets are all done or failed counts as done while the
//     count stays within maxFailures, unless it is a canary partition with a failure. The first
//     partition where the count goes beyond, or a canary fails, stops the rollout: no partition
//     after it starts, under the instant strategy too (status.gate Failures), while updates
//     within the partitions already reached go on within the budget, so that by default a
//     failure holds its partition's barrier as before. A tolerated failure is still reported,
//     holds its slot while unavailable and is replaced first by the next revision; the rollout
//     does not complete while one remains, and once every partition passed it shows Failures.
//  21. Rollback: once failures at the update revision alone stop the rollout (failures at
//     the revisions it superseded are no reason to reject it) under failurePolicy.action
//     Rollback, and not under spec.paused, the plan rejects the update revision (Plan.Reject:
//     the controller marks its ControllerRevision with RejectedAnnotation). Nothing starts at a
//     rejected revision: new targets get the current revision, and its Packages go back to the
//     current revision in reverse rollout order (rollbackScope Failed: the failed or
//     unavailable ones; Updated: every one), an unavailable or updating Package for free, an
//     available one for a budget slot; never under spec.paused, but outside the windows too,
//     since a rollback is the remedy. Without a current revision nothing goes back. A rejected
//     revision never completes; a new commit or template change makes a new update revision,
//     which rolls out as usual.
//  22. Approval: a partition whose policy requires an approval starts only once a
//     PartitionApproval approves it at the update revision (Approval.Approves: the rollout's
//     UID, the revision's name and commit; an approval of another revision never counts); it shows AwaitingApproval meanwhile. Under a rolling upgrade the frontier
//     partition waits; under the instant strategy every partition that requires one is not
//     reached until approved.
//  23. Windows: the rollout is inside its windows at Input.Now when an Allow window is open
//     (or none is listed) and no Deny window is; a window is open from each time of its cron
//     schedule, in its time zone, for its duration. Outside, nothing starts at the update
//     revision and nothing of a live cluster is deleted, exactly as under spec.paused; the
//     first partition with targets still to start shows OutsideWindow until the rollout is next
//     inside its windows (looked for up to a year ahead). An invalid schedule, duration or time
//     zone fails Compute with an error that names the window and the field.
//  24. Gate in status: status.gate (Plan.Gate) names what holds the rollout: Failures
//     (stopped or rejected) before a Soak, a Check, an Approval or a Window, then Promotion
//     (rule 25), then a Check that holds the completion, then Promotion waiting for a newer
//     commit; RequeueAfter comes no later than a soak's end, a check's next evaluation (at
//     least a second away) or a window's opening.
//  25. Promotion: under spec.promotion with upstream sectors the controller, not the planner,
//     chooses the update revision's commit (package promotion: the newest commit every
//     management cluster of every upstream sector completed and soaked, or one promoted by
//     hand) and hands the planner Input.Promotion. While its Hold is set (the bus of sectors
//     cannot be read, or an upstream sector withdrew the commit) the rollout acts as outside
//     its windows: nothing starts at the update revision, nothing of a live cluster is
//     deleted, updates in flight finish, and the Promotion gate names the first partition
//     with targets still to start. A withdrawn commit is rejected under a Rollback failure
//     policy (not under spec.paused), and rolls back as in rule 21. Waiting names a newer
//     commit that its upstream has not let through; it holds nothing.
//  26. Dependencies: spec.dependsOn names HostedClusterPackages (cluster-scoped, so by name)
//     whose Package must be available on a HostedCluster before this one's Package installs
//     there or moves to another revision; the controller reads them into Input.Dependencies.
//     A dependency's Package is available when it exists, is not being deleted, has
//     progressed at the commit its spec pins (a dependency in the middle of its own upgrade on
//     the cluster is not), its package's constraints hold there, and the commit it applied
//     meets the entry's minimum (Git ancestry, decided by the controller). Per cluster: an
//     eligible target whose Package is not on the update revision and one of whose
//     dependencies is not available there waits (DependencyNotReady, naming the dependency,
//     the cluster and what it waits for, in Plan.Waiting): it is neither created nor moved
//     (rollbacks still go back), holds no budget slot and does not fail, whatever its
//     Package's state, and its partition is not done while it waits; other clusters go on. A
//     dependency that does not exist, or whose selector does not select the cluster, holds
//     it too. Teardown goes in reverse: a Package is not deleted, for any reason, while a
//     HostedClusterPackage that depends on this one still has a Package in its namespace
//     (Input.Dependants; DependantsRemain in Plan.Waiting).
//
// The controller applies the Plan, writes Plan.WriteStatus into the status when it changed, moves
// currentRevision when Plan.Completed, and requeues after Plan.RequeueAfter.
package rollout
