package checks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/monitoring"
)

// The real Prometheus and Alertmanager of the integration tests, started by the first test
// that needs them and stopped by TestMain.
var (
	realOnce    sync.Once
	realServers *monitoring.Monitoring
	realGauge   *prometheus.GaugeVec
	realErr     error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if realServers != nil {
		_ = realServers.Stop()
	}
	os.Exit(code)
}

// addonRule fires AddonErrorRatioHigh for every hosted cluster above 10% errors.
const addonRule = `groups:
- name: addon
  rules:
  - alert: AddonErrorRatioHigh
    expr: convoy_test_addon_error_ratio > 0.1
    labels:
      severity: critical
`

// requireMonitoring returns the real servers, Prometheus scraping a gauge the test sets and
// evaluating addonRule; it skips the test under go test -short.
func requireMonitoring(t *testing.T) (*monitoring.Monitoring, *prometheus.GaugeVec) {
	t.Helper()
	fleet.RequireAPIServers(t)
	realOnce.Do(func() { realServers, realGauge, realErr = startMonitoring() })
	if realErr != nil {
		t.Fatalf("starting Prometheus and Alertmanager: %v", realErr)
	}
	return realServers, realGauge
}

// startMonitoring starts the servers and an exporter of convoy_test_addon_error_ratio that
// Prometheus scrapes.
func startMonitoring() (*monitoring.Monitoring, *prometheus.GaugeVec, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := monitoring.Start(ctx, monitoring.Options{})
	if err != nil {
		return nil, nil, err
	}
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: monitoring.AddonErrorRatioMetric,
		Help: "The add-on's error ratio, set by the test."}, []string{"hosted_cluster", "namespace"})
	registry := prometheus.NewRegistry()
	registry.MustRegister(gauge)
	exporter := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	if err := m.SetTargets(ctx, strings.TrimPrefix(exporter.URL, "http://")); err != nil {
		return m, nil, err
	}
	if err := m.SetRules(ctx, map[string]string{"addon": addonRule}); err != nil {
		return m, nil, err
	}
	return m, gauge, nil
}

// setRatios sets the gauge of each cluster ("" deletes the series).
func setRatios(gauge *prometheus.GaugeVec, ratios map[string]float64) {
	for name, v := range ratios {
		gauge.WithLabelValues(name, "clusters-"+name).Set(v)
	}
}

// waitForRatios waits until Prometheus has scraped the gauge's values of the clusters of want,
// so that a check does
// not judge the empty answer of a Prometheus that has not scraped yet.
func waitForRatios(t *testing.T, servers *monitoring.Monitoring, want map[string]float64) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		samples, err := servers.Query(context.Background(), monitoring.AddonErrorRatioMetric)
		g.Expect(err).NotTo(HaveOccurred())
		got := map[string]float64{}
		for _, s := range samples {
			got[s.Metric["hosted_cluster"]] = s.Value
		}
		for name, v := range want {
			g.Expect(got).To(HaveKeyWithValue(name, v))
		}
	}).WithTimeout(45 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// evaluateUntil evaluates c every half second until its outcome is want, and returns that
// evaluation.
func evaluateUntil(t *testing.T, c *Check, in Input, want Outcome) Evaluation {
	t.Helper()
	g := NewWithT(t)
	var ev Evaluation
	g.Eventually(func(g Gomega) {
		var err error
		ev, err = c.Evaluate(context.Background(), in)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(want), ev.Message)
	}).WithTimeout(45 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	t.Logf("%s: value %q, message %q", ev.Outcome, ev.Value, ev.Message)
	return ev
}

func TestIntegrationQueryCheckFollowsTheMetric(t *testing.T) {
	servers, gauge := requireMonitoring(t)
	g := NewWithT(t)
	// hc-9 is in another partition: the template leaves it out of the query.
	setRatios(gauge, map[string]float64{"hc-1": 0.01, "hc-2": 0.02, "hc-9": 0.9})
	t.Cleanup(func() { setRatios(gauge, map[string]float64{"hc-1": 0, "hc-2": 0, "hc-9": 0}) })
	c, err := Compile(errorRatioCheck(servers.PrometheusURL))
	g.Expect(err).NotTo(HaveOccurred())

	waitForRatios(t, servers, map[string]float64{"hc-1": 0.01, "hc-2": 0.02, "hc-9": 0.9})
	ev := evaluateUntil(t, c, Input{Data: partitionData()}, Success)
	g.Expect(ev.Value).To(And(ContainSubstring(`hosted_cluster="hc-1"`), ContainSubstring(`namespace="clusters-hc-1"} 0.01`)))
	g.Expect(ev.Value).NotTo(ContainSubstring("hc-9"))

	setRatios(gauge, map[string]float64{"hc-2": 0.5})
	ev = evaluateUntil(t, c, Input{Data: partitionData()}, Failure)
	g.Expect(ev.Value).To(ContainSubstring(`hosted_cluster="hc-1"`))
	g.Expect(ev.Value).To(ContainSubstring(`hosted_cluster="hc-2"`))
	g.Expect(ev.Message).To(ContainSubstring("condition `values.all(v, v < 0.1)` is false for"))
	g.Expect(ev.Message).To(ContainSubstring("0.5"))
}

func TestIntegrationQueryCheckTellsPrometheusItsDeadline(t *testing.T) {
	servers, _ := requireMonitoring(t)
	g := NewWithT(t)
	c, err := Compile(&PrometheusCheck{Address: servers.PrometheusURL, Query: "vector(1)",
		SuccessCondition: "values == [1.0]"})
	g.Expect(err).NotTo(HaveOccurred())
	for _, deadline := range []time.Duration{time.Hour, 3 * time.Second, 2500 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		ev, err := c.Evaluate(ctx, Input{})
		cancel()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(Success), "Prometheus accepts the timeout parameter (deadline %s): %s", deadline, ev.Message)
	}
}

