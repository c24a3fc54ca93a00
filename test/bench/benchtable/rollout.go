package benchtable

import (
	"fmt"
	"strconv"
	"strings"
)

// The metrics of a rollout step that the rollout table reads.
const (
	metricWall          = "wall time to all progressed"
	metricWallFloor     = "wall time to all progressed, against the bookkeeping floor"
	metricRequests      = "API requests per object"
	metricObjects       = "requests on the objects, per object"
	metricCPUFloor      = "API server CPU per object, against the bookkeeping floor"
	metricControllerCPU = "controller CPU"
	metricPeakRSS       = "controller peak RSS"
	// metricHCPCPU is the CPU of the HostedClusterPackage's passes, part of the controller's
	// (waits.go). Runs before it say nothing.
	metricHCPCPU = "HostedClusterPackage CPU"
	// metricStepCPU is the CPU of the step's processes against the floor's: the wall-time ratio
	// of a machine that gives both all its cores (waits.go). Runs before it say "-".
	metricStepCPU = "waits: CPU of the step's processes, against the bookkeeping floor's"
)

// rolloutTable prints a rollout's steps at one fleet size (spec "rollout n=1000", and
// "objects=50" for another package size than 10) against the bare loop and the bookkeeping
// floor.
func rolloutTable(spec Spec, set *RunSet) (string, error) {
	n, objects, err := rolloutArgs(spec)
	if err != nil {
		return "", err
	}
	prefix, title := fmt.Sprintf("rollout N=%d ", n), "Step (N="+thousands(n)
	if objects != 10 {
		prefix += fmt.Sprintf("%d objects ", objects)
		title += fmt.Sprintf(", %d objects", objects)
	}
	steps := set.scenarios(func(s string) bool {
		step, ok := strings.CutPrefix(s, prefix)
		return ok && !strings.Contains(step, " objects ")
	})
	if len(steps) == 0 {
		return "", fmt.Errorf("%s has no scenario %q…: no rollout at N=%d with %d objects per Package", set.Names[0], prefix, n, objects)
	}
	var b strings.Builder
	b.WriteString("| " + title + ") | against the bare loop | against the bookkeeping floor | CPU of the step / the floor's | requests / object (on the objects) | API-server CPU / object vs floor | controller CPU (of it planning), peak RSS |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, scenario := range steps {
		line, err := rolloutRow(set, scenario, strings.TrimPrefix(scenario, prefix))
		if err != nil {
			return "", err
		}
		b.WriteString(line + "\n")
	}
	return b.String(), nil
}

// rolloutArgs reads "n=1000" and the optional "objects=50" of a rollout table's spec.
func rolloutArgs(spec Spec) (n, objects int, err error) {
	objects = 10
	for _, arg := range spec.Args {
		key, value, _ := strings.Cut(arg, "=")
		v, perr := strconv.Atoi(value)
		switch {
		case perr != nil || v < 1:
			return 0, 0, fmt.Errorf("rollout table argument %q: want n=CLUSTERS or objects=PER_PACKAGE, a positive number", arg)
		case key == "n":
			n = v
		case key == "objects":
			objects = v
		default:
			return 0, 0, fmt.Errorf("rollout table argument %q: want n=CLUSTERS or objects=PER_PACKAGE", arg)
		}
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("a rollout table names its fleet size: %q", "rollout n=1000")
	}
	return n, objects, nil
}

// rolloutRow prints one step: each cell the median over the runs.
func rolloutRow(set *RunSet, scenario, step string) (string, error) {
	var cells []figures
	for _, metric := range []string{metricWall, metricWallFloor, metricRequests, metricObjects, metricCPUFloor,
		metricControllerCPU, metricPeakRSS} {
		rows, err := set.rows(scenario, metric)
		if err != nil {
			return "", err
		}
		cells = append(cells, figuresOf(rows))
	}
	wall, floor, requests, objects, cpu, controllerCPU, rss := cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6]
	for i, c := range []figures{wall, floor, cpu} {
		if len(c.baselines) == 0 {
			return "", fmt.Errorf("row %q of scenario %q has no baseline in every run: the rollout table compares it with its floor",
				[]string{metricWall, metricWallFloor, metricCPUFloor}[i], scenario)
		}
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %.3f (%.3f) | %.2f ms / %.2f ms, %.2f× | %.1f s%s, %.0f MiB |", step,
		againstFloor(wall), againstFloor(floor), stepCPU(set, scenario), median(requests.values), median(objects.values),
		median(cpu.values), median(cpu.baselines), median(cpu.ratios),
		median(controllerCPU.values), planningCPU(set, scenario), median(rss.values)), nil
}

// planningCPU prints the CPU of a step's HostedClusterPackage passes, " (2.1 s)", or nothing
// for runs that did not measure it.
func planningCPU(set *RunSet, scenario string) string {
	rows, err := set.rows(scenario, metricHCPCPU)
	if err != nil {
		return ""
	}
	return fmt.Sprintf(" (%.1f s)", median(figuresOf(rows).values))
}

// stepCPU prints the CPU of a step's processes against the floor's, "63.5 s / 52.2 s, 1.22×
// (1.24×, 1.19×, 1.10×)", or "-" for runs that did not measure it.
func stepCPU(set *RunSet, scenario string) string {
	rows, err := set.rows(scenario, metricStepCPU)
	if err != nil {
		return "-"
	}
	f := figuresOf(rows)
	if len(f.baselines) == 0 {
		return "-"
	}
	return againstFloor(f)
}

// againstFloor prints a wall time against its floor: "31.47 s / 17.05 s, 1.85× (1.66×, 2.36×, 1.85×)".
func againstFloor(f figures) string {
	return fmt.Sprintf("%.2f s / %.2f s, %s", median(f.values), median(f.baselines), ratioCell(f.ratios))
}

// thousands prints n with a comma between thousands: 1,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
