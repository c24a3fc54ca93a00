package fleetview

import (
	"fmt"
	"io"
	"strings"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// writeChecks prints the checks of every partition, one a line: the partition, the check, its
// state, its evaluations, what it last saw and why.
func (r *Report) writeChecks(w io.Writer) {
	if !r.hasChecks() {
		return
	}
	fmt.Fprintln(w, "  Checks")
	for _, p := range r.Partitions {
		for _, c := range p.Checks {
			fmt.Fprintf(w, "    %s\t%s\t%s\t%s\t%s\n", p.Name, c.Name, c.State, evaluationsText(c), r.resultText(c))
		}
	}
}

// hasChecks reports whether a partition of the report has results of checks.
func (r *Report) hasChecks() bool {
	for _, p := range r.Partitions {
		if len(p.Checks) > 0 {
			return true
		}
	}
	return false
}

// evaluationsText counts the evaluations of c: "3 passed, 1 failed, 2 inconclusive in a row".
func evaluationsText(c convoyv1alpha1.CheckStatus) string {
	s := fmt.Sprintf("%d passed, %d failed", c.Passes, c.Failures)
	if c.Inconclusive > 0 {
		s += fmt.Sprintf(", %d inconclusive in a row", c.Inconclusive)
	}
	return s
}

// resultText is what c last saw, why, and when: `saw "0.012": condition held (1m ago)`.
func (r *Report) resultText(c convoyv1alpha1.CheckStatus) string {
	var parts []string
	if c.LastValue != "" {
		parts = append(parts, fmt.Sprintf("saw %q", oneLine(c.LastValue)))
	}
	if c.Message != "" {
		parts = append(parts, oneLine(c.Message))
	}
	s := strings.Join(parts, ": ")
	if c.LastEvaluated != nil && !r.Now.IsZero() {
		s += " (" + agoText(r.Now.Sub(c.LastEvaluated.Time)) + ")"
	}
	return strings.TrimSpace(s)
}

// agoText says how long ago something happened: "just now", "45s ago", "3m ago".
func agoText(d time.Duration) string {
	if d < time.Second {
		return "just now"
	}
	return ShortDuration(d) + " ago"
}

// oneLine keeps s on one line, so that a value or a message cannot break the layout.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
