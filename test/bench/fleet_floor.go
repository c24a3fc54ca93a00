package bench

import (
	"context"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// fleetUnit is one management add-on in one HCP namespace: a batch of the bare loop, a Package
// of the bookkeeping floor.
type fleetUnit struct {
	namespace string
	addon     *fleetAddon
}

// floorUnits returns the management add-ons in every HCP namespace, in the order both floors
// take them: namespace by namespace, each namespace's add-ons in order.
func (f *fleetRun) floorUnits() []fleetUnit {
	management := f.management()
	namespaces := slices.Sorted(maps.Keys(f.e.namespaces))
	out := make([]fleetUnit, 0, len(namespaces)*len(management))
	for _, ns := range namespaces {
		for _, a := range management {
			out = append(out, fleetUnit{namespace: ns, addon: a})
		}
	}
	return out
}

// bareBatches returns the bare copies of every management add-on at rev, one batch per
// (namespace, add-on).
func (f *fleetRun) bareBatches(rev int) [][]*unstructured.Unstructured {
	units := f.floorUnits()
	out := make([][]*unstructured.Unstructured, 0, len(units))
	for _, u := range units {
		out = append(out, managementObjects(u.namespace, "bare-"+u.addon.prefix(), rev))
	}
	return out
}

// keptPackages returns the bookkeeping floor's Packages: one per (namespace, management add-on),
// in the bare loop's order, each with the add-on's objects under their own names.
func (f *fleetRun) keptPackages() []keptPackage {
	units := f.floorUnits()
	out := make([]keptPackage, 0, len(units))
	for _, u := range units {
		out = append(out, keptPackage{namespace: u.namespace, name: bookkeepingPrefix + u.addon.name(),
			prefix: bookkeepingPrefix + u.addon.prefix(), objects: objectsPerPackage})
	}
	return out
}

// measureFloor times the bare loop creating, then updating, the management objects of every
// add-on, then the bookkeeping floor doing the same with each Package's pin and status, before
// the controller starts.
func (f *fleetRun) measureFloor(ctx context.Context) error {
	c := f.e.cfg.Concurrency
	logf(f.e.cfg, "fleet: bare SSA loop, %d objects at concurrency %d", f.managementObjects(), c)
	if err := f.e.compact(ctx); err != nil {
		return err
	}
	var err error
	if f.create, err = bareLoop(ctx, f.e.admin, f.bareBatches(1), c); err != nil {
		return err
	}
	before, err := f.e.begin(ctx)
	if err != nil {
		return err
	}
	if f.floor, err = bareLoop(ctx, f.e.admin, f.bareBatches(2), c); err != nil {
		return err
	}
	after, err := f.e.take(ctx)
	if err != nil {
		return err
	}
	f.floorRq = after.server.Sub(before.server)
	return f.measureBookkeepingFloor(ctx)
}

// measureBookkeepingFloor measures the bookkeeping floor of the management add-ons: the
// create pass is the install's floor, the update pass that of all add-ons rolled by one commit.
// Its Packages are deleted before it returns.
func (f *fleetRun) measureBookkeepingFloor(ctx context.Context) error {
	packages := f.keptPackages()
	logf(f.e.cfg, "fleet: bookkeeping floor, %d objects and %d Packages at concurrency %d",
		len(packages)*objectsPerPackage, len(packages), f.e.cfg.Concurrency)
	start := time.Now()
	var err error
	if f.keep, err = f.e.measureBookkeepingFloor(ctx, f.res, packages, "fleet-keep"); err != nil {
		return err
	}
	logf(f.e.cfg, "fleet: bookkeeping floor: create %s, update %s, %s in all with its Packages deleted",
		f.keep.create.wall.Round(time.Millisecond), f.keep.update.wall.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return nil
}
