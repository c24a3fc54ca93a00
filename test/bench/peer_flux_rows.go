package bench

import "fmt"

// targetFluxSpeedup is target P12 (docs/evidence/performance.md): at targetFleetSize, convoy's
// instant rollout at least this many times faster than Flux's update of the same objects, in
// the same run.
const targetFluxSpeedup = 5

// addRows turns a measured step of Flux into rows beside the bare loop's, and beside convoy's
// step of the same size when the rollout scenario ran it in this run.
func (r *fluxRun) addRows(name string, w window) {
	scenario := fmt.Sprintf("flux N=%d %s", r.n, name)
	objects := float64(r.n * objectsPerPackage)
	floor, floorRq, floorCPU := r.update, r.updateRq, r.updateCPU
	if name == installStep {
		floor, floorRq, floorCPU = r.create, r.createRq, r.createCPU
	}
	wall := Row{Scenario: scenario, Metric: "wall time to all applied", Value: w.wall.Seconds(), Unit: "s",
		Baseline: ptr(floor.Seconds()), BaselineName: "bare SSA loop", Note: fmt.Sprintf("%d Kustomizations", r.n)}
	cpu := Row{Scenario: scenario, Metric: "controller CPU", Value: w.cpu.Seconds(), Unit: "s",
		Note: fmt.Sprintf("source-controller and kustomize-controller: %.0f%% of one core", 100*w.cpu.Seconds()/w.wall.Seconds())}
	rss := Row{Scenario: scenario, Metric: "controller peak RSS", Value: mib(w.peakRSS), Unit: "MiB",
		Note: "source-controller's and kustomize-controller's, summed"}
	perObj := Row{Scenario: scenario, Metric: "API requests per object", Value: w.requests.Total() / objects, Unit: "req",
		Baseline: ptr(floorRq.Total() / objects), BaselineName: "bare SSA loop", Note: w.requests.String()}
	onObjects := Row{Scenario: scenario, Metric: "requests on the objects, per object", Value: w.requests.OnObjects() / objects,
		Unit: "req", Baseline: ptr(floorRq.OnObjects() / objects), BaselineName: "bare SSA loop",
		Note: "without Flux's Kustomizations, GitRepositories and events"}
	server := Row{Scenario: scenario, Metric: "API server CPU per object", Value: ms(w.serverCPU) / objects, Unit: "ms",
		Baseline: ptr(ms(floorCPU) / objects), BaselineName: "bare SSA loop",
		Note: fmt.Sprintf("kube-apiserver and etcd: %.0f%% of one core", 100*w.serverCPU.Seconds()/w.wall.Seconds())}
	for _, row := range []Row{wall, cpu, server, rss, perObj, onObjects} {
		r.res.add(row)
	}
	r.addConvoyRows(scenario, name, w)
}

// addConvoyRows compares convoy's step of the same size, measured earlier in the run by the
// rollout scenario, with Flux's: its install with Flux's install, its instant rollout (a
// commit to every HostedCluster at once) with Flux's update.
func (r *fluxRun) addConvoyRows(scenario, name string, w window) {
	step := name
	if name != installStep {
		step = instantScenarioSuffix
	}
	convoy := fmt.Sprintf("rollout N=%d %s", r.n, step)
	if wall := r.res.row(convoy, "wall time to all progressed"); wall != nil {
		row := Row{Scenario: scenario, Metric: "convoy's wall time, against Flux's", Value: wall.Value, Unit: "s",
			Baseline: ptr(w.wall.Seconds()), BaselineName: "Flux", Note: "convoy's from " + convoy}
		if r.n == targetFleetSize && step == instantScenarioSuffix {
			row.Target, row.Met = fmt.Sprintf("≤ 1/%d×", targetFluxSpeedup), ptr(row.Ratio() <= 1.0/targetFluxSpeedup)
		}
		r.res.add(row)
	}
	if cpu := r.res.row(convoy, "controller CPU"); cpu != nil {
		r.res.add(Row{Scenario: scenario, Metric: "convoy's controller CPU, against Flux's", Value: cpu.Value, Unit: "s",
			Baseline: ptr(w.cpu.Seconds()), BaselineName: "Flux", Note: "convoy's from " + convoy})
	}
}
