package fleetview

import (
	"bytes"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// errorRateCheck is a Prometheus check that lasts duration.
func errorRateCheck(duration time.Duration) convoyv1alpha1.RolloutCheck {
	return convoyv1alpha1.RolloutCheck{Name: "error-rate", IntervalSeconds: 60, DurationSeconds: int32(duration / time.Second),
		Prometheus: &convoyv1alpha1.PrometheusCheck{Address: "http://prometheus:9090",
			Query: `max(addon_error_ratio{hosted_cluster=~"{{ regex (names .HostedClusters) }}"})`, SuccessCondition: "values.all(v, v < 0.05)"}}
}

// noAlertsCheck is an Alertmanager check that lasts duration.
func noAlertsCheck(duration time.Duration) convoyv1alpha1.RolloutCheck {
	return convoyv1alpha1.RolloutCheck{Name: "no-alerts", DurationSeconds: int32(duration / time.Second),
		Alerts: &convoyv1alpha1.AlertsCheck{Address: "http://alertmanager:9093", Matchers: []string{`severity="critical"`}}}
}

func TestForecastStartsAPartitionAfterThePreviousChecks(t *testing.T) {
	g := NewWithT(t)
	f := forecastOf(t, gatedSnapshot(func(s *convoyv1alpha1.HostedClusterPackageSpec) {
		s.Checks = []convoyv1alpha1.RolloutCheck{errorRateCheck(20 * time.Minute), noAlertsCheck(10 * time.Minute)}
	}))
	g.Expect(f.Blocked).To(BeEmpty())
	early, normal, late := partitionOf(g, f, "early"), partitionOf(g, f, "normal"), partitionOf(g, f, "late")
	g.Expect(early.Start.Time).To(Equal(gatedNow))
	g.Expect(early.Checks).To(HaveLen(2))
	g.Expect(early.Checks[0]).To(HaveField("Kind", "prometheus"))
	g.Expect(early.Checks[1]).To(HaveField("Kind", "alerts"))
	g.Expect(normal.Waits).To(ConsistOf(HaveField("Type", convoyv1alpha1.GateCheck)))
	g.Expect(normal.Start.Time).To(BeTemporally(">=", gatedNow.Add(20*time.Minute)), "the longest check of early lasts 20m")
	g.Expect(normal.Start.Time).To(BeTemporally("<", gatedNow.Add(25*time.Minute)))
	g.Expect(early.Checks[0].Passes.Time).To(Equal(normal.Start.Time))
	g.Expect(late.Start.Time).To(BeTemporally(">=", normal.Start.Add(20*time.Minute)))
	g.Expect(late.Checks[0].Passes.Time).To(BeTemporally(">=", late.Start.Add(20*time.Minute)),
		"the last partition's checks hold the completion")
	g.Expect(late.Waits).To(ConsistOf(HaveField("Type", convoyv1alpha1.GateCheck)), "its own checks are not a wait to start")
}

func TestForecastWaitsForTheLongerOfSoakAndChecks(t *testing.T) {
	cases := map[string]struct {
		soak, check time.Duration
		waits       []string
	}{
		"a soak longer than the checks": {soak: 30 * time.Minute, check: 10 * time.Minute, waits: []string{convoyv1alpha1.GateSoak}},
		"checks longer than the soak": {soak: 10 * time.Minute, check: 30 * time.Minute,
			waits: []string{convoyv1alpha1.GateSoak, convoyv1alpha1.GateCheck}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := forecastOf(t, gatedSnapshot(func(s *convoyv1alpha1.HostedClusterPackageSpec) {
				s.Strategy.RollingUpgrade.SoakSeconds = int32(tc.soak / time.Second)
				s.Checks = []convoyv1alpha1.RolloutCheck{errorRateCheck(tc.check)}
			}))
			g.Expect(f.Blocked).To(BeEmpty())
			normal := partitionOf(g, f, "normal")
			var types []string
			for _, w := range normal.Waits {
				types = append(types, w.Type)
			}
			g.Expect(types).To(Equal(tc.waits))
			longer := max(tc.soak, tc.check)
			g.Expect(normal.Start.Time).To(BeTemporally(">=", gatedNow.Add(longer)))
			g.Expect(normal.Start.Time).To(BeTemporally("<", gatedNow.Add(longer+2*time.Minute)))
		})
	}
}

