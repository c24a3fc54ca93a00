package rollout

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Dependency is what one HostedClusterPackage of spec.dependsOn has on the HostedClusters
// (rule 26). The controller reads it from its cache before Compute; the planner only judges it.
type Dependency struct {
	// Name of the HostedClusterPackage depended on.
	Name string

	// Missing is true when no HostedClusterPackage has that name: every target waits.
	Missing bool

	// Problem, when Missing, says why instead: no HostedClusterPackage, or several, roll out a
	// package that the manifest's spec.dependencies names.
	Problem string

	// Selector is its spec.hostedClusterSelector; nil selects every HostedCluster.
	Selector *metav1.LabelSelector

	// Packages are the Packages it owns, by namespace. Read only: they may be the cache's.
	Packages map[string]*convoyv1alpha1.Package

	// Minimum says, for messages, what the dependsOn entry asks of the commit its Package
	// applied ("a commit that contains 0123abcd4567"); empty when it asks nothing.
	Minimum string

	// MeetsMinimum, when Minimum is set, reports by commit whether a Package that applied it
	// meets the minimum; a commit it does not list does not. The controller decides it (Git
	// ancestry) for the commits the dependency's Packages applied.
	MeetsMinimum map[string]bool
}

// WaitingTarget is a Package that waits: for a dependency to be available on its HostedCluster
// before it installs or moves (DependencyNotReadyReason), or for the Packages of its dependants
// to be gone before it is deleted (DependantsRemainReason).
type WaitingTarget struct {
	// HostedCluster is "<namespace>/<name>"; empty when no HostedCluster is left.
	HostedCluster string

	// Partition is the name of its partition; empty for a deletion.
	Partition string

	// Dependency names the HostedClusterPackage waited for (the first of them).
	Dependency string

	// Reason is DependencyNotReadyReason or DependantsRemainReason.
	Reason string

	// Message says what the Package waits for.
	Message string
}

// DependencyNotReadyReason and DependantsRemainReason are the reasons of a WaitingTarget.
const (
	DependencyNotReadyReason = convoyv1alpha1.DependencyNotReadyReason
	DependantsRemainReason   = convoyv1alpha1.DependantsRemainReason
)

// waitForDependencies marks the eligible targets whose Package would install or move while a
// dependency is not available on their HostedCluster (dependencyWait). Waiting is not failing:
// a waiting target holds no budget slot and has not failed, whatever its Package's state,
// since that may be the dependency's doing; it keeps its partition's barrier, since it is
// not on the update revision.
func (p *planner) waitForDependencies() {
	if len(p.in.Dependencies) == 0 {
		return
	}
	selectors := make([]labels.Selector, len(p.in.Dependencies))
	for i, d := range p.in.Dependencies {
		selectors[i] = dependencySelector(d.Selector)
	}
	for _, t := range p.targets {
		if !t.eligible() || t.state.deleting || t.state.pinnedToUpdate() {
			continue
		}
		for i := range p.in.Dependencies {
			if msg := dependencyWait(&p.in.Dependencies[i], selectors[i], t); msg != "" {
				t.waitFor, t.waitMessage = p.in.Dependencies[i].Name, msg
				t.state.failed, t.state.failReason, t.state.failure = false, "", ""
				break
			}
		}
	}
}

// dependencySelector converts a dependency's selector; one that does not convert selects
// nothing, so that its dependants wait and the message says why.
func dependencySelector(s *metav1.LabelSelector) labels.Selector {
	selector, err := hostedClusterSelector(s)
	if err != nil {
		return labels.Nothing()
	}
	return selector
}

// dependencyWait returns what t waits for from d, or "" when d's Package on t's HostedCluster
// is available: it exists, is not being deleted, has progressed at the commit its spec pins
// (Available=True and Progressing=False at its generation: a dependency in the middle of its
// own upgrade on the cluster is not available yet), its package's constraints hold there, and
// the commit meets the minimum.
func dependencyWait(d *Dependency, selector labels.Selector, t *target) string {
	head := fmt.Sprintf("HostedClusterPackage %s on HostedCluster %s", d.Name, t.key)
	switch {
	case d.Missing && d.Problem != "":
		return fmt.Sprintf("waits on HostedCluster %s: %s", t.key, d.Problem)
	case d.Missing:
		return fmt.Sprintf("waits for %s: no HostedClusterPackage %s exists", head, d.Name)
	}
	if !selector.Matches(labels.Set(t.cluster.Labels)) {
		return fmt.Sprintf("waits for %s: its hostedClusterSelector does not select the HostedCluster", head)
	}
	pkg := d.Packages[t.namespace]
	switch {
	case pkg == nil:
		return fmt.Sprintf("waits for %s: it has no Package there yet", head)
	case pkg.DeletionTimestamp != nil:
		return fmt.Sprintf("waits for %s: its Package %s/%s is being deleted", head, pkg.Namespace, pkg.Name)
	case ConstraintsNotMet(pkg):
		return fmt.Sprintf("waits for %s: its package's constraints do not hold on the HostedCluster", head)
	case !Progressed(pkg):
		return fmt.Sprintf("waits for %s: its Package %s/%s is not available at commit %s: %s",
			head, pkg.Namespace, pkg.Name, shortCommit(pkg.Spec.Revision), stuckMessage(pkg))
	case d.Minimum != "" && !d.MeetsMinimum[pkg.Status.Revision]:
		return fmt.Sprintf("waits for %s: its Package %s/%s runs commit %s, not %s",
			head, pkg.Namespace, pkg.Name, shortCommit(pkg.Status.Revision), d.Minimum)
	}
	return ""
}

// waits reports whether t's Package waits for a dependency.
func (t *target) waits() bool { return t.waitFor != "" }

// dependantsRemain returns, for the Package of namespace about to be deleted, which
// HostedClusterPackages that depend on this one still have a Package there; "" when none has.
func (p *planner) dependantsRemain(namespace string) string {
	return strings.Join(p.in.Dependants[namespace], ", ")
}

// holdForDependants reports, and lists in plan.Waiting, a deletion of o's Package that waits
// for the Packages of its dependants to be gone from the namespace.
func (p *planner) holdForDependants(plan *Plan, o orphan) bool {
	remain := p.dependantsRemain(o.pkg.Namespace)
	if remain == "" {
		return false
	}
	w := WaitingTarget{Dependency: p.in.Dependants[o.pkg.Namespace][0], Reason: DependantsRemainReason,
		Message: fmt.Sprintf("Package %s/%s is deleted once the Packages of %s are gone from its namespace",
			o.pkg.Namespace, o.pkg.Name, remain)}
	if o.cluster != nil {
		w.HostedCluster = o.cluster.key()
	}
	plan.Waiting = append(plan.Waiting, w)
	return true
}

// reportWaiting lists t in plan.Waiting when its Package waits for a dependency.
func (p *planner) reportWaiting(plan *Plan, t *target) {
	if t.waits() {
		plan.Waiting = append(plan.Waiting, WaitingTarget{HostedCluster: t.key, Partition: t.partition.name,
			Dependency: t.waitFor, Reason: DependencyNotReadyReason, Message: "Package " + t.namespace + "/" +
				p.packageName(t) + " " + t.waitMessage})
	}
}
