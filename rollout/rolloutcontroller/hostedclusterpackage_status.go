package rolloutcontroller

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout"
)

// eventAction is the action recorded on the rollout's events.
const eventAction = pass.EventAction

// Event reasons of the rollout.
const (
	// RevisionCreatedReason: a new update revision was stored.
	RevisionCreatedReason = "RevisionCreated"
	// PartitionStartedReason: the rollout reached a partition.
	PartitionStartedReason = "PartitionStarted"
	// PartitionCompletedReason: every eligible target of a partition is done.
	PartitionCompletedReason = "PartitionCompleted"
	// PackageFailedReason: a Package missed its progress deadline.
	PackageFailedReason = "PackageFailed"
	// RolloutCompletedReason: every eligible target is on the update revision.
	RolloutCompletedReason = "RolloutCompleted"
	// PackageConflictReason: a Package the HostedClusterPackage does not own blocks a target.
	PackageConflictReason = rollout.PackageConflictReason
)

// summarize updates the metrics, logs a stall (logStall) and returns what the status finalizer
// makes of the pass: success once the rollout completed (Ready=True, naming the skipped
// targets), waiting while it progresses or is paused (Ready=False, Reconciling=True), stalled
// while a Package is past its progress deadline (Stalled=True, kstatus Failed), or the pass's
// error.
func (r *HostedClusterPackageReconciler) summarize(ctx context.Context, s *scope, err error) pass.Summary {
	interval := r.resyncInterval()
	r.emitError(s, err)
	if s.plan != nil {
		r.metrics.record(s)
		if s.plan.RequeueAfter > 0 {
			interval = s.plan.RequeueAfter
		}
		if wake := untilWake(s); wake > 0 && wake < interval {
			interval = wake
		}
		if err == nil {
			err = rolloutProgress(s.obj, s.plan, interval)
		}
	}
	logStall(ctx, s, err)
	r.noteStatusContextOwner(ctx, s)
	r.reportCommitStatus(ctx, s, err)
	r.reportPromotion(ctx, s)
	r.publishPromotion(ctx, s, err)
	sum := pass.Summary{Err: err, Interval: interval, Reason: convoyv1alpha1.SucceededReason}
	if s.plan != nil {
		sum.Message = fmt.Sprintf("Revision %s is rolled out: %d/%d packages progressed.%s",
			s.plan.UpdateRevision, s.plan.Counts.Progressed, s.plan.Counts.Total, skippedNote(s.plan))
	}
	return sum
}

// skippedNote says how many targets the rollout skipped, and the first of them, for the Ready
// message: a rollout that completed around a hibernated cluster must not read as if every
// cluster had the revision.
func skippedNote(plan *rollout.Plan) string {
	if len(plan.Ineligible) == 0 {
		return ""
	}
	first := plan.Ineligible[0]
	return fmt.Sprintf(" %d skipped, first %s (%s): %s.", len(plan.Ineligible), first.HostedCluster, first.Reason, first.Message)
}

