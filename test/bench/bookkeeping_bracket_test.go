package bench

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// floorPassOf is a pass of the bookkeeping floor of wall seconds, whose API server and etcd spent
// twice that in CPU, for 1,000 Packages of 10 objects.
func floorPassOf(wall float64, bytes int) floorPass {
	d := time.Duration(wall * float64(time.Second))
	return floorPass{wall: d, serverCPU: 2 * d, packageBytes: bytes,
		requests: Requests{"APPLY": 10000, "APPLY/packages": 1000, "PATCH/packages/status": 1000},
		window:   window{wall: d, serverCPU: 2 * d, benchCPU: d / 10, machine: machineCPU{busy: 2 * d, total: 2 * d}}}
}

// TestFloorBracketJudgesAgainstTheMeanOfBothSides: a pass measured on both sides of the steps is
// their mean, figure by figure, and its note gives both; measured before only, it is that pass,
// and its note says so.
func TestFloorBracketJudgesAgainstTheMeanOfBothSides(t *testing.T) {
	g := NewWithT(t)
	before, after := floorPassOf(37.5, 4300), floorPassOf(31, 4310)
	before.requests["GET"] = 3
	b := floorBracket{before: before, after: &after}
	mean := b.pass()
	g.Expect(mean.wall).To(Equal(34250 * time.Millisecond))
	g.Expect(mean.serverCPU).To(Equal(68500 * time.Millisecond))
	g.Expect(mean.requests).To(Equal(Requests{"APPLY": 10000, "APPLY/packages": 1000, "PATCH/packages/status": 1000, "GET": 1.5}))
	g.Expect(mean.packageBytes).To(Equal(4305))
	g.Expect(mean.window.wall).To(Equal(mean.wall))
	g.Expect(mean.window.serverCPU).To(Equal(mean.serverCPU))
	g.Expect(mean.window.benchCPU).To(Equal(3425 * time.Millisecond))
	g.Expect(mean.window.machine).To(Equal(machineCPU{busy: 68500 * time.Millisecond, total: 68500 * time.Millisecond}))
	g.Expect(b.note("bare loop")).To(Equal("bare loop; floor 37.50 s before the steps, 31.00 s after, mean 34.25 s"))

	b.after = nil
	g.Expect(b.pass()).To(Equal(before))
	g.Expect(b.note("bare loop")).To(Equal("bare loop; floor 37.50 s, measured before the steps only"))
}

// bracketedRun is a rollout of 1,000 Packages of 10 objects with the HostedClusterPackage driver
// whose install took 29 s and instant rollout 40 s, with a bookkeeping floor of 30 s to create and
// 37.5 s to update before the steps, 26 s and 31 s after them.
func bracketedRun() *rolloutRun {
	e := &env{cfg: Config{Concurrency: 4}, namespaces: map[string]bool{"ns-a": true}}
	r := &rolloutRun{e: e, res: &Results{}, n: 1000, objects: objectsPerPackage, driver: DriverHostedClusterPackage,
		create: 20 * time.Second, floor: 25 * time.Second,
		keepBefore: bookkeepingFloor{create: floorPassOf(30, 4300), update: floorPassOf(37.5, 4400)},
		keepAfter:  &bookkeepingFloor{create: floorPassOf(26, 4310), update: floorPassOf(31, 4410)}}
	for _, step := range []struct {
		name string
		wall time.Duration
	}{{installStep, 29 * time.Second}, {"instant", 40 * time.Second}} {
		r.steps = append(r.steps, measuredStep{name: step.name, w: window{wall: step.wall, serverCPU: 3 * step.wall},
			trace: newRolloutTrace("c", time.Now()), packageBytes: 4500, withTargets: step.name != installStep})
	}
	return r
}

// mustRow returns the row of scenario and metric in res, failing the test when there is none.
func mustRow(g Gomega, res *Results, scenario, metric string) Row {
	row := rowOf(res, scenario, metric)
	g.Expect(row).NotTo(BeNil(), "no row %q of scenario %q", metric, scenario)
	return *row
}

