package benchtable

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/bench"
)

// rolloutRun is a run of the rollout at N=1000 whose instant step took wall seconds against
// a bare loop of bare seconds, with the bench's own verdict on its 1.4× target.
func rolloutRun(started time.Time, wall, bare float64) *bench.Results {
	f := func(v float64) *float64 { return &v }
	yes := true
	res := &bench.Results{Started: started, Duration: "4m29s", Load: []string{"0.47 1.78 4.31", "2.78 2.89 4.18"},
		CPUs: 2, Commit: "f7dd674"}
	for _, step := range []string{"install", "instant"} {
		s := "rollout N=1000 " + step
		met := wall/bare <= 1.4
		res.Rows = append(res.Rows,
			bench.Row{Scenario: s, Metric: metricWall, Value: wall, Unit: "s", Baseline: f(bare), BaselineName: "bare SSA loop",
				Target: "≤ 1.4×", Met: &met},
			bench.Row{Scenario: s, Metric: metricControllerCPU, Value: 11.19, Unit: "s"},
			bench.Row{Scenario: s, Metric: metricPeakRSS, Value: 157.02, Unit: "MiB"},
			bench.Row{Scenario: s, Metric: metricRequests, Value: 1.3124, Unit: "req", Baseline: f(1.0006)},
			bench.Row{Scenario: s, Metric: metricObjects, Value: 1.0006, Unit: "req", Baseline: f(1.0004)},
			bench.Row{Scenario: s, Metric: metricWallFloor, Value: wall, Unit: "s", Baseline: f(bare * 1.25)},
			bench.Row{Scenario: s, Metric: metricCPUFloor, Value: 4.635, Unit: "ms", Baseline: f(4.246)},
			bench.Row{Scenario: s, Metric: "package renders", Value: 1, Target: "1", Met: &yes},
		)
		if step == "instant" {
			res.Rows = append(res.Rows, bench.Row{Scenario: s, Metric: metricStepCPU, Value: 2 * wall, Unit: "s",
				Baseline: f(2 * bare * 1.25)})
		}
	}
	return res
}

// writeRuns writes runs as dir/runs/r-<i>.json and returns the marker's name of them.
func writeRuns(t *testing.T, dir string, runs ...*bench.Results) string {
	t.Helper()
	g := NewWithT(t)
	g.Expect(os.MkdirAll(filepath.Join(dir, "runs"), 0o755)).To(Succeed())
	var n []string
	for i, r := range runs {
		g.Expect(bench.WriteJSON(filepath.Join(dir, "runs", "r-"+string(rune('1'+i))+".json"), r)).To(Succeed())
		n = append(n, string(rune('1'+i)))
	}
	return "runs/r-{" + strings.Join(n, ",") + "}.json"
}

// threeRuns writes three rollout runs, two of which meet the instant step's target.
func threeRuns(t *testing.T, dir string) string {
	at := time.Date(2026, 11, 27, 22, 50, 14, 0, time.UTC)
	return writeRuns(t, dir, rolloutRun(at, 30, 20), rolloutRun(at.Add(5*time.Minute), 40, 20),
		rolloutRun(at.Add(10*time.Minute), 27, 20))
}

func TestRolloutTableGivesMediansAndEachRunsRatio(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	set, err := LoadRuns(dir, []string{threeRuns(t, dir)})
	g.Expect(err).NotTo(HaveOccurred())
	body, err := Render(Spec{Kind: KindRollout, Args: []string{"n=1000"}}, set)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(HavePrefix("*3 runs of f7dd674 on 2 CPUs, each figure the median of the runs: 2026-11-27 22:50 UTC for 4m29s, load average 0.47 1.78 4.31 → 2.78 2.89 4.18; 2026-11-27 22:55 UTC"))
	g.Expect(body).To(ContainSubstring("| Step (N=1,000) | against the bare loop |"))
	g.Expect(body).To(ContainSubstring("\n| instant | 30.00 s / 20.00 s, 1.50× (1.50×, 2.00×, 1.35×) | 30.00 s / 25.00 s, 1.20× (1.20×, 1.60×, 1.08×) | 60.00 s / 50.00 s, 1.20× (1.20×, 1.60×, 1.08×) | 1.312 (1.001) | 4.63 ms / 4.25 ms, 1.09× | 11.2 s, 157 MiB |\n"))
	g.Expect(body).To(ContainSubstring("\n| install | 30.00 s / 20.00 s, 1.50× (1.50×, 2.00×, 1.35×) | 30.00 s / 25.00 s, 1.20× (1.20×, 1.60×, 1.08×) | - |"),
		"runs that did not measure the step's CPU say so")
}

