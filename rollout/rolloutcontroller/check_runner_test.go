package rolloutcontroller

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/checks"
)

// promCheck is a Prometheus check named name with condition cond.
func promCheck(name, cond string) convoyv1alpha1.RolloutCheck {
	return convoyv1alpha1.RolloutCheck{Name: name, Prometheus: &convoyv1alpha1.PrometheusCheck{
		Address: "http://prometheus.monitoring:9090", Query: "up", SuccessCondition: cond}}
}

// TestCompiledChecksOfCompilesOncePerGeneration: the checks of a generation are compiled once,
// those of spec.checks and of the policies alike; a new generation compiles again; a check that
// does not compile stalls with InvalidSpec naming where it is, the check, its field and the
// rule.
func TestCompiledChecksOfCompilesOncePerGeneration(t *testing.T) {
	g := NewWithT(t)
	r := &HostedClusterPackageReconciler{}
	obj := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon", UID: "u1", Generation: 1}}
	obj.Spec.Checks = []convoyv1alpha1.RolloutCheck{promCheck("ok", "values.all(v, v < 1.0)")}
	obj.Spec.Partition = &convoyv1alpha1.PartitionSpec{Policies: []convoyv1alpha1.PartitionPolicy{{Name: "late",
		Checks: []convoyv1alpha1.RolloutCheck{promCheck("same", "values.all(v, v < 1.0)"), promCheck("other", "size(values) == 0")}}}}
	first, err := r.compiledChecksOf(obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.byKey).To(HaveLen(2), "the same check in two lists is compiled once")
	again, err := r.compiledChecksOf(obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(first), "the same generation")

	obj.Generation = 2
	obj.Spec.Partition.Policies[0].Checks[1] = promCheck("bad", "values.all(v, v >")
	_, err = r.compiledChecksOf(obj)
	out := pass.Classify(err, 0)
	g.Expect(out.Class).To(Equal(pass.ClassStalled))
	g.Expect(out.Reason).To(Equal(convoyv1alpha1.InvalidSpecReason))
	g.Expect(out.Message).To(HavePrefix("spec.partition.policies[0].checks[1] (check bad): prometheus.successCondition "))
	g.Expect(errors.As(err, new(*checks.SpecError))).To(BeTrue())
}

// TestEvaluateCheckWithoutCredentialsIsInconclusive: a check whose Secret gave no credentials
// is inconclusive with the problem as its message, without evaluating it.
func TestEvaluateCheckWithoutCredentialsIsInconclusive(t *testing.T) {
	g := NewWithT(t)
	check := promCheck("errors", "size(values) == 0")
	check.Prometheus.Address = "https://127.0.0.1:1" // never asked
	check.Prometheus.SecretRef = &convoyv1alpha1.SecretReference{Namespace: "mon", Name: "gone"}
	r := &HostedClusterPackageReconciler{}
	obj := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon"}}
	obj.Spec.Checks = []convoyv1alpha1.RolloutCheck{check}
	compiled, err := r.compiledChecksOf(obj)
	g.Expect(err).NotTo(HaveOccurred())
	creds := map[types.NamespacedName]checkCredentials{{Namespace: "mon", Name: "gone"}: {problem: "Secret mon/gone is not found"}}
	ev, err := r.evaluateCheck(context.Background(), compiled, &rollout.DueCheck{Check: check}, creds)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ev).To(Equal(rollout.Evaluation{Outcome: rollout.CheckError, Message: "Secret mon/gone is not found"}))
}

// TestOutcomesMapToThePlanners: a success passes, a failure fails, anything else is
// inconclusive, and each has its metric label.
func TestOutcomesMapToThePlanners(t *testing.T) {
	g := NewWithT(t)
	g.Expect(plannerOutcome(checks.Success)).To(Equal(rollout.CheckPass))
	g.Expect(plannerOutcome(checks.Failure)).To(Equal(rollout.CheckFail))
	g.Expect(plannerOutcome(checks.Inconclusive)).To(Equal(rollout.CheckError))
	g.Expect(plannerOutcome("")).To(Equal(rollout.CheckError))
	g.Expect([]string{outcomeValue(rollout.CheckPass), outcomeValue(rollout.CheckFail), outcomeValue(rollout.CheckError),
		outcomeValue("")}).To(Equal([]string{"pass", "fail", "inconclusive", "inconclusive"}))
}

