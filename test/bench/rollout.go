package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// packageName names the Packages of the packages driver.
const packageName = "fleet-addon"

// objectsPerPackage is the default size of the management package; Config.ObjectsPerPackage
// adds others.
const objectsPerPackage = 10

// rolloutTimeout bounds one rollout.
const rolloutTimeout = 20 * time.Minute

// rolloutRun is one fleet size of the rollout scenario.
type rolloutRun struct {
	e   *env
	res *Results
	n   int
	// objects is the size of the management package.
	objects int
	driver  string
	// create and floor are the bare loop's times to create, then update, every object.
	create, floor time.Duration
	// floorRq are the API server's requests during the update floor, and floorServerCPU the
	// CPU time the API server and etcd spent on it.
	floorRq        Requests
	floorServerCPU time.Duration
	// keepBefore is the bookkeeping floor (bookkeeping.go) measured before convoy's steps, and
	// keepAfter the same measured after them; nil when it was not (bookkeeping_bracket.go).
	keepBefore bookkeepingFloor
	keepAfter  *bookkeepingFloor
	// steps are convoy's measured steps in their order, whose rows wait for the floors.
	steps []measuredStep
}

// measuredStep is what one of convoy's steps measured, kept until its rows can be added
// (addStepRows): they compare it with the bookkeeping floor, which may yet be measured again
// after the steps.
type measuredStep struct {
	name string
	w    window
	// trace and counters are the step's timeline and the controller's counters over it (waits.go).
	trace    *rolloutTrace
	counters waitCounters
	// packageBytes is the size of a Package right after the step; 0 when it was not read.
	packageBytes int
	withTargets  bool
}

// runRollout measures the bare-loop floor and the bookkeeping floor, installs the package, then
// rolls out a new revision with each strategy. With bracket it then stops the controller and
// measures the bookkeeping floor again, so that each step is judged against the floor on both
// sides of it; without, it returns the env with the controller still running, for the steady
// scenario. The steps' rows are added once the floors are known, also when a later step fails.
func runRollout(ctx context.Context, cfg Config, res *Results, n, objects int, bracket bool) (*env, error) {
	logf(cfg, "rollout N=%d: starting the management server and %d HostedClusters, %d objects per Package", n, n, objects)
	e, err := newEnv(ctx, cfg, envInput{Clusters: n, Objects: objects})
	if err != nil {
		return nil, err
	}
	r := &rolloutRun{e: e, res: res, n: n, objects: e.objects}
	steps := []func(context.Context) error{r.measureFloor, r.install, r.instant, r.rolling}
	if bracket {
		steps = append(steps, r.measureBookkeepingFloorAfter)
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			r.addStepRows()
			_ = e.close()
			return nil, fmt.Errorf("rollout N=%d: %w", n, err)
		}
	}
	r.addStepRows()
	return e, nil
}

// bareBatches returns the bare-loop copies of the management package at rev, one batch per
// HCP namespace.
func (e *env) bareBatches(rev int) [][]*unstructured.Unstructured {
	var out [][]*unstructured.Unstructured
	for ns := range e.namespaces {
		out = append(out, managementObjectsOf(ns, "bare-", rev, e.objects))
	}
	return out
}

// measureFloor creates the bare copies of the objects (timed as the install floor), then
// updates them all (timed as the rollout floor), before the controller starts.
func (r *rolloutRun) measureFloor(ctx context.Context) error {
	c := r.e.cfg.Concurrency
	logf(r.e.cfg, "rollout N=%d: bare SSA loop, %d objects at concurrency %d", r.n, r.n*r.objects, c)
	if err := r.e.compact(ctx); err != nil {
		return err
	}
	var err error
	if r.create, err = bareLoop(ctx, r.e.admin, r.e.bareBatches(1), c); err != nil {
		return err
	}
	before, err := r.e.begin(ctx)
	if err != nil {
		return err
	}
	apiProfile := r.e.startAPIServerProfile(ctx, r.res, fmt.Sprintf("N%d-floor", r.n), apiProfileSeconds)
	if r.floor, err = bareLoop(ctx, r.e.admin, r.e.bareBatches(2), c); err != nil {
		return err
	}
	apiProfile()
	after, err := r.e.take(ctx)
	if err != nil {
		return err
	}
	// The bare loop's requests are the benchmark's own: count them from the server side.
	r.floorRq = after.server.Sub(before.server)
	r.floorServerCPU = after.serverCPU - before.serverCPU
	if err := r.measureBookkeepingFloor(ctx); err != nil {
		return err
	}
	if err := r.measureWriteCosts(ctx, r.floorServerCPU); err != nil {
		return err
	}
	return r.e.startController(ctx)
}