// rolloutProgress returns nil for a completed rollout, else the error that says how far it is:
// rejected by its failure policy (stalled until a new revision, looked at again after interval
// while Packages go back), stalled by a failed check (the planner lists them first: the message
// names the check, what it asks and the value it saw), stalled by failed Packages the failure policy does not tolerate
// (looked at again after interval, and on every Package event, so that it clears when a fix
// progresses), paused, held by a gate, waiting for dependencies (DependencyNotReady, naming
// the first HostedCluster and what it waits for), or progressing.
func rolloutProgress(obj *convoyv1alpha1.HostedClusterPackage, plan *rollout.Plan, interval time.Duration) error {
	if plan.Completed && len(plan.Failed) == 0 && plan.DeletionsWaiting == 0 {
		return nil
	}
	c := plan.Counts
	switch {
	case obj.Status.RejectedRevision != "" && obj.Status.RejectedRevision == plan.UpdateRevision:
		return pass.StallAfterf(convoyv1alpha1.RolloutRejectedReason, interval,
			"Revision %s is rejected by the failure policy and not rolled out again until a new commit or template change: %d/%d packages on it.",
			plan.UpdateRevision, c.Updated, c.Total)
	case len(plan.Failed) > 0 && plan.Failed[0].Check != "" && failuresStop(obj, plan):
		return pass.StallAfterf(convoyv1alpha1.RolloutBlockedReason, interval, "Rollout of revision %s is blocked: %s",
			plan.UpdateRevision, plan.Failed[0].Message)
	case len(plan.Failed) > 0 && failuresStop(obj, plan):
		return pass.StallAfterf(convoyv1alpha1.RolloutBlockedReason, interval,
			"Rollout of revision %s is blocked: %d package(s) failed, first %s: %s",
			plan.UpdateRevision, c.Failed, plan.Failed[0].HostedCluster, plan.Failed[0].Message)
	case obj.Spec.Paused:
		return pass.Waitf(convoyv1alpha1.SuspendedReason, 0,
			"Rollout of revision %s is paused: %d/%d packages progressed, %d deletion(s) waiting.",
			plan.UpdateRevision, c.Progressed, c.Total, plan.DeletionsWaiting)
	case plan.Gate != nil:
		return pass.Waitf(convoyv1alpha1.GatedReason, 0, "Rollout of revision %s is gated (%s): %s %d/%d packages progressed.",
			plan.UpdateRevision, plan.Gate.Type, describeGate(plan.Gate, plan.UpdateRevision), c.Progressed, c.Total)
	case len(plan.Waiting) > 0:
		w := plan.Waiting[0]
		return pass.Waitf(convoyv1alpha1.DependencyNotReadyReason, 0,
			"Rollout of revision %s waits for dependencies on %d HostedCluster(s), first %s: %s. %d/%d packages progressed.",
			plan.UpdateRevision, len(plan.Waiting), w.HostedCluster, w.Message, c.Progressed, c.Total)
	case plan.Completed:
		return pass.Waitf(convoyv1alpha1.ProgressingReason, 0,
			"Deleting the Packages of HostedClusters no longer selected: %d waiting.", plan.DeletionsWaiting)
	}
	return pass.Waitf(convoyv1alpha1.ProgressingReason, 0,
		"Rolling out revision %s: %d/%d packages progressed.", plan.UpdateRevision, c.Progressed, c.Total)
}

// failuresStop reports whether the plan's failures stop the rollout: always without a failure
// policy's maxFailures (a failed Package holds its partition's barrier), else when the planner
// says the failures gate holds it (more failures than tolerated, or one in a canary partition).
func failuresStop(obj *convoyv1alpha1.HostedClusterPackage, plan *rollout.Plan) bool {
	if obj.Spec.FailurePolicy.MaxFailures == nil {
		return true
	}
	return plan.Gate != nil && plan.Gate.Type == convoyv1alpha1.GateFailures
}

// reconcileStatus writes s.plan into the status, which the deferred status finalizer patches,
// and announces the plan's decisions before the apply step carries them out (reportRollout).
//
// Note: observedGeneration is set whenever a plan was computed, also while the rollout waits:
// the counts and conditions then describe the current generation.
func (r *HostedClusterPackageReconciler) reconcileStatus(ctx context.Context, s *scope) error {
	s.plan.WriteStatus(&s.obj.Status)
	writeGates(s)
	s.obj.Status.Promotion = s.promotion
	s.obj.Status.ObservedGeneration = s.obj.Generation
	r.reportRollout(ctx, s)
	return nil
}

// reportRollout compares the new status with the one the pass started from and announces each
// decision of the rollout once, by an event and a log line: partitions started and completed,
// a gate starting to hold the rollout, the update revision rejected, Packages newly failed,
// checks newly passed, failed or inconclusive, targets newly in conflict (an event only), and
// the rollout completed. The promotion is announced by summarize (reportPromotion), also when
// the pass waits before a plan.
func (r *HostedClusterPackageReconciler) reportRollout(ctx context.Context, s *scope) {
	r.reportPartitions(ctx, s)
	r.reportGates(ctx, s)
	r.reportFailures(ctx, s)
	r.reportChecks(ctx, s)
	r.emitConflicts(s)
	if s.plan.Completed && s.before.CurrentRevision != s.obj.Status.CurrentRevision {
		after := &s.obj.Status
		r.event(s, corev1.EventTypeNormal, RolloutCompletedReason, "Revision %s is rolled out: %d/%d packages progressed",
			after.CurrentRevision, after.ProgressedPackages, after.TotalPackages)
		ctrl.LoggerFrom(ctx).Info("Rollout completed", "revision", after.CurrentRevision, "commit", s.update.Commit,
			"progressed", after.ProgressedPackages, "total", after.TotalPackages)
	}
}

