package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// maxAPIBody bounds the answers of both servers' APIs read here.
const maxAPIBody = 4 << 20

// Sample is one series of an instant query's vector result.
type Sample struct {
	// Metric is the series' labels, with __name__ when the query keeps it.
	Metric map[string]string
	// Value is the sample's value.
	Value float64
}

// Query runs an instant PromQL query through Prometheus's /api/v1/query and returns its vector
// (a scalar or string result is an error): what a test asserts before a check reads the same.
func (m *Monitoring) Query(ctx context.Context, promQL string) ([]Sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := m.getPrometheusAPI(ctx, "/api/v1/query?query="+url.QueryEscape(promQL), &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: a %s, not a vector", promQL, data.ResultType)
	}
	out := make([]Sample, 0, len(data.Result))
	for _, r := range data.Result {
		text, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v: %w", promQL, r.Value[1], err)
		}
		out = append(out, Sample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// getPrometheusAPI GETs path from Prometheus's API and decodes the data of a success.
func (m *Monitoring) getPrometheusAPI(ctx context.Context, path string, data any) error {
	var envelope struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := m.getJSON(ctx, m.PrometheusURL+path, &envelope); err != nil {
		return err
	}
	if envelope.Status != "success" {
		return fmt.Errorf("prometheus %s: %s", path, envelope.Error)
	}
	return json.Unmarshal(envelope.Data, data)
}

// Alert is an alert Alertmanager holds.
type Alert struct {
	// Labels identify the alert: alertname, the rule's labels and the series'.
	Labels map[string]string `json:"labels"`
	// StartsAt is when the alert started firing.
	StartsAt time.Time `json:"startsAt"`
	// Status says whether it is active, silenced or inhibited.
	Status struct {
		State string `json:"state"`
	} `json:"status"`
}

// Alerts returns the alerts Alertmanager's /api/v2/alerts lists (the ones not resolved).
func (m *Monitoring) Alerts(ctx context.Context) ([]Alert, error) {
	var alerts []Alert
	return alerts, m.getJSON(ctx, m.AlertmanagerURL+"/api/v2/alerts", &alerts)
}

// getJSON GETs url and decodes its JSON answer into v; Prometheus's API answers its errors
// with a JSON envelope too, so any status with a JSON body decodes.
func (m *Monitoring) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIBody))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %s: %w", url, resp.Status, err)
	}
	return nil
}
