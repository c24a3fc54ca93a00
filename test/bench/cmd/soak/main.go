package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convoy-gitops/convoy/test/bench"
)

func main() {
	cfg := bench.SoakConfig{Log: os.Stderr}
	var out, svg, plot string
	flag.IntVar(&cfg.Clusters, "clusters", 200, "number of HostedClusters at the start")
	flag.IntVar(&cfg.HostedClusters, "hosted-clusters", 10, "how many of them have a hosted API server")
	flag.DurationVar(&cfg.Duration, "duration", time.Hour, "length of the run")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "seed of the schedule (0: from the clock)")
	flag.DurationVar(&cfg.EventEvery, "event-every", 15*time.Second, "mean time between two events")
	flag.DurationVar(&cfg.GitDownFor, "git-down-for", 2*time.Minute, "length of the Git outage")
	flag.DurationVar(&cfg.BrokenFor, "broken-for", 2*time.Minute, "how long a broken commit stays before its fix")
	flag.IntVar(&cfg.Concurrency, "concurrency", 4, "controller --concurrency")
	flag.StringVar(&cfg.ConvoyBinary, "convoy", "bin/convoy", "the convoy binary to run as the controller")
	flag.BoolVar(&cfg.KeepWorkDir, "keep", false, "keep the work folder (controller logs, Git storage)")
	flag.StringVar(&out, "out", "soak-results.json", "where to write the samples and verdicts as JSON")
	flag.StringVar(&svg, "svg", "", "where to draw the samples as an SVG picture (none when empty)")
	flag.StringVar(&plot, "plot", "", "draw the picture (-svg) of this soak-results.json and exit, without a run")
	flag.Parse()
	if plot != "" {
		if err := drawFrom(plot, svg); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(1)
		}
		return
	}
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.RunSoak(ctx, cfg)
	if res != nil {
		bench.PrintSoakTable(os.Stdout, res)
		if werr := bench.WriteSoakJSON(out, res); werr != nil {
			fmt.Fprintln(os.Stderr, "writing results:", werr)
		}
		if werr := draw(res, svg); werr != nil {
			fmt.Fprintln(os.Stderr, "drawing the samples:", werr)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak (seed %d): %v\n", res.Seed, err)
		os.Exit(1)
	}
	if !res.Passed() {
		fmt.Fprintf(os.Stderr, "soak: an invariant broke; replay with -seed %d\n", res.Seed)
		os.Exit(1)
	}
}

// drawFrom draws the picture of the results in the JSON file at from into svg.
func drawFrom(from, svg string) error {
	if svg == "" {
		return fmt.Errorf("-plot %s needs -svg, the picture to write", from)
	}
	raw, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	res := &bench.SoakResults{}
	if err := json.Unmarshal(raw, res); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	return draw(res, svg)
}

// draw writes the picture of res into svg; nothing when svg is empty.
func draw(res *bench.SoakResults, svg string) error {
	if svg == "" {
		return nil
	}
	f, err := os.Create(svg)
	if err != nil {
		return err
	}
	if err := bench.WriteSoakSVG(f, res); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
