package pass

import (
	"context"
	"testing"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// TestStallIsLoggedOnceAtTheDefaultVerbosity keeps a stalled object from adding a line to the
// operator's log on every pass: the stall is said when Ready turns False for its reason.
func TestStallIsLoggedOnceAtTheDefaultVerbosity(t *testing.T) {
	g := NewWithT(t)
	var lines []string
	ctx := ctrl.LoggerInto(context.Background(), funcr.New(func(prefix, args string) {
		lines = append(lines, args)
	}, funcr.Options{Verbosity: 0}))
	stalled := Outcome{Class: ClassStalled, Reason: "Collision", Message: "ConfigMap a/b is not ours"}

	logOutcome(ctx, stalled, nil)
	g.Expect(lines).To(HaveLen(1))
	g.Expect(lines[0]).To(ContainSubstring(`"reason"="Collision"`))

	logOutcome(ctx, stalled, &metav1.Condition{Status: metav1.ConditionFalse, Reason: "Collision"})
	g.Expect(lines).To(HaveLen(1), "the same stall again is not news")

	logOutcome(ctx, stalled, &metav1.Condition{Status: metav1.ConditionFalse, Reason: "RenderFailed"})
	g.Expect(lines).To(HaveLen(2), "a stall for a new reason is")

	logOutcome(ctx, Outcome{Class: ClassWaiting, Reason: "ProbesPending"}, nil)
	g.Expect(lines).To(HaveLen(2), "waiting is logged at V(1)")
}
