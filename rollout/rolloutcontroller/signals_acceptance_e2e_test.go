package rolloutcontroller

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/monitoring"
)

// addonErrorsRule fires AddonErrors, critical, for each hosted cluster whose add-on errs more
// than 10% of the time.
const addonErrorsRule = `groups:
- name: addon
  rules:
  - alert: AddonErrors
    expr: convoy_test_addon_error_ratio > 0.1
    labels:
      severity: critical
`

// Where the add-on's health lives in each hosted cluster: the package's ConfigMap, and the one
// an operator's test writes by hand, outside the package, to make a cluster unhealthy.
const (
	addonNamespace       = "default"
	manualHealthName     = "addon-health-manual"
	errorRatioCheck      = "error-ratio"
	addonAlertsCheck     = "addon-alerts"
	prometheusDownCheck  = "error-ratio-down"
	partitionQuery       = `convoy_test_addon_error_ratio{hosted_cluster=~"{{ regex (names .HostedClusters) }}"}`
	errorRatioBelowLimit = `size(values) > 0 && values.all(v, v <= 0.1)`
)

// signalsFleet is the state of the acceptance test of the signal gates: the fleet of the gates'
// test, with a real Prometheus and Alertmanager watching its add-on.
type signalsFleet struct {
	*gatesFleet
	mon *monitoring.Monitoring
	// manualTarget is the address of the exporter of the ConfigMaps written by hand: the
	// instance label of their series and alerts.
	manualTarget string
}

// TestSignalGatesEndToEnd is the acceptance test of the rollout checks (issue 43), through real
// Git, a real API server per hosted cluster, a real Prometheus scraping the add-on's health from
// each hosted cluster's ConfigMap and a real Alertmanager holding the alerts of its rule. Six
// HostedClusters in early, normal and late, maxUnavailable 2; each step starts where the one
// before ended: a query check stops a bad commit in early, a fixed commit goes through, an
// alerts check stops a bad commit in early, an alert already firing before a commit does not
// block it, a Prometheus that is down holds a commit as inconclusive, and under a Rollback
// policy a failed check rolls early back to the last completed commit.
func TestSignalGatesEndToEnd(t *testing.T) {
	env.Require(t)
	start := time.Now()
	g := NewWithT(t)
	f := &rolloutFleet{t: t, name: "signals-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	c1 := f.commitFiles(addonPackage(1, "0.01"))
	names := prefixed(f.name, []string{"e1", "e2", "n1", "n2", "l1", "l2"}, "")
	sf := &signalsFleet{gatesFleet: &gatesFleet{rolloutFleet: f, e1: names[0], e2: names[1], n1: names[2], n2: names[3],
		l1: names[4], l2: names[5]}}
	f.addClusters(sf.e1+":early", sf.e2+":early", sf.n1+":normal", sf.n2+":normal", sf.l1+":late", sf.l2+":late")
	sf.mon, sf.manualTarget = startSignals(t, f)
	two := intstr.FromInt32(2)
	newHostedClusterPackage(t, f.name, f.ns, func(o *convoyv1alpha1.HostedClusterPackage) {
		o.Spec.Strategy.RollingUpgrade.MaxUnavailable = &two
	})
	sf.complete(g, c1)
	sf.expectRatios(g, names, 0.01)

	steps := []struct {
		name string
		run  func(*testing.T)
	}{
		{"a query check stops a commit that raises the error ratio in early", sf.testQueryStops},
		{"a fixed commit goes through every partition", sf.testFixGoesThrough},
		{"an alerts check stops a commit whose alert fires in early", sf.testAlertStops},
		{"an alert firing before the commit does not block it", sf.testOldAlert},
		{"a Prometheus that is down holds the commit as inconclusive", sf.testPrometheusDown},
		{"a failed check under a Rollback policy rolls early back", sf.testRollback},
	}
	for _, step := range steps {
		if !t.Run(step.name, step.run) {
			t.Fatalf("step %q failed; the steps after it start from its end (Prometheus and Alertmanager logs in %s)",
				step.name, sf.mon.Dir())
		}
	}
	t.Logf("wall time: %s", time.Since(start).Round(time.Second))
}

// startSignals starts Prometheus and Alertmanager for the test, with the AddonErrors rule, and
// two add-on exporters over the fleet's hosted clusters that Prometheus scrapes: one reads the
// package's ConfigMap addon-health, the other the ConfigMap a test writes by hand (its address
// is returned).
func startSignals(t *testing.T, f *rolloutFleet) (*monitoring.Monitoring, string) {
	t.Helper()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mon, err := monitoring.Start(ctx, monitoring.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = mon.Stop() })
	var hcs []*fleet.HostedCluster
	for _, hc := range f.clusters {
		hcs = append(hcs, hc)
	}
	var targets []string
	for _, name := range []string{"", manualHealthName} {
		exp, err := monitoring.StartAddonExporter(monitoring.ExporterOptions{ConfigMapNamespace: addonNamespace,
			ConfigMapName: name}, monitoring.HostedClusters(hcs...)...)
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = exp.Stop() })
		targets = append(targets, exp.Address)
	}
	g.Expect(mon.SetTargets(ctx, targets...)).To(Succeed())
	g.Expect(mon.SetRules(ctx, map[string]string{"addon": addonErrorsRule})).To(Succeed())
	return mon, targets[1]
}

