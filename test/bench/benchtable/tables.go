package benchtable

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/convoy-gitops/convoy/test/bench"
)

// The kinds of table, the first word of a table's spec.
const (
	// KindRollout is the rollout's steps against both floors: "rollout n=1000 [objects=50]".
	KindRollout = "rollout"
	// KindScenario is any scenarios' rows with their targets: `scenario "steady 1000 Packages 5m0s" ...`.
	KindScenario = "scenario"
	// KindRun is one run's whole table as `make bench` prints it: "run".
	KindRun = "run"
)

// Spec says which table to make of a set of runs: a kind and its arguments.
type Spec struct {
	// Kind is KindRollout, KindScenario or KindRun.
	Kind string
	// Args are the kind's arguments: key=value for a rollout, scenario names for a scenario.
	Args []string
}

// ParseSpec reads a spec as a marker or the table command's -table flag writes it:
// words separated by spaces, a quoted word may hold spaces.
func ParseSpec(s string) (Spec, error) {
	words, err := splitWords(s)
	if err != nil {
		return Spec{}, err
	}
	if len(words) == 0 {
		return Spec{}, fmt.Errorf("no table named: one of %q, %q or %q", "rollout n=1000", KindScenario+` "rollout N=1000 instant"`, KindRun)
	}
	return Spec{Kind: words[0], Args: words[1:]}, nil
}

// String prints the spec as a marker names it, quoting arguments with spaces.
func (s Spec) String() string {
	words := []string{s.Kind}
	for _, a := range s.Args {
		if strings.ContainsAny(a, " \"") {
			a = strconv.Quote(a)
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

// Render makes the table of spec from the runs: a line saying what the runs are, an empty
// line, the table and an empty line.
func Render(spec Spec, set *RunSet) (string, error) {
	var table string
	var err error
	switch spec.Kind {
	case KindRollout:
		table, err = rolloutTable(spec, set)
	case KindScenario:
		table, err = scenarioTable(spec, set)
	case KindRun:
		table, err = runTable(spec, set)
	default:
		err = fmt.Errorf("unknown kind of table %q: one of %s, %s, %s", spec.Kind, KindRollout, KindScenario, KindRun)
	}
	if err != nil {
		return "", err
	}
	return set.Header() + "\n\n" + table + "\n", nil
}

// runTable prints one run's table as the bench command does, in a text block.
func runTable(spec Spec, set *RunSet) (string, error) {
	if len(spec.Args) != 0 || len(set.Runs) != 1 {
		return "", fmt.Errorf("a %q table takes no arguments and one run, not %d", KindRun, len(set.Runs))
	}
	var out bytes.Buffer
	bench.PrintTable(&out, set.Runs[0])
	return "```text\n" + out.String() + "```\n", nil
}

// scenarioTable prints every row of the scenarios named: metric, convoy's figure and the
// baseline's, their ratio, the target and whether the runs met it.
func scenarioTable(spec Spec, set *RunSet) (string, error) {
	if len(spec.Args) == 0 {
		return "", fmt.Errorf("a %q table names its scenarios, e.g. %s %q", KindScenario, KindScenario, "rollout N=1000 instant")
	}
	many := len(spec.Args) > 1
	var b strings.Builder
	if many {
		b.WriteString("| Scenario ")
	}
	b.WriteString("| Metric | convoy / baseline | ratio | target | met |\n")
	if many {
		b.WriteString("|---")
	}
	b.WriteString("|---|---|---|---|---|\n")
	for _, scenario := range spec.Args {
		metrics := set.metrics(scenario)
		if len(metrics) == 0 {
			return "", fmt.Errorf("%s has no row of scenario %q", set.Names[0], scenario)
		}
		for _, metric := range metrics {
			line, err := scenarioRow(set, scenario, metric)
			if err != nil {
				return "", err
			}
			if many {
				b.WriteString("| " + scenario + " ")
			}
			b.WriteString(line + "\n")
		}
	}
	return b.String(), nil
}

// scenarioRow prints one metric of a scenario over the runs.
func scenarioRow(set *RunSet, scenario, metric string) (string, error) {
	rows, err := set.rows(scenario, metric)
	if err != nil {
		return "", err
	}
	f := figuresOf(rows)
	unit := rows[0].Unit
	figure, ratio := formatValue(median(f.values), unit), "-"
	if len(f.baselines) > 0 {
		figure += " / " + formatValue(median(f.baselines), unit)
		if rows[0].BaselineName != "" {
			figure += " (" + rows[0].BaselineName + ")"
		}
		ratio = ratioCell(f.ratios)
	}
	target, met, err := verdict(set.Names, rows)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s |", metric, figure, ratio, dash(target), dash(met)), nil
}

// formatValue prints v with its unit as a run's table does, without the blank a value without
// a unit gets there.
func formatValue(v float64, unit string) string {
	return strings.TrimSpace(bench.FormatValue(v, unit))
}

// dash prints an empty cell as "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
