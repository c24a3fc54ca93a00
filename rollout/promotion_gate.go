package rollout

import (
	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// PromotionGate is what the upstream sectors of a HostedClusterPackage say of its update
// revision. The controller decides it (package promotion) before Compute; the planner only
// applies it, as it applies the windows.
type PromotionGate struct {
	// Hold says why nothing may start at the update revision: the bus of sectors cannot be
	// read, or an upstream sector withdrew the commit. Holding acts as being outside the
	// windows: nothing starts at the update revision and nothing of a live cluster is deleted;
	// updates in flight finish.
	Hold string
	// Withdrawn is true when an upstream sector failed or rejected the update revision's
	// commit: under a Rollback failure policy the revision is rejected (and rolls back), as
	// if it had failed here.
	Withdrawn bool
	// Waiting says what a commit newer than the update revision's waits for upstream. It
	// holds nothing; it is the Promotion gate when nothing else holds the rollout.
	Waiting string
}

// rejectWithdrawn rejects the update revision that an upstream sector withdrew, under a
// Rollback failure policy and not under spec.paused; the Promotion gate says why.
func (p *planner) rejectWithdrawn() {
	pr := p.in.Promotion
	fp := p.in.HostedClusterPackage.Spec.FailurePolicy
	if !pr.Withdrawn || p.rejected || p.paused || fp.Action != convoyv1alpha1.FailureActionRollback {
		return
	}
	p.rejected, p.rejectReason = true, pr.Hold
	p.gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GatePromotion, Message: pr.Hold}
}

// holdForPromotion holds the update revision while the Promotion gate says so: like outside
// the windows, and the gate names the first partition with targets still to start, unless a
// failure, a soak, an approval or a window already holds it.
func (p *planner) holdForPromotion() {
	hold := p.in.Promotion.Hold
	if hold == "" {
		return
	}
	p.outside = true
	if p.rejected || p.stop != nil || (p.gate != nil && p.gate.Type != convoyv1alpha1.GateCheck) {
		return
	}
	p.gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GatePromotion, Message: hold}
	for _, part := range p.partitions {
		if p.reached(part) && p.hasTargetsToStart(part) {
			p.gate.Partition = part.name
			return
		}
	}
}

// showPromotionWaiting names, when nothing holds the rollout, what a newer commit waits for
// upstream.
func (p *planner) showPromotionWaiting() {
	if p.gate == nil && p.in.Promotion.Waiting != "" {
		p.gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GatePromotion, Message: p.in.Promotion.Waiting}
	}
}
