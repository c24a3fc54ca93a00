package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
)

// hostedRollout is what one rollout of the fleet and the hosted clusters measured.
type hostedRollout struct {
	// healthy is the time from the commit until every Package of the healthy part (the fleet
	// and the hosted clusters that answer) progressed; hosted, the hosted clusters' share.
	healthy, hosted time.Duration
	// fleetMax and hostedMax are the highest unavailable plus updating counts sampled.
	fleetMax, hostedMax int
	samples             int
}

// runHostedFault rolls out a new commit to the fleet and the hosted clusters. With dead set,
// one hosted API server in ten is blackholed and one in ten refuses connections as the
// rollout starts; the row compares the healthy part's rollout with the baseline (the
// hosted-healthy row), checks that every dead Package says its cluster is unreachable, then
// brings the servers back and waits for them to recover.
func runHostedFault(ctx context.Context, e *env, h *hostedFleet, dead bool) FaultResult {
	row := FaultResult{Fault: FaultHostedHealthy, Clusters: len(e.namespaces) + len(h.namespaces),
		Budget: len(h.namespaces)}
	var blackholed, refusing []*hostedCluster
	if dead {
		row.Fault = FaultHostedDead
		blackholed, refusing = h.dead()
	}
	gitBefore := e.git.Stats()
	res, commit, err := h.rollout(ctx, e, blackholed, refusing)
	row.GitFetches = e.git.Stats().Sub(gitBefore).UploadPacks
	row.Rollout, row.MaxUnavailable, row.Samples = res.healthy, res.hostedMax, res.samples
	fleetBudget := max(1, len(e.namespaces)/10)
	row.Note = fmt.Sprintf("fleet %d / %d; hosted clusters %.1f s", res.fleetMax, fleetBudget, res.hosted.Seconds())
	if err == nil && !dead {
		h.baseline, h.baselineHosted = res.healthy, res.hosted
	}
	if err == nil && dead {
		err = h.judgeDead(ctx, e, &row, res, commit, blackholed, refusing)
	}
	if err != nil {
		row.Error = err.Error()
	}
	row.WrongRevision = len(e.namespaces) + len(h.namespaces) - countProgressed(e, commit) - countProgressedIn(e, h.namespaces, commit)
	lost, lerr := countLost(ctx, e)
	hostedLost, herr := h.countHostedLost(ctx)
	row.ObjectsLost = lost + hostedLost
	if lerr = errors.Join(lerr, herr); lerr != nil && row.Error == "" {
		row.Error = lerr.Error()
	}
	row.Passed = row.Error == "" && row.MaxUnavailable <= row.Budget && res.fleetMax <= fleetBudget &&
		row.ObjectsLost == 0 && row.WrongRevision == 0 && (!dead || row.Ratio <= ratioBound)
	return row
}

// rollout commits the next revision, kills the dead clusters' servers, and waits until the
// healthy part progressed, sampling both HostedClusterPackages' budgets meanwhile.
func (h *hostedFleet) rollout(ctx context.Context, e *env, blackholed, refusing []*hostedCluster) (res hostedRollout, commit string, err error) {
	commit, err = e.commitNext()
	if err != nil {
		return res, "", err
	}
	tgt := &target{commit: commit}
	fleet, hosted := startSampler(ctx, e, e.namespaces, tgt), startSampler(ctx, e, h.namespaces, tgt)
	defer func() {
		var n int
		res.fleetMax, n, _ = fleet.stop()
		res.hostedMax, res.samples, _ = hosted.stop()
		res.samples += n
	}()
	if err = e.requestPoll(ctx); err != nil {
		return res, commit, err
	}
	start := time.Now()
	for _, c := range blackholed {
		c.proxy.SetMode(faultnet.Blackhole)
	}
	for _, c := range refusing {
		c.proxy.SetMode(faultnet.Refuse)
	}
	all, hostedPart := h.healthyPart(e, blackholed, refusing)
	ends, err := e.watch.firstAll(ctx, progressedAt(commit), rolloutTimeout, all, hostedPart)
	if err != nil {
		return res, commit, err
	}
	res.healthy, res.hosted = ends[0].Sub(start), ends[1].Sub(start)
	return res, commit, nil
}