// checkFailure is the planner's failure of check error-ratio in early.
var checkFailure = convoyv1alpha1.PackageFailure{Partition: "early", Check: "error-ratio", Reason: convoyv1alpha1.CheckFailedReason,
	Message: `Check error-ratio of partition early failed (1 failed evaluations, failureLimit 0): query ` + "`up` with condition `size(values) == 0`" + ` saw "0.5"`}

// TestRolloutProgressNamesAFailedCheck: a failed check stalls the rollout with the planner's
// message, which names the check, what it asks and the value, not a HostedCluster.
func TestRolloutProgressNamesAFailedCheck(t *testing.T) {
	g := NewWithT(t)
	plan := &rollout.Plan{UpdateRevision: "addon-b", Gate: gateAt(convoyv1alpha1.GateFailures, "early", time.Time{}),
		Failed:         []convoyv1alpha1.PackageFailure{checkFailure, {HostedCluster: "clusters/e1", Message: "not available"}},
		FailedPackages: []rollout.FailedPackage{{}, {}}, Counts: rollout.Counts{Total: 6, Updated: 2, Progressed: 2, Failed: 1}}
	out := pass.Classify(rolloutProgress(&convoyv1alpha1.HostedClusterPackage{}, plan, time.Minute), time.Minute)
	g.Expect([]any{out.Class, out.Reason, out.Message}).To(Equal([]any{pass.ClassStalled, convoyv1alpha1.RolloutBlockedReason,
		"Rollout of revision addon-b is blocked: " + checkFailure.Message}))
}

// TestReportChecksAnnouncesEachStateOnce: a check newly Passed, Failed or Inconclusive at the
// update revision has one event; Running, another revision's and an unchanged state have none;
// a failed check has no PackageFailed event.
func TestReportChecksAnnouncesEachStateOnce(t *testing.T) {
	g := NewWithT(t)
	rec := events.NewFakeRecorder(10)
	r := &HostedClusterPackageReconciler{Recorder: rec}
	at := func(state string) convoyv1alpha1.CheckStatus {
		return convoyv1alpha1.CheckStatus{Name: "error-ratio", Revision: "addon-b", State: state, Passes: 3, Failures: 1,
			Inconclusive: 2, LastValue: "0.5", Message: "connection refused"}
	}
	after := convoyv1alpha1.HostedClusterPackageStatus{UpdateRevision: "addon-b", Failures: []convoyv1alpha1.PackageFailure{checkFailure},
		Partitions: []convoyv1alpha1.PartitionStatus{
			{Name: "early", Checks: []convoyv1alpha1.CheckStatus{at(convoyv1alpha1.CheckFailed)}},
			{Name: "normal", Checks: []convoyv1alpha1.CheckStatus{at(convoyv1alpha1.CheckPassed)}},
			{Name: "late", Checks: []convoyv1alpha1.CheckStatus{at(convoyv1alpha1.CheckInconclusive)}},
			{Name: "last", Checks: []convoyv1alpha1.CheckStatus{at(convoyv1alpha1.CheckRunning)}}}}
	report := func(before convoyv1alpha1.HostedClusterPackageStatus) []string {
		s := &scope{obj: &convoyv1alpha1.HostedClusterPackage{Status: after}, before: &before,
			plan: &rollout.Plan{Failed: []convoyv1alpha1.PackageFailure{checkFailure}, FailedPackages: []rollout.FailedPackage{{}}}}
		r.reportChecks(context.Background(), s)
		r.reportFailures(context.Background(), s)
		var out []string
		for len(rec.Events) > 0 {
			out = append(out, <-rec.Events)
		}
		return out
	}
	g.Expect(report(convoyv1alpha1.HostedClusterPackageStatus{})).To(Equal([]string{
		"Warning CheckFailed " + checkFailure.Message,
		`Normal CheckPassed Check error-ratio of partition normal passed at revision addon-b (3 passed, 1 failed): saw "0.5"`,
		"Warning CheckInconclusive Check error-ratio of partition late is inconclusive at revision addon-b (2 evaluations in a row), " +
			"which holds the rollout: connection refused"}))
	g.Expect(report(after)).To(BeEmpty(), "said once")

	other := *after.DeepCopy()
	for i := range other.Partitions {
		other.Partitions[i].Checks[0].Revision = "addon-a"
	}
	after.UpdateRevision, after.Partitions = "addon-a", other.Partitions
	g.Expect(report(convoyv1alpha1.HostedClusterPackageStatus{UpdateRevision: "addon-a", Partitions: other.Partitions})).To(BeEmpty())
}

