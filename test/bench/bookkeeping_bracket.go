package bench

import (
	"fmt"
	"time"
)

// The rollout's bookkeeping floor is measured on both sides of convoy's steps: before them, as
// the controller has not started, and after them, once it has stopped. The machine and the API
// server warm up over a run (in one run the floor's update pass took 37.5 s before the steps and
// 31.0 s after), so a floor measured first only would flatter convoy; each step is judged against
// the mean of the two. A fleet that goes on to the steady scenario keeps its controller running
// and has the floor from before the steps only; its rows say so.

// floorBracket is one pass of the bookkeeping floor (create or update), measured before convoy's
// steps and, when after is set, after them.
type floorBracket struct {
	before floorPass
	// after is the same pass measured after the steps; nil when it was not.
	after *floorPass
}

// pass returns the floor a step is judged against: the mean of the passes on both sides of the
// steps, or the one before them alone.
func (b floorBracket) pass() floorPass {
	if b.after == nil {
		return b.before
	}
	return meanPass(b.before, *b.after)
}

// note says what the floor is (what) and how it was measured: its wall time on each side of the
// steps and their mean, or before the steps only.
func (b floorBracket) note(what string) string {
	if b.after == nil {
		return fmt.Sprintf("%s; floor %.2f s, measured before the steps only", what, b.before.wall.Seconds())
	}
	return fmt.Sprintf("%s; floor %.2f s before the steps, %.2f s after, mean %.2f s", what,
		b.before.wall.Seconds(), b.after.wall.Seconds(), b.pass().wall.Seconds())
}

// meanPass returns the mean of two passes of one floor, figure by figure.
func meanPass(a, b floorPass) floorPass {
	return floorPass{wall: meanDuration(a.wall, b.wall), requests: meanRequests(a.requests, b.requests),
		serverCPU: meanDuration(a.serverCPU, b.serverCPU), window: meanWindow(a.window, b.window),
		packageBytes: (a.packageBytes + b.packageBytes) / 2}
}

// meanWindow returns the mean of what the machine did during two floor passes, field by field
// rather than either window whole: the waits' rates (waitAccount.floorRate, the cores used) are
// then the mean floor's CPU over its mean wall time, as its wall time is the mean. A floor runs
// no controller and fetches nothing, so the controller's peak memory, its renders and the Git
// server's figures stay zero.
func meanWindow(a, b window) window {
	return window{wall: meanDuration(a.wall, b.wall), cpu: meanDuration(a.cpu, b.cpu),
		serverCPU: meanDuration(a.serverCPU, b.serverCPU), requests: meanRequests(a.requests, b.requests),
		benchCPU: meanDuration(a.benchCPU, b.benchCPU),
		machine:  machineCPU{busy: meanDuration(a.machine.busy, b.machine.busy), total: meanDuration(a.machine.total, b.machine.total)}}
}

// meanDuration returns the mean of a and b.
func meanDuration(a, b time.Duration) time.Duration { return (a + b) / 2 }

// meanRequests returns the mean of a and b, key by key; a key missing from one counts as zero
// there.
func meanRequests(a, b Requests) Requests {
	out := Requests{}
	for k, v := range a {
		out[k] += v / 2
	}
	for k, v := range b {
		out[k] += v / 2
	}
	return out
}

// floorDriftRows returns, for each pass of the bookkeeping floor, its wall time after convoy's
// steps against before them: how far the machine moved under the steps, which the mean evens out.
func floorDriftRows(scenario string, before, after bookkeepingFloor) []Row {
	row := func(kind, floorOf string, b, a floorPass) Row {
		return Row{Scenario: scenario, Metric: "wall time of the " + kind + " pass, after the steps against before",
			Value: a.wall.Seconds(), Unit: "s", Baseline: ptr(b.wall.Seconds()), BaselineName: "before the steps",
			Note: fmt.Sprintf("%s, measured again with the controller stopped; kube-apiserver and etcd CPU %.1f s after the steps, %.1f s before",
				floorOf, a.serverCPU.Seconds(), b.serverCPU.Seconds())}
	}
	return []Row{row("create", "the install's floor", before.create, after.create),
		row("update", "the rollouts' floor", before.update, after.update)}
}
