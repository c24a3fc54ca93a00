package rollout

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// errorRateQuery is the query of the test's error-rate check.
const errorRateQuery = `max(convoy_test_addon_error_ratio{hosted_cluster=~"{{ regex (names .HostedClusters) }}"})`

// errorRateCheck evaluates the add-on's error ratio every minute for five minutes.
func errorRateCheck() convoyv1alpha1.RolloutCheck {
	return convoyv1alpha1.RolloutCheck{
		Name: "error-rate", IntervalSeconds: 60, DurationSeconds: 300,
		Prometheus: &convoyv1alpha1.PrometheusCheck{
			Address: "http://prometheus.monitoring:9090", Query: errorRateQuery,
			SuccessCondition: "values.all(v, v < 0.05)",
		},
	}
}

// errorRates is a checker for the error-rate check: the ratio each partition shows at each
// revision (0.01 unless set), or no answer at all while down.
type errorRates struct {
	ratio map[string]string // "<partition>@<revision>"
	down  bool
	// evaluations records "<partition>@<revision>" of every evaluation, in order.
	evaluations []string
	// clusters records the clusters each partition's evaluations looked at.
	clusters map[string][]string
}

// evaluate is the checker of a sim.
func (e *errorRates) evaluate(_ *sim, d DueCheck) Evaluation {
	key := d.Partition + "@" + d.Revision
	e.evaluations = append(e.evaluations, key)
	if e.clusters == nil {
		e.clusters = map[string][]string{}
	}
	e.clusters[d.Partition] = nil
	for _, hc := range d.HostedClusters {
		e.clusters[d.Partition] = append(e.clusters[d.Partition], hc.Name)
	}
	if e.down {
		return Evaluation{Outcome: CheckError, Message: "Post \"http://prometheus.monitoring:9090/api/v1/query\": connection refused"}
	}
	ratio := e.ratio[key]
	if ratio == "" {
		ratio = "0.01"
	}
	if ratio >= "0.05" {
		return Evaluation{Outcome: CheckFail, Value: "[" + ratio + "]", Message: "values.all(v, v < 0.05) is false"}
	}
	return Evaluation{Outcome: CheckPass, Value: "[" + ratio + "]"}
}

// checkedSim starts a gated simulation of w whose checks e evaluates, and pushes rev2.
func checkedSim(t *testing.T, w *world, e *errorRates) *sim {
	s := gatedSim(t, w)
	s.checker = e.evaluate
	return s
}

// firstPlan returns the index of the first plan for which cond holds; -1 when none does.
func firstPlan(s *sim, cond func(*Plan) bool) int {
	for i, plan := range s.plans {
		if cond(plan) {
			return i
		}
	}
	return -1
}

// gateIs is a plan condition: the plan's gate has type kind.
func gateIs(kind string) func(*Plan) bool {
	return func(plan *Plan) bool { return plan.Gate != nil && plan.Gate.Type == kind }
}

// checkOf returns the result of the check named name of partition part in plan; nil when none.
func checkOf(plan *Plan, part, name string) *convoyv1alpha1.CheckStatus {
	for _, p := range plan.Partitions {
		for i := range p.Checks {
			if p.Name == part && p.Checks[i].Name == name {
				return &p.Checks[i]
			}
		}
	}
	return nil
}

func TestGoldenCheckRunsAfterTheSoak(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(1)
	w.hcpkg.Spec.Strategy.RollingUpgrade.SoakSeconds = 120
	w.hcpkg.Spec.Checks = []convoyv1alpha1.RolloutCheck{errorRateCheck()}
	e := &errorRates{}
	s := checkedSim(t, w, e)
	s.run(200)

	g.Expect(s.current.Name).To(Equal("rev2"))
	soaking := s.plans[firstPlan(s, gateIs(convoyv1alpha1.GateSoak))]
	g.Expect(states(soaking)).To(Equal([]string{"early=Soaking", "normal=Pending", "late=Pending"}))
	g.Expect(checkOf(soaking, "early", "error-rate").State).To(Equal(convoyv1alpha1.CheckRunning),
		"the checks start with the soak")
	checking := s.plans[firstPlan(s, gateIs(convoyv1alpha1.GateCheck))]
	g.Expect(states(checking)).To(Equal([]string{"early=Checking", "normal=Pending", "late=Pending"}))
	g.Expect(checking.Gate.Partition).To(Equal("normal"))
	g.Expect(checking.Gate.Message).To(ContainSubstring("Partition normal starts when partition early has passed its checks"))
	started := checkOf(checking, "early", "error-rate").StartedAt.Time
	g.Expect(checking.Partitions[0].Until.Time).To(Equal(started.Add(5 * time.Minute)))
	g.Expect(checking.RequeueAfter).To(BeNumerically(">", 0))
	g.Expect(checking.RequeueAfter).To(BeNumerically("<=", time.Minute))
	// normal starts at early's last evaluation, five minutes after early progressed.
	g.Expect(firstStart(s, "normal", "rev2")).To(Equal(started.Add(5 * time.Minute)))
	g.Expect(strings.Count(strings.Join(e.evaluations, " "), "early@rev2")).To(Equal(6))
	g.Expect(e.clusters["early"]).To(Equal([]string{"early-1", "early-2"}))
	last := s.plans[len(s.plans)-1]
	g.Expect(last.Completed).To(BeTrue())
	for _, part := range []string{"early", "normal", "late"} {
		g.Expect(checkOf(last, part, "error-rate").State).To(Equal(convoyv1alpha1.CheckPassed), part)
	}
	expectGolden(t, s, "check-after-soak")
}

