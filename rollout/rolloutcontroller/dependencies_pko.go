package rolloutcontroller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/rollout"
)

// resolveDependencies returns the dependencies of the pass: spec.dependsOn, then, for each
// package the update revision's manifest names in spec.dependencies (Package Operator's
// format), the HostedClusterPackage whose status.packageName is that package, unless
// spec.dependsOn already names one. A package no HostedClusterPackage rolls out, or several
// do, cannot be mapped: it comes back as a Missing dependency that says so, and every cluster
// waits. It writes status.packageName and status.dependencies (what the index of dependants
// and the cycles read).
func (r *HostedClusterPackageReconciler) resolveDependencies(ctx context.Context, s *scope) (
	[]convoyv1alpha1.PackageDependency, []rollout.Dependency, error) {
	head := r.manifestHead(ctx, s)
	s.obj.Status.PackageName = head.Name
	entries := slices.Clone(s.obj.Spec.DependsOn)
	var unmapped []rollout.Dependency
	if len(head.Dependencies) > 0 {
		rollers, err := r.packageRollers(ctx, s.obj.Name)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range head.Dependencies {
			names := rollers[d.Package]
			switch {
			case slices.ContainsFunc(entries, func(e convoyv1alpha1.PackageDependency) bool { return slices.Contains(names, e.Name) }):
			case len(names) == 1:
				entries = append(entries, convoyv1alpha1.PackageDependency{Name: names[0]})
			default:
				unmapped = append(unmapped, rollout.Dependency{Name: d.Package, Missing: true, Problem: unmappedProblem(d, names)})
			}
		}
	}
	s.obj.Status.Dependencies = nil
	for _, e := range entries {
		s.obj.Status.Dependencies = append(s.obj.Status.Dependencies, e.Name)
	}
	return entries, unmapped, nil
}

// unmappedProblem says why the package a dependency of the manifest names maps to no
// HostedClusterPackage.
func unmappedProblem(d manifests.Dependency, names []string) string {
	if len(names) == 0 {
		return fmt.Sprintf("the manifest's spec.dependencies names package %s, which no HostedClusterPackage rolls out "+
			"(status.packageName)", d.Package)
	}
	return fmt.Sprintf("the manifest's spec.dependencies names package %s, which HostedClusterPackages %s all roll out: "+
		"name the one to wait for in spec.dependsOn", d.Package, strings.Join(names, ", "))
}

// packageRollers maps each package name to the HostedClusterPackages, other than self, whose
// status.packageName it is, from the cache.
func (r *HostedClusterPackageReconciler) packageRollers(ctx context.Context, self string) (map[string][]string, error) {
	list := &convoyv1alpha1.HostedClusterPackageList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing HostedClusterPackages: %w", err)
	}
	out := map[string][]string{}
	for i := range list.Items {
		if o := &list.Items[i]; o.Name != self && o.Status.PackageName != "" {
			out[o.Status.PackageName] = append(out[o.Status.PackageName], o.Name)
		}
	}
	return out, nil
}

// manifestHead reads the name and the dependencies of the manifest the update revision rolls
// out, once per commit, path and component; the zero value when there is no Git store or the
// manifest cannot be read (the Packages say why, when they render it).
func (r *HostedClusterPackageReconciler) manifestHead(ctx context.Context, s *scope) manifests.ManifestHead {
	key, err := templateSource(s.obj)
	if err != nil || r.Bus == nil || s.update.Commit == "" {
		return manifests.ManifestHead{}
	}
	spec := s.obj.Spec.Template.Spec
	k := strings.Join([]string{key.String(), s.update.Commit, spec.Path, spec.Component}, "\x00")
	if head, ok := r.heads.get(k); ok {
		return head
	}
	fsys, err := r.Bus.Open(ctx, key, s.update.Commit)
	if err != nil {
		return manifests.ManifestHead{}
	}
	head, err := manifests.ReadManifestHead(fsys, spec.Path, spec.Component)
	if err != nil {
		head = manifests.ManifestHead{}
	}
	r.heads.put(k, head)
	return head
}

// headCache remembers manifestHead's answers, at most maxSameDirs of them; past it, it starts
// again empty. Safe for concurrent use.
type headCache struct {
	mu    sync.Mutex
	heads map[string]manifests.ManifestHead
}

func (c *headCache) get(k string) (manifests.ManifestHead, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	head, ok := c.heads[k]
	return head, ok
}

func (c *headCache) put(k string, head manifests.ManifestHead) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.heads == nil || len(c.heads) >= maxSameDirs {
		c.heads = map[string]manifests.ManifestHead{}
	}
	c.heads[k] = head
}

// packageNameChanged passes the updates of a HostedClusterPackage whose status.packageName
// changed: a HostedClusterPackage whose manifest names that package in spec.dependencies may
// map it now. Rare: a package is renamed, or a HostedClusterPackage's first pass names it.
func packageNameChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*convoyv1alpha1.HostedClusterPackage)
			n, ok2 := e.ObjectNew.(*convoyv1alpha1.HostedClusterPackage)
			return ok1 && ok2 && o.Status.PackageName != n.Status.PackageName
		},
	}
}
