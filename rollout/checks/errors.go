package checks

import "fmt"

// SpecError is a check whose spec cannot work: a template or a CEL condition that does not
// compile or render, an address that is not a URL. The rollout controller reports it as an
// invalid spec; retrying does not help.
type SpecError struct {
	// Field is the check's field, e.g. "prometheus.query" or "alerts.matchers[1]".
	Field string
	// Rule is the rule the field breaks, e.g. "must be a template over the partition's data".
	Rule string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *SpecError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s %s", e.Field, e.Rule)
	}
	return fmt.Sprintf("%s %s: %v", e.Field, e.Rule, e.Err)
}

// Unwrap returns the cause.
func (e *SpecError) Unwrap() error { return e.Err }

// specError builds a *SpecError.
func specError(field, rule string, err error) *SpecError {
	return &SpecError{Field: field, Rule: rule, Err: err}
}