// TestRecordChecksCountsTheUpdateRevisionsChecks: the checks gauge counts the checks of the
// update revision by state, every state present, and forget drops it.
func TestRecordChecksCountsTheUpdateRevisionsChecks(t *testing.T) {
	g := NewWithT(t)
	name := "metrics-checks"
	st := &convoyv1alpha1.HostedClusterPackageStatus{UpdateRevision: "addon-b", Partitions: []convoyv1alpha1.PartitionStatus{
		{Name: "early", Checks: []convoyv1alpha1.CheckStatus{{Name: "a", Revision: "addon-b", State: convoyv1alpha1.CheckPassed},
			{Name: "b", Revision: "addon-b", State: convoyv1alpha1.CheckPassed}}},
		{Name: "normal", Checks: []convoyv1alpha1.CheckStatus{{Name: "a", Revision: "addon-b", State: convoyv1alpha1.CheckInconclusive},
			{Name: "b", Revision: "addon-a", State: convoyv1alpha1.CheckFailed}}}}}
	recordChecks(name, st)
	got := map[string]float64{}
	for _, state := range []string{"running", "passed", "failed", "inconclusive"} {
		got[state] = testutil.ToFloat64(checksGauge.WithLabelValues(name, state))
	}
	g.Expect(got).To(Equal(map[string]float64{"running": 0, "passed": 2, "failed": 0, "inconclusive": 1}))
	checkEvaluations.WithLabelValues(name, "a", "pass").Inc()
	newRolloutMetrics().forget(name)
	g.Expect(checksGauge.DeletePartialMatch(prometheus.Labels{hcpkgLabel: name})).To(BeZero(), "forgotten")
	g.Expect(checkEvaluations.DeletePartialMatch(prometheus.Labels{hcpkgLabel: name})).To(BeZero(), "forgotten")
}

// TestAHostedClusterPackageWithoutChecksAsksForNone: checks come from spec.checks or a
// partition policy's own; without any, the checks step plans nothing (rollout.DueChecks plans
// the whole fleet) and drops the finished runs of checks since removed from the spec.
func TestAHostedClusterPackageWithoutChecksAsksForNone(t *testing.T) {
	g := NewWithT(t)
	obj := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon", UID: "u1", Generation: 1}}
	g.Expect(hasChecks(obj)).To(BeFalse())
	obj.Spec.Partition = &convoyv1alpha1.PartitionSpec{Policies: []convoyv1alpha1.PartitionPolicy{{Name: "early", SkipChecks: true}}}
	g.Expect(hasChecks(obj)).To(BeFalse(), "a policy that skips checks adds none")
	obj.Spec.Partition.Policies = append(obj.Spec.Partition.Policies, convoyv1alpha1.PartitionPolicy{Name: "late",
		Checks: []convoyv1alpha1.RolloutCheck{promCheck("ok", "values.all(v, v < 1.0)")}})
	g.Expect(hasChecks(obj)).To(BeTrue(), "a policy's own checks")
	obj.Spec.Partition = nil
	obj.Spec.Checks = []convoyv1alpha1.RolloutCheck{promCheck("ok", "values.all(v, v < 1.0)")}
	g.Expect(hasChecks(obj)).To(BeTrue(), "spec.checks")

	obj.Spec.Checks, obj.Generation = nil, 2
	r := &HostedClusterPackageReconciler{}
	done := checkRunKey{name: "addon", uid: "u1", partition: "late", revision: "addon-1", check: "ok"}
	r.runs.runs = map[checkRunKey]*checkRun{done: {done: true}}
	s := &scope{obj: obj} // no planner input: the step must not plan
	g.Expect(r.reconcileChecks(context.Background(), s)).To(Succeed())
	g.Expect(r.runs.runs).To(BeEmpty(), "the finished run of a removed check is dropped")
}
