package rollout

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// earlyDone returns the gated world with the error-rate check whose early partition moved to
// rev2 at t0-10m (early-1) and t0-8m (early-2) and progressed at t0-6m and t0-4m.
func earlyDone() *world {
	w := gatedWorld(1)
	w.hcpkg.Spec.Checks = []convoyv1alpha1.RolloutCheck{errorRateCheck()}
	for i, name := range []string{"early-1", "early-2"} {
		p := w.packages[namespaceOf(name)]
		setSpec(p, revision(2), t0.Add(-time.Duration(10-2*i)*time.Minute))
		progress(p, t0.Add(-time.Duration(6-2*i)*time.Minute))
	}
	return w
}

// dueChecks returns the checks of w due now.
func dueChecks(g Gomega, w *world) []DueCheck {
	due, err := DueChecks(w.input())
	g.Expect(err).NotTo(HaveOccurred())
	return due
}

// evaluated returns a result of the error-rate check of early at rev, last evaluated at.
func evaluated(rev string, state string, at time.Time) map[string][]convoyv1alpha1.CheckStatus {
	return map[string][]convoyv1alpha1.CheckStatus{"early": {{
		Name: "error-rate", Revision: rev, State: state, Passes: 1, LastEvaluated: &metav1.Time{Time: at},
	}}}
}

func TestDueChecksOfAPartitionThatPassed(t *testing.T) {
	g := NewWithT(t)
	w := earlyDone()
	due := dueChecks(g, w)

	g.Expect(due).To(HaveLen(1))
	d := due[0]
	g.Expect(d.HostedClusterPackage).To(Equal(hcpkgName))
	g.Expect(d.Partition).To(Equal("early"))
	g.Expect(d.Revision).To(Equal("rev2"))
	g.Expect(d.Commit).To(Equal(revision(2).Commit))
	g.Expect(d.Check.Name).To(Equal("error-rate"))
	g.Expect(d.Since).To(Equal(t0.Add(-10*time.Minute)), "the earliest spec update on rev2")
	g.Expect(d.StartedAt).To(Equal(t0.Add(-4*time.Minute)), "the last progress")
	g.Expect(d.Until).To(Equal(t0.Add(time.Minute)))
	g.Expect(d.Result).To(BeNil())
	g.Expect(d.HostedClusters).To(Equal([]CheckTarget{
		{Name: "early-1", Namespace: clusterNS, HCPNamespace: namespaceOf("early-1"), Labels: map[string]string{riskKey: "early", "tier": "prod"}},
		{Name: "early-2", Namespace: clusterNS, HCPNamespace: namespaceOf("early-2"), Labels: map[string]string{riskKey: "early", "tier": "prod"}},
	}))

	plan := compute(g, w)
	g.Expect(plan.Gate.Type).To(Equal(convoyv1alpha1.GateCheck))
	g.Expect(plan.Gate.Partition).To(Equal("normal"))
	g.Expect(plan.Gate.Message).To(ContainSubstring("check error-rate has not been evaluated yet"))
	g.Expect(states(plan)).To(Equal([]string{"early=Checking", "normal=Pending", "late=Pending"}))
	g.Expect(plan.Partitions[0].Until.Time).To(Equal(t0.Add(time.Minute)))
	g.Expect(plan.RequeueAfter).To(Equal(time.Second), "a due check the controller did not evaluate")
	g.Expect(describe(plan)).To(BeEmpty())
}

