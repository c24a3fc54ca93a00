package checks

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Check is a compiled check: parse once, evaluate many times. It is safe for concurrent use.
type Check struct {
	prometheus *prometheusCheck
	alerts     *alertsCheck
	http       *httpCheck
}

// Compile validates spec and compiles its templates and condition. Every error is a
// *SpecError naming the field and the rule it breaks.
func Compile(spec Spec) (*Check, error) {
	set := 0
	for _, isSet := range []bool{spec.Prometheus != nil, spec.Alerts != nil, spec.HTTP != nil} {
		if isSet {
			set++
		}
	}
	if set != 1 {
		return nil, specError("check", "must set exactly one of prometheus, alerts and http", fmt.Errorf("sets %d", set))
	}
	var (
		c   Check
		err error
	)
	switch {
	case spec.Prometheus != nil:
		c.prometheus, err = compilePrometheus(spec.Prometheus)
	case spec.Alerts != nil:
		c.alerts, err = compileAlerts(spec.Alerts)
	default:
		c.http, err = compileHTTP(spec.HTTP)
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// Evaluate evaluates the check once for in. I/O never returns an error: an unreachable server,
// a timeout or an unexpected answer is an Inconclusive evaluation. The error is a *SpecError,
// of a template that fails to render with in.Data or renders a matcher that does not parse.
// The evaluation holds no credential of in.Credentials, and is bounded.
func (c *Check) Evaluate(ctx context.Context, in Input) (Evaluation, error) {
	var (
		ev  Evaluation
		err error
	)
	switch {
	case c.prometheus != nil:
		ev, err = c.prometheus.evaluate(ctx, in)
	case c.alerts != nil:
		ev, err = c.alerts.evaluate(ctx, in)
	case c.http != nil:
		ev = c.http.evaluate(ctx, in)
	default:
		err = errors.New("evaluating a check that was not compiled")
	}
	if err != nil {
		return Evaluation{}, err
	}
	return finish(ev, in.Credentials), nil
}

// Describe returns what the check looks at, for messages: the query, the matchers or the URL
// (without user information).
func (c *Check) Describe() string {
	switch {
	case c.prometheus != nil:
		return fmt.Sprintf("query %s at %s", quote(c.prometheus.query.text), redactURL(c.prometheus.address))
	case c.alerts != nil:
		return fmt.Sprintf("alerts matching %v at %s", c.alerts.matcherTexts, redactURL(c.alerts.address))
	case c.http != nil:
		return "POST " + redactURL(c.http.url)
	}
	return ""
}

// requestTimeout is the time an evaluation gives a query to Prometheus or Alertmanager.
const requestTimeout = 10 * time.Second