func TestScenarioTableJudgesTheTargetByTheMajorityOfRuns(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	set, err := LoadRuns(dir, []string{threeRuns(t, dir)})
	g.Expect(err).NotTo(HaveOccurred())
	body, err := Render(Spec{Kind: KindScenario, Args: []string{"rollout N=1000 instant"}}, set)
	g.Expect(err).NotTo(HaveOccurred())
	// 1.50×, 2.00× and 1.35× against ≤ 1.4×: one run of three met it, and the median did not.
	g.Expect(body).To(ContainSubstring("| wall time to all progressed | 30.00 s / 20.00 s (bare SSA loop) | 1.50× (1.50×, 2.00×, 1.35×) | ≤ 1.4× | NO (1 of 3) |\n"))
	g.Expect(body).To(ContainSubstring("| controller CPU | 11.19 s | - | - | - |\n"))
	g.Expect(body).To(ContainSubstring("| package renders | 1 | - | 1 | yes |\n"))

	yes, no := true, false
	rows := func(met ...*bool) []bench.Row {
		var out []bench.Row
		for _, m := range met {
			out = append(out, bench.Row{Target: "≤ 1.4×", Met: m})
		}
		return out
	}
	for _, c := range []struct {
		rows []bench.Row
		want string
	}{
		{rows(&yes, &yes, &no), "yes (2 of 3)"}, {rows(&yes, &yes, &yes), "yes"}, {rows(&no), "NO"},
		{rows(&yes, &no), "NO (1 of 2)"}, {rows(&yes, &yes, &yes, &no), "yes (3 of 4)"},
	} {
		_, met, err := verdict([]string{"a", "b", "c", "d"}, c.rows)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(met).To(Equal(c.want))
	}
	_, _, err = verdict([]string{"a.json", "b.json"}, []bench.Row{{Target: "≤ 1.4×", Met: &yes}, {Target: "≤ 1.5×", Met: &yes}})
	g.Expect(err).To(MatchError(ContainSubstring("b.json: row")))
	g.Expect(err).To(MatchError(ContainSubstring("the runs of one table must have the same targets")))
}

// page writes a page with one fenced scenario table of the runs and returns its path.
func page(t *testing.T, dir, runs string) string {
	t.Helper()
	path := filepath.Join(dir, "perf.md")
	text := "# Perf\n\nSome prose.\n\n" + Marker(Spec{Kind: KindScenario, Args: []string{"rollout N=1000 instant"}}, []string{runs}) +
		"\n" + endMarker + "\n\nMore prose.\n"
	NewWithT(t).Expect(os.WriteFile(path, []byte(text), 0o644)).To(Succeed())
	return path
}

func TestRewriteFillsTheFenceAndAHandEditFailsTheCheck(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	path := page(t, dir, threeRuns(t, dir))
	changed, err := RewriteFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(CheckFile(dir, "perf.md")).To(Succeed())
	changed, err = RewriteFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse(), "a second rewrite changes nothing")
	raw, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).To(HavePrefix("# Perf\n\nSome prose.\n\n<!-- bench-table: scenario \"rollout N=1000 instant\" runs/r-{1,2,3}.json -->\n*3 runs"))
	g.Expect(string(raw)).To(HaveSuffix("\n\n<!-- end bench-table -->\n\nMore prose.\n"))

	edit := func(from, to string) error {
		g.Expect(os.WriteFile(path, []byte(strings.Replace(string(raw), from, to, 1)), 0o644)).To(Succeed())
		return CheckFile(dir, "perf.md")
	}
	g.Expect(edit("| NO (1 of 3) |", "| yes |")).To(MatchError(ContainSubstring(
		`perf.md:10: the row says met "yes" where its runs (runs/r-{1,2,3}.json) say "NO (1 of 3)"`)))
	g.Expect(edit("30.00 s / 20.00 s", "25.00 s / 20.00 s")).To(MatchError(ContainSubstring(
		"perf.md:10: the table differs from its runs (runs/r-{1,2,3}.json)")))
}