// install creates the HostedClusterPackage (or the Packages) at the current revision and
// waits until every Package progressed.
func (r *rolloutRun) install(ctx context.Context) error {
	if err := r.chooseDriver(ctx); err != nil {
		return err
	}
	logf(r.e.cfg, "rollout N=%d: installing with driver %s", r.n, r.driver)
	if err := r.e.compact(ctx); err != nil {
		return err
	}
	return r.measure(ctx, installStep, r.e.commit, func(ctx context.Context) error {
		create := r.e.createHostedClusterPackage
		if r.driver == DriverPackages {
			create = func(ctx context.Context) error { return r.e.createPackages(ctx, packageName, managementPath) }
		}
		if err := create(ctx); err != nil {
			return err
		}
		_, err := r.e.watch.waitAll(ctx, r.e.namespaces, progressedAt(r.e.commit), rolloutTimeout)
		return err
	}, false)
}

// chooseDriver uses a HostedClusterPackage when the driver allows it and the controller runs
// the HostedClusterPackage controller (seen in its metrics).
func (r *rolloutRun) chooseDriver(ctx context.Context) error {
	r.driver = r.e.cfg.Driver
	if r.driver == DriverPackages {
		return nil
	}
	has, err := r.e.ctrl.HasController(ctx, hcpControllerName)
	switch {
	case err != nil:
		return err
	case has:
		r.driver = DriverHostedClusterPackage
	case r.driver == DriverHostedClusterPackage:
		return fmt.Errorf("the controller runs no %s controller", hcpControllerName)
	default:
		r.driver = DriverPackages
		r.res.note("rollout N=%d: the controller runs no HostedClusterPackage controller; Packages were "+
			"created per HCP namespace and the benchmark paced the rollingUpgrade itself", r.n)
	}
	return nil
}

// instant commits a new revision and waits until every Package progressed.
func (r *rolloutRun) instant(ctx context.Context) error {
	if r.driver == DriverHostedClusterPackage {
		if err := r.e.setHostedClusterPackageStrategy(ctx, false); err != nil {
			return err
		}
	}
	return r.rollout(ctx, "instant", false)
}

// rolling switches to rollingUpgrade maxUnavailable 10% and rolls out a new revision.
func (r *rolloutRun) rolling(ctx context.Context) error {
	if r.driver == DriverHostedClusterPackage {
		if err := r.e.setHostedClusterPackageStrategy(ctx, true); err != nil {
			return err
		}
	} else {
		// Pin every Package at the current commit, so that only the pacing moves them.
		commit := r.e.commit
		if err := r.e.forEachNamespace(ctx, func(ns string) error { return r.e.pinPackage(ctx, ns, packageName, commit) }); err != nil {
			return err
		}
	}
	return r.rollout(ctx, "rollingUpgrade 10%", true)
}

// rollout commits the next revision, asks the GitSource to poll, and waits until every
// Package progressed at it.
func (r *rolloutRun) rollout(ctx context.Context, name string, rolling bool) error {
	logf(r.e.cfg, "rollout N=%d: %s", r.n, name)
	// Compacting first: the GitSource's own poll may find a commit waiting while etcd compacts,
	// and start the rollout before the step's first snapshot.
	if err := r.e.compact(ctx); err != nil {
		return err
	}
	commit, err := r.e.commitNext()
	if err != nil {
		return err
	}
	return r.measure(ctx, name, commit, func(ctx context.Context) error {
		if err := r.e.requestPoll(ctx); err != nil {
			return err
		}
		if rolling && r.driver == DriverPackages {
			budget := max(1, r.n/10)
			if err := r.e.waitArtifact(ctx, commit); err != nil {
				return err
			}
			return r.e.paceRollingUpgrade(ctx, packageName, commit, budget, rolloutTimeout)
		}
		_, err := r.e.watch.waitAll(ctx, r.e.namespaces, progressedAt(commit), rolloutTimeout)
		return err
	}, true)
}

// scenario names the rows of this run; a package of other than objectsPerPackage objects
// says its size.
func (r *rolloutRun) scenario(name string) string {
	if r.objects != objectsPerPackage {
		return fmt.Sprintf("rollout N=%d %d objects %s", r.n, r.objects, name)
	}
	return fmt.Sprintf("rollout N=%d %s", r.n, name)
}

// floorScenario names the rows of the bookkeeping floor itself. It does not start as the steps'
// do ("rollout N=1000 "): a rollout table (benchtable) takes every such scenario for a step.
func (r *rolloutRun) floorScenario() string {
	if r.objects != objectsPerPackage {
		return fmt.Sprintf("bookkeeping floor N=%d %d objects", r.n, r.objects)
	}
	return fmt.Sprintf("bookkeeping floor N=%d", r.n)
}

