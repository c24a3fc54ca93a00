package rollout

import (
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// report fills the status part of plan: counts, partitions, failures, conditions, completion,
// revisions in use and the requeue delay.
func (p *planner) report(plan *Plan) {
	for _, part := range p.partitions {
		status, failed := p.partitionStatus(part, &plan.Counts)
		plan.Partitions = append(plan.Partitions, status)
		plan.PartitionFailures = append(plan.PartitionFailures, failed)
		if part.checks.failed != nil {
			plan.Failed = append(plan.Failed, p.checkFailure(part))
			plan.FailedPackages = append(plan.FailedPackages, FailedPackage{})
		}
	}
	plan.Counts.Unavailable = plan.Counts.Total - plan.Counts.Available
	for _, t := range p.targets {
		p.reportTarget(plan, t)
	}
	p.reportStuckDeletions(plan)
	plan.Conditions = p.conditions(plan.Counts, plan.MaxUnavailable)
	plan.Completed = p.rolloutCompleted()
	plan.RevisionsInUse = p.revisionsInUse()
	plan.RequeueAfter = p.requeueAfter()
	plan.Gate = p.gate
	plan.Reject, plan.RejectReason = p.rejectReason != "", p.rejectReason
	plan.OnlyProgressRemains = p.onlyProgressRemains(plan)
}

// onlyProgressRemains reports whether plan changes nothing, no deletion waits, and every
// eligible target's Package is pinned at the update revision and not being deleted
// (Plan.OnlyProgressRemains): a Package that someone deletes is created again when it is gone.
func (p *planner) onlyProgressRemains(plan *Plan) bool {
	if len(plan.Creates)+len(plan.Updates)+len(plan.Deletes)+len(plan.Relabels) > 0 || plan.DeletionsWaiting > 0 || plan.Reject {
		return false
	}
	for _, t := range p.targets {
		if t.eligible() && (!t.state.pinnedToUpdate() || t.state.deleting) {
			return false
		}
	}
	return true
}

// rolloutCompleted reports whether the rollout completed: every partition is done (a tolerated
// failure is not done) and passed its checks, and the update revision is not rejected.
func (p *planner) rolloutCompleted() bool {
	for _, part := range p.partitions {
		if !part.done || !p.checksPassed(part) {
			return false
		}
	}
	return !p.rejected
}

// partitionStatus counts the targets of part into its status and adds them to total; it also
// returns the number of its failed Packages, which the status does not carry per partition.
func (p *planner) partitionStatus(part *partition, total *Counts) (convoyv1alpha1.PartitionStatus, int32) {
	var c Counts
	for _, t := range part.targets {
		c.add(t)
	}
	total.sum(c)
	return convoyv1alpha1.PartitionStatus{
		Name:       part.name,
		Total:      c.Total,
		Updated:    c.Updated,
		Available:  c.Available,
		Progressed: c.Progressed,
		Skipped:    c.Skipped,
		Waiting:    c.Waiting,
		State:      p.partitionState(part, c),
		Until:      metaTime(part.until),
		Checks:     p.checkStatuses(part),
	}, c.Failed
}

// partitionState is the state a gate gives the partition (Soaking, Checking, AwaitingApproval,
// OutsideWindow), else Blocked when one of its checks failed, Done when every eligible target is
// done (or failed, within the failure policy's tolerance), Blocked when a failed Package holds
// the budget, Progressing once the
// rollout reached the partition, else Pending.
func (p *planner) partitionState(part *partition, c Counts) string {
	switch {
	case part.shown != "":
		return part.shown
	case part.checks.failed != nil:
		return convoyv1alpha1.PartitionBlocked
	case part.passed:
		return convoyv1alpha1.PartitionDone
	case c.Failed > 0:
		return convoyv1alpha1.PartitionBlocked
	case p.reached(part):
		return convoyv1alpha1.PartitionProgressing
	}
	return convoyv1alpha1.PartitionPending
}

// add counts one target.
func (c *Counts) add(t *target) {
	s := &t.state
	c.Total++
	c.Updated += one(s.updated)
	c.Available += one(s.available)
	c.Progressed += one(s.updated && s.progressed)
	c.Paused += one(s.paused)
	c.Failed += one(t.accountable() && s.failed)
	c.Skipped += one(!t.eligible())
	c.Waiting += one(t.waits())
}

// sum adds the counts of o.
func (c *Counts) sum(o Counts) {
	c.Total += o.Total
	c.Updated += o.Updated
	c.Available += o.Available
	c.Progressed += o.Progressed
	c.Paused += o.Paused
	c.Failed += o.Failed
	c.Skipped += o.Skipped
	c.Waiting += o.Waiting
}

// one converts a bool to a count.
func one(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// reportTarget lists t among the ineligible targets, the failed ones, or both (a held target).
func (p *planner) reportTarget(plan *Plan, t *target) {
	if !t.eligible() {
		plan.Ineligible = append(plan.Ineligible, IneligibleTarget{
			HostedCluster: t.key, Partition: t.partition.name, Reason: t.skipReason, Message: t.skipMessage,
		})
	}
	p.reportWaiting(plan, t)
	if t.accountable() && t.state.failed {
		plan.Failed = append(plan.Failed, convoyv1alpha1.PackageFailure{
			HostedCluster: t.key, Reason: t.state.failReason, Message: t.state.failure,
		})
		plan.FailedPackages = append(plan.FailedPackages, FailedPackage{Package: packageKey(t.pkg),
			Revision: revisionName(t.state.revision), Commit: t.pkg.Spec.Revision})
	}
}

// conditions returns Available, Progressing and HasPausedPackage (rule 15 of the package doc).
func (p *planner) conditions(c Counts, maxUnavailable int) []metav1.Condition {
	available := newCondition(convoyv1alpha1.AvailableCondition, c.Unavailable <= int32(maxUnavailable),
		convoyv1alpha1.EnoughPackagesAvailableReason, convoyv1alpha1.NotEnoughPackagesAvailableReason,
		fmt.Sprintf("%d/%d packages available.", c.Available, c.Total))
	progressing := newCondition(convoyv1alpha1.ProgressingCondition, c.Progressed != c.Total,
		convoyv1alpha1.NotAllPackagesProgressedReason, convoyv1alpha1.AllPackagesProgressedReason,
		fmt.Sprintf("%d/%d packages progressed.", c.Progressed, c.Total))
	paused := newCondition(convoyv1alpha1.HasPausedPackageCondition, c.Paused > 0,
		convoyv1alpha1.AtLeastOnePackagePausedReason, convoyv1alpha1.NoPackagePausedReason,
		fmt.Sprintf("%d/%d packages paused.", c.Paused, c.Total))
	conds := []metav1.Condition{available, progressing, paused}
	for i := range conds {
		conds[i].ObservedGeneration = p.in.HostedClusterPackage.Generation
		conds[i].LastTransitionTime = metav1.NewTime(p.in.Now)
	}
	return conds
}

// newCondition returns a condition of type t that is True with trueReason when isTrue, else
// False with falseReason.
func newCondition(t string, isTrue bool, trueReason, falseReason, message string) metav1.Condition {
	if isTrue {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: trueReason, Message: message}
	}
	return metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: falseReason, Message: message}
}

