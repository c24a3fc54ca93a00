package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convoy-gitops/convoy/test/bench"
)

func main() {
	cfg := bench.FaultsConfig{Log: os.Stderr}
	var faults, out string
	flag.IntVar(&cfg.Clusters, "clusters", 200, "number of HostedClusters")
	flag.StringVar(&faults, "faults", strings.Join(bench.AllFaults, ","), "comma-separated faults to inject")
	flag.IntVar(&cfg.Concurrency, "concurrency", 4, "controller --concurrency")
	flag.DurationVar(&cfg.GitDownFor, "git-down-for", 2*time.Minute, "how long the git-down fault keeps the Git server stalled")
	flag.StringVar(&cfg.ConvoyBinary, "convoy", "bin/convoy", "the convoy binary to run as the controller")
	flag.BoolVar(&cfg.KeepWorkDir, "keep", false, "keep the work folder (controller logs, Git storage)")
	flag.StringVar(&out, "out", "faults-results.json", "where to write the results as JSON")
	flag.Parse()
	for _, f := range strings.Split(faults, ",") {
		if f = strings.TrimSpace(f); f != "" {
			cfg.Faults = append(cfg.Faults, f)
		}
	}
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.RunFaults(ctx, cfg)
	if res != nil {
		bench.PrintFaultsTable(os.Stdout, res)
		if werr := bench.WriteFaultsJSON(out, res); werr != nil {
			fmt.Fprintln(os.Stderr, "writing results:", werr)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
	if !res.Passed() {
		fmt.Fprintln(os.Stderr, "faults: an invariant broke")
		os.Exit(1)
	}
}
