package rolloutcontroller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/sources"
)

// dependsOnIndex indexes HostedClusterPackages by the names their spec.dependsOn lists.
const dependsOnIndex = ".spec.dependsOn"

// indexDependsOn returns the names a HostedClusterPackage depends on: spec.dependsOn, and
// those its last pass mapped from its manifest (status.dependencies).
func indexDependsOn(o client.Object) []string {
	hcpkg, ok := o.(*convoyv1alpha1.HostedClusterPackage)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(hcpkg.Spec.DependsOn)+len(hcpkg.Status.Dependencies))
	for _, d := range hcpkg.Spec.DependsOn {
		names = append(names, d.Name)
	}
	for _, name := range hcpkg.Status.Dependencies {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// reconcileDependencies reads into s.in what the planner needs of the dependencies (rule 26 of
// package rollout): each HostedClusterPackage of spec.dependsOn, and of the manifest's
// spec.dependencies (resolveDependencies), and its Packages, with the commits they applied
// judged against the entry's minimum, and the Packages of the HostedClusterPackages that
// depend on this one, by namespace. Everything comes from the cache, by index: one list of
// Packages per dependency and per dependant, whatever the number of clusters. It writes
// status.packageName and status.dependencies. A cycle through this HostedClusterPackage
// stalls with DependencyCycle, naming its members, before anything is planned or applied.
func (r *HostedClusterPackageReconciler) reconcileDependencies(ctx context.Context, s *scope) error {
	entries, unmapped, err := r.resolveDependencies(ctx, s)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		cycle, err := r.findCycle(ctx, s.obj)
		if err != nil {
			return err
		}
		if cycle != nil {
			return pass.Stallf(convoyv1alpha1.DependencyCycleReason,
				"spec.dependsOn forms a cycle: %s; nothing is applied until it is broken", strings.Join(cycle, " → "))
		}
	}
	for _, entry := range entries {
		d, err := r.readDependency(ctx, entry)
		if err != nil {
			return err
		}
		s.in.Dependencies = append(s.in.Dependencies, d)
	}
	s.in.Dependencies = append(s.in.Dependencies, unmapped...)
	s.in.Dependants, err = r.dependantPackages(ctx, s.obj.Name)
	return err
}

// findCycle returns the HostedClusterPackages of a cycle of spec.dependsOn through obj, from
// obj back to it; nil when there is none. A cycle that obj only leads to is its members'
// to report: obj waits for them.
func (r *HostedClusterPackageReconciler) findCycle(ctx context.Context, obj *convoyv1alpha1.HostedClusterPackage) ([]string, error) {
	list := &convoyv1alpha1.HostedClusterPackageList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing HostedClusterPackages: %w", err)
	}
	edges := make(map[string][]string, len(list.Items))
	for i := range list.Items {
		edges[list.Items[i].Name] = indexDependsOn(&list.Items[i])
	}
	edges[obj.Name] = indexDependsOn(obj)
	return cycleThrough(obj.Name, edges), nil
}