// revisionsInUse names the known revisions that some Package's spec matches.
func (p *planner) revisionsInUse() []string {
	used := map[string]bool{}
	for _, t := range p.targets {
		if t.state.revision != nil {
			used[t.state.revision.Name] = true
		}
	}
	for i := range p.in.Packages {
		if pkg := &p.in.Packages[i]; !p.claimed[pkg.Namespace] {
			if rev := p.matchRevision(pkg); rev != nil {
				used[rev.Name] = true
			}
		}
	}
	names := make([]string, 0, len(used))
	for name := range used {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// requeueAfter returns the time until the earliest deadline or minReadySeconds expiry of an
// eligible target, soak end, check's next evaluation or window opening, or zero.
func (p *planner) requeueAfter() time.Duration {
	next := p.deletionWakeAt()
	for _, g := range []time.Time{p.gateWakeAt(), p.checkWakeAt()} {
		if !g.IsZero() && (next.IsZero() || g.Before(next)) {
			next = g
		}
	}
	for _, t := range p.targets {
		w := t.state.wakeAt
		if t.accountable() && !w.IsZero() && (next.IsZero() || w.Before(next)) {
			next = w
		}
	}
	if next.IsZero() {
		return 0
	}
	return next.Sub(p.in.Now)
}

// WriteStatus writes the plan into status: counts, partitions, at most MaxFailureSamples
// failures and MaxSkippedSamples skipped targets, the three conditions (keeping their transition times when their status did not
// change), updateRevision, the gate, and currentRevision once the rollout completed. It leaves
// observedGeneration, rejectedRevision and the summary conditions to the controller.
func (plan *Plan) WriteStatus(status *convoyv1alpha1.HostedClusterPackageStatus) {
	c := plan.Counts
	status.TotalPackages, status.UpdatedPackages = c.Total, c.Updated
	status.AvailablePackages, status.UnavailablePackages = c.Available, c.Unavailable
	status.ProgressedPackages, status.PausedPackages, status.FailedPackages = c.Progressed, c.Paused, c.Failed
	status.Partitions = plan.Partitions
	status.SkippedPackages, status.PendingDeletions = c.Skipped, int32(plan.DeletionsWaiting)
	status.WaitingPackages = c.Waiting
	status.Waiting = nil
	for _, w := range plan.Waiting[:min(len(plan.Waiting), convoyv1alpha1.MaxWaitingSamples)] {
		status.Waiting = append(status.Waiting, convoyv1alpha1.DependencyWait{HostedCluster: w.HostedCluster,
			Partition: w.Partition, Dependency: w.Dependency, Reason: w.Reason, Message: BoundSample(w.Message)})
	}
	status.Failures = nil
	for _, f := range plan.Failed[:min(len(plan.Failed), convoyv1alpha1.MaxFailureSamples)] {
		f.Message = BoundSample(f.Message)
		status.Failures = append(status.Failures, f)
	}
	status.Skipped = nil
	for _, t := range plan.Ineligible[:min(len(plan.Ineligible), convoyv1alpha1.MaxSkippedSamples)] {
		status.Skipped = append(status.Skipped, convoyv1alpha1.SkippedTarget{
			HostedCluster: t.HostedCluster, Partition: t.Partition, Reason: t.Reason, Message: BoundSample(t.Message)})
	}
	for _, cond := range plan.Conditions {
		apimeta.SetStatusCondition(&status.Conditions, cond)
	}
	status.UpdateRevision = plan.UpdateRevision
	status.Gate = plan.Gate
	if plan.Completed {
		status.CurrentRevision = plan.UpdateRevision
	}
}

// MaxSampleMessage bounds, in bytes, the message of each failed or skipped target in status.
// The messages quote a Package's or a HostedCluster's conditions, which others write; ten
// samples of each stay far below the size of an object.
const MaxSampleMessage = 1 << 10

// BoundSample cuts msg to MaxSampleMessage bytes, on a UTF-8 boundary, marking the cut: what
// status and the controller's log quote of a message that others write.
func BoundSample(msg string) string {
	return boundBytes(msg, MaxSampleMessage)
}

// boundBytes cuts msg to n bytes, on a UTF-8 boundary, marking the cut.
func boundBytes(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	const mark = " …"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + mark
}
