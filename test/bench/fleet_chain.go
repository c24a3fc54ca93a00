package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// targetChainLevelRatio bounds the install of a fleet whose add-ons depend on one another: its
// wall time within 1.3× its bookkeeping floor plus one pass per level of the chain (target P11
// of docs/evidence/performance.md).
const targetChainLevelRatio = 1.3

// chainOrder is what the install did with the dependency chain, read from the Packages.
type chainOrder struct {
	// levels counts the chain's edges: the add-ons that depend on another.
	levels int
	// kept and total count the dependants' Packages created no sooner than their dependency's
	// Package on the same HostedCluster became available (whole seconds, as the API keeps
	// both times).
	kept, total int
	// pass is the median time a Package of the chain's root took from its creation to
	// available: what each level adds at least on a HostedCluster.
	pass time.Duration
}

// readChainOrder reads the Packages of the chained add-ons after the install, each add-on's
// once (a middle link is both a dependant and a dependency).
func (f *fleetRun) readChainOrder(ctx context.Context) (chainOrder, error) {
	var out chainOrder
	var root string
	read := map[string]map[string]*convoyv1alpha1.Package{}
	packagesOf := func(name string) (map[string]*convoyv1alpha1.Package, error) {
		if _, ok := read[name]; !ok {
			pkgs, err := f.packagesByNamespace(ctx, name)
			if err != nil {
				return nil, err
			}
			read[name] = pkgs
		}
		return read[name], nil
	}
	for _, a := range f.addons {
		if a.dependsOn == "" {
			continue
		}
		if out.levels++; root == "" {
			root = a.dependsOn
		}
		dependants, err := packagesOf(a.name())
		if err != nil {
			return out, err
		}
		dependencies, err := packagesOf(a.dependsOn)
		if err != nil {
			return out, err
		}
		for ns, pkg := range dependants {
			out.total++
			available := availableSince(dependencies[ns])
			if !available.IsZero() && !pkg.CreationTimestamp.Time.Before(available) {
				out.kept++
			}
		}
	}
	if root == "" {
		return out, nil
	}
	roots, err := packagesOf(root)
	if err != nil {
		return out, err
	}
	var passes []time.Duration
	for _, pkg := range roots {
		if at := availableSince(pkg); !at.IsZero() {
			passes = append(passes, at.Sub(pkg.CreationTimestamp.Time))
		}
	}
	if len(passes) > 0 {
		slices.Sort(passes)
		out.pass = passes[len(passes)/2]
	}
	return out, nil
}

// packagesByNamespace returns the Packages of the add-on name, by HCP namespace.
func (f *fleetRun) packagesByNamespace(ctx context.Context, name string) (map[string]*convoyv1alpha1.Package, error) {
	list := &convoyv1alpha1.PackageList{}
	if err := f.e.admin.List(ctx, list, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: name}); err != nil {
		return nil, fmt.Errorf("listing the Packages of %s: %w", name, err)
	}
	out := make(map[string]*convoyv1alpha1.Package, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Namespace] = &list.Items[i]
	}
	return out, nil
}

// availableSince is when pkg last became available; zero when it is not (or nil).
func availableSince(pkg *convoyv1alpha1.Package) time.Time {
	if pkg == nil {
		return time.Time{}
	}
	c := apimeta.FindStatusCondition(pkg.Status.Conditions, convoyv1alpha1.AvailableCondition)
	if c == nil || c.Status != "True" {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}

// addChainRows reports the install's dependency order, and its wall time against the
// bookkeeping floor plus a pass per level; none when no add-on depends on another.
func (f *fleetRun) addChainRows(w window, chain chainOrder) {
	if chain.levels == 0 {
		return
	}
	scenario := f.scenario("install")
	order := Row{Scenario: scenario, Metric: "dependency chain: Packages created once their dependency was available",
		Value: float64(chain.kept), Unit: "", Baseline: ptr(float64(chain.total)), BaselineName: "dependants' Packages",
		Target: "all", Note: fmt.Sprintf("a chain over add-ons 1 to %d", chain.levels+1)}
	order.Met = ptr(chain.kept == chain.total)
	f.res.add(order)
	floor := f.keep.create.wall
	if floor == 0 {
		return
	}
	allowed := targetChainLevelRatio*floor.Seconds() + float64(chain.levels)*chain.pass.Seconds()
	wall := Row{Scenario: scenario, Metric: "wall time to all progressed, against the bookkeeping floor and the chain",
		Value: w.wall.Seconds(), Unit: "s", Baseline: ptr(allowed),
		BaselineName: fmt.Sprintf("%.1f× the bookkeeping floor + a pass per level (%d)", targetChainLevelRatio, chain.levels), Target: "≤ 1×",
		Note: fmt.Sprintf("floor %.1f s; a pass (a Package of the chain's root from creation to available, median) %.1f s",
			floor.Seconds(), chain.pass.Seconds())}
	wall.Met = ptr(wall.Ratio() <= 1)
	f.res.add(wall)
}
