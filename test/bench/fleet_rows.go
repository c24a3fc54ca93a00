package bench

import (
	"fmt"
	"time"
)

// Targets of the fleet scenario (P5 to P7 of docs/evidence/performance.md), as ratios to
// baselines of the same run.
const (
	// targetOneAddonRatio bounds one add-on's rollout among idle others against the same
	// rollout in an otherwise empty fleet.
	targetOneAddonRatio = 1.1
	// targetAllAddonsRatio bounds the rollout of every add-on by one commit against the bare
	// loop updating the same objects.
	targetAllAddonsRatio = 1.4
	// targetFleetBookkeepingRatio bounds the install and the rollout of every add-on by one
	// commit against the bookkeeping floor of the same step (issue 42).
	targetFleetBookkeepingRatio = 1.3
	// targetFleetRequestsPerObj bounds the API requests per object of that rollout.
	targetFleetRequestsPerObj = 1.15
	// targetFleetRSSMiB bounds the controller's peak RSS over the whole scenario.
	targetFleetRSSMiB = 600
	// targetSteadyCPUShare bounds the controller's CPU in the steady state, in cores.
	targetSteadyCPUShare = 0.01
)

// scenario names a row group of the fleet scenario.
func (f *fleetRun) scenario(name string) string {
	return fmt.Sprintf("fleet %d add-ons × %d %s", len(f.addons), len(f.e.namespaces), name)
}

// packages is the number of Packages of all add-ons.
func (f *fleetRun) packages() int {
	n := 0
	for _, a := range f.addons {
		n += len(f.namespacesOf(a))
	}
	return n
}

// measured returns d in seconds, or nil when the baseline's step did not run.
func measured(d time.Duration) *float64 {
	if d == 0 {
		return nil
	}
	return ptr(d.Seconds())
}

// addInstallRows reports the install of every add-on from nothing.
func (f *fleetRun) addInstallRows(w window) {
	scenario := f.scenario("install")
	objects := float64(f.managementObjects())
	f.res.add(Row{Scenario: scenario, Metric: "wall time to all progressed", Value: w.wall.Seconds(), Unit: "s",
		Baseline: measured(f.create), BaselineName: "bare SSA loop creating the management objects",
		Note: fmt.Sprintf("%d Packages", f.packages())})
	f.res.add(Row{Scenario: scenario, Metric: "API requests per object", Value: w.requests.Total() / objects, Unit: "req",
		Note: "per management object; " + w.requests.String()})
	f.res.add(Row{Scenario: scenario, Metric: "controller CPU", Value: w.cpu.Seconds(), Unit: "s",
		Note: fmt.Sprintf("%.0f%% of one core", 100*w.cpu.Seconds()/w.wall.Seconds())})
	f.addBookkeepingRows(scenario, w, f.keep.create)
}

// addBookkeepingRows adds the rows of measured window w against pass of the bookkeeping
// floor, per management object, with the target on the wall time; none when the floor
// step did not run.
func (f *fleetRun) addBookkeepingRows(scenario string, w window, pass floorPass) {
	if pass.wall == 0 {
		return
	}
	kept := len(f.management()) * len(f.e.namespaces)
	note := fmt.Sprintf("%d Packages; the floor has the %d of the management add-ons", f.packages(), kept)
	for _, row := range bookkeepingRows(scenario, w, pass, float64(f.managementObjects()), targetFleetBookkeepingRatio, note) {
		f.res.add(row)
	}
}

// addRollOneRows reports add-on 0 rolled while the others are idle, next to the same rollout
// in an otherwise empty fleet.
func (f *fleetRun) addRollOneRows(w fleetWindow) {
	scenario := f.scenario("one add-on rolled, others idle")
	wall := Row{Scenario: scenario, Metric: "wall time to all progressed", Value: w.wall.Seconds(), Unit: "s",
		Baseline: ptr(f.alone.wall.Seconds()), BaselineName: "same rollout, empty fleet",
		Target: fmt.Sprintf("≤ %.1f×", targetOneAddonRatio)}
	wall.Met = ptr(wall.Ratio() <= targetOneAddonRatio)
	f.res.add(wall)
	f.res.add(Row{Scenario: scenario, Metric: "Packages updated", Value: float64(w.updated), Unit: "",
		Baseline: ptr(float64(f.alone.updated)), BaselineName: "same rollout, empty fleet",
		Note: "Packages whose spec moved to the new commit, every add-on included"})
	f.res.add(Row{Scenario: scenario, Metric: "API requests", Value: w.requests.Total(), Unit: "req",
		Baseline: ptr(f.alone.requests.Total()), BaselineName: "same rollout, empty fleet", Note: w.requests.String()})
	f.res.add(Row{Scenario: scenario, Metric: "package renders", Value: w.renders, Unit: "",
		Baseline: ptr(f.alone.renders), BaselineName: "same rollout, empty fleet"})
	f.res.add(Row{Scenario: scenario, Metric: "timeline: Packages progressed", Value: w.wall.Seconds(), Unit: "s",
		Note: "pinned " + w.pinned + "; progressed " + w.progressed + "; empty fleet: pinned " + f.alone.pinned +
			"; progressed " + f.alone.progressed})
}

