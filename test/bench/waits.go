package bench

import (
	"context"
	"fmt"
	"time"
)

// The accounting of a rollout's waits names where the time between the bookkeeping floor and
// convoy goes: how long the rollout took to pin its first Package (the poll, the fetch, the
// HostedClusterPackage's pass), how busy the Package workers were once it had (their work time
// against the floor's, the passes beyond one per Package), how long they sat idle, and the
// tail of the last Packages. The figures come from the Package watch (trace.go) and from the
// controller's own metrics: controller-runtime's reconcile counts and work-queue durations.

// waitCounters are the controller's metrics the accounting reads, as sums over their labels.
type waitCounters struct {
	packagePasses, rolloutPasses float64
	// packageWork and packageQueued are the seconds the Package controller's items spent being
	// worked on and waiting in its queue.
	packageWork, packageQueued float64
	// rolloutWork is the seconds the HostedClusterPackage controller's passes took; rolloutCPU
	// the CPU they used on their own threads (convoy_rollout_pass_cpu_seconds_total).
	rolloutWork, rolloutCPU float64
}

// waitPrefixes are the metric lines of waitCounters, in its order.
var waitPrefixes = []string{
	`controller_runtime_reconcile_total{controller="package"`,
	`controller_runtime_reconcile_total{controller="` + hcpControllerName + `"`,
	`workqueue_work_duration_seconds_sum{controller="package"`,
	`workqueue_queue_duration_seconds_sum{controller="package"`,
	`workqueue_work_duration_seconds_sum{controller="` + hcpControllerName + `"`,
	`convoy_rollout_pass_cpu_seconds_total{`,
}

// readWaitCounters reads waitCounters from the controller's metrics.
func (e *env) readWaitCounters(ctx context.Context) (waitCounters, error) {
	sums, err := e.ctrl.CounterSums(ctx, waitPrefixes...)
	if err != nil {
		return waitCounters{}, err
	}
	return waitCounters{packagePasses: sums[0], rolloutPasses: sums[1], packageWork: sums[2], packageQueued: sums[3],
		rolloutWork: sums[4], rolloutCPU: sums[5]}, nil
}

// sub returns c minus o.
func (c waitCounters) sub(o waitCounters) waitCounters {
	return waitCounters{packagePasses: c.packagePasses - o.packagePasses, rolloutPasses: c.rolloutPasses - o.rolloutPasses,
		packageWork: c.packageWork - o.packageWork, packageQueued: c.packageQueued - o.packageQueued,
		rolloutWork: c.rolloutWork - o.rolloutWork, rolloutCPU: c.rolloutCPU - o.rolloutCPU}
}

// waitAccount is the accounting of one measured rollout step.
type waitAccount struct {
	wall, floor time.Duration
	workers     int
	packages    int
	counters    waitCounters
	// firstPin, lastPin, p95Done and lastDone come from the trace, timed from the step's start.
	firstPin, lastPin, p50Done, p95Done, lastDone time.Duration
	controllerCPU                                 time.Duration
	// step and keep are what the machine did during the step and during its bookkeeping floor
	// (the mean of both sides of the steps when measured after them too: meanWindow).
	step, keep window
}

// account builds the accounting of a step from its trace and counters.
func account(w window, floor floors, workers, packages int, t *rolloutTrace, c waitCounters) waitAccount {
	keep := floor.keep.pass()
	a := waitAccount{wall: w.wall, floor: keep.wall, workers: workers, packages: packages, counters: c,
		controllerCPU: w.cpu, step: w, keep: keep.window}
	a.firstPin, a.lastPin = t.pinnedAt(0), t.pinnedAt(1)
	a.p50Done, a.p95Done, a.lastDone = t.doneAt(0.5), t.doneAt(0.95), t.doneAt(1)
	return a
}

// ownCPU is the CPU time of the processes doing the work of a window: the API server and etcd,
// the controller, and the benchmark (the floors' client, the Package watch).
func (w window) ownCPU() time.Duration { return w.serverCPU + w.cpu + w.benchCPU }