// addonPackage returns the files of package "pkg" for commit n: one hosted-cluster phase with
// the add-on's ConfigMap addon-health, whose errorRatio the exporter serves.
func addonPackage(n int, errorRatio string) map[string]string {
	manifest := `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: addon}
spec:
  phases:
  - {name: hosted, class: hosted-cluster}
  availabilityProbes:
  - selector: {kind: {kind: ConfigMap}, selector: {matchLabels: {test.convoy.dev/addon: "true"}}}
    probes:
    - cel:
        rule: "has(self.data.errorRatio)"
        message: the add-on reports no error ratio
`
	objects := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: addon-health
  namespace: %s
  labels: {test.convoy.dev/addon: "true"}
  annotations: {convoy.dev/phase: hosted}
data: {errorRatio: "%s", commit: "%d"}
`, addonNamespace, errorRatio, n)
	return map[string]string{"pkg/manifest.yaml": manifest, "pkg/objects.yaml": objects}
}

// commitFiles pushes files to main and returns the commit.
func (f *rolloutFleet) commitFiles(files map[string]string) string {
	f.t.Helper()
	c, err := f.repo.Commit("main", "commit", files)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	return c
}

// queryCheck is a Prometheus check of the partition's error ratios at address: evaluated every
// second for 3s, one failed evaluation tolerated (a scrape older than the partition's last
// Package).
func queryCheck(name, address string) convoyv1alpha1.RolloutCheck {
	return convoyv1alpha1.RolloutCheck{Name: name, IntervalSeconds: 1, DurationSeconds: 3, FailureLimit: 1,
		Prometheus: &convoyv1alpha1.PrometheusCheck{Address: address, Query: partitionQuery,
			SuccessCondition: errorRatioBelowLimit}}
}

// alertsCheck is an alerts check of the partition's critical AddonErrors at address, evaluated
// every second for 3s.
func alertsCheck(address string) convoyv1alpha1.RolloutCheck {
	return convoyv1alpha1.RolloutCheck{Name: addonAlertsCheck, IntervalSeconds: 1, DurationSeconds: 3,
		Alerts: &convoyv1alpha1.AlertsCheck{Address: address, Matchers: []string{`alertname="AddonErrors"`,
			`hosted_cluster=~"{{ regex (names .HostedClusters) }}"`, `severity="critical"`}}}
}

// setChecks replaces the rollout's checks.
func (sf *signalsFleet) setChecks(g *WithT, checks ...convoyv1alpha1.RolloutCheck) {
	sf.editSpec(g, func(spec *convoyv1alpha1.HostedClusterPackageSpec) { spec.Checks = checks })
}

// testQueryStops pushes a commit raising the error ratio to 0.5 under a query check: early
// takes it, the check fails there with the value in the Stalled condition, and normal never
// starts.
func (sf *signalsFleet) testQueryStops(t *testing.T) {
	g := NewWithT(t)
	sf.setChecks(g, queryCheck(errorRatioCheck, sf.mon.PrometheusURL))
	c2 := sf.commitFiles(addonPackage(2, "0.5"))
	sf.expectCheckStops(g, c2, errorRatioCheck, "convoy_test_addon_error_ratio", "0.5")
	g.Expect(testutil.ToFloat64(checkEvaluations.WithLabelValues(sf.name, errorRatioCheck, "fail"))).To(BeNumerically(">=", 2))
	g.Expect(testutil.ToFloat64(checksGauge.WithLabelValues(sf.name, "failed"))).To(Equal(1.0))
}

// expectCheckStops waits until check stops commit in early: early's clusters on commit, the
// check Failed, the rollout Stalled with a message naming the check and holding each of
// texts, a CheckFailed event; and checks that normal does not start.
func (sf *signalsFleet) expectCheckStops(g *WithT, commit, check string, texts ...string) {
	sf.t.Helper()
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, sf.name).Status
		g.Expect(onCommit(packagesOf(g, sf.name), commit)).To(ConsistOf(sf.e1, sf.e2))
		g.Expect(partitionChecks(g, st, "early")).To(ContainElement(And(HaveField("Name", check),
			HaveField("State", convoyv1alpha1.CheckFailed), HaveField("Revision", st.UpdateRevision))))
		g.Expect(st.Failures).To(ContainElement(And(HaveField("Check", check), HaveField("Partition", "early"),
			HaveField("HostedCluster", ""), HaveField("Reason", convoyv1alpha1.CheckFailedReason))))
		stalled := metaCondition(st.Conditions, convoyv1alpha1.StalledCondition)
		g.Expect(stalled).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", convoyv1alpha1.RolloutBlockedReason)))
		g.Expect(stalled.Message).To(ContainSubstring("Check " + check + " of partition early failed"))
		for _, text := range texts {
			g.Expect(stalled.Message).To(ContainSubstring(text))
		}
	}).Should(Succeed(), "check %s stops commit %s in early", check, commit)
	sf.expectEvent(g, CheckFailedReason, "Check "+check+" of partition early failed")
	g.Consistently(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, sf.name), commit)).To(ConsistOf(sf.e1, sf.e2))
	}).WithTimeout(3*time.Second).Should(Succeed(), "normal never starts")
}

// testFixGoesThrough pushes a commit that brings the error ratio back to 0.02: the query check
// passes in every partition and the rollout completes. (Its CheckPassed events are checked here
// only: the later steps spend the test object's budget of Normal events, see internal/eventrec.)
func (sf *signalsFleet) testFixGoesThrough(t *testing.T) {
	g := NewWithT(t)
	c3 := sf.commitFiles(addonPackage(3, "0.02"))
	sf.expectPassedEverywhere(g, c3, errorRatioCheck)
	rev := getHCPkg(g, sf.name).Status.UpdateRevision
	sf.expectEvent(g, CheckPassedReason, "Check "+errorRatioCheck+" of partition late passed at revision "+rev)
}

// expectPassedEverywhere waits until commit completed with check Passed in every partition.
func (sf *signalsFleet) expectPassedEverywhere(g *WithT, commit, check string) {
	sf.t.Helper()
	sf.complete(g, commit)
	st := getHCPkg(g, sf.name).Status
	for _, p := range []string{"early", "normal", "late"} {
		g.Expect(partitionChecks(g, st, p)).To(ConsistOf(And(HaveField("Name", check),
			HaveField("State", convoyv1alpha1.CheckPassed), HaveField("Revision", st.UpdateRevision))), p)
	}
}

// testAlertStops pushes a commit raising the error ratio to 0.5 under an alerts check: early
// takes it, AddonErrors fires for its clusters after it started, the check fails, and normal
// never starts.
func (sf *signalsFleet) testAlertStops(t *testing.T) {
	g := NewWithT(t)
	sf.setChecks(g, alertsCheck(sf.mon.AlertmanagerURL))
	c4 := sf.commitFiles(addonPackage(4, "0.5"))
	sf.expectCheckStops(g, c4, addonAlertsCheck, "alerts matching", "AddonErrors")
}

// testOldAlert makes e1 unhealthy by hand, outside the package, and waits until AddonErrors
// fires for it; then a commit with a sound add-on goes through every partition under the alerts
// check, the alert still firing: it is the fleet's old trouble, not this commit's.
func (sf *signalsFleet) testOldAlert(t *testing.T) {
	g := NewWithT(t)
	e1 := sf.clusters[sf.e1]
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: addonNamespace, Name: manualHealthName},
		Data: map[string]string{"errorRatio": "0.9"}}
	g.Expect(e1.Client.Create(context.Background(), cm)).To(Succeed())
	t.Cleanup(func() { _ = e1.Client.Delete(context.Background(), cm) })
	firing := sf.expectFiring(g, sf.e1)
	time.Sleep(time.Second) // the partition's start is stored in seconds: let it be after the alert's

	c5 := sf.commitFiles(addonPackage(5, "0.02"))
	sf.expectPassedEverywhere(g, c5, addonAlertsCheck)
	g.Expect(sf.expectFiring(g, sf.e1)).To(BeTemporally("==", firing), "the alert fired all along")
	g.Expect(e1.Client.Delete(context.Background(), cm)).To(Succeed())
}

// expectFiring waits until Alertmanager holds an active AddonErrors of cluster from its
// ConfigMap written by hand, and returns when it started.
func (sf *signalsFleet) expectFiring(g *WithT, cluster string) time.Time {
	sf.t.Helper()
	var started time.Time
	g.Eventually(func(g Gomega) {
		alerts, err := sf.mon.Alerts(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		var found []monitoring.Alert
		for _, a := range alerts {
			if a.Labels["alertname"] == "AddonErrors" && a.Labels["hosted_cluster"] == cluster &&
				a.Labels["instance"] == sf.manualTarget && a.Status.State == "active" {
				found = append(found, a)
			}
		}
		g.Expect(found).To(HaveLen(1))
		started = found[0].StartsAt
	}).Should(Succeed(), "AddonErrors fires for %s", cluster)
	return started
}

// testPrometheusDown points a query check at a closed port and pushes a sound commit: early
// takes it, the check is Inconclusive, the Check gate holds normal, and it never passes.
func (sf *signalsFleet) testPrometheusDown(t *testing.T) {
	g := NewWithT(t)
	sf.setChecks(g, queryCheck(prometheusDownCheck, "http://"+closedAddress(g)))
	c6 := sf.commitFiles(addonPackage(6, "0.02"))
	held := func(g Gomega) {
		st := getHCPkg(g, sf.name).Status
		g.Expect(onCommit(packagesOf(g, sf.name), c6)).To(ConsistOf(sf.e1, sf.e2))
		g.Expect(partitionChecks(g, st, "early")).To(ConsistOf(And(HaveField("Name", prometheusDownCheck),
			HaveField("State", convoyv1alpha1.CheckInconclusive), HaveField("Passes", BeZero()))))
		g.Expect(st.Gate).To(And(HaveField("Type", convoyv1alpha1.GateCheck), HaveField("Partition", "normal"),
			HaveField("Message", ContainSubstring("check "+prometheusDownCheck+" is inconclusive"))))
		g.Expect(st.Conditions).NotTo(haveConditionStatus(convoyv1alpha1.ReadyCondition, metav1.ConditionTrue))
	}
	g.Eventually(held).Should(Succeed(), "the check is inconclusive and holds normal")
	sf.expectEvent(g, CheckInconclusiveReason, "Check "+prometheusDownCheck+" of partition early is inconclusive")
	g.Consistently(held).WithTimeout(5*time.Second).Should(Succeed(), "an unreachable Prometheus never lets the commit pass")
	g.Expect(testutil.ToFloat64(checkEvaluations.WithLabelValues(sf.name, prometheusDownCheck, "inconclusive"))).To(BeNumerically(">=", 3))
}

// testRollback pushes a commit raising the error ratio under a query check and a Rollback
// policy: early takes it, the check fails, the revision is rejected and early's clusters go
// back to the commit of testOldAlert, the last that completed; normal never starts.
func (sf *signalsFleet) testRollback(t *testing.T) {
	g := NewWithT(t)
	current := getHCPkg(g, sf.name).Status.CurrentRevision
	sf.editSpec(g, func(spec *convoyv1alpha1.HostedClusterPackageSpec) {
		spec.Checks = []convoyv1alpha1.RolloutCheck{queryCheck(errorRatioCheck, sf.mon.PrometheusURL)}
		spec.FailurePolicy.Action = convoyv1alpha1.FailureActionRollback
	})
	c7 := sf.commitFiles(addonPackage(7, "0.5"))
	g.Eventually(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, sf.name), c7)).To(ContainElement(sf.e1))
	}).Should(Succeed(), "early takes the commit")
	var bad string
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, sf.name).Status
		bad = st.UpdateRevision
		g.Expect(bad).NotTo(Equal(current))
		g.Expect(st.RejectedRevision).To(Equal(bad))
		g.Expect(st.CurrentRevision).To(Equal(current))
		g.Expect(st.Failures).To(ContainElement(HaveField("Check", errorRatioCheck)))
		g.Expect(onCommit(packagesOf(g, sf.name), c7)).To(BeEmpty())
		g.Expect(metaCondition(st.Conditions, convoyv1alpha1.StalledCondition)).To(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", convoyv1alpha1.RolloutRejectedReason)))
	}).Should(Succeed(), "the failed check rejects the revision and early goes back")
	sf.expectEvent(g, RevisionRejectedReason, "Check "+errorRatioCheck+" of partition early failed")
	sf.expectRatios(g, []string{sf.e1, sf.e2, sf.n1, sf.n2, sf.l1, sf.l2}, 0.02)
}

// closedAddress returns host:port of a port of 127.0.0.1 that nothing listens on.
func closedAddress(g *WithT) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
	return addr
}

// expectRatios waits until Prometheus has scraped the error ratio of each of clusters at want.
func (sf *signalsFleet) expectRatios(g *WithT, clusters []string, want float64) {
	sf.t.Helper()
	g.Eventually(func(g Gomega) {
		samples, err := sf.mon.Query(context.Background(), monitoring.AddonErrorRatioMetric)
		g.Expect(err).NotTo(HaveOccurred())
		got := map[string]float64{}
		for _, s := range samples {
			got[s.Metric["hosted_cluster"]] = s.Value
		}
		for _, c := range clusters {
			g.Expect(got).To(HaveKeyWithValue(c, want))
		}
	}).Should(Succeed(), "Prometheus scrapes the add-on of every cluster")
}