func TestForecastRunsThePoliciesChecks(t *testing.T) {
	g := NewWithT(t)
	f := forecastOf(t, gatedSnapshot(func(s *convoyv1alpha1.HostedClusterPackageSpec) {
		s.Checks = []convoyv1alpha1.RolloutCheck{errorRateCheck(20 * time.Minute)}
		s.Partition.Policies = []convoyv1alpha1.PartitionPolicy{{Name: "early", SkipChecks: true},
			{Name: "normal", Checks: []convoyv1alpha1.RolloutCheck{noAlertsCheck(time.Hour)}}}
	}))
	g.Expect(f.Blocked).To(BeEmpty())
	early, normal, late := partitionOf(g, f, "early"), partitionOf(g, f, "normal"), partitionOf(g, f, "late")
	g.Expect(early.Checks).To(BeEmpty())
	g.Expect(normal.Waits).To(BeEmpty(), "early skips its checks")
	g.Expect(normal.Checks).To(ConsistOf(HaveField("Name", "no-alerts")))
	g.Expect(late.Start.Time).To(BeTemporally(">=", normal.Start.Add(time.Hour)))
	g.Expect(late.Checks).To(ConsistOf(HaveField("Name", "error-rate")))
}

func TestForecastStopsAtAFailedCheck(t *testing.T) {
	g := NewWithT(t)
	snap := gatedSnapshot(func(s *convoyv1alpha1.HostedClusterPackageSpec) {
		s.Checks = []convoyv1alpha1.RolloutCheck{errorRateCheck(0)}
	})
	for i := range 2 {
		snap.Packages[i] = progressedPackage("addon", snap.HostedClusters[i].Name, snap.Revisions["addon-2"], gatedNow.Add(-10*time.Minute))
	}
	evaluated := metav1.NewTime(gatedNow.Add(-5 * time.Minute))
	snap.HostedClusterPackage.Status.Partitions = []convoyv1alpha1.PartitionStatus{{Name: "early", State: convoyv1alpha1.PartitionDone,
		Checks: []convoyv1alpha1.CheckStatus{{Name: "error-rate", Revision: "addon-2", State: convoyv1alpha1.CheckFailed,
			Failures: 1, LastValue: "[0.2]", LastEvaluated: &evaluated}}}}
	f := forecastOf(t, snap)
	g.Expect(f.Batches).To(BeEmpty())
	g.Expect(f.Blocked).To(ContainSubstring("Check error-rate of partition early failed"))
	g.Expect(f.Blocked).To(ContainSubstring(`"[0.2]"`))
}

func TestForecastTextSaysWhenChecksPass(t *testing.T) {
	g := NewWithT(t)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: gatedNow.Add(d)} }
	f := &Forecast{Name: "addon", Strategy: "rollingUpgrade maxUnavailable=1", Revision: RevisionRef{Name: "addon-2"}, now: gatedNow,
		Partitions: []PartitionForecast{
			{Name: "early", Start: at(0), Checks: []CheckForecast{
				{Name: "error-rate", Kind: "prometheus", Passes: at(20 * time.Minute)},
				{Name: "no-alerts", Kind: "alerts", Passes: at(10 * time.Minute)}}},
			{Name: "normal", Start: at(20 * time.Minute), Waits: []Wait{{Type: convoyv1alpha1.GateCheck, Until: at(20 * time.Minute)}},
				Checks: []CheckForecast{{Name: "error-rate", Kind: "prometheus"}}},
			{Name: "late"},
		}}
	var out bytes.Buffer
	g.Expect(f.WriteText(&out)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring(`
Partitions, at the earliest (every Package progresses at once, every approval is given when asked for, every check passes once its duration is over):
  PARTITION  CAN START                         WAITS FOR                                                       CHECKS
  early      now                                                                                               error-rate, no-alerts pass by 2026-01-02 12:20:00 UTC
  normal     2026-01-02 12:20:00 UTC (in 20m)  checks of the previous partition until 2026-01-02 12:20:00 UTC  error-rate
  late       not in this forecast                                                                              
`))
	out.Reset()
	g.Expect(f.WriteMarkdown(&out)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("- **early**: now; checks error-rate, no-alerts pass by 2026-01-02 12:20:00 UTC\n"))
}
