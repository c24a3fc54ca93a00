// Package rollout plans the progressive rollout of a HostedClusterPackage: which Packages to
// create, update or delete so that a new revision spreads across the fleet of HostedClusters
// partition by partition, within a budget of unavailable Packages, and what the
// HostedClusterPackage status says about it.
//
// The planner is a pure function. Compute reads a snapshot of the world (the
// HostedClusterPackage, every HostedCluster, the Packages it owns, its revisions and the clock)
// and returns a Plan; it holds no state between calls, reads no clock and calls no API server.
// Everything the rollout needs to remember lives on the objects themselves: the revision a
// Package is pinned to is its spec, and the moment its spec last changed is the
// SpecUpdatedAtAnnotation that the controller stamps on every create and update.
//
// Rules (DESIGN.md §2.4), in the order Compute applies them:
//
//   - Targets are the HostedClusters matching the selector. A target whose HostedCluster is not
//     Available, is being deleted, or whose Package was paused by hand is ineligible: it keeps what
//     it has, holds no partition barrier and consumes no budget.
//   - Partitions come from a label, in static or natural alphanumeric order, with the implicit
//     "unknown" partition last. A partition is done when every eligible target is on the update
//     revision and has progressed for minReadySeconds; no later partition is touched before.
//   - The budget is maxUnavailable (an integer, or a percentage of eligible targets rounded down,
//     at least 1) minus the eligible targets already unavailable or updating, and those whose
//     Package this plan creates. Updating an unavailable or updating Package costs nothing, so
//     they go first; the others wait for a free slot.
//   - A target without a Package gets the revision its partition has reached: the update
//     revision once the rollout reached it, else the current one (none before the first rollout
//     completes, so the first rollout creates Packages partition by partition).
//   - A Package that has not progressed for progressDeadlineSeconds has failed. It keeps its
//     slot, is reported, and gets a newer revision before anything else, whatever its partition.
//   - Only the update revision is ever rolled out, so a newer revision supersedes an older one
//     and the rollout starts again at the first partition.
//   - The instant strategy treats every partition as reached and has no budget.
//   - spec.paused starts nothing at the update revision; updates in flight finish, and new
//     targets still get the current revision.
//
// The controller applies the Plan, writes Plan.WriteStatus into the status when it changed, moves
// currentRevision when Plan.Completed, and requeues after Plan.RequeueAfter.
package rollout
