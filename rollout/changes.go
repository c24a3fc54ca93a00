package rollout

import (
	"fmt"

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

// chooseChanges fills plan.Creates, plan.Updates, plan.Deletes and plan.Relabels. What costs
// nothing comes first: Packages at the completed current revision for new targets, and the
// release of Packages whose HostedCluster is going away. Under spec.paused nothing else changes.
// A rejected update revision rolls back, windows or not. Outside the windows nothing else
// changes. Then, in this order, the changes that keep or take a budget slot: failed Packages of
// this rollout moving on, unavailable Packages of reached partitions updated, Packages of
// deselected HostedClusters deleted, and the rest of the reached partitions created or updated
// in rollout order; Packages stuck at a gone commit of this rollout in partitions not reached
// yet go back to the current revision within their own slot.
func (p *planner) chooseChanges(plan *Plan) {
	p.createAtCompletedRevision(plan)
	p.releaseGone(plan)
	if p.paused {
		plan.DeletionsWaiting = len(p.deselected)
		return
	}
	if p.rejected {
		p.rollBack(plan)
	}
	if p.outside {
		plan.DeletionsWaiting = len(p.deselected)
		return
	}
	p.replaceFailed(plan)
	p.updateAlreadyUnavailable(plan)
	p.returnFromGoneCommits(plan)
	p.deleteDeselected(plan)
	p.advanceWithinBudget(plan)
	p.relabel(plan)
}

// createAtCompletedRevision gives every eligible target without a Package the revision its
// partition has reached (newTargetRevision) when that revision's rollout has completed: a
// HostedCluster joining a settled fleet gets what every other cluster has, without a slot.
func (p *planner) createAtCompletedRevision(plan *Plan) {
	for _, t := range p.targets {
		if !p.creatable(t) {
			continue
		}
		if rev := p.newTargetRevision(t); rev != nil && p.completed(rev) {
			plan.Creates = append(plan.Creates, p.change(t, rev, NewTargetReason))
		}
	}
}

// replaceFailed moves Packages that failed at a revision of this rollout (newer than the
// current one, superseded since) to the update revision, in any partition: they are
// unavailable already, they hold their slot, and the fix must reach them first. A Package that
// failed at the current revision, or at an older one, waits for its partition like any other.
// Neither a rejected update revision nor a partition waiting for its approval gets it.
func (p *planner) replaceFailed(plan *Plan) {
	if p.rejected {
		return
	}
	for _, t := range p.targets {
		if p.updatable(t) && t.state.failed && p.partOfRollout(t.state.revision) && !p.awaitsApproval(t.partition) {
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

// returnFromGoneCommits moves back to the current revision, in partitions the update revision
// has not reached, the Packages pinned to a superseded revision of this rollout whose commit is
// gone (mayLeaveGoneCommit): they cannot progress there, and each holds a budget slot until it
// does. Going back changes nothing their clusters have not had, it is barrier-safe (every
// partition completed the current revision), and the slot stays held until they progressed
// there; a commit coming back finds them pinned elsewhere. In reached partitions
// updateAlreadyUnavailable moves them on instead.
func (p *planner) returnFromGoneCommits(plan *Plan) {
	cur := p.in.CurrentRevision
	if cur == nil {
		return
	}
	for _, t := range p.targets {
		if !p.reached(t.partition) && p.partOfRollout(t.state.revision) && p.mayLeaveGoneCommit(t, cur) {
			plan.Updates = append(plan.Updates, p.change(t, cur, CommitGoneReason))
		}
	}
}

// mayLeaveGoneCommit reports whether t's Package, waiting for a gone commit, may go back to cur:
// an eligible one available at its generation (it progressed somewhere and stays so), or one
// whose controller never attempted the gone commit and whose cluster still runs cur's commit,
// eligible or held (its HostedCluster not available). The latter keeps the Available condition
// of its previous spec; left pinned, the commit coming back would reach it after the
// partitions before it went back. A held Package that attempted the commit stays: the update
// may be what broke its cluster, and it keeps its slot, its barrier and its deadline.
func (p *planner) mayLeaveGoneCommit(t *target, cur *Revision) bool {
	switch {
	case t.pkg == nil || !waitsForGoneCommit(t.pkg):
		return false
	case commitGone(t.pkg):
		return p.updatable(t)
	}
	neverAttempted := t.pkg.Status.LastAttemptedRevision != t.pkg.Spec.Revision && t.pkg.Status.Revision == cur.Commit
	return neverAttempted && (p.updatable(t) || (t.held && p.changeable(t)))
}

// advanceWithinBudget creates the missing Packages and updates the available ones of reached
// partitions, in rollout order, while the budget has free slots. A created Package takes a
// slot like an updated one: it is not available until it progressed.
func (p *planner) advanceWithinBudget(plan *Plan) {
	for _, t := range p.targets {
		if p.free <= 0 && !p.instant {
			return
		}
		switch {
		case !p.reached(t.partition):
			continue
		case p.creatable(t):
			plan.Creates = append(plan.Creates, p.change(t, &p.in.UpdateRevision, NewTargetReason))
		case p.updatable(t):
			plan.Updates = append(plan.Updates, p.change(t, &p.in.UpdateRevision, WithinBudgetReason))
		default:
			continue
		}
		p.free--
	}
}

// relabel re-applies, at the revision they have, the Packages whose metadata lags behind the
// template's (TemplateMetadataAnnotation) or whose shard is not the one ShardFor names:
// metadata is no revision and takes no slot. Packages
// paused by hand, being deleted, of a HostedCluster being deleted, or at an unknown revision
// are left alone.
func (p *planner) relabel(plan *Plan) {
	want := plan.TemplateMetadataHash
	for _, t := range p.targets {
		if t.planned || t.pkg == nil || t.state.deleting || t.state.revision == nil {
			continue
		}
		if !t.eligible() && t.skipReason != HostedClusterNotAvailableReason {
			continue
		}
		if t.pkg.Annotations[TemplateMetadataAnnotation] != want || p.shardMoves(t.pkg) {
			plan.Relabels = append(plan.Relabels, p.change(t, t.state.revision, RelabelReason))
		}
	}
}

// shardMoves reports whether pkg's convoy.dev/shard label is not the one Input.ShardFor names.
func (p *planner) shardMoves(pkg *convoyv1alpha1.Package) bool {
	if p.in.ShardFor == nil {
		return false
	}
	current := pkg.Labels[convoyv1alpha1.ShardLabel]
	return p.in.ShardFor(pkg.Namespace, current) != current
}

// creatable reports whether t has no Package, may get one, waits for no dependency and has no
// Change yet.
func (p *planner) creatable(t *target) bool {
	return t.eligible() && !t.planned && !t.state.exists && !t.waits()
}

// updatable reports whether t's existing Package may move to the update revision, waits for no
// dependency and has no Change yet.
func (p *planner) updatable(t *target) bool {
	return t.eligible() && p.changeable(t) && !t.waits()
}

// changeable reports whether t's Package exists, is not being deleted, is not at the update
// revision and has no change planned yet.
func (p *planner) changeable(t *target) bool {
	return !t.planned && t.state.exists && !t.state.deleting && !t.state.updated
}

// completed reports whether rev is the current revision: its rollout completed.
func (p *planner) completed(rev *Revision) bool {
	return p.in.CurrentRevision != nil && rev.Name == p.in.CurrentRevision.Name
}

// partOfRollout reports whether rev was rolled out after the current revision and superseded
// since: a Package pinned to it took part in the rollout in progress.
func (p *planner) partOfRollout(rev *Revision) bool {
	if rev == nil || rev == &p.in.UpdateRevision || p.completed(rev) {
		return false
	}
	return p.in.CurrentRevision == nil || rev.Number > p.in.CurrentRevision.Number
}

// change records that t's Package moves to rev.
func (p *planner) change(t *target, rev *Revision, reason ChangeReason) Change {
	t.planned = true
	return Change{
		HostedCluster:    t.key,
		Package:          t.packageKey(p.packageName(t)),
		Partition:        t.partition.name,
		Revision:         *rev,
		PreviousRevision: revisionName(t.state.revision),
		Reason:           reason,
	}
}

// revisionName returns the name of rev; empty for nil.
func revisionName(rev *Revision) string {
	if rev == nil {
		return ""
	}
	return rev.Name
}

// packageName is the name of t's Package: the existing one's, else the HostedClusterPackage's.
func (p *planner) packageName(t *target) string {
	if t.pkg != nil {
		return t.pkg.Name
	}
	return p.name
}