func TestDueChecksTiming(t *testing.T) {
	for _, tc := range []struct {
		name     string
		results  map[string][]convoyv1alpha1.CheckStatus
		duration int32
		due      bool
		requeue  time.Duration
	}{
		{name: "evaluated now", results: evaluated("rev2", convoyv1alpha1.CheckRunning, t0), requeue: time.Minute},
		{name: "an interval ago", results: evaluated("rev2", convoyv1alpha1.CheckRunning, t0.Add(-time.Minute)), due: true},
		{name: "the end of the duration comes before the interval", duration: 270,
			results: evaluated("rev2", convoyv1alpha1.CheckRunning, t0), requeue: 30 * time.Second},
		{name: "after the end of the duration", duration: 60,
			results: evaluated("rev2", convoyv1alpha1.CheckRunning, t0.Add(-30*time.Second)), requeue: 30 * time.Second},
		{name: "inconclusive", results: evaluated("rev2", convoyv1alpha1.CheckInconclusive, t0.Add(-time.Minute)), due: true},
		{name: "passed", results: evaluated("rev2", convoyv1alpha1.CheckPassed, t0.Add(-time.Hour))},
		{name: "failed", results: evaluated("rev2", convoyv1alpha1.CheckFailed, t0)},
		{name: "a result of another revision starts over", results: evaluated("rev1", convoyv1alpha1.CheckPassed, t0), due: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := earlyDone()
			w.checkResults = tc.results
			if tc.duration > 0 {
				w.hcpkg.Spec.Checks[0].DurationSeconds = tc.duration
			}
			due := dueChecks(g, w)
			g.Expect(due).To(HaveLen(int(one(tc.due))))
			if tc.requeue > 0 {
				g.Expect(compute(g, w).RequeueAfter).To(Equal(tc.requeue))
			}
		})
	}
}

func TestPassedChecksLetTheNextPartitionStart(t *testing.T) {
	g := NewWithT(t)
	w := earlyDone()
	w.checkResults = evaluated("rev2", convoyv1alpha1.CheckPassed, t0)
	plan := compute(g, w)
	g.Expect(plan.Gate).To(BeNil())
	g.Expect(describe(plan)).To(Equal([]string{"update normal-1 rev2 WithinBudget"}))
	g.Expect(plan.Partitions[0].Checks).To(HaveLen(1))
	g.Expect(plan.Partitions[0].State).To(Equal(convoyv1alpha1.PartitionDone))

	w.checkResults = evaluated("rev1", convoyv1alpha1.CheckPassed, t0)
	plan = compute(g, w)
	g.Expect(plan.Gate.Type).To(Equal(convoyv1alpha1.GateCheck), "rev1's result does not count for rev2")
	g.Expect(plan.Partitions[0].Checks).To(BeEmpty(), "and is dropped from status")
}

func TestChecksDoNotJudgeEverything(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(w *world)
		due  int
	}{
		{name: "paused", edit: func(w *world) { w.hcpkg.Spec.Paused = true }, due: 1},
		{name: "completed revision", edit: func(w *world) { w.current = &w.update }},
		{name: "rejected revision", edit: func(w *world) { w.update.Rejected = true }},
		{name: "skipChecks", edit: func(w *world) { policies(w, convoyv1alpha1.PartitionPolicy{Name: "early", SkipChecks: true}) }},
		{name: "no check", edit: func(w *world) { w.hcpkg.Spec.Checks = nil }},
		{name: "a partition still progressing", edit: func(w *world) {
			setSpec(w.packages[namespaceOf("early-2")], revision(2), t0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := earlyDone()
			tc.edit(w)
			g.Expect(dueChecks(g, w)).To(HaveLen(tc.due))
		})
	}
}

func TestInstantStrategyChecksHoldOnlyTheCompletion(t *testing.T) {
	g := NewWithT(t)
	w := earlyDone()
	w.hcpkg.Spec.Strategy = convoyv1alpha1.HostedClusterPackageStrategy{Instant: &convoyv1alpha1.InstantStrategy{}}
	plan := compute(g, w)
	g.Expect(describe(plan)).To(HaveLen(4), "normal and late start at once")
	g.Expect(plan.Gate.Type).To(Equal(convoyv1alpha1.GateCheck))
	g.Expect(plan.Gate.Partition).To(Equal("early"))
	g.Expect(plan.Gate.Message).To(ContainSubstring("Revision rev2 completes when partition early has passed its checks"))
}

