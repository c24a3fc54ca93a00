package checks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// The prometheus kind: a PromQL instant query judged by a CEL condition.
func init() {
	Register(Kind[convoyv1alpha1.PrometheusCheck]{
		Name:  "prometheus",
		Field: func(c *convoyv1alpha1.RolloutCheck) *convoyv1alpha1.PrometheusCheck { return c.Prometheus },
		Spec: func(p *convoyv1alpha1.PrometheusCheck) Spec {
			return &PrometheusCheck{Address: p.Address, Query: p.Query, SuccessCondition: p.SuccessCondition}
		},
		SecretRef: func(p *convoyv1alpha1.PrometheusCheck) *convoyv1alpha1.SecretReference { return p.SecretRef },
		Address:   func(p *convoyv1alpha1.PrometheusCheck) (string, string) { return "prometheus.address", p.Address },
		Subject: func(p *convoyv1alpha1.PrometheusCheck) string {
			return fmt.Sprintf("query %s with condition %s", quoteSubject(p.Query), quoteSubject(p.SuccessCondition))
		},
	})
}

// PrometheusCheck is a PromQL instant query judged by a CEL condition.
type PrometheusCheck struct {
	// Address is Prometheus's base URL, e.g. http://prometheus.monitoring:9090.
	Address string
	// Query is a PromQL expression, a template over Data.
	Query string
	// SuccessCondition is a CEL expression over result (a list of {metric: map(string,
	// string), value: double}) and values (a list of double) that returns a bool.
	SuccessCondition string
}

// Bounds of a Prometheus answer.
const (
	// MaxPrometheusBody bounds the body of a query's answer.
	MaxPrometheusBody = 4 << 20
	// MaxSeries bounds the series of a query's answer: a query that returns more should
	// aggregate.
	MaxSeries = 1000
)

// series is one sample of an instant query's answer.
type series struct {
	Metric map[string]string
	Value  float64
}

// prometheusCheck is a compiled PrometheusCheck.
type prometheusCheck struct {
	address   *url.URL
	query     *tmpl
	condition *condition
}

// Compile validates and compiles the check: its address, its query's template and its
// condition.
func (p *PrometheusCheck) Compile() (Evaluator, error) {
	address, err := parseAddress("prometheus.address", p.Address)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Query) == "" {
		return nil, specError("prometheus.query", "must not be empty", nil)
	}
	query, err := parseTemplate("prometheus.query", p.Query)
	if err != nil {
		return nil, err
	}
	cond, err := compileCondition("prometheus.successCondition", p.SuccessCondition)
	if err != nil {
		return nil, err
	}
	return &prometheusCheck{address: address, query: query, condition: cond}, nil
}

// Evaluate renders the query, runs it and judges the answer with the condition.
func (p *prometheusCheck) Evaluate(ctx context.Context, in Input) (Evaluation, error) {
	query, err := p.query.render(in.Data)
	if err != nil {
		return Evaluation{}, err
	}
	answer, err := p.run(ctx, query, in)
	if err != nil {
		return inconclusive("query %s at %s: %v", quote(query), redactURL(p.address), err), nil
	}
	value := formatSeries(answer)
	ok, err := p.condition.eval(answer)
	switch {
	case err != nil:
		return Evaluation{Outcome: Inconclusive, Value: value,
			Message: fmt.Sprintf("condition %s could not be evaluated: %v; query %s", quote(p.condition.expr), err, quote(query))}, nil
	case !ok:
		return Evaluation{Outcome: Failure, Value: value,
			Message: fmt.Sprintf("condition %s is false for %s; query %s", quote(p.condition.expr), value, quote(query))}, nil
	}
	return Evaluation{Outcome: Success, Value: value,
		Message: fmt.Sprintf("condition %s is true for %s", quote(p.condition.expr), value)}, nil
}

// Describe names the query and the address.
func (p *prometheusCheck) Describe() string {
	return fmt.Sprintf("query %s at %s", quote(p.query.text), redactURL(p.address))
}

// Timeout is requestTimeout: Prometheus is told nine tenths of it (queryTimeout).
func (p *prometheusCheck) Timeout() time.Duration { return requestTimeout }

// run sends query to Prometheus's /api/v1/query and returns its vector or scalar.
func (p *prometheusCheck) run(ctx context.Context, query string, in Input) ([]series, error) {
	// Note: in seconds, as Prometheus reads a number; it refuses a fraction with a unit ("8.9s").
	seconds := strconv.FormatFloat(queryTimeout(ctx).Seconds(), 'f', 3, 64)
	q := url.Values{"query": {query}, "timeout": {seconds}}
	status, body, err := getJSON(ctx, endpoint(p.address, "/api/v1/query", q), in, MaxPrometheusBody)
	if err != nil {
		return nil, err
	}
	return parseQueryAnswer(status, body)
}

