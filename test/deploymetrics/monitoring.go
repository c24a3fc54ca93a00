package deploymetrics

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// Files of deploy/monitoring.
const (
	RulesFile     = "prometheusrule.yaml"
	DashboardFile = "grafana-dashboard.json"
)

// Monitoring is what deploy/monitoring holds, parsed.
type Monitoring struct {
	// Rules are the rule groups of the PrometheusRule, as Prometheus parsed them.
	Rules *rulefmt.RuleGroups
	// Queries are the dashboard's panel queries, by panel title.
	Queries map[string][]string
	// Metrics lists, per metric name, where it is used ("alert X", "panel Y").
	Metrics map[string][]string
}

// Load parses the PrometheusRule and the Grafana dashboard of dir.
func Load(dir string) (*Monitoring, error) {
	m := &Monitoring{Queries: map[string][]string{}, Metrics: map[string][]string{}}
	if err := m.loadRules(filepath.Join(dir, RulesFile)); err != nil {
		return nil, err
	}
	if err := m.loadDashboard(filepath.Join(dir, DashboardFile)); err != nil {
		return nil, err
	}
	return m, nil
}

// loadRules parses the spec of the PrometheusRule at path as a Prometheus rule file.
func (m *Monitoring) loadRules(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var obj struct {
		Kind string          `json:"kind"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if obj.Kind != "PrometheusRule" {
		return fmt.Errorf("%s: kind %q, want PrometheusRule", path, obj.Kind)
	}
	spec, err := yaml.JSONToYAML(obj.Spec)
	if err != nil {
		return err
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, parser.NewParser(parser.Options{}), nil)
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", path, errs[0])
	}
	m.Rules = groups
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			where := "alert " + r.Alert
			if r.Record != "" {
				where = "record " + r.Record
			}
			if err := m.addExpr(where, r.Expr); err != nil {
				return fmt.Errorf("%s: %s: %w", path, where, err)
			}
		}
	}
	return nil
}

// dashboard is the part of a Grafana dashboard read here.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// loadDashboard parses each panel query of the dashboard at path.
func (m *Monitoring) loadDashboard(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			m.Queries[p.Title] = append(m.Queries[p.Title], t.Expr)
			// Note: Grafana replaces $__rate_interval before Prometheus sees the query.
			expr := strings.ReplaceAll(t.Expr, "$__rate_interval", "5m")
			if err := m.addExpr("panel "+p.Title, expr); err != nil {
				return fmt.Errorf("%s: panel %q: %w", path, p.Title, err)
			}
		}
	}
	return nil
}

// addExpr parses expr and records the metrics it selects.
func (m *Monitoring) addExpr(where, expr string) error {
	parsed, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return err
	}
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok && vs.Name != "" && !slices.Contains(m.Metrics[vs.Name], where) {
			m.Metrics[vs.Name] = append(m.Metrics[vs.Name], where)
		}
		return nil
	})
	return nil
}

// Alerts lists the alert names of the rules.
func (m *Monitoring) Alerts() []string {
	var out []string
	for _, g := range m.Rules.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r.Alert)
			}
		}
	}
	return out
}

// MissingMetrics returns the metric names used that no sample of exposition (the text of
// /metrics) has, each with where it is used.
func (m *Monitoring) MissingMetrics(exposition string) []string {
	present := map[string]bool{}
	for _, line := range strings.Split(exposition, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		present[name] = true
	}
	var missing []string
	for name, where := range m.Metrics {
		if !present[name] {
			missing = append(missing, fmt.Sprintf("%s (used by %s)", name, strings.Join(where, ", ")))
		}
	}
	slices.Sort(missing)
	return missing
}