// reportPartitions announces the partitions that started or completed the update revision
// since the previous pass; after a new update revision, every partition reached is new. What
// the previous pass of this process wrote counts before the status the pass started from
// (partitionNotes), which may lag that pass's patch in the cache.
func (r *HostedClusterPackageReconciler) reportPartitions(ctx context.Context, s *scope) {
	before, after := s.before, &s.obj.Status
	old := map[string]string{}
	if before.UpdateRevision == after.UpdateRevision {
		for _, p := range before.Partitions {
			old[p.Name] = p.State
		}
	}
	r.partitionNotes(s.obj.Name, after.UpdateRevision, old, after.Partitions)
	log := ctrl.LoggerFrom(ctx)
	for _, p := range after.Partitions {
		switch {
		case partitionStarted(old[p.Name], p.State):
			r.event(s, corev1.EventTypeNormal, PartitionStartedReason, "Partition %s started rolling out revision %s", p.Name, after.UpdateRevision)
			log.Info("Partition started", "partition", p.Name, "revision", after.UpdateRevision, "total", p.Total)
		case p.State == convoyv1alpha1.PartitionDone && old[p.Name] != convoyv1alpha1.PartitionDone:
			r.event(s, corev1.EventTypeNormal, PartitionCompletedReason, "Partition %s completed revision %s: %d/%d packages progressed",
				p.Name, after.UpdateRevision, p.Progressed, p.Total)
			log.Info("Partition completed", "partition", p.Name, "revision", after.UpdateRevision,
				"progressed", p.Progressed, "total", p.Total)
		}
	}
}

// partitionNotes are the partitions' states of the update revision as this process last wrote
// them.
type partitionNotes struct {
	revision string
	states   map[string]string
}

// partitionNotes overwrites old with the states this process's previous pass wrote for the
// HostedClusterPackage's update revision, and notes the states of now for the next pass.
func (r *HostedClusterPackageReconciler) partitionNotes(name, revision string, old map[string]string,
	now []convoyv1alpha1.PartitionStatus) {
	v, ok := r.announced.Load(name)
	if notes, _ := v.(partitionNotes); ok && notes.revision == revision {
		maps.Copy(old, notes.states)
	}
	states := make(map[string]string, len(now))
	for _, p := range now {
		states[p.Name] = p.State
	}
	r.announced.Store(name, partitionNotes{revision: revision, states: states})
}

// reportFailures emits a Warning for each failed Package whose message is new in status, and
// logs each Package that newly missed its progress deadline (newlyFailed). A failed check has
// no Package: reportChecks announces it.
func (r *HostedClusterPackageReconciler) reportFailures(ctx context.Context, s *scope) {
	failed := map[string]bool{}
	for _, f := range s.before.Failures {
		failed[f.HostedCluster+"\x00"+f.Message] = true
	}
	for _, f := range s.obj.Status.Failures {
		if f.Check == "" && !failed[f.HostedCluster+"\x00"+f.Message] {
			r.event(s, corev1.EventTypeWarning, PackageFailedReason, "HostedCluster %s: %s", f.HostedCluster, f.Message)
		}
	}
	log := ctrl.LoggerFrom(ctx)
	for _, i := range r.newlyFailed(s) {
		f, pkg := s.plan.Failed[i], s.plan.FailedPackages[i]
		log.Info("Package missed its progress deadline", "package", pkg.Package.String(), "cluster", f.HostedCluster,
			"revision", pkg.Revision, "commit", pkg.Commit, "reason", f.Reason, "message", rollout.BoundSample(f.Message))
	}
}

