package rollout

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// checkedRuns is the number of random fleets TestPropertyChecks plays.
const checkedRuns = 60

// TestPropertyChecks plays the random fleets, events and gates of TestPropertyGates with random
// checks (the rollout's, a partition's own, or none) whose evaluations pass, fail or are
// inconclusive at random, and checks every plan before it is applied, besides what
// TestPropertyGates checks:
//   - under a rolling upgrade, no partition starts while a check of a partition before it (one
//     of whose Packages progressed at the update revision) failed, is inconclusive past its
//     limit, or has not passed, by the test's own account of the evaluations;
//   - a failed check stops the rollout: no partition after its own starts (checkStop);
//   - the rollout does not complete while such a check has not passed;
//   - the results the plan reports agree with the test's account, and a check that passed or
//     failed is not evaluated again;
//
// and, once every evaluation passes and a good revision is pushed, that every target ends on it.
func TestPropertyChecks(t *testing.T) {
	for run := range checkedRuns {
		t.Run(strconv.Itoa(run), func(t *testing.T) {
			g := NewWithT(t)
			rng := rand.New(rand.NewPCG(uint64(run), 0xc4ec5))
			pc := &propertyCheck{g: g, faulty: true, rng: rand.New(rand.NewPCG(uint64(run), 0x0c)),
				ledger: map[string]*checkLedger{}}
			w := randomWorld(rng)
			randomGates(rng, w)
			randomChecks(rng, w)
			pc.sim = newSim(t, w, uint64(run))
			pc.sim.check = pc.checkChecked
			pc.sim.checker = pc.evaluate
			pc.sim.gates = true
			for range 120 {
				pc.perturbGates(rng)
				pc.perturb(rng)
				pc.sim.advance()
			}
			pc.healthy = true
			pc.settleGates()
		})
	}
}

// randomChecks gives w up to two rollout checks with random intervals, durations and limits,
// and gives some partition policies checks of their own or skipChecks.
func randomChecks(rng *rand.Rand, w *world) {
	w.hcpkg.Spec.Checks = nil
	for i := range rng.IntN(3) {
		w.hcpkg.Spec.Checks = append(w.hcpkg.Spec.Checks, randomCheck(rng, fmt.Sprintf("c%d", i)))
	}
	if w.hcpkg.Spec.Partition == nil {
		return
	}
	for i := range w.hcpkg.Spec.Partition.Policies {
		switch pol := &w.hcpkg.Spec.Partition.Policies[i]; rng.IntN(4) {
		case 0:
			pol.SkipChecks = true
		case 1:
			pol.Checks = []convoyv1alpha1.RolloutCheck{randomCheck(rng, "own")}
		}
	}
}

// randomCheck returns a Prometheus check named name with random timing and limits.
func randomCheck(rng *rand.Rand, name string) convoyv1alpha1.RolloutCheck {
	return convoyv1alpha1.RolloutCheck{
		Name:              name,
		IntervalSeconds:   []int32{0, 30, 60, 90}[rng.IntN(4)],
		DurationSeconds:   []int32{0, 60, 300}[rng.IntN(3)],
		FailureLimit:      []int32{0, 1, 2}[rng.IntN(3)],
		InconclusiveLimit: []int32{0, 1, 3}[rng.IntN(3)],
		Prometheus: &convoyv1alpha1.PrometheusCheck{Address: "http://prometheus:9090", Query: "up",
			SuccessCondition: "values.all(v, v == 1.0)"},
	}
}

// checkLedger is the test's account of one check at one revision in one partition.
type checkLedger struct {
	failures, inconclusive int32
	passed, failed         bool
}