// measure runs fn, which rolls out commit, between two snapshots and keeps what it measured for
// the step's rows and the accounting of its waits (addStepRows); targets apply when withTargets.
// The caller compacts etcd first (env.compact), before it commits what fn rolls out.
func (r *rolloutRun) measure(ctx context.Context, name, commit string, fn func(context.Context) error, withTargets bool) error {
	rendersBefore, err := r.e.ctrl.Counter(ctx, rendersMetric)
	if err != nil {
		return err
	}
	countersBefore, err := r.e.readWaitCounters(ctx)
	if err != nil {
		return err
	}
	before, err := r.e.take(ctx)
	if err != nil {
		return err
	}
	trace := newRolloutTrace(commit, before.at)
	r.e.watch.setTrace(trace)
	profile := r.startProfile(ctx, name)
	err = fn(ctx)
	r.e.watch.setTrace(nil)
	if err != nil {
		return err
	}
	after, err := r.e.take(ctx)
	if err != nil {
		return err
	}
	profile()
	w := since(before, after)
	rendersAfter, err := r.e.ctrl.Counter(ctx, rendersMetric)
	if err != nil {
		return err
	}
	countersAfter, err := r.e.readWaitCounters(ctx)
	if err != nil {
		return err
	}
	w.renders = rendersAfter - rendersBefore
	r.steps = append(r.steps, measuredStep{name: name, w: w, trace: trace, counters: countersAfter.sub(countersBefore),
		packageBytes: r.packageSize(ctx, name), withTargets: withTargets})
	return nil
}

// addStepRows adds the rows of every measured step against its floors, with the accounting of
// its waits, then how far the bookkeeping floor moved across the steps when it was measured on
// both sides of them. It reads nothing from the servers: it also runs when a step failed.
func (r *rolloutRun) addStepRows() {
	for _, s := range r.steps {
		floor := r.floorsOf(s.name)
		r.addRows(s.name, s.w, floor, s.withTargets)
		r.addPackageSizeRow(s.name, s.packageBytes, floor.keep.pass().packageBytes)
		r.addWaitRows(r.scenario(s.name), account(s.w, floor, r.e.cfg.Concurrency, r.n, s.trace, s.counters))
	}
	if r.keepAfter != nil {
		for _, row := range floorDriftRows(r.floorScenario(), r.keepBefore, *r.keepAfter) {
			r.res.add(row)
		}
	}
}

// floorsOf returns the floors of step name: the bare loop's and the bookkeeping floor's create
// passes for the install, their update passes for a rollout; the bookkeeping floor's from both
// sides of the steps when it was measured after them too.
func (r *rolloutRun) floorsOf(name string) floors {
	out := floors{bare: r.floor, keep: floorBracket{before: r.keepBefore.passFor(name)}}
	if name == installStep {
		out.bare = r.create
	}
	if r.keepAfter != nil {
		out.keep.after = ptr(r.keepAfter.passFor(name))
	}
	return out
}

// rendersMetric counts the controller's package renders.
const rendersMetric = "convoy_render_cache_renders_total"

// startProfile captures a CPU profile of the controller during the measurement when asked;
// the returned function waits for it, then captures a heap profile.
func (r *rolloutRun) startProfile(ctx context.Context, name string) func() {
	if r.e.cfg.PprofDir == "" || r.e.ctrl == nil {
		return func() {}
	}
	done := make(chan error, 1)
	base := filepath.Join(r.e.cfg.PprofDir, fmt.Sprintf("N%d-%s", r.n, slug(name)))
	apiProfile := r.e.startAPIServerProfile(ctx, r.res, fmt.Sprintf("N%d-%s", r.n, slug(name)), apiProfileSeconds)
	go func() {
		done <- r.e.ctrl.CaptureProfile(ctx, fmt.Sprintf("profile?seconds=%d", profileSeconds(r.n)), base+".cpu.pprof")
	}()
	return func() {
		apiProfile()
		if err := <-done; err != nil {
			r.res.note("pprof %s: %v", name, err)
		}
		if err := r.e.ctrl.CaptureProfile(ctx, "heap", base+".heap.pprof"); err != nil {
			r.res.note("pprof %s: %v", name, err)
		}
	}
}

// profileSeconds is the length of a CPU profile of a rollout of n clusters: 30 s per 1,000,
// which covers the instant rollout on a quiet machine, and 30 s at the least.
func profileSeconds(n int) int { return max(30, 30*n/1000) }

// apiProfileSeconds is the length of the API server's CPU profiles: shorter than the N=1000
// floor, so that the floor's and a rollout's profiles both sample the server at work.
const apiProfileSeconds = 10
