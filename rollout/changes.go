package rollout

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// maxUnavailable returns the budget of a rolling upgrade: an integer, or a percentage of the
// eligible targets rounded down; at least 1 either way. Under the instant strategy it is the
// number of eligible targets.
func maxUnavailable(s convoyv1alpha1.HostedClusterPackageStrategy, eligible int) (int, error) {
	if s.Instant != nil {
		return eligible, nil
	}
	value := intstr.FromInt32(1)
	if s.RollingUpgrade != nil && s.RollingUpgrade.MaxUnavailable != nil {
		value = *s.RollingUpgrade.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&value, eligible, false)
	if err != nil {
		return 0, fmt.Errorf("invalid maxUnavailable: %w", err)
	}
	return max(n, 1), nil
}

// chooseChanges fills plan.Creates and plan.Updates. Under spec.paused the only changes are
// new targets getting the current revision.
func (p *planner) chooseChanges(plan *Plan) {
	p.createMissing(plan)
	if p.paused {
		return
	}
	p.replaceFailed(plan)
	p.updateAlreadyUnavailable(plan)
	p.updateWithinBudget(plan)
}

// createMissing gives every eligible target without a Package the revision its partition has
// reached (newTargetRevision). A missing Package is unavailable already, so creating it needs no
// free slot; the new Package then holds one until it progressed.
func (p *planner) createMissing(plan *Plan) {
	for _, t := range p.targets {
		if !t.eligible() || t.state.exists {
			continue
		}
		if rev := p.newTargetRevision(t); rev != nil {
			plan.Creates = append(plan.Creates, p.change(t, rev, NewTargetReason))
		}
	}
}

// replaceFailed moves Packages that failed at an older revision to the update revision, in any
// partition and whatever the budget: they are unavailable already, and a fix must reach them.
func (p *planner) replaceFailed(plan *Plan) {
	for _, t := range p.targets {
		if p.updatable(t) && t.state.failed {
			plan.Updates = append(plan.Updates, p.change(t, &p.in.UpdateRevision, ReplaceFailedReason))
		}
	}
}

// updateAlreadyUnavailable updates, in reached partitions, the Packages that already count
// against the budget (unavailable, or updating to a superseded revision): it cannot get less
// available.
func (p *planner) updateAlreadyUnavailable(plan *Plan) {
	for _, t := range p.targets {
		if p.updatable(t) && p.reached(t.partition) && p.holdsBudget(t) {
			plan.Updates = append(plan.Updates, p.change(t, &p.in.UpdateRevision, AlreadyUnavailableReason))
		}
	}
}

// updateWithinBudget updates available Packages of reached partitions, in rollout order, while
// the budget has free slots.
func (p *planner) updateWithinBudget(plan *Plan) {
	free := p.maxUnavailable - p.holders
	for _, t := range p.targets {
		if free <= 0 && !p.instant {
			return
		}
		if p.updatable(t) && p.reached(t.partition) {
			plan.Updates = append(plan.Updates, p.change(t, &p.in.UpdateRevision, WithinBudgetReason))
			free--
		}
	}
}

// updatable reports whether t's existing Package may move to the update revision and has no
// Change yet.
func (p *planner) updatable(t *target) bool {
	return t.eligible() && !t.planned && t.state.exists && !t.state.deleting && !t.state.updated
}

// change records that t's Package moves to rev.
func (p *planner) change(t *target, rev *Revision, reason ChangeReason) Change {
	t.planned = true
	return Change{
		HostedCluster: t.key,
		Package:       t.packageKey(p.packageName(t)),
		Partition:     t.partition.name,
		Revision:      *rev,
		Reason:        reason,
	}
}

// packageName is the name of t's Package: the existing one's, else the HostedClusterPackage's.
func (p *planner) packageName(t *target) string {
	if t.pkg != nil {
		return t.pkg.Name
	}
	return p.name
}

// chooseDeletions deletes every Package whose namespace no target claims and that is not being
// deleted already, saying whether its HostedCluster is gone or deselected.
func (p *planner) chooseDeletions(plan *Plan) {
	var owners map[string]*HostedCluster
	for i := range p.in.Packages {
		pkg := &p.in.Packages[i]
		if p.claimed[pkg.Namespace] || pkg.DeletionTimestamp != nil {
			continue
		}
		if owners == nil {
			owners = p.hostedClustersByNamespace()
		}
		d := Deletion{Package: types.NamespacedName{Namespace: pkg.Namespace, Name: pkg.Name}, Reason: HostedClusterGoneReason}
		if hc, ok := owners[pkg.Namespace]; ok {
			d.HostedCluster, d.Reason = hc.key(), DeselectedReason
		}
		plan.Deletes = append(plan.Deletes, d)
	}
	sort.Slice(plan.Deletes, func(i, j int) bool {
		return plan.Deletes[i].Package.String() < plan.Deletes[j].Package.String()
	})
}

// hostedClustersByNamespace maps every HCP namespace to its HostedCluster, selected or not.
func (p *planner) hostedClustersByNamespace() map[string]*HostedCluster {
	m := make(map[string]*HostedCluster, len(p.in.HostedClusters))
	for i := range p.in.HostedClusters {
		hc := &p.in.HostedClusters[i]
		m[convoyv1alpha1.HostedControlPlaneNamespace(hc.Namespace, hc.Name)] = hc
	}
	return m
}
