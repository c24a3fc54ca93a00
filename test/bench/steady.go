package bench

import (
	"context"
	"fmt"
	"time"
)

// maxIdleWindow bounds the baseline window of the steady state.
const maxIdleWindow = 30 * time.Second

// prepareSteady starts a fleet of cfg.SteadyPackages HostedClusters with the controller and
// installs the package everywhere.
func prepareSteady(ctx context.Context, cfg Config, res *Results) (*env, error) {
	logf(cfg, "steady: preparing %d available Packages", cfg.SteadyPackages)
	e, err := newEnv(ctx, cfg, envInput{Clusters: cfg.SteadyPackages, PackageInterval: cfg.SteadyInterval})
	if err != nil {
		return nil, err
	}
	if err := e.startController(ctx); err != nil {
		_ = e.close()
		return nil, err
	}
	// The install rows belong to no scenario of the table; only the driver note is kept.
	scratch := &Results{}
	r := &rolloutRun{e: e, res: scratch, n: cfg.SteadyPackages}
	if err := r.install(ctx); err != nil {
		_ = e.close()
		return nil, fmt.Errorf("steady: %w", err)
	}
	if r.driver == DriverHostedClusterPackage {
		if err := e.waitRolloutsCompleted(ctx, hcpName); err != nil {
			_ = e.close()
			return nil, fmt.Errorf("steady: %w", err)
		}
	}
	res.Notes = append(res.Notes, scratch.Notes...)
	return e, nil
}

// runSteady watches the controller do nothing for cfg.SteadyDuration, then measures the API
// server's own writes over a shorter window with the controller stopped (SIGSTOP): the
// baseline of writes that are not the controller's.
func runSteady(ctx context.Context, cfg Config, res *Results, e *env) error {
	logf(cfg, "steady: %d Packages, %s without changes", len(e.namespaces), cfg.SteadyDuration)
	passesBefore, err := e.ctrl.CounterSum(ctx, packageReconcilesMetric)
	if err != nil {
		return err
	}
	profiled := e.profileCPU(ctx, int(cfg.SteadyDuration.Seconds()), "steady.cpu.pprof")
	w, err := e.measureFor(ctx, cfg.SteadyDuration)
	if err != nil {
		return err
	}
	if err := profiled(); err != nil {
		res.note("pprof steady: %v", err)
	}
	passesAfter, err := e.ctrl.CounterSum(ctx, packageReconcilesMetric)
	if err != nil {
		return err
	}
	idle, err := e.measureIdle(ctx, min(cfg.SteadyDuration, maxIdleWindow))
	if err != nil {
		return err
	}
	drift, passes, err := e.measureDriftPasses(ctx)
	if err != nil {
		return err
	}
	scale := w.wall.Seconds() / idle.wall.Seconds()
	scenario := fmt.Sprintf("steady %d Packages %s", len(e.namespaces), cfg.SteadyDuration)
	defer addDriftRows(res, scenario, drift, passes)
	res.add(Row{Scenario: scenario, Metric: "write requests", Value: w.requests.Writes(), Unit: "req",
		Baseline: ptr(idle.requests.Writes() * scale), BaselineName: "API server alone, scaled",
		Target: "0 of the controller's", Met: ptr(w.requests.Writes() <= idle.requests.Writes()*scale+1),
		Note: w.requests.String() + "; met when within one of the API server's own"})
	perPackageMinute := func(r Requests, wall time.Duration) float64 {
		return r.Total() / float64(len(e.namespaces)) / wall.Minutes()
	}
	res.add(Row{Scenario: scenario, Metric: "requests per Package per minute", Value: perPackageMinute(w.requests, w.wall),
		Unit: "req", Baseline: ptr(perPackageMinute(idle.requests, idle.wall)), BaselineName: "API server alone",
		Note: "settled Packages are judged from the watch of applied objects; only hosted-cluster objects are read every --health-check-interval"})
	res.add(Row{Scenario: scenario, Metric: "controller CPU", Value: w.cpu.Seconds(), Unit: "s",
		Note: fmt.Sprintf("%.1f%% of one core", 100*w.cpu.Seconds()/w.wall.Seconds())})
	if passes := passesAfter - passesBefore; cfg.SteadyInterval > 0 && passes > 0 {
		res.add(Row{Scenario: scenario, Metric: "controller CPU per interval pass", Value: ms(w.cpu) / passes, Unit: "ms",
			Note: fmt.Sprintf("%.0f passes of settled Packages at spec.interval %s; the window's idle share included", passes, cfg.SteadyInterval)})
	}
	res.add(Row{Scenario: scenario, Metric: "controller RSS at end", Value: mib(e.mustUsage().RSS), Unit: "MiB",
		Note: fmt.Sprintf("peak %.0f MiB", mib(w.peakRSS))})
	res.add(Row{Scenario: scenario, Metric: "git fetches (upload-pack)", Value: float64(w.git.UploadPacks), Unit: "",
		Target: "0", Met: ptr(w.git.UploadPacks == 0),
		Note: fmt.Sprintf("%d ref advertisements, %d bytes", w.git.Advertisements, w.git.Bytes)})
	return nil
}

// measureFor returns what happens in the next d.
func (e *env) measureFor(ctx context.Context, d time.Duration) (window, error) {
	before, err := e.take(ctx)
	if err != nil {
		return window{}, err
	}
	select {
	case <-ctx.Done():
		return window{}, ctx.Err()
	case <-time.After(d):
	}
	after, err := e.take(ctx)
	return since(before, after), err
}

// measureIdle measures d with the controller stopped, then resumes it.
func (e *env) measureIdle(ctx context.Context, d time.Duration) (window, error) {
	if err := e.ctrl.Pause(); err != nil {
		return window{}, err
	}
	defer func() { _ = e.ctrl.Resume() }()
	return e.measureFor(ctx, d)
}

// mustUsage returns the controller's usage, zero when it cannot be read.
func (e *env) mustUsage() Usage {
	u, _ := e.ctrl.Usage()
	return u
}
