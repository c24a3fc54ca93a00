package rollout

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Plan is what the controller does next and what the HostedClusterPackage status reports.
type Plan struct {
	// Creates lists the Packages to create, in rollout order.
	Creates []Change

	// Updates lists the Packages whose spec moves to another revision: Packages that failed
	// first, then those already unavailable or updating, then those the budget allows.
	Updates []Change

	// Deletes lists the Packages whose HostedCluster is gone or being deleted (at once), then
	// those whose HostedCluster is no longer selected (within the budget, in rollout order).
	Deletes []Deletion

	// Relabels lists the Packages to apply again at the revision they have, because their
	// metadata lags behind the template's.
	Relabels []Change

	// DeletionsWaiting counts the Packages of deselected HostedClusters that wait for a budget
	// slot or for spec.paused to be lifted.
	DeletionsWaiting int

	// Failed lists the failed checks first (CheckFailedReason, with Partition and Check set
	// and no HostedCluster), in rollout order, then every eligible target whose Package has not
	// progressed for progressDeadlineSeconds (ProgressDeadlineExceededReason) or regressed while
	// its partition soaked (SoakRegressionReason), tolerated or not, in rollout order; status
	// keeps the first MaxFailureSamples.
	Failed []convoyv1alpha1.PackageFailure

	// FailedPackages names the Package of each failure and what it failed at, parallel to
	// Failed (for the controller's log: status keeps the HostedCluster and a message only); the
	// entry of a failed check is empty.
	FailedPackages []FailedPackage

	// Ineligible lists the targets that are skipped, in rollout order; status keeps the first
	// MaxSkippedSamples.
	Ineligible []IneligibleTarget

	// Waiting lists the deletions that wait for the Packages of dependants to be gone, then
	// the targets whose Package waits for a dependency, in rollout order (rule 26); status
	// keeps the first MaxWaitingSamples.
	Waiting []WaitingTarget

	// Partitions reports each partition in rollout order.
	Partitions []convoyv1alpha1.PartitionStatus

	// PartitionFailures counts the failed Packages of each partition, parallel to Partitions
	// (for metrics: status reports failures per HostedClusterPackage only).
	PartitionFailures []int32

	// Counts are the package counts of the status.
	Counts Counts

	// Conditions are Available, Progressing and HasPausedPackage with their exact reasons and
	// messages; LastTransitionTime is Input.Now, for meta.SetStatusCondition to keep or use.
	Conditions []metav1.Condition

	// MaxUnavailable is the budget of this pass: the Packages that may be unavailable or
	// updating at once (0 under the instant strategy, where there is no limit).
	MaxUnavailable int

	// Completed is true when every eligible target is on the update revision and has progressed
	// for minReadySeconds (a tolerated failure has not), and the update revision is not
	// rejected: the controller sets currentRevision to UpdateRevision.
	Completed bool

	// UpdateRevision names the revision being rolled out.
	UpdateRevision string

	// TemplateMetadataHash is TemplateMetadataHash of the template's metadata, for the
	// TemplateMetadataAnnotation of every Package the plan applies.
	TemplateMetadataHash string

	// RevisionsInUse names, sorted, every known revision some Package's spec still matches;
	// revision pruning keeps them.
	RevisionsInUse []string

	// RequeueAfter is when the next progress deadline, minReadySeconds, soak or window expires;
	// zero when nothing is waiting on the clock.
	RequeueAfter time.Duration

	// Gate is what holds the rollout now (status.gate); nil when nothing does.
	Gate *convoyv1alpha1.RolloutGate

	// Reject asks the controller to mark the update revision rejected (RejectedAnnotation on
	// its ControllerRevision, with RejectReason) before it applies the plan's rollback updates:
	// the failure policy's action is Rollback and the rollout stopped.
	Reject bool

	// RejectReason says why, for the annotation, the status and the event.
	RejectReason string

	// OnlyProgressRemains is true when the plan changes nothing and every eligible target's
	// Package is pinned at the update revision: no Package event can free work for a later
	// pass, only change the status, fail a Package or complete the rollout. The controller then
	// batches Package events longer.
	OnlyProgressRemains bool
}

// Change pins one Package to a revision. The controller applies the revision's template and
// commit, the HostedClusterPackage's template metadata, and SpecUpdatedAtAnnotation.
type Change struct {
	// HostedCluster is the target, as "<namespace>/<name>".
	HostedCluster string

	// Package is the namespace and name of the Package.
	Package types.NamespacedName

	// Partition is the name of the target's partition.
	Partition string

	// Revision is the revision to pin.
	Revision Revision

	// PreviousRevision names the revision the Package's spec matched before the change; empty
	// for a new Package, or one whose spec matched no known revision.
	PreviousRevision string

	// Reason says why the Package changes now.
	Reason ChangeReason
}

// ChangeReason says why a Package is created or updated.
type ChangeReason string

