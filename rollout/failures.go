package rollout

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// maxRejectSamples bounds the failed HostedClusters a RejectReason names.
const maxRejectSamples = 3

// failSoakRegressions fails the Packages that stopped being available while their partition
// soaks: every other accountable target of the partition is done, no later partition has
// started, and the Package regressed after the others progressed and before the soak ends. It
// is a failure of the soaking partition, not of the next one.
func (p *planner) failSoakRegressions() {
	for i, part := range p.partitions {
		soak := p.soakOf(part)
		if soak == 0 || i == len(p.partitions)-1 || p.startedAfter(i) {
			continue
		}
		regressed, ok := p.regressedInPartition(part)
		if !ok || len(regressed) == 0 {
			continue
		}
		// A regressed Package's progress is no longer known: its spec update bounds it below.
		start, end := p.lastProgressed(part), p.lastProgressed(part)
		for _, t := range regressed {
			end = latest(end, specUpdatedAt(t.pkg, p.in.Now))
		}
		for _, t := range regressed {
			if at := t.state.regressedAt; !at.Before(start) && at.Before(end.Add(soak)) {
				p.failRegression(t, soak)
			}
		}
	}
}

// startedAfter reports whether a partition after the i-th one started.
func (p *planner) startedAfter(i int) bool {
	for _, later := range p.partitions[i+1:] {
		if later.started {
			return true
		}
	}
	return false
}

// regressedInPartition returns the accountable targets of part that regressed at the update
// revision, and whether every other accountable target of part is done.
func (p *planner) regressedInPartition(part *partition) ([]*target, bool) {
	var regressed []*target
	for _, t := range part.targets {
		switch {
		case t.done():
		case t.state.updated && !t.state.regressedAt.IsZero() && !t.state.deleting:
			regressed = append(regressed, t)
		default:
			return nil, false
		}
	}
	return regressed, true
}

// failRegression marks t failed by a regression in its partition's soak.
func (p *planner) failRegression(t *target, soak time.Duration) {
	t.state.failed, t.state.failReason = true, SoakRegressionReason
	t.state.failure = fmt.Sprintf("Package %s/%s stopped being available at revision %s while partition %s soaked for %s: %s",
		t.namespace, t.pkg.Name, shortCommit(t.pkg.Spec.Revision), t.partition.name, soak, stuckMessage(t.pkg))
}

// doneOrFailed reports whether every accountable target of part is done or failed.
func doneOrFailed(part *partition) bool {
	for _, t := range part.targets {
		if !t.done() && !t.failed() {
			return false
		}
	}
	return true
}

// tolerateFailures walks the partitions in rollout order counting failures: a partition whose
// targets are all done or failed passes while the failures so far stay within maxFailures, it
// is not a canary with one, and none of its checks failed (a failed check is a failure at the
// update revision that no maxFailures tolerates). The first partition where they do not stops the rollout
// (p.stop): the frontier, the first partition that has not passed, is never after it. Counted
// alone, the failures at the update revision tell whether it stopped the rollout itself
// (p.stopAtUpdate): failures at older revisions are no reason to reject it.
func (p *planner) tolerateFailures() error {
	limit, err := p.maxFailures()
	if err != nil {
		return err
	}
	var all, atUpdate failureCount
	p.frontier = len(p.partitions)
	for _, part := range p.partitions {
		canary := p.policy(part.name) != nil && p.policy(part.name).Canary
		checked := part.checks.failed == nil
		tolerated := all.add(part, false, limit, canary) && checked
		toleratedAtUpdate := atUpdate.add(part, true, limit, canary) && checked
		if !tolerated && p.stop == nil {
			p.stop = part
		}
		if !toleratedAtUpdate && p.stopAtUpdate == nil {
			p.stopAtUpdate = part
		}
		part.passed = checked && (part.done || (tolerated && doneOrFailed(part)))
		if !part.passed && p.frontier == len(p.partitions) {
			p.frontier = part.index
		}
	}
	p.failures, p.maxFailed = all.total, limit
	return nil
}

// failureCount counts failures across partitions in rollout order.
type failureCount struct{ total int }

// add counts the failures of part (only those at the update revision when atUpdate) and
// reports whether they are tolerated: the count stays within limit, and none is in a canary.
func (fc *failureCount) add(part *partition, atUpdate bool, limit int, canary bool) bool {
	n := 0
	for _, t := range part.targets {
		if t.failed() && (!atUpdate || t.state.updated) {
			n++
		}
	}
	fc.total += n
	return n == 0 || (fc.total <= limit && !canary)
}

// maxFailures returns failurePolicy.maxFailures: an integer, or a percentage of the eligible
// targets rounded down; 0 by default.
func (p *planner) maxFailures() (int, error) {
	value := p.in.HostedClusterPackage.Spec.FailurePolicy.MaxFailures
	if value == nil {
		return 0, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(value, p.countEligible(), false)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid spec.failurePolicy.maxFailures %s: must be a non-negative integer or percentage",
			value.String())
	}
	return n, nil
}

