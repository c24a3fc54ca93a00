package bench

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// TestRunTiny runs the rollout and the steady state at a tiny size, so that the benchmark's
// core cannot rot: it builds bin/convoy into a temporary folder and needs the API servers of
// `make tools`. The rollout runs at two sizes: the steady state takes the fleet of the one of
// its size, and the other measures its bookkeeping floor after its steps too.
// TestRunTinyOtherScenarios (`make e2e`) runs the others.
func TestRunTiny(t *testing.T) {
	runTiny(t, tinyScenarios)
}

// tinyScenarios are the scenarios of TestRunTiny.
var tinyScenarios = []string{ScenarioRollout, ScenarioSteady}

// TestRunTinyOtherScenarios runs every scenario of the benchmark that TestRunTiny leaves out,
// at a tiny size (`make e2e`, which CI runs after `make test`: together they run each once).
func TestRunTinyOtherScenarios(t *testing.T) {
	others := slices.DeleteFunc(slices.Clone(AllScenarios), func(s string) bool { return slices.Contains(tinyScenarios, s) })
	runTiny(t, others)
}

// runTiny runs the scenarios at a tiny size and checks that each gives its rows.
func runTiny(t *testing.T, scenarios []string) {
	fleet.RequireAPIServers(t)
	ctrllog.SetLogger(logr.Discard())
	g := NewWithT(t)
	convoy := buildConvoy(t)

	var log bytes.Buffer
	res, err := Run(context.Background(), Config{
		Scenarios: scenarios, Sizes: []int{2, 3}, SteadyPackages: 3, SteadyDuration: 3 * time.Second,
		HostedClusters: 1, FleetAddons: 4, FleetHostedAddons: 1, FleetClusters: 3, FleetHostedSample: 1,
		GitBenchTime: "1x", Driver: DriverPackages, ConvoyBinary: convoy, WriteCostRounds: 1, WriteCostWrites: 3,
		WorkDir: t.TempDir(), Log: &log,
	})
	g.Expect(err).NotTo(HaveOccurred(), log.String())

	var table bytes.Buffer
	PrintTable(&table, res)
	t.Log("\n" + table.String())
	g.Expect(res.Rows).NotTo(BeEmpty())
	g.Expect(res.Commit).NotTo(BeEmpty(), "the run names the commit of the binary it measured")
	g.Expect(WriteJSON(filepath.Join(t.TempDir(), "bench-results.json"), res)).To(Succeed())
	var metrics []string
	for _, row := range res.Rows {
		metrics = append(metrics, row.Metric)
		if row.Metric == "wall time to all progressed" {
			g.Expect(row.Value).To(BeNumerically(">", 0), row.Scenario)
		}
	}
	if slices.Contains(scenarios, ScenarioSteady) {
		g.Expect(metrics).To(ContainElement("pass of a settled Package, controller CPU"), "the steady scenario measures a pass")
	}
	if slices.Contains(scenarios, ScenarioRollout) {
		g.Expect(metrics).To(ContainElement("wall time to all progressed, against the bookkeeping floor"), "the rollout has the bookkeeping floor")
		g.Expect(metrics).To(ContainElement("waits: gap to the bookkeeping floor"), "the rollout accounts for its waits")
		g.Expect(metrics).To(ContainElement("waits: CPU beyond the floor's, as wall time at the floor's rate"), "the rollout accounts for its CPU")
		install := rowOf(res, "rollout N=3 install", "requests on the objects, per object")
		g.Expect(install).NotTo(BeNil())
		// An install creates each object with one request; a few requests of the run are not per
		// object (2 of 30 at this size), hence the margin.
		g.Expect(install.Value).To(BeNumerically("<=", 1.1), install.Note)
		size := rowOf(res, "rollout N=3 instant", "Package size, against the bookkeeping floor's")
		g.Expect(size).NotTo(BeNil(), "the rollout compares its Packages' size with the floor's")
		g.Expect(size.Value).To(BeNumerically(">", 0))
		g.Expect(*size.Baseline).To(BeNumerically(">", 0))
		bracketed := rowOf(res, "rollout N=2 instant", "wall time to all progressed, against the bookkeeping floor")
		g.Expect(bracketed).NotTo(BeNil())
		g.Expect(bracketed.Note).To(ContainSubstring(" s after, mean "), "N=2 measures its floor on both sides of its steps")
		g.Expect(rowOf(res, "bookkeeping floor N=2", "wall time of the update pass, after the steps against before")).NotTo(BeNil())
		kept := rowOf(res, "rollout N=3 instant", "wall time to all progressed, against the bookkeeping floor")
		g.Expect(kept).NotTo(BeNil())
		g.Expect(kept.Note).To(HaveSuffix("measured before the steps only"), "the steady state takes the fleet of N=3, controller running")
	}
	if slices.Contains(scenarios, ScenarioFlux) {
		for _, step := range []string{"install", "update"} {
			wall := rowOf(res, "flux N=3 "+step, "wall time to all applied")
			g.Expect(wall).NotTo(BeNil(), "Flux's %s is measured", step)
			g.Expect(*wall.Baseline).To(BeNumerically(">", 0), "against the bare loop")
			// Flux applies each of the 30 objects once; it reads what it applied, hence no upper bound.
			applied := rowOf(res, "flux N=3 "+step, "requests on the objects, per object")
			g.Expect(applied.Value).To(BeNumerically(">=", 1), applied.Note)
		}
	}
	if slices.Contains(scenarios, ScenarioFleet) {
		for _, step := range []string{"install", "all rolled by one commit"} {
			row := rowOf(res, "fleet 4 add-ons × 3 "+step, "wall time to all progressed, against the bookkeeping floor")
			g.Expect(row).NotTo(BeNil(), "the fleet's %s has the bookkeeping floor", step)
			g.Expect(*row.Baseline).To(BeNumerically(">", 0), step)
			g.Expect(row.Met).NotTo(BeNil(), step)
		}
		// Add-on 2 depends on add-on 1: its Package on each HostedCluster comes after add-on 1's is
		// available there.
		order := rowOf(res, "fleet 4 add-ons × 3 install", "dependency chain: Packages created once their dependency was available")
		g.Expect(order).NotTo(BeNil(), "the fleet's install has a dependency chain")
		g.Expect(order.Value).To(BeNumerically("==", 3), order.Note)
		g.Expect(order.Met).To(HaveValue(BeTrue()), order.Note)
		g.Expect(rowOf(res, "fleet 4 add-ons × 3 install", "wall time to all progressed, against the bookkeeping floor and the chain")).NotTo(BeNil())
	}
}