// Reasons for a Change.
const (
	// NewTargetReason: the target had no Package; it gets the revision its partition has reached.
	NewTargetReason ChangeReason = "NewTarget"

	// RollbackReason: the rollout stopped under a Rollback failure policy; the Package goes
	// back to the current revision.
	RollbackReason ChangeReason = "Rollback"

	// ReplaceFailedReason: the Package failed at an older revision, so the update revision
	// replaces it without waiting for its partition or for budget.
	ReplaceFailedReason ChangeReason = "ReplaceFailed"

	// AlreadyUnavailableReason: the Package was already unavailable or updating, so updating it
	// costs no budget.
	AlreadyUnavailableReason ChangeReason = "AlreadyUnavailable"

	// WithinBudgetReason: the target's partition is reached and the budget had a free slot.
	WithinBudgetReason ChangeReason = "WithinBudget"

	// RelabelReason: the Package keeps its revision; its metadata follows the template's.
	RelabelReason ChangeReason = "Relabel"

	// CommitGoneReason: the Package was pinned to a superseded revision whose commit is gone,
	// in a partition the update revision has not reached; it goes back to the current
	// revision, within the budget slot it holds.
	CommitGoneReason ChangeReason = "CommitGone"
)

// FailedPackage is the Package of one entry of Plan.Failed.
type FailedPackage struct {
	// Package is the namespace and name of the Package.
	Package types.NamespacedName

	// Revision names the revision the Package's spec matches; empty when it matches no known
	// revision, or when the Package is stuck deleting.
	Revision string

	// Commit is the commit the Package's spec pins.
	Commit string
}

// Deletion removes the Package of a HostedCluster that is no longer a target.
type Deletion struct {
	// Package is the namespace and name of the Package.
	Package types.NamespacedName

	// HostedCluster is the HostedCluster of the Package's namespace as "<namespace>/<name>",
	// or empty when there is none.
	HostedCluster string

	// Reason is DeselectedReason, HostedClusterDeletingReason or HostedClusterGoneReason.
	Reason string
}

// IneligibleTarget is a selected HostedCluster that the rollout skips for now.
type IneligibleTarget struct {
	// HostedCluster is "<namespace>/<name>".
	HostedCluster string

	// Partition is the name of its partition.
	Partition string

	// Reason is one of the ineligibility reasons below.
	Reason string

	// Message is for humans.
	Message string
}

// Reasons for skipping a target or deleting its Package.
const (
	// HostedClusterNotAvailableReason: the HostedCluster's Available condition is not True.
	HostedClusterNotAvailableReason = "HostedClusterNotAvailable"

	// HostedClusterDeletingReason: the HostedCluster is being deleted.
	HostedClusterDeletingReason = "HostedClusterDeleting"

	// PackagePausedReason: someone paused the Package by hand; the rollout leaves it alone.
	PackagePausedReason = "PackagePaused"

	// PackageConflictReason: a Package named like the HostedClusterPackage, which it does not
	// own, is in the target's HCP namespace; the rollout never changes it.
	PackageConflictReason = "PackageConflict"

	// NamespaceConflictReason: another HostedCluster, earlier by namespace and name, maps to the
	// same HCP namespace.
	NamespaceConflictReason = "NamespaceConflict"

	// DeselectedReason: the HostedCluster no longer matches the selector.
	DeselectedReason = "Deselected"

	// HostedClusterGoneReason: no HostedCluster maps to the Package's namespace any more.
	HostedClusterGoneReason = "HostedClusterGone"

	// ProgressDeadlineExceededReason: a Package has not progressed for progressDeadlineSeconds.
	ProgressDeadlineExceededReason = "ProgressDeadlineExceeded"

	// SoakRegressionReason: a Package stopped being available while its partition soaked.
	SoakRegressionReason = "SoakRegression"
)

// Counts are the package counts of a HostedClusterPackage status.
type Counts struct {
	// Total is the number of targets.
	Total int32
	// Updated Packages have the update revision's spec.
	Updated int32
	// Available Packages are Available=True at their current generation.
	Available int32
	// Unavailable targets have no available Package.
	Unavailable int32
	// Progressed Packages are updated and have progressed (rule 15 of the package doc).
	Progressed int32
	// Paused Packages are paused.
	Paused int32
	// Failed Packages have not progressed for progressDeadlineSeconds.
	Failed int32
	// Skipped targets are ineligible: the rollout leaves them alone for now.
	Skipped int32
	// Waiting targets' Packages wait for a dependency (rule 26).
	Waiting int32
}

// Compute plans the next step of the rollout. It fails only on a spec that admission should
// have refused: an invalid selector, maxUnavailable or maxFailures, or a window whose
// schedule, duration or time zone is invalid (the error names the window and the field).
func Compute(in Input) (*Plan, error) {
	if in.HostedClusterPackage == nil {
		return nil, errors.New("no HostedClusterPackage")
	}
	in.Memo.begin(&in)
	defer in.Memo.end()
	p, err := newPlanner(in)
	if err != nil {
		return nil, err
	}
	plan := &Plan{UpdateRevision: in.UpdateRevision.Name, MaxUnavailable: p.maxUnavailable,
		TemplateMetadataHash: TemplateMetadataHash(in.HostedClusterPackage.Spec.Template.Metadata)}
	if p.instant {
		plan.MaxUnavailable = 0
	}
	p.chooseChanges(plan)
	p.report(plan)
	return plan, nil
}
