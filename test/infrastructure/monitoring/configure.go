package monitoring

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// SetTargets makes Prometheus scrape exactly targets (host:port, each serving /metrics), through
// its file service discovery, and waits until its active targets are those.
//
// Note: Prometheus throttles the updates of its service discovery, with a back-off that grows
// up to 5s after each update, so a change soon after another can take seconds. Tests set their
// targets once and change what they serve instead (AddonExporter.SetClusters, the ConfigMaps).
// The wait ends with an error after Options.StartTimeout.
func (m *Monitoring) SetTargets(ctx context.Context, targets ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := writeTargets(m.dir, targets); err != nil {
		return fmt.Errorf("writing Prometheus's targets: %w", err)
	}
	want := slices.Compact(slices.Sorted(slices.Values(targets)))
	ctx, cancel := context.WithTimeout(ctx, m.opts.StartTimeout)
	defer cancel()
	var active []string
	err := poll(ctx, 50*time.Millisecond, func() (bool, error) {
		var err error
		active, err = m.activeTargets(ctx)
		return slices.Equal(active, want), err
	})
	if err != nil {
		return fmt.Errorf("prometheus scrapes %v, not %v: %w", active, want, err)
	}
	return nil
}

// activeTargets returns the sorted addresses Prometheus scrapes.
func (m *Monitoring) activeTargets(ctx context.Context) ([]string, error) {
	var data struct {
		ActiveTargets []struct {
			Labels map[string]string `json:"labels"`
		} `json:"activeTargets"`
	}
	if err := m.getPrometheusAPI(ctx, "/api/v1/targets?state=active", &data); err != nil {
		return nil, err
	}
	var out []string
	for _, t := range data.ActiveTargets {
		out = append(out, t.Labels["instance"])
	}
	slices.Sort(out)
	return out, nil
}

// SetRules makes Prometheus's rule files exactly files (a name without extension → the
// content of a Prometheus rule file, YAML with groups of rules) and reloads its configuration.
// A rule Prometheus rejects fails the reload, with its message; it then keeps its former rules.
func (m *Monitoring) SetRules(ctx context.Context, files map[string]string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := writeRules(m.dir, files); err != nil {
		return fmt.Errorf("writing Prometheus's rules: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.PrometheusURL+"/-/reload", nil)
	if err != nil {
		return err
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return fmt.Errorf("reloading Prometheus: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		// The answer only says the reload failed; the log says why.
		return fmt.Errorf("reloading Prometheus: %s: %s; its last output:\n%s", resp.Status,
			bytes.TrimSpace(body), m.prometheus.Tail(3))
	}
	return nil
}

// poll calls done every interval until it returns true, or returns its last error (or ctx's)
// when ctx ends.
func poll(ctx context.Context, interval time.Duration, done func() (bool, error)) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, err := done()
		if ok && err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-tick.C:
		}
	}
}