func TestIntegrationQueryCheckInconclusive(t *testing.T) {
	servers, _ := requireMonitoring(t)
	cases := []struct {
		name, query, want string
	}{
		{"a query that does not parse", `convoy_test_addon_error_ratio{`, "prometheus refused the query (bad_data)"},
		{"a range vector", `convoy_test_addon_error_ratio[1m]`, "returned a matrix"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ev, err := evaluate(t, &PrometheusCheck{Address: servers.PrometheusURL, Query: tc.query,
				SuccessCondition: "true"}, Input{Data: partitionData()})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ev.Outcome).To(Equal(Inconclusive))
			g.Expect(ev.Message).To(ContainSubstring(tc.want))
		})
	}
}

func TestIntegrationAlertsCheckFollowsTheRule(t *testing.T) {
	servers, gauge := requireMonitoring(t)
	g := NewWithT(t)
	since := time.Now().Add(-time.Second)
	setRatios(gauge, map[string]float64{"hc-1": 0.01, "hc-2": 0.5, "hc-9": 0.9})
	t.Cleanup(func() { setRatios(gauge, map[string]float64{"hc-1": 0, "hc-2": 0, "hc-9": 0}) })
	c, err := Compile(partitionAlertsCheck(servers.AlertmanagerURL))
	g.Expect(err).NotTo(HaveOccurred())

	ev := evaluateUntil(t, c, Input{Data: partitionData(), Since: since}, Failure)
	g.Expect(ev.Value).To(Equal(`AddonErrorRatioHigh{hosted_cluster="hc-2", severity="critical"}`), "hc-9 is another partition's")

	// The same alert, for a partition that started after it: the fleet's old trouble.
	ev, err = c.Evaluate(context.Background(), Input{Data: partitionData(), Since: time.Now().Add(time.Hour)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ev.Outcome).To(Equal(Success))
	g.Expect(ev.Message).To(ContainSubstring("(1 older ignored)"))

	setRatios(gauge, map[string]float64{"hc-2": 0.02})
	evaluateUntil(t, c, Input{Data: partitionData(), Since: since}, Success)
}

func TestIntegrationAlertsCheckIgnoresSilencedAlerts(t *testing.T) {
	servers, _ := requireMonitoring(t)
	g := NewWithT(t)
	now := time.Now().UTC()
	postAlertmanager(t, servers.AlertmanagerURL+"/api/v2/alerts", []map[string]any{{
		"labels":   map[string]string{"alertname": "Pushed", "hosted_cluster": "hc-1", "severity": "critical", "test": t.Name()},
		"startsAt": now.Format(time.RFC3339Nano), "endsAt": now.Add(time.Hour).Format(time.RFC3339Nano),
	}})
	spec := &AlertsCheck{Address: servers.AlertmanagerURL, Matchers: []string{
		`hosted_cluster=~"{{ regex (names .HostedClusters) }}"`, `test="` + t.Name() + `"`}}
	c, err := Compile(spec)
	g.Expect(err).NotTo(HaveOccurred())
	evaluateUntil(t, c, Input{Data: partitionData(), Since: now.Add(-time.Minute)}, Failure)

	postAlertmanager(t, servers.AlertmanagerURL+"/api/v2/silences", map[string]any{
		"matchers": []map[string]any{{"name": "test", "value": t.Name(), "isRegex": false, "isEqual": true}},
		"startsAt": now.Format(time.RFC3339Nano), "endsAt": now.Add(time.Hour).Format(time.RFC3339Nano),
		"createdBy": "convoy tests", "comment": "a silenced alert does not hold a rollout",
	})
	evaluateUntil(t, c, Input{Data: partitionData(), Since: now.Add(-time.Minute)}, Success)
}

func TestIntegrationAlertsCheckSendsRegexEscapesAlertmanagerReads(t *testing.T) {
	servers, _ := requireMonitoring(t)
	g := NewWithT(t)
	now := time.Now().UTC()
	postAlertmanager(t, servers.AlertmanagerURL+"/api/v2/alerts", []map[string]any{{
		"labels":   map[string]string{"alertname": "Dotted", "hosted_cluster": "hc.1", "test": t.Name()},
		"startsAt": now.Format(time.RFC3339Nano), "endsAt": now.Add(time.Hour).Format(time.RFC3339Nano),
	}})
	data := Data{HostedClusters: []HostedCluster{{Name: "hc.1"}, {Name: "hc+2"}}}
	for _, matcher := range []string{`hosted_cluster=~"{{ regex (names .HostedClusters) }}"`, `hosted_cluster=~"hc\.1"`} {
		c, err := Compile(&AlertsCheck{Address: servers.AlertmanagerURL, Matchers: []string{matcher, `test="` + t.Name() + `"`}})
		g.Expect(err).NotTo(HaveOccurred())
		ev := evaluateUntil(t, c, Input{Data: data, Since: now.Add(-time.Minute)}, Failure)
		g.Expect(ev.Value).To(Equal(`Dotted{hosted_cluster="hc.1", test="` + t.Name() + `"}`))
	}
}

func TestIntegrationQueryCheckRegexFitsEitherPromQLString(t *testing.T) {
	servers, gauge := requireMonitoring(t)
	g := NewWithT(t)
	setRatios(gauge, map[string]float64{"hc.1": 0.5, "hcx1": 0.5})
	t.Cleanup(func() { setRatios(gauge, map[string]float64{"hc.1": 0, "hcx1": 0}) })
	waitForRatios(t, servers, map[string]float64{"hc.1": 0.5, "hcx1": 0.5})
	data := Data{HostedClusters: []HostedCluster{{Name: "hc.1"}}}
	for _, query := range []string{
		"convoy_test_addon_error_ratio{hosted_cluster=~`{{ regex (names .HostedClusters) }}`}",
		`convoy_test_addon_error_ratio{hosted_cluster=~"{{ regex (names .HostedClusters) }}"}`,
	} {
		ev, err := evaluate(t, &PrometheusCheck{Address: servers.PrometheusURL, Query: query,
			SuccessCondition: "values.all(v, v < 0.1)"}, Input{Data: data})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(Failure), ev.Message)
		g.Expect(ev.Value).To(And(HavePrefix(`{hosted_cluster="hc.1", `), HaveSuffix(`namespace="clusters-hc.1"} 0.5`)), "one series: the dot is no wildcard")
	}
}

// postAlertmanager posts v as JSON to Alertmanager's API.
func postAlertmanager(t *testing.T, url string, v any) {
	t.Helper()
	g := NewWithT(t)
	body, err := json.Marshal(v)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), fmt.Sprintf("POST %s", url))
}
