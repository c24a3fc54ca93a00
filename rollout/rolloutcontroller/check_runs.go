package rolloutcontroller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/checks"
)

// checkRuns holds the evaluations of the rollout checks that are under way, and those that
// finished and wait for a pass to record them.
//
// Note: an evaluation may last its whole timeout (a Prometheus that never answers: 10s; an HTTP
// check: up to 60s). Inside the pass it would hold one of the few reconcile workers
// (--rollout-concurrency, 2 by default) that long, and with it every other
// HostedClusterPackage. A pass starts the due checks instead and ends; a later one records
// them: the planner wakes a HostedClusterPackage whose checks run every second at most.
type checkRuns struct {
	mu   sync.Mutex
	runs map[checkRunKey]*checkRun
}

// checkRunKey identifies an evaluation: the HostedClusterPackage (its name and incarnation),
// the partition, the revision and the check, by name and by what it evaluates, so that a result
// never counts for another revision or a changed check.
type checkRunKey struct {
	name      string
	uid       types.UID
	partition string
	revision  string
	check     string
	what      string
}

// checkRun is one evaluation; eval and err are set once done is.
type checkRun struct {
	done bool
	eval rollout.Evaluation
	err  error
}

// checkRunKeyOf returns the key of due check d of obj.
func checkRunKeyOf(obj *convoyv1alpha1.HostedClusterPackage, d *rollout.DueCheck) checkRunKey {
	return checkRunKey{name: obj.Name, uid: obj.UID, partition: d.Partition, revision: d.Revision,
		check: d.Check.Name, what: checks.Key(&d.Check)}
}

// take returns the run of key and whether there is one; a finished run is handed over once.
func (c *checkRuns) take(key checkRunKey) (checkRun, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	run, ok := c.runs[key]
	if !ok {
		return checkRun{}, false
	}
	if run.done {
		delete(c.runs, key)
	}
	return *run, true
}

// underWay returns the number of evaluations of the HostedClusterPackage name not yet done.
func (c *checkRuns) underWay(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for key, run := range c.runs {
		if key.name == name && !run.done {
			n++
		}
	}
	return n
}

// start runs evaluate in a goroutine of its own as the evaluation of key. evaluate must end by
// itself: its checks are bounded by their timeouts.
func (c *checkRuns) start(key checkRunKey, evaluate func() (rollout.Evaluation, error)) {
	run := &checkRun{}
	c.mu.Lock()
	if c.runs == nil {
		c.runs = map[checkRunKey]*checkRun{}
	}
	c.runs[key] = run
	c.mu.Unlock()
	go func() {
		eval, err := evaluate()
		c.mu.Lock()
		defer c.mu.Unlock()
		run.eval, run.err, run.done = eval, err, true
	}()
}

// sweep drops the finished evaluations of the HostedClusterPackage name that no check due now
// will record: their revision, check or partition is gone.
func (c *checkRuns) sweep(name string, due map[checkRunKey]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, run := range c.runs {
		if key.name == name && run.done && !due[key] {
			delete(c.runs, key)
		}
	}
}

// forget drops the evaluations of a deleted HostedClusterPackage; those under way end unread.
func (c *checkRuns) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.runs {
		if key.name == name {
			delete(c.runs, key)
		}
	}
}
