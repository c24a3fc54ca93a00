package rollout

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// applyGates decides, once the targets are partitioned and the budget is known, what holds
// the rollout, in this order: which partitions started, their checks' results, soak
// regressions, the failure tolerance (which moves the frontier), a rejection (an upstream
// sector's withdrawal too), the soak, checks and approval of each partition that would start,
// the windows, the promotion hold, the checks that hold the completion, and a newer commit
// waiting upstream.
func (p *planner) applyGates() error {
	windows, err := parseWindows(p.in.HostedClusterPackage.Spec.Windows)
	if err != nil {
		return err
	}
	p.markStarted()
	p.loadChecks()
	p.failSoakRegressions()
	if err := p.tolerateFailures(); err != nil {
		return err
	}
	p.decideRejection()
	p.rejectWithdrawn()
	p.holdPartitions()
	p.applyWindows(windows)
	p.holdForPromotion()
	p.markChecking()
	p.showPromotionWaiting()
	return nil
}

// markStarted marks the partitions that started: one of their targets is on the update
// revision, so their gates are passed.
func (p *planner) markStarted() {
	for _, part := range p.partitions {
		for _, t := range part.targets {
			part.started = part.started || (t.accountable() && t.state.pinnedToUpdate())
		}
	}
}

// policy returns the spec.partition.policies entry of the partition named name; nil when none.
func (p *planner) policy(name string) *convoyv1alpha1.PartitionPolicy {
	spec := p.in.HostedClusterPackage.Spec.Partition
	if spec == nil {
		return nil
	}
	for i := range spec.Policies {
		if spec.Policies[i].Name == name {
			return &spec.Policies[i]
		}
	}
	return nil
}

// soakOf returns how long part holds the next partition once it is done: its policy's
// soakSeconds, else the rolling upgrade's; none under the instant strategy.
func (p *planner) soakOf(part *partition) time.Duration {
	ru := p.in.HostedClusterPackage.Spec.Strategy.RollingUpgrade
	if p.instant || ru == nil {
		return 0
	}
	if pol := p.policy(part.name); pol != nil && pol.SoakSeconds != nil {
		return time.Duration(*pol.SoakSeconds) * time.Second
	}
	return time.Duration(ru.SoakSeconds) * time.Second
}

// lastProgressed returns when the last accountable target of part that progressed at the
// update revision did; zero when none did.
func (p *planner) lastProgressed(part *partition) time.Time {
	var last time.Time
	for _, t := range part.targets {
		if t.accountable() && t.state.updated {
			last = latest(last, t.state.progressedAt)
		}
	}
	return last
}

// soakEnd returns when part's soak ends: soakOf after its last Package progressed; zero
// without a soak, or before anything in it progressed.
func (p *planner) soakEnd(part *partition) time.Time {
	soak, last := p.soakOf(part), p.lastProgressed(part)
	if soak == 0 || last.IsZero() {
		return time.Time{}
	}
	return last.Add(soak)
}

// holdPartitions keeps each partition the rollout would start (up to the frontier of a
// rolling upgrade, every partition under the instant strategy) from starting while an earlier
// partition soaks, while the checks of an earlier partition have not all passed (rolling
// upgrade only), or while it waits for its approval. A partition before the frontier that has
// not started is one whose targets all failed within the tolerance. A rejected revision
// starts nowhere.
func (p *planner) holdPartitions() {
	if p.rejected {
		return
	}
	for _, part := range p.partitions {
		if part.started || part.done || (!p.instant && part.index > p.frontier) {
			continue
		}
		part.hold = p.soakHold(part)
		if part.hold == nil {
			part.hold = p.checkHold(part)
		}
		if part.hold == nil {
			part.hold = p.approvalHold(part)
		}
		if p.gate == nil {
			p.gate = part.hold
		}
	}
}

