package benchtable

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convoy-gitops/convoy/test/bench"
)

// figures are one row's numbers over the runs of a set.
type figures struct {
	// values, baselines and ratios hold one entry per run; baselines and ratios are empty
	// unless every run has a baseline.
	values, baselines, ratios []float64
}

// figuresOf collects the numbers of rows, one per run.
func figuresOf(rows []bench.Row) figures {
	var f figures
	withBaseline := true
	for _, r := range rows {
		f.values = append(f.values, r.Value)
		withBaseline = withBaseline && r.Baseline != nil && *r.Baseline != 0
	}
	if withBaseline {
		for _, r := range rows {
			f.baselines = append(f.baselines, *r.Baseline)
			f.ratios = append(f.ratios, r.Ratio())
		}
	}
	return f
}

// median returns the middle of xs, or the mean of the two middle ones when their number is
// even.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ratioCell prints the median ratio and, over several runs, each run's in brackets:
// "1.85× (1.66×, 2.36×, 1.85×)".
func ratioCell(ratios []float64) string {
	cell := fmt.Sprintf("%.2f×", median(ratios))
	if len(ratios) < 2 {
		return cell
	}
	each := make([]string, len(ratios))
	for i, r := range ratios {
		each[i] = fmt.Sprintf("%.2f×", r)
	}
	return cell + " (" + strings.Join(each, ", ") + ")"
}

// verdict says whether the runs met their row's target: "yes" when more than half of them
// did, which for an odd number of runs is when the median meets it, else "NO"; a split adds
// the count, "yes (2 of 3)". It returns the target too, which every run must state alike.
func verdict(names []string, rows []bench.Row) (target, met string, err error) {
	target = rows[0].Target
	count := 0
	for i, r := range rows {
		if r.Target != target || (r.Met == nil) != (rows[0].Met == nil) {
			return "", "", fmt.Errorf("%s: row %q of scenario %q states the target %q (met: %s), %s states %q (met: %s): the runs of one table must have the same targets",
				names[i], r.Metric, r.Scenario, r.Target, metText(r.Met), names[0], target, metText(rows[0].Met))
		}
		if r.Met != nil && *r.Met {
			count++
		}
	}
	if rows[0].Met == nil {
		return target, "", nil
	}
	met = map[bool]string{true: "yes", false: "NO"}[2*count > len(rows)]
	if count != 0 && count != len(rows) {
		met += fmt.Sprintf(" (%d of %d)", count, len(rows))
	}
	return target, met, nil
}

// metText prints a run's own verdict.
func metText(met *bool) string {
	if met == nil {
		return "none"
	}
	return fmt.Sprint(*met)
}