// queryTimeout is the time Prometheus is given to evaluate a query: nine tenths of what is
// left of ctx, so that Prometheus stops an expensive query and says so before the client gives
// up on it; at least a millisecond, Prometheus's resolution.
func queryTimeout(ctx context.Context) time.Duration {
	left := requestTimeout
	if deadline, ok := ctx.Deadline(); ok {
		left = min(left, time.Until(deadline))
	}
	return max((left * 9 / 10).Truncate(time.Millisecond), time.Millisecond)
}

// queryAnswer is the envelope of Prometheus's HTTP API.
type queryAnswer struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// parseQueryAnswer decodes an answer of /api/v1/query: an error status carries Prometheus's
// error; a success a vector or a scalar.
func parseQueryAnswer(code int, body []byte) ([]series, error) {
	var a queryAnswer
	if err := json.Unmarshal(body, &a); err != nil || a.Status == "" {
		return nil, fmt.Errorf("answered HTTP %d, not Prometheus's API: %s", code, sample(body))
	}
	if a.Status != "success" {
		return nil, fmt.Errorf("prometheus refused the query (%s): %s", a.ErrorType, a.Error)
	}
	switch a.Data.ResultType {
	case "vector":
		return parseVector(a.Data.Result)
	case "scalar":
		v, err := parseSampleValue(a.Data.Result)
		if err != nil {
			return nil, err
		}
		return []series{{Metric: map[string]string{}, Value: v}}, nil
	}
	return nil, fmt.Errorf("the query returned a %s; it must return a vector or a scalar", a.Data.ResultType)
}

// parseVector decodes a vector result, refusing more than MaxSeries series.
func parseVector(raw json.RawMessage) ([]series, error) {
	var samples []struct {
		Metric    map[string]string `json:"metric"`
		Value     json.RawMessage   `json:"value"`
		Histogram json.RawMessage   `json:"histogram"`
	}
	if err := json.Unmarshal(raw, &samples); err != nil {
		return nil, fmt.Errorf("decoding the vector: %w", err)
	}
	if len(samples) > MaxSeries {
		return nil, fmt.Errorf("the query returned %d series, more than %d: aggregate it", len(samples), MaxSeries)
	}
	out := make([]series, 0, len(samples))
	for _, s := range samples {
		if s.Value == nil {
			return nil, errors.New("the query returned a native histogram; it must return float samples")
		}
		v, err := parseSampleValue(s.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, series{Metric: s.Metric, Value: v})
	}
	sort.SliceStable(out, func(i, j int) bool { return labelsText(out[i].Metric, nil) < labelsText(out[j].Metric, nil) })
	return out, nil
}

// parseSampleValue decodes a [timestamp, "value"] pair.
func parseSampleValue(raw json.RawMessage) (float64, error) {
	var pair []json.RawMessage
	if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
		return 0, errors.New("decoding a sample: not a [timestamp, value] pair")
	}
	var text string
	if err := json.Unmarshal(pair[1], &text); err != nil {
		return 0, errors.New("decoding a sample: its value is not a string")
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, fmt.Errorf("decoding a sample: %q is not a number", text)
	}
	return v, nil
}

// formatSeries writes an answer as "{labels} value, ...", cut at MaxValueBytes. Only the labels
// that tell the series apart are written (all but __name__ for a single series), so that the
// bounded value names what differs: the hosted cluster, not the job.
func formatSeries(answer []series) string {
	if len(answer) == 0 {
		return "no series"
	}
	shared := sharedLabels(answer)
	var sb strings.Builder
	for i, s := range answer {
		if sb.Len() > MaxValueBytes {
			fmt.Fprintf(&sb, " and %d more", len(answer)-i)
			break
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		if text := labelsText(s.Metric, shared); text != "" {
			sb.WriteString(text)
			sb.WriteByte(' ')
		}
		sb.WriteString(strconv.FormatFloat(s.Value, 'g', -1, 64))
	}
	return sb.String()
}

// sharedLabels returns the labels every series of answer has with the same value, and
// __name__; none but __name__ for a single series.
func sharedLabels(answer []series) map[string]bool {
	shared := map[string]bool{"__name__": true}
	if len(answer) < 2 {
		return shared
	}
	for name, value := range answer[0].Metric {
		same := true
		for _, s := range answer[1:] {
			if v, ok := s.Metric[name]; !ok || v != value {
				same = false
				break
			}
		}
		shared[name] = same
	}
	return shared
}

// labelsText writes labels as {a="1", b="2"}, sorted by name, leaving out those in omit; ""
// when none is left.
func labelsText(labels map[string]string, omit map[string]bool) string {
	names := make([]string, 0, len(labels))
	for n := range labels {
		if !omit[n] {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n+"="+strconv.Quote(labels[n]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// quote writes an expression for a message: in backquotes, or Go-quoted when it holds a
// backquote or a line break.
func quote(expr string) string {
	if strings.ContainsAny(expr, "`\n\r") {
		return strconv.Quote(expr)
	}
	return "`" + expr + "`"
}
