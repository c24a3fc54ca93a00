package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// fleetRun is the fleet scenario: many add-ons, each a HostedClusterPackage over the same
// HostedClusters.
type fleetRun struct {
	e      *env
	res    *Results
	addons []*fleetAddon
	// create and floor are the bare loop's times to create, then update, every management
	// object of every add-on; floorRq are the API server's requests during the update.
	create, floor time.Duration
	floorRq       Requests
	// keep is the bookkeeping floor of the management add-ons (fleet_floor.go).
	keep bookkeepingFloor
	// alone is the rollout of add-on 0 in a fleet with no other add-on: the baseline of the
	// same rollout among the others.
	alone fleetWindow
}

// runFleet runs the fleet scenario: the bare-loop floor; add-on 0 installed and rolled alone
// (the baseline), then removed; all add-ons installed from nothing; add-on 0 rolled while the
// others are idle; all rolled by one commit; the steady state; then the same fleet on two shard
// replicas and the unsharded one.
func runFleet(ctx context.Context, cfg Config, res *Results) error {
	logf(cfg, "fleet: %d add-ons (%d hosted) over %d HostedClusters (%d with hosted API servers)",
		cfg.FleetAddons, cfg.FleetHostedAddons, cfg.FleetClusters, cfg.FleetHostedSample)
	e, err := newEnv(ctx, cfg, envInput{Clusters: cfg.FleetClusters, APIServerSample: cfg.FleetHostedSample})
	if err != nil {
		return err
	}
	defer e.close()
	f := &fleetRun{e: e, res: res, addons: newFleetAddons(cfg.FleetAddons, cfg.FleetHostedAddons)}
	if _, err := f.commit(ctx, "fleet revision 1", f.addons...); err != nil {
		return err
	}
	steps := map[string]func(context.Context) error{"floor": f.measureFloor, "alone": f.rollAloneAndRemove,
		"install": f.installAll, "one": f.rollOne, "all": f.rollAll, "steady": f.steady, "sharded": f.sharded}
	for _, name := range FleetStepNames {
		if len(cfg.FleetSteps) > 0 && !slices.Contains(cfg.FleetSteps, name) {
			continue
		}
		if name != "floor" && e.ctrl == nil {
			if err := e.startController(ctx); err != nil {
				return err
			}
		}
		if err := steps[name](ctx); err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
	}
	return nil
}

// FleetStepNames are the fleet scenario's steps, in the order they run.
var FleetStepNames = []string{"floor", "alone", "install", "one", "all", "steady", "sharded"}

// fleetStepNeeds are the steps each step needs before it: the install its fleet, or its baseline.
var fleetStepNeeds = map[string][]string{"one": {"install", "alone"}, "all": {"install", "floor"},
	"steady": {"install"}, "sharded": {"install"}}

// checkFleetSteps refuses steps that are not fleet steps, or that leave out what one needs.
func checkFleetSteps(steps []string) error {
	for _, s := range steps {
		needs, known := fleetStepNeeds[s]
		if !known && !slices.Contains(FleetStepNames, s) {
			return fmt.Errorf("fleet: no step %q (steps: %s)", s, strings.Join(FleetStepNames, ","))
		}
		for _, n := range needs {
			if !slices.Contains(steps, n) {
				return fmt.Errorf("fleet: step %q needs step %q", s, n)
			}
		}
	}
	return nil
}

// commit commits the next revision of addons and returns the commit; it becomes e.commit.
func (f *fleetRun) commit(_ context.Context, msg string, addons ...*fleetAddon) (string, error) {
	files, err := bump(addons...)
	if err != nil {
		return "", err
	}
	commit, err := f.e.repo.Commit("main", msg, files)
	if err != nil {
		return "", err
	}
	f.e.previous, f.e.commit = f.e.commit, commit
	return commit, nil
}

// management returns the add-ons without hosted-cluster phases.
func (f *fleetRun) management() []*fleetAddon {
	var out []*fleetAddon
	for _, a := range f.addons {
		if !a.hosted {
			out = append(out, a)
		}
	}
	return out
}

// managementObjects is the number of management objects of all add-ons over the fleet.
func (f *fleetRun) managementObjects() int {
	return len(f.management()) * len(f.e.namespaces) * objectsPerPackage
}

// rollAlone installs add-on 0 alone, then measures the rollout of its next revision.
func (f *fleetRun) rollAlone(ctx context.Context) error {
	first := f.addons[0]
	logf(f.e.cfg, "fleet: %s alone: install, then roll", first.name())
	if err := f.createHostedClusterPackages(ctx, first); err != nil {
		return err
	}
	if err := f.waitProgressed(ctx, f.e.commit, first); err != nil {
		return err
	}
	var err error
	f.alone, err = f.rollout(ctx, first)
	f.res.add(Row{Scenario: f.scenario("one add-on rolled, empty fleet"), Metric: "wall time to all progressed",
		Value: f.alone.wall.Seconds(), Unit: "s", Note: fmt.Sprintf("%d Packages updated; the baseline of the next scenario", f.alone.updated)})
	return err
}

