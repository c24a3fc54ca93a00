package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// leaseDuration and retryPeriod are the controller's leader election defaults: the standby
// takes the lease once it has not been renewed for leaseDuration, looking every retryPeriod.
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
	// takeoverSlack allows for a loaded machine: make test runs the race-enabled packages next
	// to this one on two cores, and a takeover was then seen to take more than 30 s.
	takeoverSlack = 20 * time.Second
)

// killLeader replaces the controller by two replicas with leader election (the standby with an
// empty store of its own, as a second pod would have), waits until the rollout of commit has
// updated a few Packages under the leader, then SIGKILLs it. The controller is back when the
// standby holds the lease; the row's note says how long that took.
func killLeader(ctx context.Context, e *env, tgt *target, row *FaultResult) (time.Time, error) {
	if err := e.ctrl.Stop(); err != nil {
		return time.Time{}, err
	}
	leader, err := e.startReplica(ctx, e.dir)
	if err != nil {
		return time.Time{}, err
	}
	e.ctrl = leader
	if err := waitLeader(ctx, leader, time.Minute); err != nil {
		return time.Time{}, err
	}
	standbyDir := filepath.Join(e.dir, "standby")
	if err := os.MkdirAll(standbyDir, 0o750); err != nil {
		return time.Time{}, err
	}
	standby, err := e.startReplica(ctx, standbyDir)
	if err != nil {
		return time.Time{}, err
	}
	if err := waitUpdated(ctx, e, tgt.get(), updatedTo(e, tgt.get())+2); err != nil {
		return time.Time{}, err
	}
	killed := time.Now()
	if err := leader.Kill(); err != nil {
		return time.Time{}, err
	}
	e.ctrl = standby
	if err := waitLeader(ctx, standby, leaseDuration+retryPeriod+takeoverSlack); err != nil {
		return time.Time{}, err
	}
	takeover := time.Since(killed)
	row.Note = fmt.Sprintf("standby took over %.1f s after the kill (lease %s)", takeover.Seconds(), leaseDuration)
	if takeover > leaseDuration+retryPeriod+takeoverSlack {
		return time.Now(), fmt.Errorf("the standby took %s to take over, more than the lease duration %s", takeover, leaseDuration)
	}
	return time.Now(), nil
}

// startReplica starts one replica with leader election, its store and log under dir.
func (e *env) startReplica(ctx context.Context, dir string) (*Controller, error) {
	e.restarts++
	in := e.controllerInput(dir, e.restarts)
	in.LeaseNamespace = benchNamespace
	return StartController(ctx, in)
}

// waitLeader waits until c holds the lease.
func waitLeader(ctx context.Context, c *Controller, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok, err := c.IsLeader(ctx); err == nil && ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the replica did not become leader within %s", timeout)
}
