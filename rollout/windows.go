package rollout

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// windowSearch bounds how far ahead nextInside looks for the rollout's next time inside its
// windows, and windowSteps how many openings and closings it visits on the way.
const (
	windowSearch = 366 * 24 * time.Hour
	windowSteps  = 10000
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
		return w, fmt.Errorf("schedule %q: must be a five-field cron expression or a descriptor such as @daily: %v",
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
		return w, fmt.Errorf("timeZone %q: must be an IANA time zone name: %v", spec.TimeZone, err)
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

// nextChange returns the first time after t when w may open or close; zero when never.
func (w window) nextChange(t time.Time) time.Time {
	next := w.schedule.Next(t.In(w.location))
	if s := w.openedAt(t); !s.IsZero() && (next.IsZero() || s.Add(w.duration).Before(next)) {
		next = s.Add(w.duration)
	}
	return next
}

// inside reports whether t is inside windows: an allowed window is open (or none is listed)
// and no deny window is.
func inside(windows []window, t time.Time) bool {
	allowed, anyAllow := false, false
	for _, w := range windows {
		switch {
		case w.deny && w.open(t):
			return false
		case !w.deny:
			anyAllow = true
			allowed = allowed || w.open(t)
		}
	}
	return allowed || !anyAllow
}

// nextInside returns the first time at or after from that is inside windows, in UTC, looking
// windowSearch ahead; zero when there is none so soon.
func nextInside(windows []window, from time.Time) time.Time {
	limit := from.Add(windowSearch)
	t := from
	for range windowSteps {
		if inside(windows, t) {
			return t.UTC()
		}
		var next time.Time
		for _, w := range windows {
			if c := w.nextChange(t); !c.IsZero() && (next.IsZero() || c.Before(next)) {
				next = c
			}
		}
		if next.IsZero() || next.After(limit) {
			return time.Time{}
		}
		t = next
	}
	return time.Time{}
}
