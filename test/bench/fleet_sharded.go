package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// shardNames are the shards of the sharded part of the fleet scenario.
var shardNames = []string{"a", "b"}

// shardedFleet is the fleet run again by three processes: the unsharded replica (GitSources,
// HostedClusterPackages, --shards a,b) and one replica per shard.
type shardedFleet struct {
	main   *Controller
	shards map[string]*Controller
}

// stop stops every process.
func (s *shardedFleet) stop() {
	for _, c := range append([]*Controller{s.main}, s.shardControllers()...) {
		if c != nil {
			_ = c.Stop()
		}
	}
}

// shardControllers returns the shard replicas in the order of shardNames.
func (s *shardedFleet) shardControllers() []*Controller {
	var out []*Controller
	for _, name := range shardNames {
		if c := s.shards[name]; c != nil {
			out = append(out, c)
		}
	}
	return out
}

// sharded replaces the single controller by two shard replicas and the unsharded one, rolls
// every add-on once so that the HostedClusterPackage controller labels every Package with its
// shard (the Packages move to the shard replicas), then once more, and compares the peak RSS
// of each shard replica with the single replica's.
func (f *fleetRun) sharded(ctx context.Context) error {
	single, err := f.e.ctrl.Usage()
	if err != nil {
		return err
	}
	f.captureHeap(ctx, f.e.ctrl, "single")
	_ = f.e.ctrl.Stop()
	f.e.ctrl = nil
	s, err := f.startSharded(ctx)
	if err != nil {
		return err
	}
	defer s.stop()
	logf(f.e.cfg, "fleet: sharded over %v: moving the Packages to their shards", shardNames)
	if _, err := f.rolloutUnmeasured(ctx); err != nil {
		return err
	}
	logf(f.e.cfg, "fleet: sharded: rolling all add-ons by one commit")
	start := time.Now()
	if _, err := f.rolloutUnmeasured(ctx); err != nil {
		return err
	}
	f.addShardedRows(s, single.PeakRSS, time.Since(start))
	for name, c := range s.shards {
		f.captureHeap(ctx, c, "shard-"+name)
	}
	return nil
}

// captureHeap writes a heap profile of c to the pprof folder, when there is one.
func (f *fleetRun) captureHeap(ctx context.Context, c *Controller, name string) {
	if f.e.cfg.PprofDir == "" {
		return
	}
	path := filepath.Join(f.e.cfg.PprofDir, "fleet-"+name+".heap.pprof")
	if err := c.CaptureProfile(ctx, "heap", path); err != nil {
		f.res.note("pprof %s: %v", name, err)
	}
}

// startSharded starts the unsharded replica and one replica per shard, each with its own store
// and log.
func (f *fleetRun) startSharded(ctx context.Context) (*shardedFleet, error) {
	start := func(name string, args ...string) (*Controller, error) {
		dir := filepath.Join(f.e.dir, "replica-"+name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		in := f.e.controllerInput(dir, 0)
		in.Args = args
		return StartController(ctx, in)
	}
	s := &shardedFleet{shards: map[string]*Controller{}}
	var err error
	if s.main, err = start("unsharded", fmt.Sprintf("--shards=%s,%s", shardNames[0], shardNames[1])); err != nil {
		return nil, err
	}
	for _, name := range shardNames {
		if s.shards[name], err = start(name, "--shard="+name); err != nil {
			s.stop()
			return nil, err
		}
	}
	return s, nil
}

// rolloutUnmeasured commits the next revision of every add-on, asks for a poll and waits until
// every Package progressed at it.
func (f *fleetRun) rolloutUnmeasured(ctx context.Context) (string, error) {
	commit, err := f.commit(ctx, "fleet: sharded", f.addons...)
	if err != nil {
		return "", err
	}
	if err := f.e.requestPoll(ctx); err != nil {
		return "", err
	}
	return commit, f.waitProgressed(ctx, commit, f.addons...)
}

// targetShardRSSShare bounds the peak RSS of each shard replica against the single replica's
// (target P8 of docs/evidence/performance.md).
const targetShardRSSShare = 0.6

// addShardedRows reports the peak RSS of each replica next to the single replica's.
func (f *fleetRun) addShardedRows(s *shardedFleet, single int64, wall time.Duration) {
	scenario := f.scenario(fmt.Sprintf("sharded over %d replicas", len(shardNames)))
	for _, name := range shardNames {
		u, err := s.shards[name].Usage()
		if err != nil {
			f.res.note("fleet: shard %s: %v", name, err)
			continue
		}
		row := Row{Scenario: scenario, Metric: "shard " + name + " peak RSS", Value: mib(u.PeakRSS), Unit: "MiB",
			Baseline: ptr(mib(single)), BaselineName: "one replica, whole scenario",
			Target: fmt.Sprintf("< %.0f%%", 100*targetShardRSSShare)}
		row.Met = ptr(row.Ratio() < targetShardRSSShare)
		f.res.add(row)
	}
	if u, err := s.main.Usage(); err == nil {
		f.res.add(Row{Scenario: scenario, Metric: "unsharded replica peak RSS", Value: mib(u.PeakRSS), Unit: "MiB",
			Baseline: ptr(mib(single)), BaselineName: "one replica, whole scenario",
			Note: "GitSources and HostedClusterPackages; it caches every Package for the rollout's view"})
	}
	f.res.add(Row{Scenario: scenario, Metric: "all rolled by one commit, wall time", Value: wall.Seconds(), Unit: "s",
		Note: "after the Packages moved to their shards; the single replica's is above"})
}