// decideRejection rejects the update revision when the rollout stopped and the failure
// policy's action is Rollback (never under spec.paused), and sets the Failures gate of a
// stopped or rejected rollout, or of one that passed every partition with tolerated failures.
func (p *planner) decideRejection() {
	fp := p.in.HostedClusterPackage.Spec.FailurePolicy
	switch {
	case p.in.UpdateRevision.Rejected:
		p.rejected = true
	case p.stopAtUpdate != nil && fp.Action == convoyv1alpha1.FailureActionRollback && !p.paused:
		p.rejected, p.rejectReason = true, p.failuresMessage(p.stopAtUpdate)
	}
	switch {
	case p.stop != nil || p.rejected:
		p.gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateFailures, Message: p.failuresGateMessage()}
		if p.stop != nil {
			p.gate.Partition = p.stop.name
		}
	case p.failures > 0 && p.frontier == len(p.partitions):
		p.gate = p.toleratedGate()
	}
}

// toleratedGate is the Failures gate of a rollout that passed every partition but keeps
// tolerated failures: it cannot complete until they progress or a new revision replaces them.
func (p *planner) toleratedGate() *convoyv1alpha1.RolloutGate {
	gate := &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateFailures}
	for _, t := range p.targets {
		if t.failed() {
			gate.Partition = t.partition.name
			break
		}
	}
	gate.Message = fmt.Sprintf("Revision %s passed every partition, but %d tolerated failure(s) keep it from completing: "+
		"it completes once they progress, or a new revision replaces them first.", p.in.UpdateRevision.Name, p.failures)
	return gate
}

// failuresMessage says which check of partition stop failed, or how many Packages failed and
// which, and why that stops the rollout at partition stop.
func (p *planner) failuresMessage(stop *partition) string {
	if stop.checks.failed != nil {
		return p.checkFailure(stop).Message
	}
	atUpdate := stop == p.stopAtUpdate && stop != p.stop
	failures, names := 0, []string{}
	for _, t := range p.targets {
		if !t.failed() || (atUpdate && !t.state.updated) {
			continue
		}
		failures++
		if len(names) < maxRejectSamples {
			names = append(names, fmt.Sprintf("%s (%s)", t.key, t.state.failReason))
		}
	}
	why := fmt.Sprintf("more than failurePolicy.maxFailures (%d)", p.maxFailed)
	if failures <= p.maxFailed {
		why = fmt.Sprintf("in partition %s, a canary that tolerates none", stop.name)
	}
	return fmt.Sprintf("%d package(s) failed, %s: %s", failures, why, strings.Join(names, ", "))
}

// failuresGateMessage says why the rollout is stopped or rejected, and what moves it again.
func (p *planner) failuresGateMessage() string {
	rev := p.in.UpdateRevision.Name
	switch {
	case !p.rejected:
		return fmt.Sprintf("Rollout stopped: %s; no later partition starts.", p.failuresMessage(p.stop))
	case p.in.CurrentRevision == nil:
		return fmt.Sprintf("Revision %s is rejected; there is no earlier revision to roll back to: "+
			"a new commit or template change rolls out again.", rev)
	case p.rejectReason != "":
		return fmt.Sprintf("Revision %s is rejected (%s); rolling back to %s: a new commit or template change rolls out again.",
			rev, p.rejectReason, p.in.CurrentRevision.Name)
	}
	return fmt.Sprintf("Revision %s is rejected, %d package(s) still on it: a new commit or template change rolls out again.",
		rev, p.countUpdated())
}

// countUpdated counts the targets whose Package is on the update revision.
func (p *planner) countUpdated() int {
	n := 0
	for _, t := range p.targets {
		if t.state.exists && t.state.updated {
			n++
		}
	}
	return n
}

// rollBack moves the Packages on a rejected update revision back to the current revision, in
// reverse rollout order: with rollbackScope Failed the failed or unavailable ones and those of
// a partition whose check failed, with Updated every one. Moving an unavailable or updating Package back costs nothing; moving an available
// one takes a budget slot. Nothing moves without a current revision, or when the failure
// policy's action is no longer Rollback.
func (p *planner) rollBack(plan *Plan) {
	fp := p.in.HostedClusterPackage.Spec.FailurePolicy
	cur := p.in.CurrentRevision
	if cur == nil || fp.Action != convoyv1alpha1.FailureActionRollback {
		return
	}
	every := fp.RollbackScope == convoyv1alpha1.RollbackUpdated
	for i := len(p.targets) - 1; i >= 0; i-- {
		t := p.targets[i]
		judged := t.partition.checks.failed != nil
		if !p.onUpdateRevision(t) || (!every && !judged && t.state.available && !t.state.failed) {
			continue
		}
		free := p.holdsBudget(t)
		if !free && p.free <= 0 && !p.instant {
			continue
		}
		plan.Updates = append(plan.Updates, p.change(t, cur, RollbackReason))
		if !free {
			p.free--
		}
	}
}

// onUpdateRevision reports whether t's Package is on the update revision, may move and has no
// Change yet.
func (p *planner) onUpdateRevision(t *target) bool {
	return t.eligible() && !t.planned && t.state.exists && !t.state.deleting && t.state.updated
}
