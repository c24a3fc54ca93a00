package bench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// storeBenchmark selects the sub-benchmarks of sources' BenchmarkStore this scenario reports.
const storeBenchmark = `^BenchmarkStore$/^(NoopPoll|IncrementalFetch)$`

// benchLine matches a result line of `go test -bench`, e.g.
// "BenchmarkStore/NoopPoll/convoy-2   20   1234 ns/op   56 wire-B/op".
var benchLine = regexp.MustCompile(`^BenchmarkStore/(\w+)/(convoy|git)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op(?:\s+([0-9.]+) wire-B/op)?`)

// storeResult is one sub-benchmark: time per operation and bytes the server sent.
type storeResult struct {
	nsPerOp, wireBytes float64
}

// runGit runs sources' BenchmarkStore (a 5,000-file repository served over HTTP; convoy's
// store next to the git CLI against the same server in the same process) and reports the
// no-op poll and the one-commit incremental fetch.
func runGit(ctx context.Context, cfg Config, res *Results) error {
	logf(cfg, "git: go test -bench %s ./sources (benchtime %s)", storeBenchmark, cfg.GitBenchTime)
	out, err := goTestBench(ctx, storeBenchmark, cfg.GitBenchTime)
	if err != nil {
		return err
	}
	results := parseStoreBench(out)
	for _, op := range []string{"NoopPoll", "IncrementalFetch"} {
		convoy, okC := results[op+"/convoy"]
		git, okG := results[op+"/git"]
		if !okC || !okG {
			return fmt.Errorf("git: no %s result in the benchmark output:\n%s", op, out)
		}
		scenario := "git 5,000 files " + map[string]string{"NoopPoll": "no-op poll", "IncrementalFetch": "one-commit fetch"}[op]
		res.add(Row{Scenario: scenario, Metric: "time per operation", Value: convoy.nsPerOp / 1e6, Unit: "ms",
			Baseline: ptr(git.nsPerOp / 1e6), BaselineName: "git fetch"})
		row := Row{Scenario: scenario, Metric: "bytes sent by the server", Value: convoy.wireBytes, Unit: "B",
			Baseline: ptr(git.wireBytes), BaselineName: "git fetch"}
		if op == "NoopPoll" {
			row.Target, row.Met = "no objects", ptr(convoy.wireBytes <= git.wireBytes)
		}
		res.add(row)
	}
	return nil
}

// goTestBench runs one benchmark of the sources package from the repository root.
func goTestBench(ctx context.Context, pattern, benchtime string) (string, error) {
	root, err := simfleet.RepositoryRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", pattern, "-benchtime", benchtime, "./sources/")
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git: go test -bench: %w:\n%s", err, out.String())
	}
	return out.String(), nil
}

// parseStoreBench returns the results by "<Op>/<convoy|git>".
func parseStoreBench(out string) map[string]storeResult {
	results := map[string]storeResult{}
	for _, line := range strings.Split(out, "\n") {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[3], 64)
		wire, _ := strconv.ParseFloat(m[4], 64)
		results[m[1]+"/"+m[2]] = storeResult{nsPerOp: ns, wireBytes: wire}
	}
	return results
}
