package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

// checkedStatus gives log-collector's partitions the results of their checks: early's passed,
// normal's run, one of them inconclusive, while normal's checks hold late.
func checkedStatus(st *convoyv1alpha1.HostedClusterPackageStatus) {
	rev := st.UpdateRevision
	st.Partitions[0].Checks = []convoyv1alpha1.CheckStatus{
		{Name: "error-rate", Revision: rev, State: convoyv1alpha1.CheckPassed, Passes: 11, LastValue: "[0.003, 0.001]",
			Message: "values.all(v, v < 0.05) held", LastEvaluated: at(-2 * time.Minute), StartedAt: at(-12 * time.Minute)},
		{Name: "no-alerts", Revision: rev, State: convoyv1alpha1.CheckPassed, Passes: 6, LastValue: "0 alerts",
			Message: "no active alert matches", LastEvaluated: at(-2 * time.Minute), StartedAt: at(-12 * time.Minute)},
	}
	st.Partitions[1].State, st.Partitions[1].Until = convoyv1alpha1.PartitionChecking, at(8*time.Minute)
	st.Partitions[1].Updated, st.Partitions[1].Available, st.Partitions[1].Progressed = 2, 2, 2
	st.Partitions[1].Checks = []convoyv1alpha1.CheckStatus{
		{Name: "error-rate", Revision: rev, State: convoyv1alpha1.CheckRunning, Passes: 2, Failures: 1, LastValue: "[0.07, 0.002]",
			Message: "values.all(v, v < 0.05) did not hold", LastEvaluated: at(-30 * time.Second), StartedAt: at(-2 * time.Minute)},
		{Name: "no-alerts", Revision: rev, State: convoyv1alpha1.CheckInconclusive, Inconclusive: 3,
			Message:       "Alertmanager at http://alertmanager.monitoring:9093 did not answer: connection refused",
			LastEvaluated: at(-30 * time.Second), StartedAt: at(-2 * time.Minute)},
	}
	st.Gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateCheck, Partition: "late", Until: at(8 * time.Minute),
		Message: "Partition late starts when partition normal has passed its checks: check error-rate is Running (2 passed, 1 failed, failureLimit 2)."}
}

func TestStatusShowsTheChecksOfEachPartition(t *testing.T) {
	g := NewWithT(t)
	c := fixtureFleet()
	setGatedStatus(t, c, checkedStatus)
	var out bytes.Buffer
	opts := statusOptions{output: "text", now: func() time.Time { return fixtureNow }}
	g.Expect(runStatus(context.Background(), c, &out, "log-collector", opts)).To(Succeed())
	text := out.String()
	g.Expect(text).To(ContainSubstring("Gate      Check on partition late until 2026-01-02 12:08:00 UTC (in 8m): Partition late starts"))
	g.Expect(text).To(MatchRegexp(`normal .* Checking until 2026-01-02 12:08:00 UTC \(in 8m\)\n`))
	g.Expect(text).To(MatchRegexp(`normal +error-rate +Running +2 passed, 1 failed +saw "\[0.07, 0.002\]": values.all\(v, v < 0.05\) did not hold \(30s ago\)\n`))
	g.Expect(text).To(MatchRegexp(`normal +no-alerts +Inconclusive +0 passed, 0 failed, 3 inconclusive in a row +Alertmanager .* connection refused`))
	expectGolden(t, "status-checks.txt", out.Bytes())

	out.Reset()
	opts.output = "json"
	g.Expect(runStatus(context.Background(), c, &out, "log-collector", opts)).To(Succeed())
	var r fleetview.Report
	g.Expect(json.Unmarshal(out.Bytes(), &r)).To(Succeed())
	g.Expect(r.Gate).To(HaveField("Type", convoyv1alpha1.GateCheck))
	g.Expect(r.Partitions[1].Checks).To(HaveLen(2))
	g.Expect(r.Partitions[1].Checks[1]).To(HaveField("State", convoyv1alpha1.CheckInconclusive))

	snaps, err := fleetview.ReadStatus(context.Background(), c, "log-collector")
	g.Expect(err).NotTo(HaveOccurred())
	report := fleetview.NewReport(snaps[0])
	g.Expect(report.Line()).To(ContainSubstring("normal=Checking 2/2"))
	g.Expect(report.Line()).To(HaveSuffix("; gate Check on late until 2026-01-02 12:08:00 UTC"))
}

// setChecks gives log-collector in c a query check of 30 minutes and an alerts check of 10.
func setChecks(t *testing.T, c client.Client) {
	t.Helper()
	g := NewWithT(t)
	hcpkg := &convoyv1alpha1.HostedClusterPackage{}
	g.Expect(c.Get(context.Background(), keyOf("log-collector"), hcpkg)).To(Succeed())
	hcpkg.Spec.Checks = []convoyv1alpha1.RolloutCheck{
		{Name: "error-rate", IntervalSeconds: 60, DurationSeconds: 1800, Prometheus: &convoyv1alpha1.PrometheusCheck{
			Address: "http://prometheus.monitoring:9090", SuccessCondition: "values.all(v, v < 0.05)",
			Query: `max(convoy_test_addon_error_ratio{hosted_cluster=~"{{ regex (names .HostedClusters) }}"})`}},
		{Name: "no-alerts", DurationSeconds: 600, Alerts: &convoyv1alpha1.AlertsCheck{
			Address: "http://alertmanager.monitoring:9093", Matchers: []string{`severity="critical"`}}},
	}
	g.Expect(c.Update(context.Background(), hcpkg)).To(Succeed())
}

func TestPlanForecastsTheChecksOfEachPartition(t *testing.T) {
	for _, tc := range []struct{ golden, output string }{
		{golden: "plan-checks.txt", output: "text"},
		{golden: "plan-checks.md", output: "markdown"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			g := NewWithT(t)
			c := fixtureFleet()
			setChecks(t, c)
			var out bytes.Buffer
			opts := planOptions{output: tc.output, now: func() time.Time { return fixtureNow }}
			g.Expect(runPlan(context.Background(), c, &out, "log-collector", opts)).To(Succeed())
			g.Expect(out.String()).To(ContainSubstring("every check passes once its duration is over"))
			expectGolden(t, tc.golden, out.Bytes())
		})
	}
}

func TestPlanStartsNoPartitionBeforeThePreviousChecksPass(t *testing.T) {
	g := NewWithT(t)
	c := fixtureFleet()
	setChecks(t, c)
	var out bytes.Buffer
	opts := planOptions{output: "json", now: func() time.Time { return fixtureNow }}
	g.Expect(runPlan(context.Background(), c, &out, "log-collector", opts)).To(Succeed())
	var f fleetview.Forecast
	g.Expect(json.Unmarshal(out.Bytes(), &f)).To(Succeed())
	g.Expect(f.Partitions).To(HaveLen(3))
	normal, late := f.Partitions[1], f.Partitions[2]
	g.Expect(normal.Checks).To(HaveLen(2))
	g.Expect(normal.Checks[0].Passes).NotTo(BeNil())
	g.Expect(late.Start.Time).To(BeTemporally(">=", normal.Checks[0].Passes.Time), "late starts once normal's checks passed")
	g.Expect(late.Waits).To(ContainElement(HaveField("Type", convoyv1alpha1.GateCheck)))
	g.Expect(f.Blocked).To(BeEmpty())
}
