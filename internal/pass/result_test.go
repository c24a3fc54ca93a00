package pass

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestClassify(t *testing.T) {
	transient := errors.New("connection reset")
	cases := []struct {
		name       string
		err        error
		wantClass  Class
		wantReason string
		wantResult ctrl.Result
		wantErr    bool
	}{
		{"success", nil, ClassSuccess, "", ctrl.Result{RequeueAfter: time.Minute}, false},
		{"stalling", Stallf("InvalidSpec", "bad %s", "key"), ClassStalled, "InvalidSpec", ctrl.Result{}, false},
		{"stalling rechecked at the interval", StallRecheckf("TakeoverContested", "contested"), ClassStalled, "TakeoverContested", ctrl.Result{RequeueAfter: time.Minute}, false},
		{"wrapped stalling", fmt.Errorf("step: %w", Stallf("InvalidSpec", "bad")), ClassStalled, "InvalidSpec", ctrl.Result{}, false},
		{"waiting with delay", Waitf("DependencyNotReady", 5*time.Second, "wait"), ClassWaiting, "DependencyNotReady", ctrl.Result{RequeueAfter: 5 * time.Second}, false},
		{"waiting defaults to interval", Waitf("RefNotFound", 0, "wait"), ClassWaiting, "RefNotFound", ctrl.Result{RequeueAfter: time.Minute}, false},
		{"generic", Retryf("GitOperationFailed", "net: %w", transient), ClassRetry, "GitOperationFailed", ctrl.Result{}, true},
		{"unclassified", transient, ClassRetry, FailedReason, ctrl.Result{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out := Classify(tc.err, time.Minute)
			g.Expect(out.Class).To(Equal(tc.wantClass), out.Class.String())
			g.Expect(out.Reason).To(Equal(tc.wantReason))
			g.Expect(out.Result).To(Equal(tc.wantResult))
			g.Expect(out.Err != nil).To(Equal(tc.wantErr))
			if tc.err != nil {
				g.Expect(out.Message).To(Equal(tc.err.Error()))
			}
		})
	}
}

func TestErrorsUnwrap(t *testing.T) {
	g := NewWithT(t)
	base := errors.New("base")
	for _, err := range []error{Stallf("R", "x: %w", base), Waitf("R", 0, "x: %w", base), Retryf("R", "x: %w", base)} {
		g.Expect(errors.Is(err, base)).To(BeTrue())
		g.Expect(ReasonOf(err)).To(Equal("R"))
	}
}

func TestJitter(t *testing.T) {
	g := NewWithT(t)
	for range 1000 {
		d := Jitter(time.Minute)
		g.Expect(d).To(BeNumerically(">=", 54*time.Second))
		g.Expect(d).To(BeNumerically("<=", 66*time.Second))
	}
	g.Expect(Jitter(0)).To(BeZero())
}
