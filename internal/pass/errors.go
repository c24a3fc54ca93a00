package pass

import (
	"errors"
	"fmt"
	"time"
)

// FailedReason is the Ready reason of an unclassified (transient) error.
const FailedReason = "ReconciliationFailed"

// Stalling is an error the controller cannot get past without a change by the user (spec,
// referenced Secret or revision). The object gets Stalled=True and is not retried, unless
// RequeueAfter is set: a stall that may clear by itself (a failed Package of a rollout that
// recovers) is still looked at then.
type Stalling struct {
	// Reason is the CamelCase condition reason.
	Reason string
	// Err is the underlying error; its message becomes the condition message.
	Err error
	// RequeueAfter, when positive, is when to look again.
	RequeueAfter time.Duration
	// Recheck: the stall may clear by a change the object's watches do not see (a label removed
	// from an object it applies in a hosted cluster), so it is looked at again after the success
	// interval, as if it had settled.
	Recheck bool
}

// Error implements error.
func (e *Stalling) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Stalling) Unwrap() error { return e.Err }

// Waiting is an error that clears once something else happens (a dependency gets ready, a
// remote gets the missing ref). The object is requeued after RequeueAfter, without backoff.
type Waiting struct {
	// Reason is the CamelCase condition reason.
	Reason string
	// Err is the underlying error; its message becomes the condition message.
	Err error
	// RequeueAfter is when to look again; zero means the success interval.
	RequeueAfter time.Duration
}

// Error implements error.
func (e *Waiting) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Waiting) Unwrap() error { return e.Err }

// Generic is a transient error with a reason: it is returned to the workqueue, which retries
// it with rate-limited backoff. An unclassified error is treated as Generic with FailedReason.
type Generic struct {
	// Reason is the CamelCase condition reason.
	Reason string
	// Err is the underlying error; its message becomes the condition message.
	Err error
}

// Error implements error.
func (e *Generic) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Generic) Unwrap() error { return e.Err }

// Stallf returns a Stalling error with a formatted message (%w allowed).
func Stallf(reason, format string, args ...any) error {
	return &Stalling{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// StallRecheckf returns a Stalling error that is looked at again after the success interval.
func StallRecheckf(reason, format string, args ...any) error {
	return &Stalling{Reason: reason, Err: fmt.Errorf(format, args...), Recheck: true}
}

// StallAfterf returns a Stalling error that is looked at again after after.
func StallAfterf(reason string, after time.Duration, format string, args ...any) error {
	return &Stalling{Reason: reason, Err: fmt.Errorf(format, args...), RequeueAfter: after}
}

// Waitf returns a Waiting error with a formatted message (%w allowed).
func Waitf(reason string, after time.Duration, format string, args ...any) error {
	return &Waiting{Reason: reason, Err: fmt.Errorf(format, args...), RequeueAfter: after}
}

// Retryf returns a Generic error with a formatted message (%w allowed).
func Retryf(reason, format string, args ...any) error {
	return &Generic{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// ReasonOf returns the reason carried by err, or FailedReason when err is not classified.
func ReasonOf(err error) string {
	var (
		s *Stalling
		w *Waiting
		g *Generic
	)
	switch {
	case errors.As(err, &s):
		return s.Reason
	case errors.As(err, &w):
		return w.Reason
	case errors.As(err, &g):
		return g.Reason
	}
	return FailedReason
}
