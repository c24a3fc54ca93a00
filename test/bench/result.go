package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one figure of the table: convoy's value next to its baseline from the same run.
type Row struct {
	// Scenario groups rows, e.g. "rollout N=1000 instant".
	Scenario string `json:"scenario"`
	// Metric names the figure, e.g. "wall time".
	Metric string `json:"metric"`
	// Value is convoy's figure, in Unit.
	Value float64 `json:"value"`
	// Unit of Value and Baseline: "s", "MiB", "requests", ...
	Unit string `json:"unit"`
	// Baseline is the same figure for the baseline, when there is one.
	Baseline *float64 `json:"baseline,omitempty"`
	// BaselineName says what the baseline is.
	BaselineName string `json:"baselineName,omitempty"`
	// Target is the row's target of docs/evidence/performance.md ("Targets"), if any, e.g.
	// "≤ 1.4×".
	Target string `json:"target,omitempty"`
	// Met says whether the target is met; nil without a target.
	Met *bool `json:"met,omitempty"`
	// Note adds detail, e.g. requests by verb.
	Note string `json:"note,omitempty"`
}

// Ratio returns Value/Baseline, or 0 without a usable baseline.
func (r Row) Ratio() float64 {
	if r.Baseline == nil || *r.Baseline == 0 {
		return 0
	}
	return r.Value / *r.Baseline
}

// Results is the output of one run.
type Results struct {
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Commit is the Git revision of the convoy binary the run measured, as `convoy version`
	// says it (abbreviated, "-dirty" when built from a modified tree); empty when it did not say.
	Commit string `json:"commit,omitempty"`
	// Duration of the whole run.
	Duration string `json:"duration"`
	// Load is /proc/loadavg at the start and at the end of the run.
	Load []string `json:"load"`
	// CPUs is the number of CPUs of the machine.
	CPUs int `json:"cpus"`
	// Config is the run's configuration.
	Config Config `json:"config"`
	// Rows are the figures in order.
	Rows []Row `json:"rows"`
	// Notes are remarks on the run, e.g. a scenario left out and why.
	Notes []string `json:"notes,omitempty"`
}

// add appends a row.
func (r *Results) add(row Row) { r.Rows = append(r.Rows, row) }

// row returns the row of scenario and metric, nil when there is none.
func (r *Results) row(scenario, metric string) *Row {
	for i, row := range r.Rows {
		if row.Scenario == scenario && row.Metric == metric {
			return &r.Rows[i]
		}
	}
	return nil
}

// note records a remark.
func (r *Results) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// PrintTable writes the rows as an aligned table, then the notes.
func PrintTable(w io.Writer, res *Results) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMETRIC\tCONVOY\tBASELINE\tRATIO\tTARGET\tMET\tNOTE")
	for _, r := range res.Rows {
		base, ratio := "-", "-"
		if r.Baseline != nil {
			base = fmt.Sprintf("%s (%s)", format(*r.Baseline, r.Unit), r.BaselineName)
		}
		if q := r.Ratio(); q != 0 {
			ratio = fmt.Sprintf("%.2f×", q)
		}
		met := "-"
		if r.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*r.Met]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Scenario, r.Metric, format(r.Value, r.Unit), base, ratio,
			dash(r.Target), met, r.Note)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nrun: %s, %d CPUs, load average at start/end: %s\n", res.Duration, res.CPUs, strings.Join(res.Load, " / "))
	if res.Config.ControllerMemoryLimit != "" {
		fmt.Fprintf(w, "controller GOMEMLIMIT: %s\n", res.Config.ControllerMemoryLimit)
	}
	for _, n := range res.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

// FormatValue prints v with its unit, as the table of a run does.
func FormatValue(v float64, unit string) string { return format(v, unit) }

// format prints v with its unit.
func format(v float64, unit string) string {
	switch unit {
	case "s":
		return fmt.Sprintf("%.2f s", v)
	case "ms":
		if v < 10 {
			return fmt.Sprintf("%.2f ms", v) // a pass of a settled Package costs a fraction of one
		}
		return fmt.Sprintf("%.1f ms", v)
	case "MiB":
		return fmt.Sprintf("%.0f MiB", v)
	default:
		return fmt.Sprintf("%.4g %s", v, unit)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteJSON writes res to path.
func WriteJSON(path string, res *Results) error {
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// loadAverage returns the first three fields of /proc/loadavg.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
