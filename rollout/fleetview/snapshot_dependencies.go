package fleetview

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// dependencyNames lists what h waits for on each HostedCluster: spec.dependsOn, then what its
// controller mapped from the manifest (status.dependencies).
func dependencyNames(h *convoyv1alpha1.HostedClusterPackage) []string {
	var names []string
	for _, d := range h.Spec.DependsOn {
		names = append(names, d.Name)
	}
	for _, name := range h.Status.Dependencies {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// readDependencies reads what the planner needs of snap's dependencies (rule 26 of package
// rollout) from every HostedClusterPackage and Package of the management cluster, and the order
// of the graph from its roots to snap's HostedClusterPackage. The minimums of spec.dependsOn
// (Git ancestry) are not judged here: the forecast takes a dependency's available Package as
// meeting them, and the controller's status.waiting says when one does not.
func (s *Snapshot) readDependencies(ctx context.Context, c client.Reader) error {
	h := s.HostedClusterPackage
	hcpkgs := &convoyv1alpha1.HostedClusterPackageList{}
	if err := c.List(ctx, hcpkgs); err != nil {
		return fmt.Errorf("listing HostedClusterPackages: %w", err)
	}
	byName := map[string]*convoyv1alpha1.HostedClusterPackage{}
	for i := range hcpkgs.Items {
		byName[hcpkgs.Items[i].Name] = &hcpkgs.Items[i]
	}
	byName[h.Name] = h
	packages, err := packagesByOwner(ctx, c)
	if err != nil {
		return err
	}
	for _, name := range dependencyNames(h) {
		d := rollout.Dependency{Name: name, Packages: map[string]*convoyv1alpha1.Package{}}
		dep, ok := byName[name]
		d.Missing = !ok
		if ok {
			d.Selector = dep.Spec.HostedClusterSelector
		}
		for _, pkg := range packages[name] {
			d.Packages[pkg.Namespace] = pkg
		}
		s.Dependencies = append(s.Dependencies, d)
	}
	for name, other := range byName {
		if slices.Contains(dependencyNames(other), h.Name) {
			for _, pkg := range packages[name] {
				s.Dependants = appendDependant(s.Dependants, pkg.Namespace, name)
			}
		}
	}
	s.Order = dependencyOrder(h.Name, byName)
	return nil
}

// appendDependant adds name to the dependants of namespace.
func appendDependant(m map[string][]string, namespace, name string) map[string][]string {
	if m == nil {
		m = map[string][]string{}
	}
	m[namespace] = append(m[namespace], name)
	return m
}

// packagesByOwner reads every Package and groups those of HostedClusterPackages by the name of
// their owner.
func packagesByOwner(ctx context.Context, c client.Reader) (map[string][]*convoyv1alpha1.Package, error) {
	list := &convoyv1alpha1.PackageList{}
	if err := c.List(ctx, list, client.HasLabels{convoyv1alpha1.HostedClusterPackageLabel}); err != nil {
		return nil, fmt.Errorf("listing Packages: %w", err)
	}
	out := map[string][]*convoyv1alpha1.Package{}
	for i := range list.Items {
		pkg := &list.Items[i]
		owner := pkg.Labels[convoyv1alpha1.HostedClusterPackageLabel]
		out[owner] = append(out[owner], pkg)
	}
	return out, nil
}

// dependencyOrder returns the HostedClusterPackages that name reaches through its dependencies,
// itself included, by level: level 0 depends on nothing, each later one on the levels before
// it, so that on a HostedCluster a level installs only after the levels before it are
// available. A name that is missing stands alone at level 0; a cycle is cut where it closes
// (the controller refuses it).
func dependencyOrder(name string, byName map[string]*convoyv1alpha1.HostedClusterPackage) [][]string {
	depth := map[string]int{}
	var walk func(n string, path []string) int
	walk = func(n string, path []string) int {
		if d, ok := depth[n]; ok {
			return d
		}
		level := 0
		if h := byName[n]; h != nil {
			for _, dep := range dependencyNames(h) {
				if !slices.Contains(path, dep) {
					level = max(level, walk(dep, append(path, n))+1)
				}
			}
		}
		depth[n] = level
		return level
	}
	walk(name, nil)
	order := make([][]string, depth[name]+1)
	for n, d := range depth {
		order[d] = append(order[d], n)
	}
	for _, level := range order {
		slices.Sort(level)
	}
	return order
}