// othersCPU is the machine's busy time that none of the window's own processes spent: the
// other work of a shared machine.
func (w window) othersCPU() time.Duration { return max(0, w.machine.busy-w.ownCPU()) }

// idleCPU is the machine's idle time in the window.
func (w window) idleCPU() time.Duration { return w.machine.total - w.machine.busy }

// floorRate is the CPU the floor's processes used per second of its wall time: the cores the
// work got.
func (a waitAccount) floorRate() float64 {
	if a.keep.wall <= 0 {
		return 0
	}
	return a.keep.ownCPU().Seconds() / a.keep.wall.Seconds()
}

// extraCPUTime is the CPU the step's processes spent beyond the floor's, as the wall time it
// takes at the floor's rate: what convoy's own work costs when the machine is the bottleneck.
func (a waitAccount) extraCPUTime() time.Duration {
	rate := a.floorRate()
	if rate == 0 {
		return 0
	}
	return time.Duration((a.step.ownCPU() - a.keep.ownCPU()).Seconds() / rate * float64(time.Second))
}

// rateShortfall is the rest of the gap: the step's processes got fewer cores than the floor's
// did, because the machine's other work took them or because they waited with cores idle.
func (a waitAccount) rateShortfall() time.Duration {
	return a.wall - a.floor - a.extraCPUTime()
}

// busy is the Package workers' work time as wall time of all of them at once.
func (a waitAccount) busy() time.Duration {
	return time.Duration(a.counters.packageWork / float64(a.workers) * float64(time.Second))
}

// idle is the wall time the Package workers were not working, once the first Package was
// pinned: what the rollout waited for besides its own passes.
func (a waitAccount) idle() time.Duration {
	return max(0, a.wall-a.firstPin-a.busy())
}

// extraPasses are the Package passes beyond one per Package.
func (a waitAccount) extraPasses() float64 {
	return a.counters.packagePasses - float64(a.packages)
}

// extraPassTime estimates the workers' time in the extra passes, at the mean pass time, as
// wall time of all workers at once. It overstates it: a pass that finds its Package settled
// costs less than one that applies it.
func (a waitAccount) extraPassTime() time.Duration {
	if a.counters.packagePasses == 0 {
		return 0
	}
	mean := a.counters.packageWork / a.counters.packagePasses
	return time.Duration(max(0, a.extraPasses()) * mean / float64(a.workers) * float64(time.Second))
}

// addWaitRows adds the accounting of a step as rows, against the bookkeeping floor.
func (r *rolloutRun) addWaitRows(scenario string, a waitAccount) {
	sec := func(metric string, d time.Duration, note string) {
		r.res.add(Row{Scenario: scenario, Metric: "waits: " + metric, Value: d.Seconds(), Unit: "s", Note: note})
	}
	gap := a.wall - a.floor
	sec("gap to the bookkeeping floor", gap, fmt.Sprintf("%.2f s - %.2f s", a.wall.Seconds(), a.floor.Seconds()))
	sec("start to the first Package pinned", a.firstPin, "poll, fetch, render, the HostedClusterPackage's pass")
	sec("first to last Package pinned", a.lastPin-a.firstPin, "")
	sec("Package workers busy, as wall time", a.busy(), fmt.Sprintf("work-queue work seconds / %d workers", a.workers))
	sec("Package workers busy beyond the floor", a.busy()-a.floor, "the passes' own time against the floor's loop")
	sec("of which passes beyond one per Package", a.extraPassTime(),
		fmt.Sprintf("%.0f passes for %d Packages, at the mean pass time", a.counters.packagePasses, a.packages))
	sec("Package workers idle after the first pin, as wall time", a.idle(), "wall - first pin - busy")
	sec("Package queue wait, mean per pass", a.queuedPerPass(), "")
	sec("tail: 95% to all progressed", a.lastDone-a.p95Done,
		fmt.Sprintf("median %.2f s, 95%% %.2f s, last %.2f s", a.p50Done.Seconds(), a.p95Done.Seconds(), a.lastDone.Seconds()))
	sec("last progressed to the end of the step", a.wall-a.lastDone, "the benchmark's detection and snapshot")
	r.addCPURows(scenario, a)
	r.res.add(Row{Scenario: scenario, Metric: "waits: HostedClusterPackage passes", Value: a.counters.rolloutPasses, Unit: "",
		Note: fmt.Sprintf("%.2f s of work in all", a.counters.rolloutWork)})
	r.res.add(Row{Scenario: scenario, Metric: hcpCPUMetric, Value: a.counters.rolloutCPU, Unit: "s",
		Note: fmt.Sprintf("the passes' own threads; %.1f ms per pass, %.2f ms per pass and 1,000 Packages",
			1000*a.counters.rolloutCPU/max(1, a.counters.rolloutPasses),
			1e6*a.counters.rolloutCPU/max(1, a.counters.rolloutPasses)/float64(max(1, a.packages)))})
	r.res.add(Row{Scenario: scenario, Metric: "waits: controller CPU, share of the wall time", Value: 100 * a.controllerCPU.Seconds() / a.wall.Seconds(),
		Unit: "%", Note: "of one core; the machine has the API server and etcd on the same cores"})
}

