package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// hostedPackageName names the Packages of the hosted scenario.
const hostedPackageName = "hosted-addon"

// runHosted measures a package of 50 objects in hosted-cluster phases on cfg.HostedClusters
// hosted API servers: per cluster, the time from the new commit to the Package progressed,
// next to a bare SSA loop of the same 50 objects against the same hosted server.
func runHosted(ctx context.Context, cfg Config, res *Results) error {
	logf(cfg, "hosted: starting %d hosted API servers", cfg.HostedClusters)
	e, err := newEnv(ctx, cfg, envInput{Clusters: cfg.HostedClusters, APIServers: true})
	if err != nil {
		return err
	}
	defer e.close()
	floor, err := hostedFloor(ctx, e.clusters)
	if err != nil {
		return err
	}
	if err := e.startController(ctx); err != nil {
		return err
	}
	if err := e.createPackages(ctx, hostedPackageName, hostedPath); err != nil {
		return err
	}
	if _, err := e.watch.waitAll(ctx, e.namespaces, progressedAt(e.commit), rolloutTimeout); err != nil {
		return fmt.Errorf("hosted: install: %w", err)
	}
	per, err := e.timePerPackage(ctx, hostedPackageName)
	if err != nil {
		return err
	}
	scenario := fmt.Sprintf("hosted %d clusters × %d objects", len(e.clusters), hostedObjects)
	res.add(Row{Scenario: scenario, Metric: "time per cluster (mean)", Value: mean(per), Unit: "s",
		Baseline: ptr(mean(floor)), BaselineName: "bare SSA loop",
		Note: fmt.Sprintf("slowest %.2f s vs %.2f s; controller --concurrency %d", maxOf(per), maxOf(floor), cfg.Concurrency)})
	return nil
}

// hostedFloor creates the bare copies of the hosted objects in every hosted cluster, then
// times their update, each cluster by its own loop, all clusters at once.
func hostedFloor(ctx context.Context, clusters []*simfleet.HostedCluster) ([]float64, error) {
	out := make([]float64, len(clusters))
	errs := make([]error, len(clusters))
	var wg sync.WaitGroup
	for i, hc := range clusters {
		wg.Go(func() {
			batch := func(rev int) [][]*unstructured.Unstructured {
				return [][]*unstructured.Unstructured{hostedObjectsAt(bareNamespace, rev)}
			}
			if _, errs[i] = bareLoop(ctx, hc.Client, batch(1), 1); errs[i] != nil {
				return
			}
			var d time.Duration
			d, errs[i] = bareLoop(ctx, hc.Client, batch(2), 1)
			out[i] = d.Seconds()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("hosted: bare loop: %w", err)
		}
	}
	return out, nil
}

// timePerPackage commits the next revision, asks for a poll, and returns for each Package
// name the seconds until it progressed.
func (e *env) timePerPackage(ctx context.Context, name string) ([]float64, error) {
	commit, err := e.commitNext()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := e.requestPoll(ctx); err != nil {
		return nil, err
	}
	done := progressedAt(commit)
	times := map[string]float64{}
	deadline := time.After(rolloutTimeout)
	for len(times) < len(e.namespaces) {
		for ns := range e.namespaces {
			if _, ok := times[ns]; !ok && e.watch.progressed(ns, name, done) {
				times[ns] = time.Since(start).Seconds()
			}
		}
		select {
		case <-e.watch.changed:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			return nil, fmt.Errorf("hosted: %d of %d Packages progressed after %s", len(times), len(e.namespaces), rolloutTimeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := make([]float64, 0, len(times))
	for _, t := range times {
		out = append(out, t)
	}
	return out, nil
}

// mean returns the average of xs.
func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(max(1, len(xs)))
}

// maxOf returns the largest of xs.
func maxOf(xs []float64) float64 {
	var m float64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
