package pass

import (
	"errors"
	"math/rand/v2"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Class is the class of a reconcile outcome.
type Class int

const (
	// ClassSuccess is a pass that reached its goal.
	ClassSuccess Class = iota
	// ClassStalled is a pass that cannot go on until the user changes something; no retry.
	ClassStalled
	// ClassWaiting is a pass that waits for something else; requeue after a delay, no backoff.
	ClassWaiting
	// ClassRetry is a transient error; the error goes back to the workqueue for backoff.
	ClassRetry
)

// String returns the class name, for logs.
func (c Class) String() string {
	switch c {
	case ClassSuccess:
		return "Success"
	case ClassStalled:
		return "Stalled"
	case ClassWaiting:
		return "Waiting"
	default:
		return "Retry"
	}
}

// Outcome is what one reconcile pass amounts to: what to return to controller-runtime and which
// reason and message the summary conditions get.
type Outcome struct {
	// Class of the outcome.
	Class Class
	// Reason of the Ready (and Stalled or Reconciling) condition; empty on success.
	Reason string
	// Message of those conditions; empty on success.
	Message string
	// Result to return to controller-runtime.
	Result ctrl.Result
	// Err to return to controller-runtime: only transient errors are returned.
	Err error
}

// Classify maps the error of a reconcile pass and the (already jittered) success interval to
// the outcome. It is the one place where Stalling, Waiting and Generic errors are interpreted.
//
//   - nil: requeue after interval.
//   - *Stalling: no requeue (unless its RequeueAfter is set, or Recheck: after interval) and no
//     error: the next change of the object triggers a pass.
//   - *Waiting: requeue after its RequeueAfter (or interval), no error.
//   - anything else: the error is returned for rate-limited backoff.
func Classify(err error, interval time.Duration) Outcome {
	if err == nil {
		return Outcome{Class: ClassSuccess, Result: ctrl.Result{RequeueAfter: interval}}
	}
	var (
		s *Stalling
		w *Waiting
	)
	switch {
	case errors.As(err, &s):
		after := s.RequeueAfter
		if s.Recheck && after <= 0 {
			after = interval
		}
		return Outcome{Class: ClassStalled, Reason: s.Reason, Message: err.Error(),
			Result: ctrl.Result{RequeueAfter: after}}
	case errors.As(err, &w):
		after := w.RequeueAfter
		if after <= 0 {
			after = interval
		}
		return Outcome{Class: ClassWaiting, Reason: w.Reason, Message: err.Error(),
			Result: ctrl.Result{RequeueAfter: after}}
	default:
		return Outcome{Class: ClassRetry, Reason: ReasonOf(err), Message: err.Error(), Err: err}
	}
}

// JitterFraction is the maximum relative deviation Jitter applies.
const JitterFraction = 0.1

// Jitter returns d moved at random by up to ±10%, so that objects created together do not
// poll together.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	delta := (rand.Float64()*2 - 1) * JitterFraction * float64(d)
	return d + time.Duration(delta)
}
