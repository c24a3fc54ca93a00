package rollout

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// windowSearch bounds how far ahead nextInside looks for the rollout's next time inside its
// windows, and windowSteps how many openings it visits on the way (windows that overlap
// themselves, "*/10 * * * *" for 20 minutes, would otherwise take a step every 10 minutes).
const (
	windowSearch = 366 * 24 * time.Hour
	windowSteps  = 1000
)

// window is one spec.windows entry, parsed.
type window struct {
	deny     bool
	schedule cron.Schedule
	duration time.Duration
	location *time.Location
}

// parseWindows parses spec.windows; an error names the entry, its field and the rule it breaks.
func parseWindows(specs []convoyv1alpha1.RolloutWindow) ([]window, error) {
	windows := make([]window, 0, len(specs))
	for i, spec := range specs {
		w, err := parseWindow(spec)
		if err != nil {
			return nil, fmt.Errorf("invalid spec.windows[%d].%w", i, err)
		}
		windows = append(windows, w)
	}
	return windows, nil
}

// parseWindow parses one window; its error starts with the field's name.
func parseWindow(spec convoyv1alpha1.RolloutWindow) (window, error) {
	w := window{deny: spec.Kind == convoyv1alpha1.WindowDeny, duration: spec.Duration.Duration}
	if spec.Kind != convoyv1alpha1.WindowAllow && !w.deny {
		return w, fmt.Errorf("kind %q: must be Allow or Deny", spec.Kind)
	}
	if strings.Contains(spec.Schedule, "TZ=") {
		return w, fmt.Errorf("schedule %q: must not name a time zone; timeZone does", spec.Schedule)
	}
	schedule, err := cron.ParseStandard(spec.Schedule)
	if err != nil {
		return w, fmt.Errorf("schedule %q: must be a five-field cron expression or a descriptor such as @daily: %w",
			spec.Schedule, err)
	}
	w.schedule = schedule
	if w.duration <= 0 {
		return w, fmt.Errorf("duration %s: must be positive", spec.Duration.Duration)
	}
	if spec.TimeZone == "Local" {
		return w, fmt.Errorf("timeZone %q: must be an IANA time zone name", spec.TimeZone)
	}
	if w.location, err = time.LoadLocation(spec.TimeZone); err != nil {
		return w, fmt.Errorf("timeZone %q: must be an IANA time zone name: %w", spec.TimeZone, err)
	}
	return w, nil
}

// openedAt returns the earliest time of w's schedule in (t-duration, t]: an opening that keeps
// w open at t; zero when w is closed at t.
func (w window) openedAt(t time.Time) time.Time {
	s := w.schedule.Next(t.Add(-w.duration).In(w.location))
	if s.IsZero() || s.After(t) {
		return time.Time{}
	}
	return s
}

// open reports whether w is open at t: the latest time s of its schedule at or before t has
// t < s + duration.
func (w window) open(t time.Time) bool {
	return !w.openedAt(t).IsZero()
}

// closesAt returns when w, open at t, closes: the end of the stretch of its openings that
// overlap one another, each step taking one of budget; zero when it has not closed within
// budget.
func (w window) closesAt(t time.Time, budget *int) time.Time {
	s := w.openedAt(t)
	end := s.Add(w.duration)
	for ; *budget > 0; *budget-- {
		s = w.schedule.Next(s)
		if s.IsZero() || s.After(end) {
			return end
		}
		end = latest(end, s.Add(w.duration))
	}
	return time.Time{}
}

// inside reports whether t is inside windows: an allowed window is open (or none is listed)
// and no deny window is.
func inside(windows []window, t time.Time) bool {
	return !denied(windows, t) && allowed(windows, t)
}

// nextInside returns the first time at or after from that is inside windows, in UTC: past the
// stretch of every open deny window, then at the next opening of an allowed window, and so on,
// looking windowSearch and windowSteps ahead; zero when there is none so soon.
func nextInside(windows []window, from time.Time) time.Time {
	limit, budget := from.Add(windowSearch), windowSteps
	t := from
	for ; budget > 0 && !t.IsZero() && !t.After(limit); budget-- {
		switch {
		case denied(windows, t):
			t = pastDenials(windows, t, &budget)
		case !allowed(windows, t):
			t = nextAllowed(windows, t)
		default:
			return t.UTC()
		}
	}
	return time.Time{}
}

// denied reports whether a deny window is open at t.
func denied(windows []window, t time.Time) bool {
	for _, w := range windows {
		if w.deny && w.open(t) {
			return true
		}
	}
	return false
}

// allowed reports whether an allowed window is open at t, or none is listed.
func allowed(windows []window, t time.Time) bool {
	listed := false
	for _, w := range windows {
		if !w.deny {
			if w.open(t) {
				return true
			}
			listed = true
		}
	}
	return !listed
}

// pastDenials returns when the last of the deny windows open at t closes; zero when one does
// not close within budget.
func pastDenials(windows []window, t time.Time, budget *int) time.Time {
	end := t
	for _, w := range windows {
		if !w.deny || !w.open(t) {
			continue
		}
		c := w.closesAt(t, budget)
		if c.IsZero() {
			return c
		}
		end = latest(end, c)
	}
	return end
}

// nextAllowed returns the next opening of an allowed window after t; zero when none opens.
func nextAllowed(windows []window, t time.Time) time.Time {
	var next time.Time
	for _, w := range windows {
		if o := w.schedule.Next(t.In(w.location)); !w.deny && !o.IsZero() && (next.IsZero() || o.Before(next)) {
			next = o
		}
	}
	return next
}