// TestRolloutStepsAreJudgedAgainstTheBracketedFloor: each step's rows compare it with the mean
// of the floor's pass of its kind on both sides of the steps (create for the install, update for
// a rollout), issue 42's target too, and the floor's drift across the steps is published.
func TestRolloutStepsAreJudgedAgainstTheBracketedFloor(t *testing.T) {
	g := NewWithT(t)
	r := bracketedRun()
	r.addStepRows()
	const wall = "wall time to all progressed, against the bookkeeping floor"
	install := mustRow(g, r.res, "rollout N=1000 install", wall)
	g.Expect(*install.Baseline).To(BeNumerically("==", 28))
	g.Expect(install.Note).To(Equal("bare loop plus each Package's pin and status; floor 30.00 s before the steps, 26.00 s after, mean 28.00 s"))
	g.Expect(*install.Met).To(BeTrue(), "29 s against 28 s")
	instant := mustRow(g, r.res, "rollout N=1000 instant", wall)
	g.Expect(*instant.Baseline).To(BeNumerically("==", 34.25))
	g.Expect(*instant.Met).To(BeFalse(), "40 s against 34.25 s, though within 1.15× of the 37.5 s before the steps")
	cpu := mustRow(g, r.res, "rollout N=1000 install", "API server CPU per object, against the bookkeeping floor")
	g.Expect(*cpu.Baseline).To(BeNumerically("~", 5.6), "56 s of the mean create pass over 10,000 objects")
	size := mustRow(g, r.res, "rollout N=1000 instant", "Package size, against the bookkeeping floor's")
	g.Expect(*size.Baseline).To(BeNumerically("==", 4405))
	gap := mustRow(g, r.res, "rollout N=1000 instant", "waits: gap to the bookkeeping floor")
	g.Expect(gap.Value).To(BeNumerically("~", 5.75, 1e-9))
	bare := mustRow(g, r.res, "rollout N=1000 install", "wall time to all progressed")
	g.Expect(*bare.Baseline).To(BeNumerically("==", 20), "the bare loop's create pass, measured before the steps only")

	drift := r.res.Rows[len(r.res.Rows)-2:]
	g.Expect(drift[0]).To(HaveField("Scenario", "bookkeeping floor N=1000"))
	g.Expect(drift[0].Metric).To(Equal("wall time of the create pass, after the steps against before"))
	g.Expect(drift[0].Value).To(BeNumerically("==", 26))
	g.Expect(*drift[0].Baseline).To(BeNumerically("==", 30))
	g.Expect(drift[1].Metric).To(Equal("wall time of the update pass, after the steps against before"))
	g.Expect(drift[1].Value).To(BeNumerically("==", 31))
	g.Expect(*drift[1].Baseline).To(BeNumerically("==", 37.5))
	g.Expect(drift[1].Note).To(Equal("the rollouts' floor, measured again with the controller stopped; kube-apiserver and etcd CPU 62.0 s after the steps, 75.0 s before"))
}

// TestRolloutStepsWithoutTheFloorAfterSaySo: a rollout whose fleet goes on to the steady scenario
// judges its steps against the floor before them alone, says so, and publishes no drift.
func TestRolloutStepsWithoutTheFloorAfterSaySo(t *testing.T) {
	g := NewWithT(t)
	r := bracketedRun()
	r.keepAfter = nil
	r.addStepRows()
	instant := mustRow(g, r.res, "rollout N=1000 instant", "wall time to all progressed, against the bookkeeping floor")
	g.Expect(*instant.Baseline).To(BeNumerically("==", 37.5))
	g.Expect(*instant.Met).To(BeTrue(), "40 s against 37.5 s")
	g.Expect(instant.Note).To(Equal("bare loop plus each Package's pin and status; floor 37.50 s, measured before the steps only"))
	g.Expect(r.res.Rows).NotTo(ContainElement(HaveField("Scenario", "bookkeeping floor N=1000")))
}
