package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// The alerts kind: the active alerts of an Alertmanager.
func init() {
	Register(Kind[convoyv1alpha1.AlertsCheck]{
		Name:  "alerts",
		Field: func(c *convoyv1alpha1.RolloutCheck) *convoyv1alpha1.AlertsCheck { return c.Alerts },
		Spec: func(a *convoyv1alpha1.AlertsCheck) Spec {
			return &AlertsCheck{Address: a.Address, Matchers: a.Matchers}
		},
		SecretRef: func(a *convoyv1alpha1.AlertsCheck) *convoyv1alpha1.SecretReference { return a.SecretRef },
		Address:   func(a *convoyv1alpha1.AlertsCheck) (string, string) { return "alerts.address", a.Address },
		Subject: func(a *convoyv1alpha1.AlertsCheck) string {
			return fmt.Sprintf("alerts matching {%s}", strings.Join(a.Matchers, ", "))
		},
	})
}

// AlertsCheck passes when no active alert of an Alertmanager matches its matchers.
type AlertsCheck struct {
	// Address is Alertmanager's base URL, e.g. http://alertmanager.monitoring:9093.
	Address string
	// Matchers are Alertmanager matchers (label="v", label!="v", label=~"re", label!~"re"),
	// each a template over Data.
	Matchers []string
}

// MaxAlertsBody bounds the body of Alertmanager's answer.
const MaxAlertsBody = 4 << 20

// maxNamedAlerts bounds the alerts a Failure names.
const maxNamedAlerts = 5

// alertsCheck is a compiled AlertsCheck.
type alertsCheck struct {
	address      *url.URL
	matchers     []*tmpl
	matcherTexts []string
}

// Compile validates and compiles the check: each matcher is parsed as a template, and one
// without template actions is parsed as a matcher at once.
func (a *AlertsCheck) Compile() (Evaluator, error) {
	address, err := parseAddress("alerts.address", a.Address)
	if err != nil {
		return nil, err
	}
	if len(a.Matchers) == 0 {
		return nil, specError("alerts.matchers", "must hold at least one matcher", nil)
	}
	out := &alertsCheck{address: address, matcherTexts: a.Matchers}
	for i, text := range a.Matchers {
		field := fmt.Sprintf("alerts.matchers[%d]", i)
		t, err := parseTemplate(field, text)
		if err != nil {
			return nil, err
		}
		if !strings.Contains(text, "{{") {
			if _, err := parseMatcher(field, text); err != nil {
				return nil, err
			}
		}
		out.matchers = append(out.matchers, t)
	}
	return out, nil
}

// Evaluate renders the matchers, asks Alertmanager for the active alerts they select and
// fails on those that started at or after in.Since.
func (a *alertsCheck) Evaluate(ctx context.Context, in Input) (Evaluation, error) {
	matchers, err := a.render(in.Data)
	if err != nil {
		return Evaluation{}, err
	}
	texts := make([]string, 0, len(matchers))
	for _, m := range matchers {
		texts = append(texts, m.String())
	}
	selector := "{" + strings.Join(texts, ", ") + "}"
	alerts, err := a.fetch(ctx, texts, in)
	if err != nil {
		return inconclusive("alerts %s at %s: %v", selector, redactURL(a.address), err), nil
	}
	fresh, old := splitAlerts(alerts, matchers, in.Since)
	if len(fresh) == 0 {
		return Evaluation{Outcome: Success, Value: "no alert",
			Message: fmt.Sprintf("no active alert matches %s since %s (%d older ignored)", selector, in.Since.UTC().Format(time.RFC3339), old)}, nil
	}
	names := alertNames(fresh, matchers)
	count := "1 active alert matches"
	if len(fresh) > 1 {
		count = fmt.Sprintf("%d active alerts match", len(fresh))
	}
	return Evaluation{Outcome: Failure, Value: names,
		Message: fmt.Sprintf("%s %s since %s: %s", count, selector, in.Since.UTC().Format(time.RFC3339), names)}, nil
}

// Describe names the matchers, as written, and the address.
func (a *alertsCheck) Describe() string {
	return fmt.Sprintf("alerts matching %v at %s", a.matcherTexts, redactURL(a.address))
}

// Timeout is requestTimeout.
func (a *alertsCheck) Timeout() time.Duration { return requestTimeout }

// render renders and parses the matchers.
func (a *alertsCheck) render(data Data) ([]*matcher, error) {
	out := make([]*matcher, 0, len(a.matchers))
	for _, t := range a.matchers {
		text, err := t.render(data)
		if err != nil {
			return nil, err
		}
		m, err := parseMatcher(t.field, text)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// alert is what the check reads of an alert of Alertmanager's API v2.
type alert struct {
	Labels   map[string]string `json:"labels"`
	StartsAt time.Time         `json:"startsAt"`
	Status   struct {
		State string `json:"state"`
	} `json:"status"`
}

// fetch asks Alertmanager's /api/v2/alerts for the active, not silenced, not inhibited alerts
// the filters select.
func (a *alertsCheck) fetch(ctx context.Context, filters []string, in Input) ([]alert, error) {
	q := url.Values{"filter": filters, "active": {"true"}, "silenced": {"false"}, "inhibited": {"false"}}
	status, body, err := getJSON(ctx, endpoint(a.address, "/api/v2/alerts", q), in, MaxAlertsBody)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("answered HTTP %d: %s", status, sample(body))
	}
	var alerts []alert
	if err := json.Unmarshal(body, &alerts); err != nil {
		return nil, fmt.Errorf("answered HTTP %d, not Alertmanager's API: %s", status, sample(body))
	}
	return alerts, nil
}

// splitAlerts returns the active alerts that match every matcher (Alertmanager filtered them;
// this guards against one that did not) and started at or after since, and the count of those
// that started before.
func splitAlerts(alerts []alert, matchers []*matcher, since time.Time) (fresh []alert, old int) {
	for _, al := range alerts {
		if al.Status.State != "" && al.Status.State != "active" || !matchAll(matchers, al.Labels) {
			continue
		}
		if al.StartsAt.Before(since) {
			old++
			continue
		}
		fresh = append(fresh, al)
	}
	return fresh, old
}

// matchAll reports whether labels satisfy every matcher.
func matchAll(matchers []*matcher, labels map[string]string) bool {
	for _, m := range matchers {
		if !m.matches(labels) {
			return false
		}
	}
	return true
}

// alertNames names up to maxNamedAlerts alerts by their alertname and the labels the matchers
// use, in a stable order.
func alertNames(alerts []alert, matchers []*matcher) string {
	names := make([]string, 0, len(alerts))
	for _, al := range alerts {
		parts := make([]string, 0, len(matchers))
		seen := map[string]bool{"alertname": true}
		for _, m := range matchers {
			if v, ok := al.Labels[m.name]; ok && !seen[m.name] {
				seen[m.name] = true
				parts = append(parts, m.name+"="+strconv.Quote(v))
			}
		}
		names = append(names, al.Labels["alertname"]+"{"+strings.Join(parts, ", ")+"}")
	}
	sort.Strings(names)
	if len(names) > maxNamedAlerts {
		return strings.Join(names[:maxNamedAlerts], ", ") + fmt.Sprintf(" and %d more", len(names)-maxNamedAlerts)
	}
	return strings.Join(names, ", ")
}
