package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// rolloutWindow returns a window spec.
func rolloutWindow(kind, schedule string, d time.Duration, tz string) convoyv1alpha1.RolloutWindow {
	return convoyv1alpha1.RolloutWindow{Kind: kind, Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: tz}
}

// mustWindows parses specs and fails the test on an error.
func mustWindows(g Gomega, specs ...convoyv1alpha1.RolloutWindow) []window {
	ws, err := parseWindows(specs)
	g.Expect(err).NotTo(HaveOccurred())
	return ws
}

func TestWindowInvalidSpecsNameTheWindowAndTheField(t *testing.T) {
	g := NewWithT(t)
	good := rolloutWindow(convoyv1alpha1.WindowAllow, "0 22 * * 1-5", 4*time.Hour, "Europe/Berlin")
	for _, tc := range []struct {
		bad  convoyv1alpha1.RolloutWindow
		want string
	}{
		{rolloutWindow(convoyv1alpha1.WindowDeny, "0 25 * * *", time.Hour, ""), `spec.windows[1].schedule "0 25 * * *": must be a five-field cron expression`},
		{rolloutWindow(convoyv1alpha1.WindowDeny, "0 0 * * * *", time.Hour, ""), `spec.windows[1].schedule "0 0 * * * *"`},
		{rolloutWindow(convoyv1alpha1.WindowDeny, "CRON_TZ=UTC 0 1 * * *", time.Hour, ""), `spec.windows[1].schedule "CRON_TZ=UTC 0 1 * * *": must not name a time zone`},
		{rolloutWindow(convoyv1alpha1.WindowDeny, "@daily", time.Hour, "Mars/Olympus"), `spec.windows[1].timeZone "Mars/Olympus": must be an IANA time zone name`},
		{rolloutWindow(convoyv1alpha1.WindowDeny, "@daily", time.Hour, "Local"), `spec.windows[1].timeZone "Local"`},
		{rolloutWindow(convoyv1alpha1.WindowDeny, "@daily", 0, ""), `spec.windows[1].duration 0s: must be positive`},
		{rolloutWindow("Maybe", "@daily", time.Hour, ""), `spec.windows[1].kind "Maybe": must be Allow or Deny`},
	} {
		w := newWorld().fleet(1, "early").progressedAll(revision(1))
		w.hcpkg.Spec.Windows = []convoyv1alpha1.RolloutWindow{good, tc.bad}
		_, err := Compute(w.input())
		g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
	}
}

func TestWindowOpenAndNext(t *testing.T) {
	g := NewWithT(t)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		g.Expect(err).NotTo(HaveOccurred())
		return v
	}
	// Weeknights 22:00 to 02:00 in Berlin, except a freeze on 24 and 25 December.
	ws := mustWindows(g,
		rolloutWindow(convoyv1alpha1.WindowAllow, "0 22 * * 1-5", 4*time.Hour, "Europe/Berlin"),
		rolloutWindow(convoyv1alpha1.WindowDeny, "0 0 24 12 *", 48*time.Hour, "Europe/Berlin"))

	g.Expect(inside(ws, at("2026-03-02T20:59:59Z"))).To(BeFalse(), "Monday 21:59 CET")
	g.Expect(inside(ws, at("2026-03-02T21:00:00Z"))).To(BeTrue(), "Monday 22:00 CET")
	g.Expect(inside(ws, at("2026-03-03T00:59:59Z"))).To(BeTrue(), "Tuesday 01:59 CET")
	g.Expect(inside(ws, at("2026-03-03T01:00:00Z"))).To(BeFalse(), "Tuesday 02:00 CET")
	g.Expect(inside(ws, at("2026-03-06T23:30:00Z"))).To(BeTrue(), "Friday's window, on Saturday 00:30 CET")
	g.Expect(nextInside(ws, at("2026-03-07T01:30:00Z"))).To(Equal(at("2026-03-09T21:00:00Z")), "Saturday to Monday")
	// Summer time starts on Sunday 29 March: Monday's window opens an hour earlier in UTC.
	g.Expect(nextInside(ws, at("2026-03-28T12:00:00Z"))).To(Equal(at("2026-03-30T20:00:00Z")))
	// The freeze, from 24 December 00:00 CET to 26 December 00:00 CET, closes Wednesday's
	// window at midnight; it ends while Friday's window is open.
	g.Expect(inside(ws, at("2026-12-23T22:30:00Z"))).To(BeTrue(), "Wednesday 23:30 CET")
	g.Expect(inside(ws, at("2026-12-23T23:00:00Z"))).To(BeFalse(), "Thursday 00:00 CET")
	g.Expect(inside(ws, at("2026-12-24T21:30:00Z"))).To(BeFalse())
	g.Expect(nextInside(ws, at("2026-12-23T23:30:00Z"))).To(Equal(at("2026-12-25T23:00:00Z")))
}

func TestWindowDenyOnlyAndNever(t *testing.T) {
	g := NewWithT(t)
	freeze := mustWindows(g, rolloutWindow(convoyv1alpha1.WindowDeny, "@hourly", 30*time.Minute, ""))
	g.Expect(inside(freeze, t0.Add(10*time.Minute))).To(BeFalse())
	g.Expect(nextInside(freeze, t0.Add(10*time.Minute))).To(Equal(t0.Add(30 * time.Minute)))
	g.Expect(inside(freeze, t0.Add(45*time.Minute))).To(BeTrue())

	always := mustWindows(g, rolloutWindow(convoyv1alpha1.WindowDeny, "* * * * *", 2*time.Minute, ""))
	g.Expect(nextInside(always, t0)).To(BeZero(), "a freeze that never ends")

	// 30 February never comes: the window never opens.
	never := mustWindows(g, rolloutWindow(convoyv1alpha1.WindowAllow, "0 0 30 2 *", time.Hour, ""))
	g.Expect(inside(never, t0)).To(BeFalse())
	g.Expect(nextInside(never, t0)).To(BeZero())
}

func TestWindowPlanOutsideAndNever(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal").progressedAll(revision(1))
	w.hcpkg.Spec.Windows = []convoyv1alpha1.RolloutWindow{rolloutWindow(convoyv1alpha1.WindowAllow, "0 0 30 2 *", time.Hour, "")}
	plan := compute(g, w)
	g.Expect(describe(plan)).To(BeEmpty())
	g.Expect(plan.Gate.Type).To(Equal(convoyv1alpha1.GateWindow))
	g.Expect(plan.Gate.Until).To(BeNil())
	g.Expect(plan.Gate.Message).To(ContainSubstring("none opens within"))
	g.Expect(states(plan)).To(Equal([]string{"early=OutsideWindow", "normal=Pending", "late=Done"}))
	g.Expect(plan.RequeueAfter).To(BeZero())

	// Settled: no gate, whatever the windows.
	w.update, w.current = revision(1), ptr(revision(1))
	plan = compute(g, w)
	g.Expect(plan.Gate).To(BeNil())
	g.Expect(plan.Completed).To(BeTrue())
}