// newlyFailed returns the indices in plan.Failed of the Packages (not the checks) that the
// previous pass did not see failed at the commit they pin, remembering the failures of each
// HostedClusterPackage between passes (status samples only ten, and its messages quote
// changing conditions). On the first pass after a start, the failures in status are the ones
// already seen.
func (r *HostedClusterPackageReconciler) newlyFailed(s *scope) []int {
	remembered, ok := r.failures.Load(s.obj.Name)
	known, _ := remembered.(map[string]bool)
	if !ok {
		known = map[string]bool{}
		for _, f := range s.before.Failures {
			known[f.HostedCluster] = true
		}
	}
	now := map[string]bool{}
	var out []int
	for i, f := range s.plan.Failed {
		if f.Check != "" {
			continue // a failed check, which has no Package
		}
		key := s.plan.FailedPackages[i].Package.String() + "@" + s.plan.FailedPackages[i].Commit
		now[key] = true
		if !known[key] && !known[f.HostedCluster] {
			out = append(out, i)
		}
	}
	r.failures.Store(s.obj.Name, now)
	return out
}

// logStall logs a pass that stalls when the previous one did not, or stalled for another
// reason; the message of a stall changes with every failure counted, so it is not compared.
func logStall(ctx context.Context, s *scope, err error) {
	out := pass.Classify(err, 0)
	if out.Class != pass.ClassStalled {
		return
	}
	if prev := pass.Get(s.obj, convoyv1alpha1.StalledCondition); prev != nil &&
		prev.Status == metav1.ConditionTrue && prev.Reason == out.Reason {
		return
	}
	ctrl.LoggerFrom(ctx).Info("Rollout stalled", "revision", s.update.Name, "reason", out.Reason, "message", rollout.BoundSample(out.Message))
}

// emitConflicts warns about each target a foreign Package newly blocks, remembering the
// conflicts of each HostedClusterPackage between passes (status samples only ten skipped
// targets, so it cannot tell which conflicts are new).
func (r *HostedClusterPackageReconciler) emitConflicts(s *scope) {
	known, _ := r.conflicts.Load(s.obj.Name)
	seen, _ := known.(map[string]bool)
	now := map[string]bool{}
	for _, t := range s.plan.Ineligible {
		if t.Reason != PackageConflictReason {
			continue
		}
		now[t.HostedCluster] = true
		if !seen[t.HostedCluster] {
			r.event(s, corev1.EventTypeWarning, PackageConflictReason, "HostedCluster %s: %s", t.HostedCluster, t.Message)
		}
	}
	r.conflicts.Store(s.obj.Name, now)
}

// partitionStarted reports whether a partition moved from not reached to reached.
func partitionStarted(before, after string) bool {
	reached := after == convoyv1alpha1.PartitionProgressing || after == convoyv1alpha1.PartitionBlocked
	return reached && (before == "" || before == convoyv1alpha1.PartitionPending)
}

// emitError emits a Warning for a step that failed, stalled or waits, when the Ready message is
// new; the rollout's own progress is reported by reportRollout instead.
func (r *HostedClusterPackageReconciler) emitError(s *scope, err error) {
	out := pass.Classify(err, 0)
	if out.Class == pass.ClassSuccess {
		return
	}
	if ready := pass.Get(s.obj, convoyv1alpha1.ReadyCondition); ready != nil && ready.Message == out.Message {
		return
	}
	r.event(s, corev1.EventTypeWarning, out.Reason, "%s", out.Message)
}

// event sends one event about the HostedClusterPackage, annotated with the commit of the
// revision being rolled out when the pass knows it (forwarded as the "revision" of Flux's event
// metadata, see internal/notify).
func (r *HostedClusterPackageReconciler) event(s *scope, eventType, reason, format string, args ...any) {
	if r.Recorder == nil {
		return
	}
	if ar, ok := r.Recorder.(events.AnnotatedEventRecorder); ok && s.update.Commit != "" {
		ar.AnnotatedEventf(s.obj, nil, map[string]string{convoyv1alpha1.RevisionAnnotation: s.update.Commit},
			eventType, reason, eventAction, format, args...)
		return
	}
	r.Recorder.Eventf(s.obj, nil, eventType, reason, eventAction, format, args...)
}

// resyncInterval returns the requeue delay when nothing waits on the clock, jittered.
func (r *HostedClusterPackageReconciler) resyncInterval() time.Duration {
	if r.ResyncInterval > 0 {
		return pass.Jitter(r.ResyncInterval)
	}
	return pass.Jitter(DefaultResyncInterval)
}
