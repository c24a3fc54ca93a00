package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convoy-gitops/convoy/test/bench"
)

func main() {
	cfg, out := parseFlags()
	// envtest logs through controller-runtime; the benchmark prints its own progress.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, cfg)
	if res != nil {
		bench.PrintTable(os.Stdout, res)
		if werr := bench.WriteJSON(out, res); werr != nil {
			fmt.Fprintln(os.Stderr, "writing results:", werr)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// parseFlags returns the run's configuration and the JSON output path.
func parseFlags() (bench.Config, string) {
	cfg := bench.Config{Log: os.Stderr}
	var scenarios, sizes, objects, fleetSteps, out string
	flag.BoolVar(&cfg.Short, "short", false, "rollout at N=100 only and a 1-minute steady state (under 10 minutes on 2 cores)")
	flag.StringVar(&scenarios, "scenarios", strings.Join(bench.DefaultScenarios, ","), "comma-separated scenarios to run, of "+strings.Join(bench.AllScenarios, ","))
	flag.StringVar(&sizes, "sizes", "", "comma-separated fleet sizes of the rollout (default 100,1000; 100 with -short; e.g. 100,1000,5000 for the largest row)")
	flag.StringVar(&objects, "objects", "", "comma-separated sizes of the rollout's package, each run at every -sizes entry (default 10; e.g. 10,50)")
	flag.IntVar(&cfg.SteadyPackages, "steady-packages", 0, "available Packages of the steady state (default 1000)")
	flag.DurationVar(&cfg.SteadyDuration, "steady-duration", 0, "steady-state window (default 5m; 1m with -short)")
	flag.DurationVar(&cfg.SteadyInterval, "steady-interval", 0, "spec.interval of the steady state's Packages, so that its window holds many interval passes and reports their cost (default: unset, the Packages' 10m)")
	flag.IntVar(&cfg.HostedClusters, "hosted-clusters", 0, "hosted API servers of the hosted scenario (default 5)")
	flag.IntVar(&cfg.FleetSteadyWindows, "fleet-steady-windows", 0, "steady windows of the fleet scenario, one after the other (default 2; 1 with -short)")
	flag.DurationVar(&cfg.MetricsScrapeInterval, "metrics-scrape-interval", 0, "scrape the controller's /metrics this often during the steady windows, as a Prometheus would (e.g. 30s; default: only the benchmark's own reads)")
	flag.StringVar(&fleetSteps, "fleet-steps", "", "comma-separated steps of the fleet scenario (default all: "+strings.Join(bench.FleetStepNames, ",")+"); e.g. install,steady")
	flag.IntVar(&cfg.FleetAddons, "fleet-addons", 0, "add-ons (HostedClusterPackages) of the fleet scenario (default 20; 4 with -short)")
	flag.IntVar(&cfg.FleetHostedAddons, "fleet-hosted-addons", 0, "of which with hosted-cluster phases (default 2; 1 with -short)")
	flag.IntVar(&cfg.FleetClusters, "fleet-clusters", 0, "HostedClusters of the fleet scenario (default 500; 50 with -short)")
	flag.IntVar(&cfg.FleetHostedSample, "fleet-hosted-sample", 0, "of which with a hosted API server (default 5; 2 with -short)")
	flag.IntVar(&cfg.WriteCostRounds, "writecost-rounds", 0, "interleaved rounds of the writecost scenario (default 5)")
	flag.IntVar(&cfg.WriteCostWrites, "writecost-writes", 0, "writes per variant per round of the writecost scenario (default 200)")
	flag.IntVar(&cfg.Concurrency, "concurrency", 0, "controller --concurrency and bare-loop workers (default 4)")
	flag.StringVar(&cfg.Driver, "driver", bench.DriverAuto, "auto, hostedclusterpackage or packages")
	flag.StringVar(&cfg.GitBenchTime, "git-benchtime", "", "-benchtime of the git scenario (default 20x; 5x with -short)")
	flag.StringVar(&cfg.ConvoyBinary, "convoy", "bin/convoy", "the convoy binary to run as the controller")
	flag.StringVar(&cfg.PprofDir, "pprof", "", "folder receiving CPU profiles of the controller during rollouts")
	flag.StringVar(&cfg.ControllerMemoryLimit, "controller-memory-limit", "", "GOMEMLIMIT of the controller (460MiB: what it sets itself under deploy/'s 512 MiB limit)")
	flag.BoolVar(&cfg.KeepWorkDir, "keep", false, "keep the work folder (controller logs, Git storage)")
	flag.StringVar(&out, "out", "bench-results.json", "where to write the results as JSON")
	flag.Parse()
	cfg.Scenarios = splitList(scenarios)
	cfg.FleetSteps = splitList(fleetSteps)
	for _, s := range splitList(sizes) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bad -sizes entry %q\n", s)
			os.Exit(2)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	for _, s := range splitList(objects) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 10 {
			fmt.Fprintf(os.Stderr, "bad -objects entry %q: a number of objects per Package, at least 10\n", s)
			os.Exit(2)
		}
		cfg.ObjectsPerPackage = append(cfg.ObjectsPerPackage, n)
	}
	return cfg, out
}

// splitList splits a comma-separated flag, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