// rollAloneAndRemove measures add-on 0 rolled alone, the baseline of rolling it among the
// others, then removes it.
func (f *fleetRun) rollAloneAndRemove(ctx context.Context) error {
	if err := f.rollAlone(ctx); err != nil {
		return err
	}
	return f.removeFirst(ctx)
}

// removeFirst deletes add-on 0 and waits until its Packages are gone, leaving the fleet empty.
// The test API server runs no garbage collector: the benchmark deletes what the
// HostedClusterPackage owns, its Packages and ControllerRevisions, as the collector would.
func (f *fleetRun) removeFirst(ctx context.Context) error {
	first := f.addons[0]
	hcp := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: first.name()}}
	if err := f.e.admin.Delete(ctx, hcp); err != nil {
		return fmt.Errorf("deleting HostedClusterPackage %s: %w", first.name(), err)
	}
	owned := client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: first.name()}
	if err := f.e.admin.DeleteAllOf(ctx, &appsv1.ControllerRevision{}, client.InNamespace(benchNamespace), owned); err != nil {
		return fmt.Errorf("deleting the ControllerRevisions of %s: %w", first.name(), err)
	}
	for ns := range f.namespacesOf(first) {
		if err := f.e.admin.DeleteAllOf(ctx, &convoyv1alpha1.Package{}, client.InNamespace(ns), owned); err != nil {
			return fmt.Errorf("deleting the Packages of %s: %w", first.name(), err)
		}
	}
	deadline := time.Now().Add(rolloutTimeout)
	for time.Now().Before(deadline) {
		if _, total := f.e.watch.countNamed(f.namespacesOf(first), first.name(), nil); total == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("the Packages of %s are not gone after %s", first.name(), rolloutTimeout)
}

// installAll creates every add-on's HostedClusterPackage and waits until all Packages progressed.
func (f *fleetRun) installAll(ctx context.Context) error {
	logf(f.e.cfg, "fleet: installing %d add-ons", len(f.addons))
	if err := f.e.compact(ctx); err != nil {
		return err
	}
	w, err := f.measure(ctx, func(ctx context.Context) error {
		if err := f.createHostedClusterPackages(ctx, f.addons...); err != nil {
			return err
		}
		return f.waitProgressed(ctx, f.e.commit, f.addons...)
	})
	if err != nil {
		return err
	}
	chain, err := f.readChainOrder(ctx)
	if err != nil {
		return err
	}
	f.addInstallRows(w)
	f.addChainRows(w, chain)
	return nil
}

// rollOne rolls add-on 0 to its next revision while the others are idle.
func (f *fleetRun) rollOne(ctx context.Context) error {
	logf(f.e.cfg, "fleet: rolling %s while %d others are idle", f.addons[0].name(), len(f.addons)-1)
	w, err := f.rollout(ctx, f.addons[0])
	if err != nil {
		return err
	}
	f.addRollOneRows(w)
	return nil
}

// rollAll rolls every add-on by one commit.
func (f *fleetRun) rollAll(ctx context.Context) error {
	logf(f.e.cfg, "fleet: rolling all %d add-ons by one commit", len(f.addons))
	w, err := f.rollout(ctx, f.addons...)
	if err != nil {
		return err
	}
	f.addRollAllRows(w)
	return nil
}

// fleetWindow is a measured rollout of the fleet scenario.
type fleetWindow struct {
	window
	// firstUpdated is the time from the commit's poll request to the first Package of the new
	// commit (spec.revision); zero when not measured.
	firstUpdated time.Duration
	// updated counts the Packages whose spec moved to the new commit, all add-ons included.
	updated int
	// pinned and progressed are the first, median and last times at which Packages were
	// seen pinned to the new commit, then progressed at it (rolloutTrace).
	pinned, progressed string
}

