package bench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// steady measures the fleet doing nothing for cfg.FleetSteadyWindows windows of
// cfg.FleetSteadyDuration each, then the API server's own writes with the controller stopped,
// as the steady scenario does. A window shorter than a Package's spec.interval may see none of
// the passes settled Packages make once per interval; then every Package is asked for one, and
// their cost is added as an upper bound.
func (f *fleetRun) steady(ctx context.Context) error {
	if err := f.waitSettled(ctx); err != nil {
		return err
	}
	var windows []steadyWindow
	for i := 1; i <= f.e.cfg.FleetSteadyWindows; i++ {
		sw, err := f.steadyWindow(ctx, i)
		if err != nil {
			return err
		}
		windows = append(windows, sw)
	}
	d := f.e.cfg.FleetSteadyDuration
	idle, err := f.e.measureIdle(ctx, min(d, maxIdleWindow))
	if err != nil {
		return err
	}
	var requested float64
	if d < driftInterval {
		logf(f.e.cfg, "fleet: one requested pass of every Package")
		drift, passes, err := f.e.measureDriftPasses(ctx)
		if err != nil {
			return err
		}
		requested = driftShare(drift, passes, passes)
	}
	for _, sw := range windows {
		sw.cpu.requested = requested
		f.addSteadyRows(sw, idle, sw.n == len(windows))
	}
	return nil
}

// steadyWindow is one measured window of the steady state, the nth.
type steadyWindow struct {
	n   int
	w   window
	cpu steadyCPU
	// hosted are the requests the hosted API servers of the sample served in the window.
	hosted Requests
	// scrapes counts the scrapes of the controller's metrics (-metrics-scrape-interval).
	scrapes int
}

// steadyWindow measures the nth steady window, with its Package passes.
func (f *fleetRun) steadyWindow(ctx context.Context, n int) (steadyWindow, error) {
	d := f.e.cfg.FleetSteadyDuration
	logf(f.e.cfg, "fleet: steady state for %s (window %d)", d, n)
	countsBefore, err := f.e.ctrl.CounterSums(ctx, packageReconcilesMetric, packageRepeatsMetric)
	if err != nil {
		return steadyWindow{}, err
	}
	hostedBefore, err := f.e.hostedRequests(ctx)
	if err != nil {
		return steadyWindow{}, err
	}
	profiled := f.profileSteady(ctx, d, n)
	scraped := f.e.scrapeEvery(ctx, f.e.cfg.MetricsScrapeInterval)
	w, err := f.e.measureFor(ctx, d)
	scrapes := scraped()
	profiled()
	if err != nil {
		return steadyWindow{}, err
	}
	hostedAfter, err := f.e.hostedRequests(ctx)
	if err != nil {
		return steadyWindow{}, err
	}
	countsAfter, err := f.e.ctrl.CounterSums(ctx, packageReconcilesMetric, packageRepeatsMetric)
	if err != nil {
		return steadyWindow{}, err
	}
	cpu := steadyCPU{window: w.cpu.Seconds() / w.wall.Seconds(), passes: countsAfter[0] - countsBefore[0],
		repeats: countsAfter[1] - countsBefore[1]}
	return steadyWindow{n: n, w: w, cpu: cpu, hosted: hostedAfter.Sub(hostedBefore), scrapes: scrapes}, nil
}

// scrapeEvery reads the controller's /metrics every interval (none when zero), as a Prometheus
// would, until the returned function is called; that returns how many scrapes succeeded.
func (e *env) scrapeEvery(ctx context.Context, interval time.Duration) func() int {
	if interval <= 0 {
		return func() int { return 0 }
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := e.ctrl.Metrics(ctx); err == nil {
					n++
				}
			}
		}
	}()
	return func() int { cancel(); return <-done }
}

// hostedRequests sums the requests on objects (not Leases) that the hosted API servers of the
// sample have served.
func (e *env) hostedRequests(ctx context.Context) (Requests, error) {
	out := Requests{}
	for _, hc := range e.clusters {
		if hc.Config == nil {
			continue
		}
		r, err := scrapeRequests(ctx, hc.Config)
		if err != nil {
			return nil, fmt.Errorf("hosted cluster %s: %w", hc.Name, err)
		}
		for k, v := range r {
			if _, rest, _ := strings.Cut(k, "/"); rest != "leases" {
				out[k] += v
			}
		}
	}
	return out, nil
}

// profileSteady captures, when asked (-pprof), a CPU profile of the controller over the whole
// nth steady window, d; the returned function waits for it.
func (f *fleetRun) profileSteady(ctx context.Context, d time.Duration, n int) func() {
	file := "fleet-steady.cpu.pprof"
	if n > 1 {
		file = fmt.Sprintf("fleet-steady-%d.cpu.pprof", n)
	}
	wait := f.e.profileCPU(ctx, int(d.Seconds()), file)
	return func() {
		if err := wait(); err != nil {
			f.res.note("pprof steady: %v", err)
		}
	}
}

// packageReconcilesMetric prefixes the series of the Package controller's reconciles, one per
// result.
const packageReconcilesMetric = `controller_runtime_reconcile_total{controller="package",`

// packageRepeatsMetric is the series of the Package controller's passes that repeated a
// settled one without looking at an object.
const packageRepeatsMetric = `convoy_sync_settled_repeats_total{controller="package"`

// steadyCPU is the controller's share of a core in the steady state.
type steadyCPU struct {
	// window is the share over the steady window, which held passes Package passes.
	window float64
	passes float64
	// repeats counts the passes that repeated a settled pass (sync/engine/memory).
	repeats float64
	// requested is the upper bound of the passes at spec.interval, measured by asking every
	// Package for one; zero when the window spans an interval.
	requested float64
}

// waitSettled waits until every HostedClusterPackage reports its rollout complete (current
// revision = update revision, spec observed), so that the steady state does not count the last
// status patches and events of the rollout before it.
func (f *fleetRun) waitSettled(ctx context.Context) error {
	names := make([]string, 0, len(f.addons))
	for _, a := range f.addons {
		names = append(names, a.name())
	}
	return f.e.waitRolloutsCompleted(ctx, names...)
}