// soakHold returns the Soak gate of part while an earlier partition soaks, and marks the
// soaking partitions; nil when none soaks.
func (p *planner) soakHold(part *partition) *convoyv1alpha1.RolloutGate {
	var soaking *partition
	for _, prev := range p.partitions[:part.index] {
		end := p.soakEnd(prev)
		if !end.After(p.in.Now) {
			continue
		}
		prev.shown, prev.until = convoyv1alpha1.PartitionSoaking, end
		if soaking == nil || end.After(soaking.until) {
			soaking = prev
		}
	}
	if soaking == nil {
		return nil
	}
	return &convoyv1alpha1.RolloutGate{
		Type: convoyv1alpha1.GateSoak, Partition: part.name, Until: metaTime(soaking.until),
		Message: fmt.Sprintf("Partition %s starts when partition %s has soaked, at %s.",
			part.name, soaking.name, soaking.until.UTC().Format(time.RFC3339)),
	}
}

// approvalHold returns the Approval gate of part when its policy requires an approval that no
// approval of the update revision gives; nil otherwise.
func (p *planner) approvalHold(part *partition) *convoyv1alpha1.RolloutGate {
	if !p.awaitsApproval(part) {
		return nil
	}
	part.shown = convoyv1alpha1.PartitionAwaitingApproval
	return &convoyv1alpha1.RolloutGate{
		Type: convoyv1alpha1.GateApproval, Partition: part.name,
		Message: fmt.Sprintf("Partition %s waits for an approval of revision %s: run `convoy approve %s --partition %s`.",
			part.name, p.in.UpdateRevision.Name, p.name, part.name),
	}
}

// awaitsApproval reports whether part has not started, requires an approval, and no approval
// approves it at the update revision (Approval.Approves).
func (p *planner) awaitsApproval(part *partition) bool {
	pol := p.policy(part.name)
	if part.started || pol == nil || !pol.RequireApproval {
		return false
	}
	for i := range p.in.Approvals {
		if p.in.Approvals[i].Approves(p.in.HostedClusterPackage, part.name, &p.in.UpdateRevision) {
			return false
		}
	}
	return true
}

// applyWindows decides whether Input.Now is outside the windows. Outside, the first
// partition the rollout would start or is running that has targets still to start shows
// OutsideWindow until the rollout is next inside its windows, and holds it (the Window gate)
// unless a failure, a soak or an approval already does.
func (p *planner) applyWindows(windows []window) {
	if len(windows) == 0 || inside(windows, p.in.Now) {
		return
	}
	p.outside = true
	if p.rejected || p.stop != nil {
		return
	}
	reopens := nextInside(windows, p.in.Now)
	for _, part := range p.partitions {
		if !p.reached(part) || !p.hasTargetsToStart(part) {
			continue
		}
		part.shown, part.until = convoyv1alpha1.PartitionOutsideWindow, reopens
		if p.gate == nil {
			p.gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateWindow, Partition: part.name,
				Until: metaTime(reopens), Message: windowMessage(part.name, reopens)}
		}
		return
	}
}

// hasTargetsToStart reports whether an eligible target of part that has not failed is not on
// the update revision yet.
func (p *planner) hasTargetsToStart(part *partition) bool {
	for _, t := range part.targets {
		if t.eligible() && !t.state.failed && !t.state.pinnedToUpdate() {
			return true
		}
	}
	return false
}

// windowMessage says what the Window gate waits for.
func windowMessage(partition string, reopens time.Time) string {
	if reopens.IsZero() {
		return fmt.Sprintf("Partition %s waits for a window: none opens within %s.", partition, windowSearch)
	}
	return fmt.Sprintf("Partition %s waits for a window, at %s.", partition, reopens.UTC().Format(time.RFC3339))
}

// gateWakeAt returns the earliest time a partition's soak or checks' duration ends or a window
// opens; zero when none is due.
func (p *planner) gateWakeAt() time.Time {
	var next time.Time
	for _, part := range p.partitions {
		if u := part.until; u.After(p.in.Now) && (next.IsZero() || u.Before(next)) {
			next = u
		}
	}
	return next
}

// metaTime returns t as a *metav1.Time; nil for the zero time.
func metaTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}
