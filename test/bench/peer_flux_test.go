package bench

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestFluxStepsSitBesideConvoys checks that Flux's install and update are compared with
// convoy's install and instant rollout of the same size and run, and that P12 judges the update
// at 1,000 HostedClusters only.
func TestFluxStepsSitBesideConvoys(t *testing.T) {
	g := NewWithT(t)
	res := &Results{}
	for _, n := range []int{100, targetFleetSize} {
		for step, wall := range map[string]float64{installStep: 20, instantScenarioSuffix: 21} {
			scenario := (&rolloutRun{n: n, objects: objectsPerPackage}).scenario(step)
			res.add(Row{Scenario: scenario, Metric: "wall time to all progressed", Value: wall, Unit: "s"})
			res.add(Row{Scenario: scenario, Metric: "controller CPU", Value: 5, Unit: "s"})
		}
	}
	for _, n := range []int{100, targetFleetSize} {
		r := &fluxRun{res: res, n: n}
		r.addConvoyRows("flux install", installStep, window{wall: 90 * time.Second, cpu: 60 * time.Second})
		r.addConvoyRows("flux update", "update", window{wall: 100 * time.Second, cpu: 70 * time.Second})
	}

	install := res.row("flux install", "convoy's wall time, against Flux's")
	g.Expect(install.Value).To(Equal(20.0))
	g.Expect(*install.Baseline).To(Equal(90.0))
	g.Expect(install.Met).To(BeNil(), "P12 judges the update")
	var judged []Row
	for _, row := range res.Rows {
		if row.Scenario == "flux update" && row.Metric == "convoy's wall time, against Flux's" {
			g.Expect(row.Value).To(Equal(21.0), "the instant rollout against the update")
			g.Expect(*row.Baseline).To(Equal(100.0))
			if row.Met != nil {
				judged = append(judged, row)
			}
		}
	}
	g.Expect(judged).To(HaveLen(1), "judged at 1,000 only")
	g.Expect(*judged[0].Met).To(BeFalse(), "21 s is more than a fifth of 100 s")
	cpu := res.row("flux update", "convoy's controller CPU, against Flux's")
	g.Expect(cpu.Value).To(Equal(5.0))
	g.Expect(*cpu.Baseline).To(Equal(70.0))

	alone := &Results{}
	(&fluxRun{res: alone, n: 3}).addConvoyRows("flux update", "update", window{wall: time.Second})
	g.Expect(alone.Rows).To(BeEmpty(), "without the rollout scenario in the run, no comparison")
}