func TestVerdictsOutsideAFenceAreUnbacked(t *testing.T) {
	g := NewWithT(t)
	text := strings.Join([]string{
		"| Row | convoy | Target |", "|---|---|---|",
		"| instant | 1.61× | ≤ 1.4×: NO |", // line 3: a verdict
		"| renders | 1 | one per add-on |", // a target without a verdict
		"| git | 395 B | no objects |",
		"",
		"| Step | yes |", "|---|---|", "| a | yes |", // not a target column
		"```text",
		"SCENARIO  METRIC  CONVOY  BASELINE  RATIO  TARGET  MET", // line 11: a run's table
		"```",
		Marker(Spec{Kind: KindRun}, []string{"runs/x.json"}),
		"| Row | Target |", "|---|---|", "| a | yes |", // inside a fence: checked against its runs
		endMarker,
	}, "\n")
	errs := Unbacked("perf.md", text)
	g.Expect(errs).To(HaveLen(2))
	g.Expect(errs[0]).To(MatchError(ContainSubstring(`perf.md:3: the verdict "≤ 1.4×: NO" in the column "Target" is outside a bench-table fence`)))
	g.Expect(errs[1]).To(MatchError(ContainSubstring("perf.md:11: a bench run's table with targets outside a bench-table fence")))
}

