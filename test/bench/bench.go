package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"
)

// Scenario names, for Config.Scenarios.
const (
	ScenarioRollout = "rollout"
	ScenarioSteady  = "steady"
	ScenarioGit     = "git"
	ScenarioHosted  = "hosted"
	ScenarioFleet   = "fleet"
	// ScenarioWriteCost measures variants of a Package status patch against a ConfigMap apply.
	ScenarioWriteCost = "writecost"
	// ScenarioSectors promotes a commit across three management clusters in a chain of sectors.
	ScenarioSectors = "sectors"
	// ScenarioFlux applies the rollout's package to the same HCP namespaces through Flux.
	ScenarioFlux = "flux"
)

// AllScenarios lists every scenario in the order they run.
var AllScenarios = []string{ScenarioRollout, ScenarioSteady, ScenarioFlux, ScenarioGit, ScenarioHosted, ScenarioSectors, ScenarioFleet,
	ScenarioWriteCost}

// DefaultScenarios are the scenarios of `make bench` (about 33 minutes on 2 cores): all but the
// fleet, which takes about an hour and runs on its own (`make bench-fleet`).
var DefaultScenarios = []string{ScenarioRollout, ScenarioSteady, ScenarioFlux, ScenarioGit, ScenarioHosted, ScenarioSectors}

// Config is one benchmark run.
type Config struct {
	// Short runs the rollout at N=100 only and the steady state for a minute.
	Short bool `json:"short"`
	// Scenarios to run; default all.
	Scenarios []string `json:"scenarios"`
	// Sizes are the fleet sizes of the rollout; default 100 and 1,000 (100 when Short). 5,000
	// is opt-in.
	Sizes []int `json:"sizes"`
	// ObjectsPerPackage are the sizes of the rollout's management package, each run at every
	// fleet size; default 10 (objectsPerPackage). Other sizes add ConfigMaps, and their rows
	// say the size in the scenario name and carry no targets.
	ObjectsPerPackage []int `json:"objectsPerPackage"`
	// SteadyPackages is the number of available Packages of the steady state; default 1,000.
	SteadyPackages int `json:"steadyPackages"`
	// SteadyDuration is the steady-state window; default 5 minutes (1 when Short).
	SteadyDuration time.Duration `json:"steadyDuration"`
	// SteadyInterval, when set, is the spec.interval of the steady state's Packages: the window
	// then holds many passes of settled Packages at their interval, and reports their cost.
	SteadyInterval time.Duration `json:"steadyInterval,omitempty"`
	// FleetSteadyDuration is the fleet scenario's steady-state window: SteadyDuration when that
	// is set, else one Package spec.interval (10 minutes; 1 when Short), so that the window
	// holds the pass every settled Package makes per interval.
	FleetSteadyDuration time.Duration `json:"fleetSteadyDuration"`
	// FleetSteadyWindows is how many such windows are measured one after the other; default 2
	// (1 when Short): the first interval after a rollout holds each Package's first pass since,
	// the next ones the passes of Packages long settled.
	FleetSteadyWindows int `json:"fleetSteadyWindows"`
	// MetricsScrapeInterval, when set, makes the steady windows scrape the controller's
	// /metrics this often, as a Prometheus would: the cost of a scrape (the per-object condition
	// series) is then part of the steady state's.
	MetricsScrapeInterval time.Duration `json:"metricsScrapeInterval,omitempty"`
	// FleetSteps are the fleet scenario's steps to run, in their order (FleetStepNames); default
	// all. A step whose baseline is left out reports no ratio.
	FleetSteps []string `json:"fleetSteps,omitempty"`
	// HostedClusters is the number of hosted API servers of the hosted scenario; default 5.
	HostedClusters int `json:"hostedClusters"`
	// SectorClusters is the number of HostedClusters of each management cluster of the sectors
	// scenario; default 200 (30 when Short).
	SectorClusters int `json:"sectorClusters"`
	// FleetAddons is the number of add-ons (HostedClusterPackages) of the fleet scenario;
	// default 20 (4 when Short).
	FleetAddons int `json:"fleetAddons"`
	// FleetHostedAddons is how many of them have hosted-cluster phases; default 2 (1 when Short).
	FleetHostedAddons int `json:"fleetHostedAddons"`
	// FleetClusters is the number of HostedClusters of the fleet scenario; default 500 (50
	// when Short).
	FleetClusters int `json:"fleetClusters"`
	// FleetHostedSample is how many of them have a hosted API server, which the hosted add-ons
	// select; default 5 (2 when Short).
	FleetHostedSample int `json:"fleetHostedSample"`
	// WriteCostRounds and WriteCostWrites are the writecost scenario's interleaved rounds and
	// writes per variant per round; default 5 and 200.
	WriteCostRounds int `json:"writeCostRounds,omitempty"`
	WriteCostWrites int `json:"writeCostWrites,omitempty"`
	// Concurrency is the controller's --concurrency and the bare loop's; default 4.
	Concurrency int `json:"concurrency"`
	// Driver is DriverAuto, DriverHostedClusterPackage or DriverPackages.
	Driver string `json:"driver"`
	// GitBenchTime is -benchtime of the git scenario; default 20x (5x when Short).
	GitBenchTime string `json:"gitBenchTime"`
	// ConvoyBinary is bin/convoy.
	ConvoyBinary string `json:"-"`
	// WorkDir holds temporary state; default a new folder under $TMPDIR.
	WorkDir string `json:"-"`
	// KeepWorkDir keeps the controller logs and Git storage after the run.
	KeepWorkDir bool `json:"-"`
	// PprofDir, when set, receives CPU profiles of the controller during rollouts.
	PprofDir string `json:"-"`
	// ControllerMemoryLimit, when set, is the controller's GOMEMLIMIT (for example 460MiB, what
	// `convoy controller` sets itself under the deploy manifests' 512 MiB container limit).
	ControllerMemoryLimit string `json:"controllerMemoryLimit,omitempty"`
	// Log receives progress lines; nil is quiet.
	Log io.Writer `json:"-"`
}

