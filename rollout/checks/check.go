package checks

import (
	"context"
	"errors"
	"time"
)

// Evaluator is a check of one kind, compiled from its Spec: parsed once, evaluated many times,
// safe for concurrent use.
type Evaluator interface {
	// Evaluate evaluates the check once for in. I/O never returns an error: an unreachable
	// server, a timeout or an unexpected answer is an Inconclusive evaluation. The error is a
	// *SpecError, of a template that fails to render with in.Data.
	Evaluate(ctx context.Context, in Input) (Evaluation, error)
	// Describe returns what the check looks at, for messages, without user information.
	Describe() string
	// Timeout bounds one evaluation; the caller cancels it after that.
	Timeout() time.Duration
}

// Check is a compiled check: parse once, evaluate many times. It is safe for concurrent use.
type Check struct {
	eval Evaluator
}

// Compile validates spec and compiles its templates and condition. Every error is a
// *SpecError naming the field and the rule it breaks.
func Compile(spec Spec) (*Check, error) {
	if spec == nil {
		return nil, specError("check", "must set exactly one of "+joinKinds(), errors.New("sets none"))
	}
	eval, err := spec.Compile()
	if err != nil {
		return nil, err
	}
	return &Check{eval: eval}, nil
}

// Evaluate evaluates the check once for in. I/O never returns an error: an unreachable server,
// a timeout or an unexpected answer is an Inconclusive evaluation. The error is a *SpecError,
// of a template that fails to render with in.Data or renders a matcher that does not parse.
// The evaluation holds no credential of in.Credentials, and is bounded.
func (c *Check) Evaluate(ctx context.Context, in Input) (Evaluation, error) {
	if c.eval == nil {
		return Evaluation{}, errors.New("evaluating a check that was not compiled")
	}
	ev, err := c.eval.Evaluate(ctx, in)
	if err != nil {
		return Evaluation{}, err
	}
	return finish(ev, in.Credentials), nil
}

// Describe returns what the check looks at, for messages: the query, the matchers or the URL
// (without user information).
func (c *Check) Describe() string {
	if c.eval == nil {
		return ""
	}
	return c.eval.Describe()
}

// Timeout returns the bound of one evaluation: an HTTP check's timeout, requestTimeout for a
// query to Prometheus or Alertmanager.
func (c *Check) Timeout() time.Duration {
	if c.eval == nil {
		return requestTimeout
	}
	return c.eval.Timeout()
}

// requestTimeout is the time an evaluation gives a query to Prometheus or Alertmanager.
const requestTimeout = 10 * time.Second
