package rollout

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// planner holds one pass of Compute: the input, the strategy read from the spec, and the
// targets grouped into partitions.
type planner struct {
	in       Input
	name     string
	instant  bool
	paused   bool
	deadline time.Duration
	minReady time.Duration

	// revisions are the known revisions, update revision first, then current, then older.
	revisions []*Revision

	// targets in rollout order: by partition, then by namespace and name.
	targets    []*target
	partitions []*partition

	// frontier is the index of the first partition that is not done; len(partitions) when all
	// are.
	frontier int

	// maxUnavailable is the budget; holders counts the eligible targets and the Packages of
	// deselected HostedClusters being deleted that use it; free is what is left of it as
	// chooseChanges hands out slots.
	maxUnavailable int
	holders        int
	free           int

	// claimed holds the HCP namespaces of the targets; Packages elsewhere are deleted.
	claimed map[string]bool

	// gone, deselected and deleting sort the owned Packages no target claims (findOrphans).
	gone       []orphan
	deselected []orphan
	deleting   []orphan

	// failures counts the accountable targets that failed, maxFailed is what the failure
	// policy tolerates, stop is the partition whose failures stopped the rollout and
	// stopAtUpdate the one where the failures at the update revision alone do (nil when none
	// does); see tolerateFailures.
	failures     int
	maxFailed    int
	stop         *partition
	stopAtUpdate *partition

	// rejected: the update revision is rejected, or rejectReason rejects it now; nothing
	// starts at it and its Packages roll back.
	rejected     bool
	rejectReason string

	// outside: Input.Now is outside the windows; nothing starts at the update revision.
	outside bool

	// gate is what holds the rollout (status.gate); nil when nothing does.
	gate *convoyv1alpha1.RolloutGate
}

// newPlanner reads the strategy, selects and assesses the targets, and partitions them.
func newPlanner(in Input) (*planner, error) {
	hcpkg := in.HostedClusterPackage
	p := &planner{
		in:       in,
		name:     hcpkg.Name,
		instant:  hcpkg.Spec.Strategy.Instant != nil,
		paused:   hcpkg.Spec.Paused,
		deadline: hcpkg.GetProgressDeadline(),
		minReady: minReadyOf(hcpkg.Spec.Strategy),
	}
	p.revisions = p.knownRevisions()
	selector, err := hostedClusterSelector(hcpkg.Spec.HostedClusterSelector)
	if err != nil {
		return nil, err
	}
	p.selectTargets(selector)
	p.waitForDependencies()
	p.partitionTargets()
	p.findOrphans()
	p.maxUnavailable, err = maxUnavailable(hcpkg.Spec.Strategy, p.countEligible())
	if err != nil {
		return nil, err
	}
	p.holders = p.countHolders() + len(p.deleting)
	p.free = p.maxUnavailable - p.holders
	if err := p.applyGates(); err != nil {
		return nil, err
	}
	return p, nil
}

// minReadyOf returns the rolling upgrade's minReadySeconds; zero under the instant strategy.
func minReadyOf(s convoyv1alpha1.HostedClusterPackageStrategy) time.Duration {
	if s.Instant != nil || s.RollingUpgrade == nil {
		return 0
	}
	return time.Duration(s.RollingUpgrade.MinReadySeconds) * time.Second
}

// knownRevisions lists the revisions a Package may match, most recent first.
func (p *planner) knownRevisions() []*Revision { return revisionsOf(&p.in) }

// revisionsOf lists the revisions of in a Package may match, most recent first.
func revisionsOf(in *Input) []*Revision {
	revs := []*Revision{&in.UpdateRevision}
	if cur := in.CurrentRevision; cur != nil && cur.Name != in.UpdateRevision.Name {
		revs = append(revs, cur)
	}
	for i := range in.OlderRevisions {
		revs = append(revs, &in.OlderRevisions[i])
	}
	return revs
}

// hostedClusterSelector converts the spec's selector; a nil selector selects everything.
func hostedClusterSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	selector, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, fmt.Errorf("invalid hostedClusterSelector: %w", err)
	}
	return selector, nil
}

// countEligible returns the number of eligible targets, the base of a percentage budget.
func (p *planner) countEligible() int {
	n := 0
	for _, t := range p.targets {
		if t.eligible() {
			n++
		}
	}
	return n
}

// countHolders returns the number of eligible targets that use the budget.
func (p *planner) countHolders() int {
	n := 0
	for _, t := range p.targets {
		if t.accountable() && p.holdsBudget(t) {
			n++
		}
	}
	return n
}

// holdsBudget reports whether t's Package counts against maxUnavailable: it is being deleted,
// unavailable, or updating or installing (not progressed for minReadySeconds yet). A missing
// Package holds nothing, so a target waiting for its partition cannot stall the partitions
// before it; creating one takes a slot when the plan makes it (advanceWithinBudget). Nor does
// one that waits for a dependency (rule 26): its state may be the dependency's doing.
func (p *planner) holdsBudget(t *target) bool {
	return t.state.exists && (t.state.deleting || !t.state.ready) && !t.waits()
}

// newTargetRevision returns the revision a target without a Package gets: the update revision
// once the rollout reached its partition (and is neither paused nor outside its windows), else
// the current revision, which is nil before the first rollout completes.
func (p *planner) newTargetRevision(t *target) *Revision {
	if p.reached(t.partition) && !p.paused && !p.outside {
		return &p.in.UpdateRevision
	}
	return p.in.CurrentRevision
}

// reached reports whether the rollout may move targets of part to the update revision: the
// revision is not rejected, the partition is not held by a soak or an approval, nor is it a
// partition that has not started after the one where failures stopped the rollout, and it is
// at or before the frontier (any partition under the instant strategy).
func (p *planner) reached(part *partition) bool {
	if p.rejected || part.hold != nil || (p.stop != nil && part.index > p.stop.index && !part.started) {
		return false
	}
	return p.instant || part.index <= p.frontier
}