// rollout commits the next revision of addons, asks for a poll and waits until their Packages
// progressed at it.
func (f *fleetRun) rollout(ctx context.Context, addons ...*fleetAddon) (fleetWindow, error) {
	// Compacting first: the GitSource's own poll may find a commit waiting while etcd compacts,
	// and start the rollout before the step's first snapshot.
	if err := f.e.compact(ctx); err != nil {
		return fleetWindow{}, err
	}
	commit, err := f.commit(ctx, fmt.Sprintf("fleet: %d add-ons", len(addons)), addons...)
	if err != nil {
		return fleetWindow{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first := make(chan time.Duration, 1)
	var trace *rolloutTrace
	w, err := f.measure(ctx, func(ctx context.Context) error {
		start := time.Now()
		trace = newRolloutTrace(commit, start)
		f.e.watch.setTrace(trace)
		if err := f.e.requestPoll(ctx); err != nil {
			return err
		}
		go f.e.watch.waitFirst(ctx, specAt(commit), start, first)
		return f.waitProgressed(ctx, commit, addons...)
	})
	f.e.watch.setTrace(nil)
	out := fleetWindow{window: w, updated: f.e.watch.countAll(specAt(commit))}
	if trace != nil {
		out.pinned, out.progressed = trace.summary()
	}
	select {
	case out.firstUpdated = <-first:
	default:
	}
	return out, err
}

// measure runs fn between two snapshots and returns the window, with the renders. The caller
// compacts etcd first (env.compact), before it commits what fn rolls out.
func (f *fleetRun) measure(ctx context.Context, fn func(context.Context) error) (window, error) {
	rendersBefore, err := f.e.ctrl.Counter(ctx, rendersMetric)
	if err != nil {
		return window{}, err
	}
	before, err := f.e.take(ctx)
	if err != nil {
		return window{}, err
	}
	if err := fn(ctx); err != nil {
		return window{}, err
	}
	after, err := f.e.take(ctx)
	if err != nil {
		return window{}, err
	}
	w := since(before, after)
	rendersAfter, err := f.e.ctrl.Counter(ctx, rendersMetric)
	w.renders = rendersAfter - rendersBefore
	return w, err
}

// createHostedClusterPackages creates the HostedClusterPackage of each add-on, rolled out at
// once; the hosted add-ons select the HostedClusters with a hosted API server.
func (f *fleetRun) createHostedClusterPackages(ctx context.Context, addons ...*fleetAddon) error {
	for _, a := range addons {
		selector := map[string]string{"bench.convoy.dev/fleet": "true"}
		if a.hosted {
			selector = map[string]string{hostedSampleLabel: "true"}
		}
		hcp := &convoyv1alpha1.HostedClusterPackage{
			ObjectMeta: metav1.ObjectMeta{Name: a.name()},
			Spec: convoyv1alpha1.HostedClusterPackageSpec{
				HostedClusterSelector: &metav1.LabelSelector{MatchLabels: selector},
				Strategy:              strategy(false),
				Template:              convoyv1alpha1.PackageTemplate{Spec: packageTemplate(a.path())},
			},
		}
		if a.dependsOn != "" {
			hcp.Spec.DependsOn = []convoyv1alpha1.PackageDependency{{Name: a.dependsOn}}
		}
		if err := f.e.admin.Create(ctx, hcp); err != nil {
			return fmt.Errorf("creating HostedClusterPackage %s: %w", a.name(), err)
		}
	}
	return nil
}

// namespacesOf returns the HCP namespaces the add-on has Packages in.
func (f *fleetRun) namespacesOf(a *fleetAddon) map[string]bool {
	if !a.hosted {
		return f.e.namespaces
	}
	out := map[string]bool{}
	for _, ns := range f.e.sample {
		out[ns] = true
	}
	return out
}

// waitProgressed waits until the Packages of addons, in each of their namespaces, progressed
// at commit.
func (f *fleetRun) waitProgressed(ctx context.Context, commit string, addons ...*fleetAddon) error {
	deadline := time.Now().Add(rolloutTimeout)
	done := progressedAt(commit)
	for _, a := range addons {
		namespaces := f.namespacesOf(a)
		for {
			ok, total := f.e.watch.countNamed(namespaces, a.name(), done)
			if ok == len(namespaces) && total == ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: %d of %d Packages progressed at %.12s after %s", a.name(), ok, len(namespaces), commit, rolloutTimeout)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// specAt returns a predicate: the Package's spec pins commit.
func specAt(commit string) func(*convoyv1alpha1.Package) bool {
	return func(p *convoyv1alpha1.Package) bool { return p.Spec.Revision == commit }
}

// countNamed returns how many Packages called name in namespaces satisfy pred (all when nil),
// and how many there are.
func (w *packageWatch) countNamed(namespaces map[string]bool, name string, pred func(*convoyv1alpha1.Package) bool) (ok, total int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, p := range w.pkgs {
		if key.Name != name || !namespaces[key.Namespace] {
			continue
		}
		total++
		if pred == nil || pred(p) {
			ok++
		}
	}
	return ok, total
}

// waitFirst sends on out the time since start at which a Package first satisfied pred, or
// nothing when ctx ends first; it looks every 10 ms.
func (w *packageWatch) waitFirst(ctx context.Context, pred func(*convoyv1alpha1.Package) bool, start time.Time, out chan<- time.Duration) {
	for ctx.Err() == nil {
		if w.any(pred) {
			out <- time.Since(start)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// any reports whether some Package satisfies pred.
func (w *packageWatch) any(pred func(*convoyv1alpha1.Package) bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pkgs {
		if pred(p) {
			return true
		}
	}
	return false
}

// countAll returns how many Packages satisfy pred.
func (w *packageWatch) countAll(pred func(*convoyv1alpha1.Package) bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, p := range w.pkgs {
		if pred(p) {
			n++
		}
	}
	return n
}
