package rollout

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// orphan is an owned Package that no target claims, with the HostedCluster of its namespace
// (nil when there is none).
type orphan struct {
	pkg     *convoyv1alpha1.Package
	cluster *HostedCluster
}

// findOrphans sorts the owned Packages no target claims: those whose HostedCluster is gone or
// being deleted (p.gone, by namespace), those of a live HostedCluster that is no longer
// selected (p.deselected, in rollout order), and the latter already being deleted
// (p.deleting): each holds a budget slot until it is gone.
//
// Note: deleting the Package of a live HostedCluster tears the add-on out of that cluster, so
// it is a change like an update. A HostedCluster that is going away must never wait for
// convoy, so its Package is released at once, whatever the budget or spec.paused.
func (p *planner) findOrphans() {
	var owners map[string]*HostedCluster
	for i := range p.in.Packages {
		pkg := &p.in.Packages[i]
		if p.claimed[pkg.Namespace] {
			continue
		}
		if owners == nil {
			owners = p.hostedClustersByNamespace()
		}
		o := orphan{pkg: pkg, cluster: owners[pkg.Namespace]}
		switch {
		case o.cluster == nil || o.cluster.Deleting:
			if pkg.DeletionTimestamp == nil {
				p.gone = append(p.gone, o)
			}
		case pkg.DeletionTimestamp != nil:
			p.deleting = append(p.deleting, o)
		default:
			p.deselected = append(p.deselected, o)
		}
	}
	sort.Slice(p.gone, func(i, j int) bool { return p.gone[i].pkg.Namespace < p.gone[j].pkg.Namespace })
	sort.SliceStable(p.deselected, func(i, j int) bool { return p.beforeInRollout(p.deselected[i], p.deselected[j]) })
}

// beforeInRollout orders the orphans of live HostedClusters by the partition their cluster's
// labels would put them in, then by namespace and name.
func (p *planner) beforeInRollout(a, b orphan) bool {
	spec := p.in.HostedClusterPackage.Spec.Partition
	listed := staticValues(spec)
	if c := comparePartitions(spec, partitionOf(spec, listed, a.cluster.Labels), partitionOf(spec, listed, b.cluster.Labels)); c != 0 {
		return c < 0
	}
	return a.cluster.key() < b.cluster.key()
}

// releaseGone deletes the Packages whose HostedCluster is gone or being deleted: at once, at no
// cost, even under spec.paused; only the Packages of dependants go first (rule 26).
func (p *planner) releaseGone(plan *Plan) {
	for _, o := range p.gone {
		if p.holdForDependants(plan, o) {
			continue
		}
		d := Deletion{Package: packageKey(o.pkg), Reason: HostedClusterGoneReason}
		if o.cluster != nil {
			d.HostedCluster, d.Reason = o.cluster.key(), HostedClusterDeletingReason
		}
		plan.Deletes = append(plan.Deletes, d)
	}
}

// deleteDeselected deletes the Packages of live HostedClusters that are no longer selected, in
// rollout order, one budget slot each; the others wait (plan.DeletionsWaiting). So does the
// Package of a HostedCluster that is not Available: its teardown could not reach the cluster
// and would hold its slot for as long as the cluster is down.
func (p *planner) deleteDeselected(plan *Plan) {
	for _, o := range p.deselected {
		if (p.free <= 0 && !p.instant) || !o.cluster.Available || p.holdForDependants(plan, o) {
			plan.DeletionsWaiting++
			continue
		}
		plan.Deletes = append(plan.Deletes, Deletion{
			Package: packageKey(o.pkg), HostedCluster: o.cluster.key(), Reason: DeselectedReason,
		})
		p.free--
	}
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

// packageKey names a Package.
func packageKey(pkg *convoyv1alpha1.Package) types.NamespacedName {
	return types.NamespacedName{Namespace: pkg.Namespace, Name: pkg.Name}
}

// reportStuckDeletions lists among the failures the Packages of deselected HostedClusters
// that have been deleting for progressDeadlineSeconds: they hold a slot, so the rollout stops
// and says why.
func (p *planner) reportStuckDeletions(plan *Plan) {
	for _, o := range p.deleting {
		failAt := o.pkg.DeletionTimestamp.Add(p.deadline)
		if p.in.Now.Before(failAt) {
			continue
		}
		plan.Failed = append(plan.Failed, convoyv1alpha1.PackageFailure{
			HostedCluster: o.cluster.key(), Reason: ProgressDeadlineExceededReason,
			Message: fmt.Sprintf("Package %s/%s of a HostedCluster no longer selected has been deleting for %s",
				o.pkg.Namespace, o.pkg.Name, p.deadline),
		})
		plan.FailedPackages = append(plan.FailedPackages, FailedPackage{Package: packageKey(o.pkg), Commit: o.pkg.Spec.Revision})
		plan.Counts.Failed++
	}
}

// deletionWakeAt returns when the first deletion in flight reaches its deadline; zero when
// none is in flight.
func (p *planner) deletionWakeAt() time.Time {
	var next time.Time
	for _, o := range p.deleting {
		at := o.pkg.DeletionTimestamp.Add(p.deadline)
		if at.After(p.in.Now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}
