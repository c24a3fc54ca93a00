package checks

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// partitionStart is when the test partition started.
var partitionStart = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// alertJSON is one alert of Alertmanager's API v2.
func alertJSON(name, cluster string, startsAt time.Time) string {
	return fmt.Sprintf(`{"labels":{"alertname":%q,"hosted_cluster":%q,"severity":"critical"},"annotations":{},`+
		`"startsAt":%q,"endsAt":"2026-11-27T13:00:00Z","fingerprint":"f","receivers":[{"name":"null"}],`+
		`"status":{"state":"active","silencedBy":[],"inhibitedBy":[]},"updatedAt":"2026-11-27T12:00:00Z"}`,
		name, cluster, startsAt.Format(time.RFC3339Nano))
}

// alertsAnswer is Alertmanager's answer holding alerts.
func alertsAnswer(alerts ...string) string { return "[" + strings.Join(alerts, ",") + "]" }

// partitionAlertsCheck is an alerts check of the partition's critical alerts.
func partitionAlertsCheck(address string) Spec {
	return &AlertsCheck{Address: address, Matchers: []string{
		`hosted_cluster=~"{{ regex (names .HostedClusters) }}"`, `severity="critical"`,
	}}
}

func TestAlertsCheckJudgesTheAlerts(t *testing.T) {
	cases := []struct {
		name       string
		body       string
		want       Outcome
		value      string
		messageHas string
	}{
		{"no alert", alertsAnswer(), Success, "no alert", "(0 older ignored)"},
		{"an alert from before the partition", alertsAnswer(alertJSON("AddonErrors", "hc-1", partitionStart.Add(-time.Minute))),
			Success, "no alert", "(1 older ignored)"},
		{"an alert since the partition", alertsAnswer(alertJSON("AddonErrors", "hc-2", partitionStart)),
			Failure, `AddonErrors{hosted_cluster="hc-2", severity="critical"}`, "1 active alert matches"},
		{"an alert of another cluster that Alertmanager did not filter", alertsAnswer(alertJSON("AddonErrors", "hc-9", partitionStart.Add(time.Hour))),
			Success, "no alert", "no active alert matches"},
		{"many alerts are named up to a bound", alertsAnswer(
			alertJSON("A1", "hc-1", partitionStart), alertJSON("A2", "hc-1", partitionStart), alertJSON("A3", "hc-1", partitionStart),
			alertJSON("A4", "hc-1", partitionStart), alertJSON("A5", "hc-1", partitionStart), alertJSON("A6", "hc-2", partitionStart)),
			Failure, `A1{hosted_cluster="hc-1", severity="critical"}, A2`, "and 1 more"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			am := startServer(t, answerWith(200, tc.body))
			ev, err := evaluate(t, partitionAlertsCheck(am.URL), Input{Data: partitionData(), Since: partitionStart})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ev.Outcome).To(Equal(tc.want), ev.Message)
			g.Expect(ev.Value).To(HavePrefix(tc.value))
			g.Expect(ev.Message).To(ContainSubstring(tc.messageHas))
		})
	}
}

func TestAlertsCheckAsksForActiveAlertsOnly(t *testing.T) {
	g := NewWithT(t)
	am := startServer(t, answerWith(200, alertsAnswer()))
	_, err := evaluate(t, partitionAlertsCheck(am.URL), Input{Data: partitionData(), Since: partitionStart,
		Credentials: &Credentials{Username: "user", Password: "pass"}, AllowInsecureHTTP: true})
	g.Expect(err).NotTo(HaveOccurred())
	req := am.last()
	g.Expect(req.Path).To(Equal("/api/v2/alerts"))
	g.Expect(req.Query["filter"]).To(Equal([]string{`hosted_cluster=~"(?:hc-1|hc-2)"`, `severity="critical"`}))
	g.Expect(req.Query.Get("active")).To(Equal("true"))
	g.Expect(req.Query.Get("silenced")).To(Equal("false"))
	g.Expect(req.Query.Get("inhibited")).To(Equal("false"))
	g.Expect(req.Authorization).To(HavePrefix("Basic "))
}

func TestAlertsCheckInconclusive(t *testing.T) {
	cases := []struct {
		name, address string
		code          int
		body          string
		messageHas    string
	}{
		{name: "nothing listens", address: closedAddress(), messageHas: "connection refused"},
		{name: "an error status", code: 500, body: "boom", messageHas: "answered HTTP 500: boom"},
		{name: "not Alertmanager", code: 200, body: `{"status":"success"}`, messageHas: "not Alertmanager's API"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			address := tc.address
			if address == "" {
				address = startServer(t, answerWith(tc.code, tc.body)).URL
			}
			ev, err := evaluate(t, partitionAlertsCheck(address), Input{Data: partitionData(), Since: partitionStart})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ev.Outcome).To(Equal(Inconclusive))
			g.Expect(ev.Message).To(ContainSubstring(tc.messageHas))
		})
	}
}

func TestAlertsCheckMatcherErrorsNameTheMatcher(t *testing.T) {
	t.Run("at compile", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Compile(&AlertsCheck{Address: "http://am:9093", Matchers: []string{`a="b"`, `severity=critical`}})
		var specErr *SpecError
		g.Expect(errors.As(err, &specErr)).To(BeTrue(), "%v", err)
		g.Expect(specErr.Field).To(Equal("alerts.matchers[1]"))
		g.Expect(specErr.Rule).To(Equal(matcherRule))
	})
	t.Run("once rendered", func(t *testing.T) {
		g := NewWithT(t)
		am := startServer(t, answerWith(200, alertsAnswer()))
		spec := &AlertsCheck{Address: am.URL, Matchers: []string{`{{ .Partition }}`}}
		_, err := evaluate(t, spec, Input{Data: partitionData()})
		var specErr *SpecError
		g.Expect(errors.As(err, &specErr)).To(BeTrue(), "%v", err)
		g.Expect(specErr.Field).To(Equal("alerts.matchers[0]"))
		g.Expect(err.Error()).To(ContainSubstring(`"canary" does not parse`))
		g.Expect(am.last().Method).To(BeEmpty())
	})
	t.Run("no matcher", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Compile(&AlertsCheck{Address: "http://am:9093"})
		g.Expect(err).To(MatchError(ContainSubstring("alerts.matchers must hold at least one matcher")))
	})
}
