package benchtable

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/convoy-gitops/convoy/test/bench"
)

// maxRunBytes bounds a committed run's JSON: a run of every scenario is about 20 KB, and the
// repository keeps every published one.
const maxRunBytes = 128 << 10

// RunSet is the runs behind one table: the same scenarios run one or more times.
type RunSet struct {
	// Names are the runs' files as the table names them, in order.
	Names []string
	// Runs are their results, in the same order.
	Runs []*bench.Results
}

// LoadRuns reads the runs named (relative to dir; a name may hold one brace group,
// "r-{1,2,3}.json"), each of which must be the results of a bench run that names its commit.
func LoadRuns(dir string, names []string) (*RunSet, error) {
	set := &RunSet{}
	for _, pattern := range names {
		for _, name := range expandBraces(pattern) {
			res, err := readRun(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			if res.Commit == "" {
				return nil, fmt.Errorf("%s: the run does not name its commit: a published run must (add it with `table add -commit`)", name)
			}
			set.Names = append(set.Names, name)
			set.Runs = append(set.Runs, res)
		}
	}
	if len(set.Runs) == 0 {
		return nil, fmt.Errorf("no runs named: a table needs the JSON of at least one run")
	}
	return set, nil
}

// readRun reads one bench-results.json.
func readRun(path string) (*bench.Results, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw) > maxRunBytes {
		return nil, fmt.Errorf("%s: %d bytes, over the %d a committed run may hold", path, len(raw), maxRunBytes)
	}
	var res bench.Results
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("%s: not the JSON of a bench run: %w", path, err)
	}
	if len(res.Rows) == 0 || res.Started.IsZero() {
		return nil, fmt.Errorf("%s: not the results of a bench run: it needs \"started\" and \"rows\"", path)
	}
	return &res, nil
}

// expandBraces expands one "{a,b}" group of a file name; a name without one is itself.
func expandBraces(name string) []string {
	open := strings.Index(name, "{")
	end := strings.Index(name, "}")
	if open < 0 || end < open {
		return []string{name}
	}
	var out []string
	for _, alt := range strings.Split(name[open+1:end], ",") {
		out = append(out, name[:open]+alt+name[end+1:])
	}
	return out
}

// rows returns the row of scenario and metric in every run, or an error naming the run that
// lacks it.
func (s *RunSet) rows(scenario, metric string) ([]bench.Row, error) {
	var out []bench.Row
	for i, res := range s.Runs {
		j := slices.IndexFunc(res.Rows, func(r bench.Row) bool { return r.Scenario == scenario && r.Metric == metric })
		if j < 0 {
			return nil, fmt.Errorf("%s has no row %q of scenario %q: the runs of one table must measure the same rows",
				s.Names[i], metric, scenario)
		}
		out = append(out, res.Rows[j])
	}
	return out, nil
}

// scenarios returns the scenarios of the first run that satisfy keep, in the run's order.
func (s *RunSet) scenarios(keep func(string) bool) []string {
	var out []string
	for _, r := range s.Runs[0].Rows {
		if keep(r.Scenario) && !slices.Contains(out, r.Scenario) {
			out = append(out, r.Scenario)
		}
	}
	return out
}

// metrics returns the metrics of scenario in the first run, in the run's order.
func (s *RunSet) metrics(scenario string) []string {
	var out []string
	for _, r := range s.Runs[0].Rows {
		if r.Scenario == scenario {
			out = append(out, r.Metric)
		}
	}
	return out
}

// Header says what the runs are: their commits, the machine's CPUs, when each started, how
// long it took and the load average at its start and end.
func (s *RunSet) Header() string {
	var commits []string
	for _, r := range s.Runs {
		if !slices.Contains(commits, r.Commit) {
			commits = append(commits, r.Commit)
		}
	}
	var runs []string
	for _, r := range s.Runs {
		runs = append(runs, fmt.Sprintf("%s UTC for %s, load average %s", r.Started.UTC().Format("2006-01-02 15:04"),
			r.Duration, strings.Join(r.Load, " → ")))
	}
	what := fmt.Sprintf("%d runs of %s on %d CPUs, each figure the median of the runs", len(s.Runs),
		strings.Join(commits, ", "), s.Runs[0].CPUs)
	if len(s.Runs) == 1 {
		what = fmt.Sprintf("One run of %s on %d CPUs", commits[0], s.Runs[0].CPUs)
	}
	return fmt.Sprintf("*%s: %s.*", what, strings.Join(runs, "; "))
}
