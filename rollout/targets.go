package rollout

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// target is one selected HostedCluster and its Package.
type target struct {
	cluster   *HostedCluster
	key       string
	namespace string
	partition *partition
	pkg       *convoyv1alpha1.Package
	state     packageState

	// skipReason and skipMessage say why the target is ineligible; empty when it is eligible.
	skipReason  string
	skipMessage string

	// held: the target is skipped because its HostedCluster is not Available, but its Package
	// changed in the rollout in progress and has not been ready since. The update may be what
	// broke the cluster, so it keeps its budget slot, its partition's barrier and its deadline.
	held bool

	// foreign is a Package in the target's HCP namespace, named like the HostedClusterPackage,
	// that the HostedClusterPackage does not own; nil when there is none.
	foreign *ForeignPackage

	// planned is set once a Change for the target is in the plan.
	planned bool

	// waitFor names the dependency (rule 26) the target's Package waits for, and waitMessage
	// says what it waits for; both empty when it waits for none.
	waitFor     string
	waitMessage string
}

// eligible reports whether the rollout may change the target's Package now.
func (t *target) eligible() bool { return t.skipReason == "" }

// accountable reports whether the target counts for the budget, the barrier and the deadline:
// it is eligible, or held.
func (t *target) accountable() bool { return t.eligible() || t.held }

// failed reports whether the target counts as a failure of the rollout: it is accountable and
// its Package failed.
func (t *target) failed() bool { return t.accountable() && t.state.failed }

// done reports whether the target no longer holds its partition's barrier.
func (t *target) done() bool {
	return !t.accountable() || (t.state.exists && !t.state.deleting && t.state.updated && t.state.ready)
}

// packageKey names the target's Package.
func (t *target) packageKey(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: t.namespace, Name: name}
}

// selectTargets builds a target for every HostedCluster the selector matches, sorted by
// namespace and name, pairs it with its Package and decides whether it is eligible.
func (p *planner) selectTargets(selector labels.Selector) {
	packages := packagesByNamespace(p.in.Packages)
	foreign := p.foreignByNamespace()
	p.claimed = make(map[string]bool, len(p.in.HostedClusters))
	for i := range p.in.HostedClusters {
		hc := &p.in.HostedClusters[i]
		if selector.Matches(labels.Set(hc.Labels)) {
			p.targets = append(p.targets, p.newTarget(hc))
		}
	}
	sort.Slice(p.targets, func(i, j int) bool { return p.targets[i].key < p.targets[j].key })
	for _, t := range p.targets {
		t.foreign = foreign[t.namespace]
		p.claim(t, packages[t.namespace])
	}
}

// foreignByNamespace indexes the foreign Packages named like the HostedClusterPackage by
// namespace.
func (p *planner) foreignByNamespace() map[string]*ForeignPackage {
	m := map[string]*ForeignPackage{}
	for i := range p.in.ForeignPackages {
		if f := &p.in.ForeignPackages[i]; f.Name == p.name {
			m[f.Namespace] = f
		}
	}
	return m
}

// newTarget returns the target of hc, without its Package yet.
func (p *planner) newTarget(hc *HostedCluster) *target {
	return &target{
		cluster:   hc,
		key:       hc.key(),
		namespace: convoyv1alpha1.HostedControlPlaneNamespace(hc.Namespace, hc.Name),
	}
}

// claim pairs t with pkg, the Package in its HCP namespace, unless an earlier target took the
// namespace, and decides whether t is eligible.
func (p *planner) claim(t *target, pkg *convoyv1alpha1.Package) {
	if p.claimed[t.namespace] {
		t.skipReason = NamespaceConflictReason
		t.skipMessage = "another HostedCluster uses the HCP namespace " + t.namespace
		return
	}
	p.claimed[t.namespace] = true
	t.pkg = pkg
	t.state = p.assess(pkg)
	t.skipReason, t.skipMessage = p.ineligibility(t)
	if t.skipReason == HostedClusterNotAvailableReason && p.inFlight(t) {
		t.held = true
		t.skipMessage += "; its Package changed in this rollout and holds its slot until it progresses"
	}
}

// inFlight reports whether t's Package is pinned to a revision of the rollout in progress and
// has not been ready since.
func (p *planner) inFlight(t *target) bool {
	rev := t.state.revision
	if !t.state.exists || t.state.ready || rev == nil || p.completed(rev) {
		return false
	}
	return rev == &p.in.UpdateRevision || p.partOfRollout(rev)
}

// ineligibility returns why t must be skipped, or empty strings when it is eligible.
func (p *planner) ineligibility(t *target) (reason, message string) {
	switch {
	case t.pkg == nil && t.foreign != nil:
		return PackageConflictReason, conflictMessage(t.foreign, p.name)
	case t.cluster.Deleting:
		return HostedClusterDeletingReason, "HostedCluster is being deleted"
	case !t.cluster.Available:
		return HostedClusterNotAvailableReason, notAvailableMessage(t.cluster)
	case t.state.pausedByHand:
		return PackagePausedReason, "Package " + t.namespace + "/" + t.pkg.Name + " is paused"
	}
	return "", ""
}

// conflictMessage says which Package blocks the target and who owns it.
func conflictMessage(f *ForeignPackage, hcpkg string) string {
	owner := "it has no controller"
	if f.Owner != "" {
		owner = "its controller is " + f.Owner
	}
	return fmt.Sprintf("Package %s/%s exists and is not owned by HostedClusterPackage %s (%s); convoy leaves it unchanged",
		f.Namespace, f.Name, hcpkg, owner)
}

// notAvailableMessage says why hc is not available.
func notAvailableMessage(hc *HostedCluster) string {
	if hc.AvailableMessage == "" {
		return "HostedCluster is not Available"
	}
	return "HostedCluster is not Available: " + hc.AvailableMessage
}

// packagesByNamespace indexes Packages by namespace.
func packagesByNamespace(pkgs []convoyv1alpha1.Package) map[string]*convoyv1alpha1.Package {
	m := make(map[string]*convoyv1alpha1.Package, len(pkgs))
	for i := range pkgs {
		m[pkgs[i].Namespace] = &pkgs[i]
	}
	return m
}