func TestFailedCheckInStatus(t *testing.T) {
	g := NewWithT(t)
	w := earlyDone()
	w.hcpkg.Spec.FailurePolicy.MaxFailures = ptr(intstr.FromString("100%"))
	w.checkResults = map[string][]convoyv1alpha1.CheckStatus{"early": {{
		Name: "error-rate", Revision: "rev2", State: convoyv1alpha1.CheckFailed, Failures: 1,
		LastValue: "[0.3]", Message: "values.all(v, v < 0.05) is false",
	}}}
	plan := compute(g, w)
	g.Expect(plan.Failed).To(HaveLen(1))
	g.Expect(plan.FailedPackages).To(Equal([]FailedPackage{{}}))
	g.Expect(plan.Counts.Failed).To(BeZero(), "a check is no Package")
	g.Expect(plan.Completed).To(BeFalse())
	var status convoyv1alpha1.HostedClusterPackageStatus
	plan.WriteStatus(&status)
	g.Expect(status.Failures).To(Equal([]convoyv1alpha1.PackageFailure{{
		Partition: "early", Check: "error-rate", Reason: convoyv1alpha1.CheckFailedReason,
		Message: `Check error-rate of partition early failed (1 failed evaluations, failureLimit 0): query ` + "`" +
			errorRateQuery + "` with condition `values.all(v, v < 0.05)` saw " + `"[0.3]": ` +
			"values.all(v, v < 0.05) is false",
	}}))
	g.Expect(status.Partitions[0].Checks[0].State).To(Equal(convoyv1alpha1.CheckFailed))
	g.Expect(CheckResultsOf(status.Partitions)).To(Equal(w.checkResults))
}

func TestRecordEvaluation(t *testing.T) {
	check := convoyv1alpha1.RolloutCheck{Name: "c", FailureLimit: 1, InconclusiveLimit: 1, DurationSeconds: 60}
	due := func(r *convoyv1alpha1.CheckStatus) *DueCheck {
		return &DueCheck{Check: check, Revision: "rev2", StartedAt: t0, Until: t0.Add(time.Minute), Result: r}
	}
	record := func(outcomes ...CheckOutcome) convoyv1alpha1.CheckStatus {
		var r *convoyv1alpha1.CheckStatus
		for i, o := range outcomes {
			next := due(r).Record(Evaluation{Outcome: o, At: t0.Add(time.Duration(i) * 30 * time.Second)})
			r = &next
		}
		return *r
	}
	for _, tc := range []struct {
		outcomes []CheckOutcome
		state    string
	}{
		{outcomes: []CheckOutcome{CheckPass}, state: convoyv1alpha1.CheckRunning},
		{outcomes: []CheckOutcome{CheckPass, CheckPass, CheckPass}, state: convoyv1alpha1.CheckPassed},
		{outcomes: []CheckOutcome{CheckPass, CheckPass, CheckFail}, state: convoyv1alpha1.CheckRunning},
		{outcomes: []CheckOutcome{CheckFail, CheckPass, CheckFail}, state: convoyv1alpha1.CheckFailed},
		{outcomes: []CheckOutcome{CheckError, CheckError}, state: convoyv1alpha1.CheckInconclusive},
		{outcomes: []CheckOutcome{CheckError, CheckPass, CheckError}, state: convoyv1alpha1.CheckRunning},
		{outcomes: []CheckOutcome{CheckError, CheckError, CheckPass}, state: convoyv1alpha1.CheckPassed},
		{outcomes: []CheckOutcome{CheckError, CheckError, CheckError, CheckPass}, state: convoyv1alpha1.CheckPassed},
	} {
		g := NewWithT(t)
		g.Expect(record(tc.outcomes...).State).To(Equal(tc.state), "%v", tc.outcomes)
	}

	g := NewWithT(t)
	r := record(CheckError, CheckFail, CheckError)
	g.Expect([]int32{r.Passes, r.Failures, r.Inconclusive}).To(Equal([]int32{0, 1, 1}))
	g.Expect(r.StartedAt.Time).To(Equal(t0))
	g.Expect(r.LastEvaluated.Time).To(Equal(t0.Add(time.Minute)))

	old := convoyv1alpha1.CheckStatus{Name: "c", Revision: "rev1", State: convoyv1alpha1.CheckFailed, Failures: 5}
	r = due(&old).Record(Evaluation{Outcome: CheckPass, Value: strings.Repeat("é", 200), Message: strings.Repeat("x", 2000), At: t0})
	g.Expect(r.Revision).To(Equal("rev2"))
	g.Expect(r.Failures).To(BeZero(), "another revision's result starts over")
	g.Expect(len(r.LastValue)).To(BeNumerically("<=", convoyv1alpha1.MaxCheckValue))
	g.Expect(len(r.Message)).To(BeNumerically("<=", convoyv1alpha1.MaxCheckMessage))
	g.Expect(strings.ToValidUTF8(r.LastValue, "?")).To(Equal(r.LastValue))
}