func TestGoldenFailedCheckStopsTheRollout(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(2)
	w.hcpkg.Spec.FailurePolicy.MaxFailures = ptr(intstr.FromInt32(5))
	check := errorRateCheck()
	check.FailureLimit = 1
	w.hcpkg.Spec.Checks = []convoyv1alpha1.RolloutCheck{check}
	e := &errorRates{ratio: map[string]string{"early@rev2": "0.20"}}
	s := checkedSim(t, w, e)
	s.run(60)

	last := s.plans[len(s.plans)-1]
	g.Expect(last.Failed).To(HaveLen(1), "maxFailures does not tolerate a failed check")
	f := last.Failed[0]
	g.Expect(f.Reason).To(Equal(convoyv1alpha1.CheckFailedReason))
	g.Expect(f.Partition).To(Equal("early"))
	g.Expect(f.Check).To(Equal("error-rate"))
	g.Expect(f.HostedCluster).To(BeEmpty())
	g.Expect(f.Message).To(ContainSubstring("convoy_test_addon_error_ratio"))
	g.Expect(f.Message).To(ContainSubstring("[0.20]"))
	g.Expect(f.Message).To(ContainSubstring("2 failed evaluations, failureLimit 1"))
	g.Expect(last.Gate.Type).To(Equal(convoyv1alpha1.GateFailures))
	g.Expect(last.Gate.Partition).To(Equal("early"))
	g.Expect(last.Gate.Message).To(ContainSubstring("Check error-rate of partition early failed"))
	g.Expect(states(last)).To(Equal([]string{"early=Blocked", "normal=Pending", "late=Pending"}))
	g.Expect(last.Reject).To(BeFalse())
	g.Expect(last.Completed).To(BeFalse())
	g.Expect(onRevision(s, "rev2")).To(ConsistOf("early-1", "early-2"))
	g.Expect(strings.Count(strings.Join(e.evaluations, " "), "early@rev2")).To(Equal(2), "a failed check is not evaluated again")
	expectGolden(t, s, "check-failed")
}

func TestGoldenFailedCheckRollsBack(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(1)
	w.hcpkg.Spec.FailurePolicy = convoyv1alpha1.FailurePolicy{Action: convoyv1alpha1.FailureActionRollback}
	w.hcpkg.Spec.Checks = []convoyv1alpha1.RolloutCheck{errorRateCheck()}
	e := &errorRates{ratio: map[string]string{"normal@rev2": "0.07"}}
	s := checkedSim(t, w, e)
	s.run(80)

	g.Expect(s.update.Rejected).To(BeTrue())
	rejecting := s.plans[firstPlan(s, func(plan *Plan) bool { return plan.Reject })]
	g.Expect(rejecting.RejectReason).To(ContainSubstring("Check error-rate of partition normal failed"))
	g.Expect(reasons(s, RollbackReason)).To(Equal([]string{"normal-2 -> rev1", "normal-1 -> rev1"}),
		"scope Failed moves back the Packages of the partition whose check failed")
	g.Expect(onRevision(s, "rev2")).To(ConsistOf("early-1", "early-2"))
	g.Expect(s.current.Name).To(Equal("rev1"))

	s.on("push rev3 (fix)", atStep(s.step), func(s *sim) { s.push(revision(3), false) })
	s.run(200)
	g.Expect(s.current.Name).To(Equal("rev3"))
	g.Expect(onRevision(s, "rev3")).To(HaveLen(6))
	last := s.plans[len(s.plans)-1]
	g.Expect(checkOf(last, "normal", "error-rate").Revision).To(Equal("rev3"), "rev2's results are dropped")
	expectGolden(t, s, "check-rollback")
}