// hcpCPUMetric is the CPU of a step's HostedClusterPackage passes, part of the controller CPU.
const hcpCPUMetric = "HostedClusterPackage CPU"

// queuedPerPass is the mean time a Package waited in the queue before its pass.
func (a waitAccount) queuedPerPass() time.Duration {
	if a.counters.packagePasses == 0 {
		return 0
	}
	return time.Duration(a.counters.packageQueued / a.counters.packagePasses * float64(time.Second))
}

// addCPURows adds the CPU side of the accounting: the gap split into convoy's CPU beyond the
// floor's (at the floor's rate of use) and the cores the step got fewer than the floor, with
// what the machine did in both.
func (r *rolloutRun) addCPURows(scenario string, a waitAccount) {
	cores := func(w window, d time.Duration) string {
		if w.wall <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", d.Seconds()/w.wall.Seconds())
	}
	r.res.add(Row{Scenario: scenario, Metric: "waits: CPU of the step's processes, against the bookkeeping floor's",
		Value: a.step.ownCPU().Seconds(), Unit: "s", Baseline: ptr(a.keep.ownCPU().Seconds()), BaselineName: "bookkeeping floor",
		Note: "API server, etcd, controller and benchmark: the wall-time ratio a machine that gives both all its cores would show"})
	r.res.add(Row{Scenario: scenario, Metric: "waits: CPU beyond the floor's, as wall time at the floor's rate",
		Value: a.extraCPUTime().Seconds(), Unit: "s", Note: fmt.Sprintf(
			"API server and etcd %.1f s, controller %.1f s, benchmark %.1f s against the floor's %.1f s, 0, %.1f s; the floor used %.2f cores",
			a.step.serverCPU.Seconds(), a.step.cpu.Seconds(), a.step.benchCPU.Seconds(),
			a.keep.serverCPU.Seconds(), a.keep.benchCPU.Seconds(), a.floorRate())})
	r.res.add(Row{Scenario: scenario, Metric: "waits: fewer cores than the floor got, as wall time", Value: a.rateShortfall().Seconds(),
		Unit: "s", Note: fmt.Sprintf("cores used by the step's own processes %s (floor %s), by other work %s (floor %s), idle %s (floor %s)",
			cores(a.step, a.step.ownCPU()), cores(a.keep, a.keep.ownCPU()), cores(a.step, a.step.othersCPU()),
			cores(a.keep, a.keep.othersCPU()), cores(a.step, a.step.idleCPU()), cores(a.keep, a.keep.idleCPU()))})
}