// judgeDead compares the healthy part's rollout with the baseline, waits until every dead
// Package says its cluster is unreachable, brings the servers back and waits until they
// recovered.
func (h *hostedFleet) judgeDead(ctx context.Context, e *env, row *FaultResult, res hostedRollout, commit string, blackholed, refusing []*hostedCluster) error {
	if h.baseline <= 0 || h.baselineHosted <= 0 {
		return fmt.Errorf("%s needs the %s row first, as its baseline", FaultHostedDead, FaultHostedHealthy)
	}
	ratio := res.healthy.Seconds() / h.baseline.Seconds()
	hostedRatio := res.hosted.Seconds() / h.baselineHosted.Seconds()
	row.Ratio = max(ratio, hostedRatio)
	met := map[bool]string{true: "MET", false: "NO"}[row.Ratio <= ratioBound]
	deadNS := namespacesOf(blackholed, refusing)
	row.Note = fmt.Sprintf("%d blackholed + %d refusing of %d hosted; healthy part %.1f s vs %.1f s all healthy (%.2f×), hosted clusters %.1f s vs %.1f s (%.2f×): 1.3× %s; %s",
		len(blackholed), len(refusing), len(h.namespaces), res.healthy.Seconds(), h.baseline.Seconds(), ratio,
		res.hosted.Seconds(), h.baselineHosted.Seconds(), hostedRatio, met, row.Note)
	if _, err := e.watch.firstAll(ctx, reportsUnreachable, deadReportTimeout, deadNS); err != nil {
		return fmt.Errorf("the dead clusters' Packages did not all say HostedClusterUnreachable: %w", err)
	}
	back := time.Now()
	for _, c := range h.clusters {
		c.proxy.SetMode(faultnet.Forward)
	}
	if _, err := e.watch.firstAll(ctx, progressedAt(commit), recoverTimeout, deadNS); err != nil {
		return fmt.Errorf("the dead clusters did not recover: %w", err)
	}
	row.Recovery = time.Since(back)
	row.Note += fmt.Sprintf("; every dead one said HostedClusterUnreachable, and recovered %.1f s after its server answered", row.Recovery.Seconds())
	return nil
}

// countProgressedIn returns the number of Packages in namespaces progressed at commit.
func countProgressedIn(e *env, namespaces map[string]bool, commit string) int {
	ok, _ := e.watch.count(namespaces, progressedAt(commit))
	return ok
}

// firstAll polls every 50 ms until, for each set of namespaces, every namespace holds a
// Package and all satisfy pred; it returns when each set first did.
func (w *packageWatch) firstAll(ctx context.Context, pred func(*convoyv1alpha1.Package) bool, timeout time.Duration, sets ...map[string]bool) ([]time.Time, error) {
	ends := make([]time.Time, len(sets))
	deadline := time.Now().Add(timeout)
	for {
		pending := 0
		for i, set := range sets {
			if !ends[i].IsZero() {
				continue
			}
			if ok, total := w.count(set, pred); total >= len(set) && ok == total {
				ends[i] = time.Now()
				continue
			}
			pending++
		}
		if pending == 0 {
			return ends, nil
		}
		if time.Now().After(deadline) {
			return ends, fmt.Errorf("after %s, %d sets of Packages still do not satisfy the condition", timeout, pending)
		}
		select {
		case <-ctx.Done():
			return ends, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// hostedFaults runs the hosted rows on a hosted part of the fleet started by the first of them.
type hostedFaults struct {
	cfg   FaultsConfig
	fleet *hostedFleet
}

// run runs the hosted fault name; after FaultHostedDead it pauses the hosted clusters'
// rollouts, so that the faults after it roll out the fleet alone.
func (f *hostedFaults) run(ctx context.Context, e *env, name string) FaultResult {
	if f.fleet == nil {
		h, err := startHostedFleet(ctx, e, f.cfg.HostedClusters)
		if err != nil {
			return FaultResult{Fault: name, Error: "starting the hosted clusters: " + err.Error()}
		}
		f.fleet = h
	}
	row := runHostedFault(ctx, e, f.fleet, name == FaultHostedDead)
	if name == FaultHostedDead {
		if err := f.fleet.pause(ctx, e); err != nil && row.Error == "" {
			row.Error, row.Passed = err.Error(), false
		}
	}
	return row
}

// close stops the proxies.
func (f *hostedFaults) close() {
	if f.fleet != nil {
		f.fleet.close()
	}
}