func TestGoldenInconclusiveCheckHolds(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(1)
	check := errorRateCheck()
	check.DurationSeconds, check.InconclusiveLimit = 0, 2
	w.hcpkg.Spec.Checks = []convoyv1alpha1.RolloutCheck{check}
	e := &errorRates{down: true}
	s := checkedSim(t, w, e)
	s.run(40)

	last := s.plans[len(s.plans)-1]
	g.Expect(states(last)).To(Equal([]string{"early=Checking", "normal=Pending", "late=Pending"}))
	r := checkOf(last, "early", "error-rate")
	g.Expect(r.State).To(Equal(convoyv1alpha1.CheckInconclusive))
	g.Expect(r.Passes).To(BeZero())
	g.Expect(last.Gate.Type).To(Equal(convoyv1alpha1.GateCheck))
	g.Expect(last.Gate.Message).To(ContainSubstring("inconclusive"))
	g.Expect(last.Gate.Message).To(ContainSubstring("connection refused"))
	g.Expect(last.Failed).To(BeEmpty(), "inconclusive is no failure")
	g.Expect(onRevision(s, "rev2")).To(ConsistOf("early-1", "early-2"), "inconclusive never passes")
	g.Expect(last.RequeueAfter).To(Equal(time.Minute - s.tick))

	s.on("Prometheus is back", atStep(s.step), func(*sim) { e.down = false })
	s.run(200)
	g.Expect(s.current.Name).To(Equal("rev2"))
	expectGolden(t, s, "check-inconclusive")
}

func TestGoldenPartitionSkipsChecks(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(1)
	w.hcpkg.Spec.Checks = []convoyv1alpha1.RolloutCheck{errorRateCheck()}
	own := errorRateCheck()
	own.Name, own.DurationSeconds = "error-rate-once", 0
	policies(w, convoyv1alpha1.PartitionPolicy{Name: "early", SkipChecks: true},
		convoyv1alpha1.PartitionPolicy{Name: "normal", Checks: []convoyv1alpha1.RolloutCheck{own}})
	e := &errorRates{}
	s := checkedSim(t, w, e)
	s.run(200)

	g.Expect(s.current.Name).To(Equal("rev2"))
	g.Expect(e.evaluations).NotTo(ContainElement("early@rev2"))
	last := s.plans[len(s.plans)-1]
	g.Expect(last.Partitions[0].Checks).To(BeEmpty())
	g.Expect(checkOf(last, "normal", "error-rate-once")).NotTo(BeNil())
	g.Expect(checkOf(last, "normal", "error-rate")).To(BeNil(), "the policy's checks replace the rollout's")
	g.Expect(checkOf(last, "late", "error-rate").State).To(Equal(convoyv1alpha1.CheckPassed))
	g.Expect(firstPlan(s, func(plan *Plan) bool {
		return plan.Gate != nil && plan.Gate.Type == convoyv1alpha1.GateCheck && plan.Gate.Partition == "normal"
	})).To(Equal(-1), "nothing of early's holds normal")
	expectGolden(t, s, "check-skipped")
}

func TestGoldenLastPartitionChecksHoldCompletion(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(2)
	w.hcpkg.Spec.Checks = []convoyv1alpha1.RolloutCheck{errorRateCheck()}
	policies(w, convoyv1alpha1.PartitionPolicy{Name: "early", SkipChecks: true},
		convoyv1alpha1.PartitionPolicy{Name: "normal", SkipChecks: true})
	e := &errorRates{}
	s := checkedSim(t, w, e)
	s.run(200)

	holding := firstPlan(s, gateIs(convoyv1alpha1.GateCheck))
	g.Expect(holding).To(BeNumerically(">=", 0))
	plan := s.plans[holding]
	g.Expect(states(plan)).To(Equal([]string{"early=Done", "normal=Done", "late=Checking"}))
	g.Expect(plan.Gate.Partition).To(Equal("late"))
	g.Expect(plan.Gate.Message).To(ContainSubstring("Revision rev2 completes when partition late has passed its checks"))
	g.Expect(plan.Counts.Progressed).To(BeEquivalentTo(6))
	g.Expect(plan.Completed).To(BeFalse())
	started := checkOf(plan, "late", "error-rate").StartedAt.Time
	completed := firstPlan(s, func(plan *Plan) bool { return plan.Completed })
	g.Expect(s.start.Add(time.Duration(completed) * s.tick)).To(Equal(started.Add(5 * time.Minute)))
	expectGolden(t, s, "check-holds-completion")
}