// rowOf returns the row of scenario and metric, nil when there is none.
func rowOf(res *Results, scenario, metric string) *Row { return res.row(scenario, metric) }

// TestVerbOf pins how the benchmark names its own requests, to take them out of the API
// server's counts.
func TestVerbOf(t *testing.T) {
	cases := map[string]string{
		"GET /api/v1/namespaces/a/configmaps":                       "LIST",
		"GET /api/v1/namespaces/a/configmaps/b":                     "GET",
		"GET /api/v1/namespaces/a":                                  "GET",
		"GET /apis/convoy.dev/v1alpha1/packages?watch=true":         "WATCH/packages",
		"GET /apis/convoy.dev/v1alpha1/hostedclusterpackages/x":     "GET/hostedclusterpackages",
		"PATCH /apis/convoy.dev/v1alpha1/namespaces/a/gitsources/b": "PATCH/gitsources",
		"POST /apis/convoy.dev/v1alpha1/namespaces/a/packages":      "POST/packages",
		"PATCH /api/v1/namespaces/a/configmaps/b?dryRun=All":        "PATCH/dry-run",
		"GET /metrics": "",
		"PUT /apis/convoy.dev/v1alpha1/hostedclusterpackages/x/status": "PUT/hostedclusterpackages/status",
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			method, url, _ := bytes.Cut([]byte(in), []byte(" "))
			req := httptest.NewRequest(string(method), "https://apiserver"+string(url), nil)
			NewWithT(t).Expect(verbOf(req)).To(Equal(want))
		})
	}
}

// TestRequestsSplitWritesAndObjects pins which requests count as writes and as requests on the
// packages' objects.
func TestRequestsSplitWritesAndObjects(t *testing.T) {
	g := NewWithT(t)
	r := Requests{"APPLY": 10, "GET": 4, "PATCH/dry-run": 2, "PATCH/packages/status": 3, "POST/events": 1,
		"PUT/leases": 5, "WATCH/packages": 1}
	g.Expect(r.Writes()).To(Equal(14.0), "applies, status patches and events; no dry-runs, no Lease renewals")
	g.Expect(r.OnObjects()).To(Equal(16.0), "applies, reads and dry-runs of the objects")
}

// buildConvoy returns the convoy binary of the tests (fleet.ConvoyBinary).
func buildConvoy(t *testing.T) string {
	t.Helper()
	convoy, err := fleet.ConvoyBinary(t.TempDir())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return convoy
}

// TestFleetStepsRefuseWhatCannotRunAlone checks -fleet-steps: unknown steps, and steps without
// the install or the baseline they need, are refused before anything starts.
func TestFleetStepsRefuseWhatCannotRunAlone(t *testing.T) {
	g := NewWithT(t)
	g.Expect(checkFleetSteps(nil)).To(Succeed())
	g.Expect(checkFleetSteps([]string{"install", "steady"})).To(Succeed())
	g.Expect(checkFleetSteps([]string{"floor", "install", "all"})).To(Succeed())
	g.Expect(checkFleetSteps([]string{"steady"})).To(MatchError(`fleet: step "steady" needs step "install"`))
	g.Expect(checkFleetSteps([]string{"install", "all"})).To(MatchError(`fleet: step "all" needs step "floor"`))
	g.Expect(checkFleetSteps([]string{"install", "one"})).To(MatchError(`fleet: step "one" needs step "alone"`))
	g.Expect(checkFleetSteps([]string{"instal"})).To(MatchError(ContainSubstring(`no step "instal"`)))
}

// TestPackageSizes checks -objects: a larger package adds objects of unique names, and a size
// below the package's ten objects is refused before anything starts.
func TestPackageSizes(t *testing.T) {
	g := NewWithT(t)
	objs := managementObjectsOf("ns", "", 1, 50)
	g.Expect(objs).To(HaveLen(50))
	names := map[string]bool{}
	for _, o := range objs {
		names[o.GetKind()+"/"+o.GetName()] = true
	}
	g.Expect(names).To(HaveLen(50), "every object has its own name")
	cfg := Config{}
	g.Expect(cfg.defaultSizes()).To(Succeed())
	g.Expect(cfg.ObjectsPerPackage).To(Equal([]int{objectsPerPackage}))
	cfg = Config{ObjectsPerPackage: []int{10, 5}}
	g.Expect(cfg.defaultSizes()).To(MatchError(ContainSubstring("each must be at least 10")))
}