// cycleThrough returns the first path, in the order of spec.dependsOn, from start back to
// start along edges, start at both ends; nil when there is none.
func cycleThrough(start string, edges map[string][]string) []string {
	visited := map[string]bool{}
	var path []string
	var walk func(name string) bool
	walk = func(name string) bool {
		path = append(path, name)
		for _, next := range edges[name] {
			if next == start {
				path = append(path, start)
				return true
			}
			if !visited[next] {
				visited[next] = true
				if walk(next) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if walk(start) {
		return path
	}
	return nil
}

// readDependency reads the HostedClusterPackage entry names and its Packages from the cache;
// one that does not exist is Missing.
func (r *HostedClusterPackageReconciler) readDependency(ctx context.Context, entry convoyv1alpha1.PackageDependency) (rollout.Dependency, error) {
	d := rollout.Dependency{Name: entry.Name}
	dep := &convoyv1alpha1.HostedClusterPackage{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: entry.Name}, dep); err != nil {
		if apierrors.IsNotFound(err) {
			d.Missing = true
			return d, nil
		}
		return d, fmt.Errorf("reading HostedClusterPackage %s: %w", entry.Name, err)
	}
	d.Selector = dep.Spec.HostedClusterSelector
	pkgs, err := r.listPackages(ctx, dep.Name)
	if err != nil {
		return d, err
	}
	d.Packages = make(map[string]*convoyv1alpha1.Package, len(pkgs))
	for i := range pkgs {
		d.Packages[pkgs[i].Namespace] = &pkgs[i]
	}
	return d, r.judgeMinimum(ctx, dep, entry, &d)
}

// judgeMinimum fills d.Minimum and d.MeetsMinimum from the entry's minCommit, or from the
// commit of the ControllerRevision its minRevision names: a commit a Package applied meets it
// when the minimum is that commit or one of its ancestors, in the dependency's GitSource. A
// minimum that cannot be judged (no such revision, no Git store, a commit the store does not
// have) is met by nothing, and the message says why.
func (r *HostedClusterPackageReconciler) judgeMinimum(ctx context.Context, dep *convoyv1alpha1.HostedClusterPackage,
	entry convoyv1alpha1.PackageDependency, d *rollout.Dependency) error {
	minimum, err := r.minimumCommit(ctx, dep, entry, d)
	if err != nil || minimum == "" {
		return err
	}
	d.Minimum = "a commit that contains " + shortHash(minimum)
	d.MeetsMinimum = map[string]bool{}
	key, err := templateSource(dep)
	if err != nil || r.Bus == nil {
		d.Minimum += " (convoy cannot read the dependency's Git history)"
		return nil
	}
	for _, pkg := range d.Packages {
		commit := pkg.Status.Revision
		if _, seen := d.MeetsMinimum[commit]; seen || commit == "" {
			continue
		}
		ok, err := r.ancestry.isAncestor(ctx, r.Bus, key, minimum, commit)
		if err != nil {
			ok = false // the commit is not in the store yet: not met until it is
		}
		d.MeetsMinimum[commit] = ok
	}
	return nil
}

// minimumCommit returns the commit of the entry's minimum; "" without one. A minRevision that
// names no ControllerRevision of the dependency leaves d.Minimum saying so, met by nothing.
func (r *HostedClusterPackageReconciler) minimumCommit(ctx context.Context, dep *convoyv1alpha1.HostedClusterPackage,
	entry convoyv1alpha1.PackageDependency, d *rollout.Dependency) (string, error) {
	if entry.MinRevision == "" {
		return entry.MinCommit, nil
	}
	key, err := templateSource(dep)
	if err != nil {
		return "", nil //nolint:nilerr // the dependency's own pass reports its invalid template
	}
	cr := &appsv1.ControllerRevision{}
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: entry.MinRevision}, cr)
	if err == nil && !metav1.IsControlledBy(cr, dep) {
		err = apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), entry.MinRevision)
	}
	if apierrors.IsNotFound(err) {
		d.Minimum, d.MeetsMinimum = "revision "+entry.MinRevision+", which HostedClusterPackage "+dep.Name+" does not have", map[string]bool{}
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading ControllerRevision %s: %w", entry.MinRevision, err)
	}
	sr, err := decodeRevision(cr)
	if err != nil {
		return "", pass.Stallf(convoyv1alpha1.InvalidSpecReason, "spec.dependsOn[%s].minRevision: %w", entry.Name, err)
	}
	return sr.rev.Commit, nil
}

// dependantPackages returns, by namespace, the HostedClusterPackages that depend on the one
// named name and have a Package there (rollout.Input.Dependants).
func (r *HostedClusterPackageReconciler) dependantPackages(ctx context.Context, name string) (map[string][]string, error) {
	list := &convoyv1alpha1.HostedClusterPackageList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{dependsOnIndex: name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the dependants of %s: %w", name, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	out := map[string][]string{}
	for i := range list.Items {
		pkgs, err := r.listPackages(ctx, list.Items[i].Name)
		if err != nil {
			return nil, err
		}
		for j := range pkgs {
			out[pkgs[j].Namespace] = append(out[pkgs[j].Namespace], list.Items[i].Name)
		}
	}
	return out, nil
}

// ancestryCache remembers the answers of IsAncestor, which never change for two commits, at
// most maxSameDirs of them.
type ancestryCache struct {
	answers sameDirCache
}

// isAncestor asks bus whether ancestor is commit or one of its ancestors, once per pair.
func (c *ancestryCache) isAncestor(ctx context.Context, bus PromotionBus, key sources.Key, ancestor, commit string) (bool, error) {
	if ancestor == commit {
		return true, nil
	}
	k := key.String() + "/" + ancestor + "/" + commit
	if ok, known := c.answers.get(k); known {
		return ok, nil
	}
	ok, err := bus.IsAncestor(ctx, key, ancestor, commit)
	if err != nil {
		return false, err
	}
	c.answers.put(k, ok)
	return ok, nil
}

// shortHash abbreviates a commit for messages.
func shortHash(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// requestsForDependencyGraph maps a Package of a HostedClusterPackage to the
// HostedClusterPackages that depend on its owner (a dependency became available or not) and
// to those its owner depends on (a dependant's Package is gone: the teardown of what it
// needed may go on). Both come from the cache.
func (r *HostedClusterPackageReconciler) requestsForDependencyGraph(ctx context.Context, o client.Object) []reconcile.Request {
	owner := indexOwner(o)
	if len(owner) != 1 {
		return nil
	}
	reqs := r.requestsForDependants(ctx, &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: owner[0]}})
	hcpkg := &convoyv1alpha1.HostedClusterPackage{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: owner[0]}, hcpkg); err != nil {
		return reqs
	}
	for _, name := range indexDependsOn(hcpkg) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	return reqs
}

// requestsForDependants maps a HostedClusterPackage to those that depend on it: one that
// appears, changes its selector or goes away changes what they wait for.
func (r *HostedClusterPackageReconciler) requestsForDependants(ctx context.Context, o client.Object) []reconcile.Request {
	list := &convoyv1alpha1.HostedClusterPackageList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{dependsOnIndex: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return reqs
}