// defaultSizes fills the zero sizes of the rollout and the writecost scenario, and checks them.
func (c *Config) defaultSizes() error {
	if len(c.Sizes) == 0 {
		c.Sizes = []int{100, 1000}
		if c.Short {
			c.Sizes = []int{100}
		}
	}
	if len(c.ObjectsPerPackage) == 0 {
		c.ObjectsPerPackage = []int{objectsPerPackage}
	}
	if slices.ContainsFunc(c.ObjectsPerPackage, func(n int) bool { return n < objectsPerPackage }) {
		return fmt.Errorf("objects per Package %v: each must be at least %d, the objects every revision of the package holds",
			c.ObjectsPerPackage, objectsPerPackage)
	}
	if c.WriteCostRounds <= 0 {
		c.WriteCostRounds = 5
	}
	if c.WriteCostWrites <= 0 {
		c.WriteCostWrites = 200
	}
	return nil
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() (Config, error) {
	if len(c.Scenarios) == 0 {
		c.Scenarios = DefaultScenarios
	}
	if err := c.defaultSizes(); err != nil {
		return c, err
	}
	if c.SteadyPackages == 0 {
		c.SteadyPackages = 1000
	}
	if c.FleetSteadyDuration == 0 {
		c.FleetSteadyDuration = c.SteadyDuration
		if c.FleetSteadyDuration == 0 {
			c.FleetSteadyDuration = map[bool]time.Duration{false: driftInterval, true: time.Minute}[c.Short]
		}
	}
	if err := checkFleetSteps(c.FleetSteps); err != nil {
		return c, err
	}
	if c.FleetSteadyWindows <= 0 {
		c.FleetSteadyWindows = map[bool]int{false: 2, true: 1}[c.Short]
	}
	if c.SteadyDuration == 0 {
		c.SteadyDuration = 5 * time.Minute
		if c.Short {
			c.SteadyDuration = time.Minute
		}
	}
	if c.GitBenchTime == "" {
		c.GitBenchTime = map[bool]string{false: "20x", true: "5x"}[c.Short]
	}
	c.HostedClusters = cmp(c.HostedClusters, 5)
	c.SectorClusters = cmp(c.SectorClusters, map[bool]int{false: 200, true: 30}[c.Short])
	c.FleetAddons = cmp(c.FleetAddons, map[bool]int{false: 20, true: 4}[c.Short])
	c.FleetHostedAddons = cmp(c.FleetHostedAddons, map[bool]int{false: 2, true: 1}[c.Short])
	c.FleetClusters = cmp(c.FleetClusters, map[bool]int{false: 500, true: 50}[c.Short])
	c.FleetHostedSample = cmp(c.FleetHostedSample, map[bool]int{false: 5, true: 2}[c.Short])
	if c.FleetHostedAddons >= c.FleetAddons || c.FleetHostedSample > c.FleetClusters {
		return c, fmt.Errorf("fleet: want fewer hosted add-ons (%d) than add-ons (%d), and a sample (%d) within the clusters (%d)",
			c.FleetHostedAddons, c.FleetAddons, c.FleetHostedSample, c.FleetClusters)
	}
	c.Concurrency = cmp(c.Concurrency, 4)
	if c.Driver == "" {
		c.Driver = DriverAuto
	}
	if c.ConvoyBinary == "" {
		return c, fmt.Errorf("no convoy binary: build bin/convoy first")
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(AllScenarios, s) {
			return c, fmt.Errorf("unknown scenario %q (known: %v)", s, AllScenarios)
		}
	}
	return c, nil
}

// cmp returns v, or def when v is zero.
func cmp(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Run runs the selected scenarios and returns their figures.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.WorkDir == "" {
		if cfg.WorkDir, err = os.MkdirTemp("", "convoy-bench-"); err != nil {
			return nil, err
		}
		if !cfg.KeepWorkDir {
			defer os.RemoveAll(cfg.WorkDir)
		}
	}
	if cfg.PprofDir != "" {
		if err := os.MkdirAll(cfg.PprofDir, 0o755); err != nil {
			return nil, err
		}
	}
	res := &Results{Started: time.Now(), CPUs: runtime.NumCPU(), Config: cfg, Load: []string{loadAverage()},
		Commit: convoyCommit(ctx, cfg.ConvoyBinary)}
	defer func() {
		res.Duration = time.Since(res.Started).Round(time.Second).String()
		res.Load = append(res.Load, loadAverage())
	}()
	return res, runScenarios(ctx, cfg, res)
}

// runScenarios runs each selected scenario; a failing one is noted and the others still run.
// The steady state reuses the last rollout's fleet when it has the steady state's size; that
// rollout keeps its controller running, so its bookkeeping floor is measured before its steps
// only, where every other rollout measures it on both sides of them.
func runScenarios(ctx context.Context, cfg Config, res *Results) error {
	var errs []error
	fail := func(scenario string, err error) {
		res.note("%s failed: %v", scenario, err)
		errs = append(errs, err)
	}
	var kept *env
	if slices.Contains(cfg.Scenarios, ScenarioRollout) {
		for _, n := range cfg.Sizes {
			for _, objects := range cfg.ObjectsPerPackage {
				forSteady := slices.Contains(cfg.Scenarios, ScenarioSteady) && objects == objectsPerPackage && n == cfg.SteadyPackages
				e, err := runRollout(ctx, cfg, res, n, objects, !forSteady)
				switch {
				case err != nil:
					fail(ScenarioRollout, err)
				case forSteady:
					kept = replaceEnv(kept, e)
				default:
					_ = e.close() // no scenario takes this fleet
				}
			}
		}
	}
	if slices.Contains(cfg.Scenarios, ScenarioSteady) {
		if err := steady(ctx, cfg, res, &kept); err != nil {
			fail(ScenarioSteady, err)
		}
	}
	kept = replaceEnv(kept, nil)
	if slices.Contains(cfg.Scenarios, ScenarioFlux) {
		if err := runFluxScenario(ctx, cfg, res); err != nil {
			fail(ScenarioFlux, err)
		}
	}
	if slices.Contains(cfg.Scenarios, ScenarioGit) {
		if err := runGit(ctx, cfg, res); err != nil {
			fail(ScenarioGit, err)
		}
	}
	if slices.Contains(cfg.Scenarios, ScenarioHosted) {
		if err := runHosted(ctx, cfg, res); err != nil {
			fail(ScenarioHosted, err)
		}
	}
	if slices.Contains(cfg.Scenarios, ScenarioSectors) {
		if err := runSectors(ctx, cfg, res); err != nil {
			fail(ScenarioSectors, err)
		}
	}
	if slices.Contains(cfg.Scenarios, ScenarioFleet) {
		if err := runFleet(ctx, cfg, res); err != nil {
			fail(ScenarioFleet, err)
		}
	}
	if slices.Contains(cfg.Scenarios, ScenarioWriteCost) {
		if err := runStatusCost(ctx, cfg, res); err != nil {
			fail(ScenarioWriteCost, err)
		}
	}
	return errors.Join(errs...)
}

// replaceEnv closes old, if any, and returns next.
func replaceEnv(old, next *env) *env {
	if old != nil {
		_ = old.close()
	}
	return next
}

// steady runs the steady state on *kept when it has the right size, else on a new fleet
// left in *kept.
func steady(ctx context.Context, cfg Config, res *Results, kept **env) error {
	if *kept == nil || len((*kept).namespaces) != cfg.SteadyPackages {
		*kept = replaceEnv(*kept, nil)
		e, err := prepareSteady(ctx, cfg, res)
		if err != nil {
			return err
		}
		*kept = e
	}
	return runSteady(ctx, cfg, res, *kept)
}
