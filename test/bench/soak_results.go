package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// SoakResults is what a soak writes to soak-results.json.
type SoakResults struct {
	Seed     uint64     `json:"seed"`
	Config   SoakConfig `json:"config"`
	Started  time.Time  `json:"started"`
	Duration string     `json:"duration"`
	CPUs     int        `json:"cpus"`
	// Commits counts the commits pushed (force-pushes included).
	Commits  int           `json:"commits"`
	Events   []SoakEvent   `json:"events"`
	Samples  []SoakSample  `json:"samples"`
	Stalls   []SoakVerdict `json:"stalls"`
	Slopes   []SoakSlope   `json:"slopes"`
	Verdicts []SoakVerdict `json:"verdicts"`
}

// SoakEvent is one step of the schedule.
type SoakEvent struct {
	At   float64 `json:"at"`
	Name string  `json:"name"`
	Note string  `json:"note,omitempty"`
}

// SoakVerdict is one invariant's verdict.
type SoakVerdict struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"`
}

// SoakSlope is the least-squares slope of one series over the last half of the run.
type SoakSlope struct {
	Series string  `json:"series"`
	Mean   float64 `json:"mean"`
	// PerHour is the slope in units per hour; Growth what it adds over the half, and Bound
	// the most it may add.
	PerHour float64 `json:"perHour"`
	Growth  float64 `json:"growth"`
	Bound   float64 `json:"bound"`
	Passed  bool    `json:"passed"`
}

// Passed reports whether every invariant held.
func (r *SoakResults) Passed() bool {
	for _, v := range r.Verdicts {
		if !v.Passed {
			return false
		}
	}
	return len(r.Verdicts) > 0
}

// Slope bounds: over the last half of the run, the least-squares line of a series may rise by
// at most soakSlopeRelative of the half's mean, plus an absolute slack for the small counts.
const (
	soakSlopeRelative = 0.10
	// soakSlopeMinWindow is the shortest half whose slope is judged: a shorter one is mostly
	// warm-up (a 2-minute run logs its slopes, judged or not).
	soakSlopeMinWindow = 5 * time.Minute
)

// soakSeries are the series whose slope is judged, with their absolute slack.
var soakSeries = []struct {
	name  string
	slack float64
	value func(SoakSample) float64
}{
	{"rss", 0, func(s SoakSample) float64 { return float64(s.RSS) }},
	{"heap", 0, func(s SoakSample) float64 { return float64(s.Heap) }},
	{"goroutines", 10, func(s SoakSample) float64 { return float64(s.Goroutines) }},
	{"fds", 5, func(s SoakSample) float64 { return float64(s.FDs) }},
}

// slopes fits a line to each series over the last half of samples.
func slopes(samples []SoakSample) []SoakSlope {
	if len(samples) < 4 {
		return nil
	}
	var measured []SoakSample
	for _, smp := range samples {
		if smp.Error == "" {
			measured = append(measured, smp)
		}
	}
	if len(measured) < 4 {
		return nil
	}
	half := measured[len(measured)/2:]
	var out []SoakSlope
	for _, series := range soakSeries {
		xs, ys := make([]float64, len(half)), make([]float64, len(half))
		for i, smp := range half {
			xs[i], ys[i] = smp.At, series.value(smp)
		}
		b, mean := leastSquares(xs, ys)
		span := xs[len(xs)-1] - xs[0]
		sl := SoakSlope{Series: series.name, Mean: mean, PerHour: b * 3600, Growth: b * span,
			Bound: soakSlopeRelative*mean + series.slack}
		sl.Passed = sl.Growth <= sl.Bound
		out = append(out, sl)
	}
	return out
}

// leastSquares returns the slope of the least-squares line through (xs, ys) and the mean of ys.
func leastSquares(xs, ys []float64) (slope, mean float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 || math.IsNaN(den) {
		return 0, sy / n
	}
	return (n*sxy - sx*sy) / den, sy / n
}

// finalVerdicts checks the invariants at the end: each per-sample one over every sample, the
// stalls, the settle (runErr), the objects and the slopes.
func (s *soakRun) finalVerdicts(ctx context.Context, runErr error) []SoakVerdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SoakVerdict
	for _, name := range []string{invBudget, invBarrier, invRender, invRevisions, invEvents, invGitStore} {
		v := SoakVerdict{Name: name, Passed: true}
		for _, smp := range s.res.Samples {
			for _, viol := range smp.Violations {
				if strings.HasPrefix(viol, name+":") && v.Passed {
					v.Passed, v.Detail = false, fmt.Sprintf("at %.0f s: %s", smp.At, viol)
				}
			}
		}
		out = append(out, v)
	}
	stall := SoakVerdict{Name: invStall, Passed: true, Detail: fmt.Sprintf("%d broken commits", len(s.res.Stalls))}
	for _, v := range s.res.Stalls {
		if !v.Passed && stall.Passed {
			stall = v
		}
	}
	out = append(out, stall)
	complete := SoakVerdict{Name: invComplete, Passed: runErr == nil, Detail: "every add-on's Packages progressed at its last revision"}
	if runErr != nil {
		complete.Detail = runErr.Error()
	}
	out = append(out, complete)
	s.mu.Unlock()
	lost, first, err := s.countLostObjects(ctx)
	s.mu.Lock()
	out = append(out, SoakVerdict{Name: invLost, Passed: err == nil && lost == 0, Detail: lostDetail(lost, first, err)})
	return append(out, s.slopeVerdict())
}

// lostDetail says what countLostObjects found.
func lostDetail(lost int, first string, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case lost > 0:
		return fmt.Sprintf("%d objects of the inventories are missing, e.g. %s", lost, first)
	}
	return "every object of every inventory exists"
}

// slopeVerdict fits the slopes and judges them when the last half is long enough.
func (s *soakRun) slopeVerdict() SoakVerdict {
	s.res.Slopes = slopes(s.res.Samples)
	v := SoakVerdict{Name: invSlope, Passed: true}
	var parts []string
	for _, sl := range s.res.Slopes {
		parts = append(parts, fmt.Sprintf("%s %+.3g over the half (bound %.3g)", sl.Series, sl.Growth, sl.Bound))
		if !sl.Passed {
			v.Passed = false
		}
	}
	v.Detail = strings.Join(parts, "; ")
	if half := s.cfg.Duration / 2; half < soakSlopeMinWindow {
		v.Passed = true
		v.Detail = fmt.Sprintf("not judged: a half of %s is mostly warm-up (under %s); %s", half, soakSlopeMinWindow, v.Detail)
	}
	return v
}

// PrintSoakTable writes the verdicts, with the seed to replay the run.
func PrintSoakTable(w io.Writer, r *SoakResults) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "soak: seed %d, %d HostedClusters, %s, %d commits, %d events, %d samples\n",
		r.Seed, r.Config.Clusters, r.Duration, r.Commits, len(r.Events), len(r.Samples))
	fmt.Fprintln(tw, "INVARIANT\tPASSED\tDETAIL")
	for _, v := range r.Verdicts {
		fmt.Fprintf(tw, "%s\t%t\t%s\n", v.Name, v.Passed, v.Detail)
	}
	_ = tw.Flush()
	if !r.Passed() {
		fmt.Fprintf(w, "soak: an invariant broke; replay with -seed %d\n", r.Seed)
	}
}

// WriteSoakJSON writes the results as indented JSON.
func WriteSoakJSON(path string, r *SoakResults) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}