// evaluate draws the outcome of a due check (every one passes once healthy) and keeps the
// test's own account of it.
func (pc *propertyCheck) evaluate(s *sim, d DueCheck) Evaluation {
	outcome := CheckPass
	if !pc.healthy {
		outcome = []CheckOutcome{CheckPass, CheckPass, CheckPass, CheckPass, CheckPass, CheckPass, CheckFail, CheckError, CheckError}[pc.rng.IntN(9)]
	}
	key := d.Revision + "/" + d.Partition + "/" + d.Check.Name
	l := pc.ledger[key]
	if l == nil || d.Result == nil {
		// Without a result the check starts over: its partition lost its targets, and with
		// them its status, since it was last evaluated.
		l = &checkLedger{}
		pc.ledger[key] = l
	}
	pc.g.Expect(l.passed || l.failed).To(BeFalse(), "a concluded check is evaluated again: "+key+"\n"+s.log.String())
	pc.g.Expect(d.Revision).To(Equal(s.update.Name))
	switch outcome {
	case CheckPass:
		l.inconclusive = 0
	case CheckFail:
		l.failures, l.inconclusive = l.failures+1, 0
	default:
		l.inconclusive++
	}
	l.failed = l.failures > d.Check.FailureLimit
	end := d.StartedAt.Add(time.Duration(d.Check.DurationSeconds) * time.Second)
	l.passed = !l.failed && outcome == CheckPass && !s.now.Before(end)
	return Evaluation{Outcome: outcome, Value: "[1]"}
}

// checkChecked verifies one plan of a run with checks: what checkGated verifies, the partition
// starts and the completion against the test's account of the checks, and the plan's results.
func (pc *propertyCheck) checkChecked(plan *Plan) {
	pc.checkGated(plan)
	f := pc.observe(plan)
	s := pc.sim
	if s.hcpkg.Spec.Strategy.Instant == nil {
		for _, c := range pc.startsAtUpdate(plan) {
			index := f.partition[clusterName(c)]
			if pc.started(f, index) {
				continue
			}
			for k := range index {
				pc.expectChecksPassed(plan, f, k, "partition "+c.Partition+" starts")
			}
		}
	}
	if plan.Completed && (s.current == nil || s.current.Name != s.update.Name) {
		for k := range plan.Partitions {
			pc.expectChecksPassed(plan, f, k, "the rollout completes")
		}
	}
	pc.checkResults(plan)
}

// expectChecksPassed fails unless every check of the partition at index k passed at the update
// revision, by the test's account, when one of its eligible Packages progressed at it.
func (pc *propertyCheck) expectChecksPassed(plan *Plan, f facts, k int, what string) {
	s := pc.sim
	judged := false
	for name, i := range f.partition {
		ns := namespaceOf(name)
		_, progressed := s.progressedAt[ns]
		judged = judged || (i == k && f.eligible[name] && s.revisionOf(ns) == s.update.Name && progressed)
	}
	if !judged {
		return
	}
	part := plan.Partitions[k].Name
	for _, c := range pc.checksOf(part) {
		l := pc.ledger[s.update.Name+"/"+part+"/"+c.Name]
		pc.g.Expect(l != nil && l.passed).To(BeTrue(),
			fmt.Sprintf("%s while check %s of partition %s has not passed\n%s", what, c.Name, part, s.log.String()))
	}
}

// checksOf returns the checks of the partition named part, as the spec gives them.
func (pc *propertyCheck) checksOf(part string) []convoyv1alpha1.RolloutCheck {
	for _, pol := range pc.policies() {
		switch {
		case pol.Name != part:
		case pol.SkipChecks:
			return nil
		case len(pol.Checks) > 0:
			return pol.Checks
		}
	}
	return pc.sim.hcpkg.Spec.Checks
}

// checkResults: every result the plan reports is of the update revision and agrees with the
// test's account: Passed when it passed, Failed when it failed, neither otherwise.
func (pc *propertyCheck) checkResults(plan *Plan) {
	s := pc.sim
	for _, part := range plan.Partitions {
		for _, r := range part.Checks {
			pc.g.Expect(r.Revision).To(Equal(s.update.Name))
			key := r.Revision + "/" + part.Name + "/" + r.Name
			l := pc.ledger[key]
			pc.g.Expect(l).NotTo(BeNil(), key)
			pc.g.Expect(r.State == convoyv1alpha1.CheckPassed).To(Equal(l.passed), key)
			pc.g.Expect(r.State == convoyv1alpha1.CheckFailed).To(Equal(l.failed), key)
			limit := slices.IndexFunc(pc.checksOf(part.Name), func(c convoyv1alpha1.RolloutCheck) bool { return c.Name == r.Name })
			pc.g.Expect(limit).To(BeNumerically(">=", 0), "a result of a check not in the spec: "+key)
		}
	}
}