// addRollAllRows reports every add-on rolled by one commit, next to the bare loop.
func (f *fleetRun) addRollAllRows(w fleetWindow) {
	scenario := f.scenario("all rolled by one commit")
	objects := float64(f.managementObjects())
	wall := Row{Scenario: scenario, Metric: "wall time to all progressed", Value: w.wall.Seconds(), Unit: "s",
		Baseline: ptr(f.floor.Seconds()), BaselineName: "bare SSA loop", Target: fmt.Sprintf("≤ %.1f×", targetAllAddonsRatio),
		Note: fmt.Sprintf("%d Packages updated; the floor updates the management objects only", w.updated)}
	wall.Met = ptr(wall.Ratio() <= targetAllAddonsRatio)
	perObj := Row{Scenario: scenario, Metric: "API requests per object", Value: w.requests.Total() / objects, Unit: "req",
		Baseline: ptr(f.floorRq.Total() / objects), BaselineName: "bare SSA loop",
		Target: fmt.Sprintf("≤ %.2f", targetFleetRequestsPerObj), Note: "per management object; " + w.requests.String()}
	perObj.Met = ptr(perObj.Value <= targetFleetRequestsPerObj)
	renders := Row{Scenario: scenario, Metric: "package renders", Value: w.renders, Unit: "",
		Target: fmt.Sprint(len(f.addons)), Met: ptr(w.renders == float64(len(f.addons))),
		Note: "one per distinct (package, commit, config)"}
	first := Row{Scenario: scenario, Metric: "commit to first Package updated", Value: w.firstUpdated.Seconds(), Unit: "s",
		Note: "from the poll request to the first Package pinned to the new commit"}
	cpu := Row{Scenario: scenario, Metric: "controller CPU", Value: w.cpu.Seconds(), Unit: "s",
		Note: fmt.Sprintf("%.0f%% of one core", 100*w.cpu.Seconds()/w.wall.Seconds())}
	timeline := Row{Scenario: scenario, Metric: "timeline: Packages pinned", Value: w.firstUpdated.Seconds(), Unit: "s",
		Note: "first / median / last Package pinned to the commit, from the poll request: " + w.pinned}
	done := Row{Scenario: scenario, Metric: "timeline: Packages progressed", Value: w.wall.Seconds(), Unit: "s",
		Note: "first / median / last Package applied, Available and its status written: " + w.progressed}
	for _, row := range []Row{wall, perObj, renders, first, timeline, done, cpu} {
		f.res.add(row)
	}
	f.addBookkeepingRows(scenario, w.window, f.keep.update)
}

// addSteadyRows reports steady window sw and, withRSS, the peak RSS of the whole scenario. The writes
// are set beside the API server's own (idle, the controller stopped), scaled to the window: the
// target is that the controller adds none.
func (f *fleetRun) addSteadyRows(sw steadyWindow, idle window, withRSS bool) {
	w, cpu := sw.w, sw.cpu
	scenario := f.scenario(fmt.Sprintf("steady %s", f.e.cfg.FleetSteadyDuration))
	if sw.n > 1 {
		scenario = f.scenario(fmt.Sprintf("steady %s, window %d", f.e.cfg.FleetSteadyDuration, sw.n))
	}
	share := cpu.window + cpu.requested
	own := idle.requests.Writes() * w.wall.Seconds() / idle.wall.Seconds()
	cpuNote := fmt.Sprintf("over the window, which spans a Package spec.interval (%s): %.0f Package passes in it, %.0f of them repeats of a settled pass",
		driftInterval, cpu.passes, cpu.repeats)
	if sw.scrapes > 0 {
		cpuNote += fmt.Sprintf(", and %d scrapes of its metrics every %s", sw.scrapes, f.e.cfg.MetricsScrapeInterval)
	}
	if cpu.requested > 0 {
		cpuNote = fmt.Sprintf("%.2f%% in the window (%.0f Package passes, %.0f repeats), plus %.2f%% for every Package's pass every %s (upper bound: measured by asking each for one)",
			100*cpu.window, cpu.passes, cpu.repeats, 100*cpu.requested, driftInterval)
	}
	for _, row := range []Row{
		{Scenario: scenario, Metric: "write requests", Value: w.requests.Writes(), Unit: "req",
			Baseline: ptr(own), BaselineName: "API server alone, scaled",
			Target: "0 of the controller's", Met: ptr(w.requests.Writes() <= own+1),
			Note: w.requests.String() + "; met when within one of the API server's own"},
		{Scenario: scenario, Metric: "git fetches (upload-pack)", Value: float64(w.git.UploadPacks), Unit: "",
			Target: "0", Met: ptr(w.git.UploadPacks == 0), Note: fmt.Sprintf("%d ref advertisements", w.git.Advertisements)},
		{Scenario: scenario, Metric: "controller CPU", Value: 100 * share, Unit: "% of a core",
			Target: fmt.Sprintf("< %.0f%%", 100*targetSteadyCPUShare), Met: ptr(share < targetSteadyCPUShare), Note: cpuNote},
		{Scenario: scenario, Metric: "hosted API server requests", Value: sw.hosted.Total(), Unit: "req",
			Note: fmt.Sprintf("%s; the hosted API servers of the fleet, whose objects no watch sees", sw.hosted)},
	} {
		f.res.add(row)
	}
	if withRSS {
		f.res.add(Row{Scenario: scenario, Metric: "controller peak RSS", Value: mib(w.peakRSS), Unit: "MiB",
			Target: fmt.Sprintf("< %d MiB", targetFleetRSSMiB), Met: ptr(mib(w.peakRSS) < targetFleetRSSMiB),
			Note: fmt.Sprintf("over the whole scenario, %d Packages on one replica", f.packages())})
	}
}