func TestBadInputNamesTheFileAndTheRule(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	at := time.Date(2026, 11, 27, 22, 50, 0, 0, time.UTC)
	short := rolloutRun(at, 30, 20)
	short.Rows = short.Rows[:3]
	noCommit := rolloutRun(at, 30, 20)
	noCommit.Commit = ""
	runs := writeRuns(t, dir, rolloutRun(at, 30, 20), short, noCommit)

	_, err := LoadRuns(dir, []string{runs})
	g.Expect(err).To(MatchError(ContainSubstring("runs/r-3.json: the run does not name its commit")))
	set, err := LoadRuns(dir, []string{"runs/r-1.json", "runs/r-2.json"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Render(Spec{Kind: KindRollout, Args: []string{"n=1000"}}, set)
	g.Expect(err).To(MatchError(`runs/r-2.json has no row "wall time to all progressed, against the bookkeeping floor" of scenario "rollout N=1000 install": the runs of one table must measure the same rows`))
	_, err = Render(Spec{Kind: KindRollout, Args: []string{"n=100"}}, set)
	g.Expect(err).To(MatchError(ContainSubstring(`no rollout at N=100`)))
	_, err = Render(Spec{Kind: "medians"}, set)
	g.Expect(err).To(MatchError(ContainSubstring(`unknown kind of table "medians"`)))

	for text, want := range map[string]string{
		"a\n<!-- bench-table: rollout n=1000 runs/x.json -->\nb\n":                         "p.md:2: the bench-table marker has no",
		"<!-- end bench-table -->\n":                                                       "p.md:1: \"<!-- end bench-table -->\" without a bench-table marker",
		"<!-- bench-table: rollout n=1000 -->\n<!-- end bench-table -->\n":                 "p.md:1: bench-table marker: want a kind of table and the runs' files",
		"<!-- bench-table: rollout runs/x.json n=1000 -->\n<!-- end bench-table -->\n":     `p.md:1: bench-table marker: "n=1000" after the runs' files`,
		"<!-- bench-table: scenario \"a b runs/x.json -->\n<!-- end bench-table -->\n":     "p.md:1: bench-table marker: unterminated quoted word",
		"<!-- bench-table: run runs/x.json -->\n<!-- bench-table: run runs/y.json -->\n\n": "p.md:2: a bench-table marker inside the table opened at line 1",
	} {
		_, err := ParseFences("p.md", text)
		g.Expect(err).To(MatchError(ContainSubstring(want)), text)
	}
}

func TestAddRunsStampsTheCommitAndNamesTheSet(t *testing.T) {
	g := NewWithT(t)
	src := t.TempDir()
	at := time.Date(2026, 11, 27, 22, 50, 0, 0, time.UTC)
	a, b := rolloutRun(at, 30, 20), rolloutRun(at, 31, 20)
	a.Commit, b.Commit = "", ""
	writeRuns(t, src, a, b)
	files := []string{filepath.Join(src, "runs", "r-1.json"), filepath.Join(src, "runs", "r-2.json")}
	dir := filepath.Join(t.TempDir(), "runs")
	rollout := Spec{Kind: KindRollout, Args: []string{"n=1000"}}

	_, err := AddRuns(dir, "rollout-1000", "", rollout, files)
	g.Expect(err).To(MatchError(ContainSubstring("r-1.json does not name the commit it measured: give it with -commit")))
	_, err = AddRuns(dir, "Rollout 1000", "f7dd674", rollout, files)
	g.Expect(err).To(MatchError(ContainSubstring(`run set name "Rollout 1000"`)))
	_, err = AddRuns(dir, "rollout-100", "f7dd674", Spec{Kind: KindRollout, Args: []string{"n=100"}}, files)
	g.Expect(err).To(MatchError(ContainSubstring("no rollout at N=100")))
	g.Expect(filepath.Join(dir, "2026-11-27-f7dd674-rollout-100-1.json")).NotTo(BeAnExistingFile(), "a set that makes no table is not added")
	pattern, err := AddRuns(dir, "rollout-1000", "f7dd674", rollout, files)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pattern).To(Equal("runs/2026-11-27-f7dd674-rollout-1000-{1,2}.json"))
	set, err := LoadRuns(filepath.Dir(dir), []string{pattern})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.Runs[1].Commit).To(Equal("f7dd674"))
	g.Expect(set.Runs[1].Rows).To(Equal(b.Rows))
	_, err = AddRuns(dir, "rollout-1000", "f7dd674", rollout, files)
	g.Expect(err).To(MatchError(ContainSubstring("2026-11-27-f7dd674-rollout-1000-1.json exists: a published run is not replaced")))
	_, err = AddRuns(dir, "other", "0a23056", Spec{Kind: KindRun}, []string{filepath.Join(dir, "2026-11-27-f7dd674-rollout-1000-1.json")})
	g.Expect(err).To(MatchError(ContainSubstring("measured f7dd674, not 0a23056 (-commit)")))
}

func TestAHandEditedVerdictOfARunsTextTableIsNamed(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	runs := writeRuns(t, dir, rolloutRun(time.Date(2026, 11, 27, 12, 29, 0, 0, time.UTC), 27, 20))
	path := filepath.Join(dir, "perf.md")
	g.Expect(os.WriteFile(path, []byte(Marker(Spec{Kind: KindRun}, []string{runs})+"\n"+endMarker+"\n"), 0o644)).To(Succeed())
	_, err := RewriteFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(CheckFile(dir, "perf.md")).To(Succeed())
	raw, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).To(ContainSubstring("1.35×  ≤ 1.4×  yes"))
	g.Expect(os.WriteFile(path, []byte(strings.Replace(string(raw), "1.35×  ≤ 1.4×  yes", "1.35×  ≤ 1.4×  NO ", 1)), 0o644)).To(Succeed())
	g.Expect(CheckFile(dir, "perf.md")).To(MatchError(ContainSubstring(`the row says met "NO" where its runs (runs/r-{1}.json) say "yes"`)))
}
