package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/convoy-gitops/convoy/sources"
)

// Targets P1, P3 and P4 of docs/evidence/performance.md ("Targets"), at targetFleetSize.
const (
	targetWallRatio       = 1.4
	targetRSSMiB          = 200
	targetRequestsPerObj  = 1.2
	targetFleetSize       = 1000
	instantScenarioSuffix = "instant"
)

// P3's bound of the install, about one request per object on the objects themselves. (P2's
// bound against the bookkeeping floor, 1.15× for the install and the instant rollout at
// targetFleetSize, is now P13's: floorTarget.)
const (
	targetInstallObjRequests = 1.02
	installStep              = "install"
)

// Target P13, linear cost: the install, the instant rollout and the rolling upgrade within
// 1.10× of the bookkeeping floor at targetFleetSize and at largeFleetSize.
const (
	targetLinearRatio = 1.10
	largeFleetSize    = 5000
	rollingStepPrefix = "rollingUpgrade"
)

// addRows turns a measured window into table rows.
func (r *rolloutRun) addRows(name string, w window, floor floors, withTargets bool) {
	scenario := r.scenario(name)
	objects := float64(r.n * r.objects)
	targeted := withTargets && r.n == targetFleetSize && r.objects == objectsPerPackage && strings.HasSuffix(name, instantScenarioSuffix)
	wall := Row{Scenario: scenario, Metric: "wall time to all progressed", Value: w.wall.Seconds(), Unit: "s",
		Baseline: ptr(floor.bare.Seconds()), BaselineName: "bare SSA loop", Note: "driver " + r.driver}
	rss := Row{Scenario: scenario, Metric: "controller peak RSS", Value: mib(w.peakRSS), Unit: "MiB"}
	perObj := Row{Scenario: scenario, Metric: "API requests per object", Value: w.requests.Total() / objects, Unit: "req",
		Baseline: ptr(r.floorRq.Total() / objects), BaselineName: "bare SSA loop", Note: w.requests.String()}
	if targeted {
		wall.Target, wall.Met = fmt.Sprintf("≤ %.1f×", targetWallRatio), ptr(wall.Ratio() <= targetWallRatio)
		rss.Target, rss.Met = fmt.Sprintf("< %d MiB", targetRSSMiB), ptr(rss.Value < targetRSSMiB)
		perObj.Target, perObj.Met = fmt.Sprintf("≤ %.1f", targetRequestsPerObj), ptr(perObj.Value <= targetRequestsPerObj)
	}
	onObjects := Row{Scenario: scenario, Metric: "requests on the objects, per object", Value: w.requests.OnObjects() / objects,
		Unit: "req", Baseline: ptr(r.floorRq.OnObjects() / objects), BaselineName: "bare SSA loop",
		Note: "without convoy's Packages, statuses, revisions and events"}
	if r.n == targetFleetSize && r.objects == objectsPerPackage && name == installStep {
		onObjects.Target, onObjects.Met = fmt.Sprintf("≤ %.2f", targetInstallObjRequests), ptr(onObjects.Value <= targetInstallObjRequests)
	}
	renders := Row{Scenario: scenario, Metric: "package renders", Value: w.renders, Unit: "",
		Note: fmt.Sprintf("for %d Packages at one commit of one template-free path", r.n)}
	if withTargets {
		renders.Target, renders.Met = "1", ptr(w.renders == 1)
	}
	cpu := Row{Scenario: scenario, Metric: "controller CPU", Value: w.cpu.Seconds(), Unit: "s",
		Note: fmt.Sprintf("%.0f%% of one core", 100*w.cpu.Seconds()/w.wall.Seconds())}
	server := Row{Scenario: scenario, Metric: "API server CPU per object", Value: ms(w.serverCPU) / objects, Unit: "ms",
		Baseline: ptr(ms(r.floorServerCPU) / objects), BaselineName: "bare SSA loop",
		Note: fmt.Sprintf("kube-apiserver and etcd: %.0f%% of one core", 100*w.serverCPU.Seconds()/w.wall.Seconds())}
	for _, row := range []Row{wall, cpu, server, rss, perObj, onObjects, renders} {
		r.res.add(row)
	}
	r.addBookkeepingRows(scenario, w, floor.keep, r.floorTarget(name))
}

// packageSize reads the size of a Package right after step name, as stored, when the
// bookkeeping floor has one to compare it with (addPackageSizeRow); else, or when the read
// fails, which is noted, it returns 0.
func (r *rolloutRun) packageSize(ctx context.Context, name string) int {
	if r.keepBefore.passFor(name).packageBytes == 0 || len(r.e.namespaces) == 0 {
		return 0
	}
	pkg := packageName
	if r.driver == DriverHostedClusterPackage {
		pkg = hcpName
	}
	ns := slices.Min(slices.Collect(maps.Keys(r.e.namespaces)))
	size, err := storedSize(ctx, r.e.admin, ns, pkg)
	if err != nil {
		r.res.note("rollout N=%d %s: Package size: %v", r.n, name, err)
		return 0
	}
	return size
}

// addPackageSizeRow adds size, that of a Package after step name, against floor, that of a
// bookkeeping floor's Package after the floor's pass of the same kind (create for the install):
// with the HostedClusterPackage driver the floor's pin carries what a HostedClusterPackage
// applies (pinnedPackage), so that its writes cost what convoy's do. Without a size, no row.
func (r *rolloutRun) addPackageSizeRow(name string, size, floor int) {
	if size == 0 {
		return
	}
	r.res.add(Row{Scenario: r.scenario(name), Metric: "Package size, against the bookkeeping floor's", Value: float64(size), Unit: "B",
		Baseline: ptr(float64(floor)), BaselineName: "bookkeeping floor", Note: "as stored, with managed fields; driver " + r.driver})
}

// floorTarget is the bound of a step's wall time against the bookkeeping floor, 0 for none:
// P13's at targetFleetSize and largeFleetSize, for the install, the instant rollout and the
// rolling upgrade of the default package driven by a HostedClusterPackage, whose Packages the
// floor's pin copies (it tightens P2's 1.15× of the install and the instant rollout).
func (r *rolloutRun) floorTarget(name string) float64 {
	if (r.n != targetFleetSize && r.n != largeFleetSize) || r.objects != objectsPerPackage || r.driver != DriverHostedClusterPackage {
		return 0
	}
	if name == installStep || strings.HasSuffix(name, instantScenarioSuffix) || strings.HasPrefix(name, rollingStepPrefix) {
		return targetLinearRatio
	}
	return 0
}

// addBookkeepingRows adds the rows of a measured window against the bookkeeping floor's pass of
// the step's kind (keep, the mean of both sides of the steps when measured after them too): wall
// time, with its target (floorTarget) unless 0, and requests and API-server CPU per object.
// The wall time's note says how the floor was measured.
func (r *rolloutRun) addBookkeepingRows(scenario string, w window, keep floorBracket, target float64) {
	for _, row := range bookkeepingRows(scenario, w, keep.pass(), float64(r.n*r.objects), target, keep.note("bare loop plus each Package's pin and status")) {
		r.res.add(row)
	}
}

// bookkeepingRows returns the rows of measured window w against a pass of the bookkeeping
// floor: wall time, then requests and API-server CPU per object, over objects. A target other
// than 0 bounds the wall time's ratio to the floor; note goes on the wall time's row.
func bookkeepingRows(scenario string, w window, floor floorPass, objects, target float64, note string) []Row {
	const name = "bookkeeping floor"
	wall := Row{Scenario: scenario, Metric: "wall time to all progressed, against the bookkeeping floor",
		Value: w.wall.Seconds(), Unit: "s", Baseline: ptr(floor.wall.Seconds()), BaselineName: name, Note: note}
	if target != 0 {
		wall.Target, wall.Met = "≤ "+strconv.FormatFloat(target, 'f', -1, 64)+"×", ptr(wall.Ratio() <= target)
	}
	return []Row{wall,
		{Scenario: scenario, Metric: "API requests per object, against the bookkeeping floor",
			Value: w.requests.Total() / objects, Unit: "req", Baseline: ptr(floor.requests.Total() / objects), BaselineName: name,
			Note: floor.requests.String()},
		{Scenario: scenario, Metric: "API server CPU per object, against the bookkeeping floor",
			Value: ms(w.serverCPU) / objects, Unit: "ms", Baseline: ptr(ms(floor.serverCPU) / objects), BaselineName: name},
	}
}

// mib converts bytes to MiB.
func mib(b int64) float64 { return float64(b) / (1 << 20) }

// slug makes name usable in a file name.
func slug(name string) string {
	return strings.NewReplacer(" ", "-", "%", "pct", "/", "-").Replace(name)
}

// logf prints progress to cfg.Log.
func logf(cfg Config, format string, args ...any) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

// waitArtifact waits until the GitSource's artifact is commit.
func (e *env) waitArtifact(ctx context.Context, commit string) error {
	key := sources.KeyFor(benchNamespace, gitSourceName)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if art, err := sources.GetArtifact(ctx, e.admin, key); err == nil && art.Commit == commit {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("the GitSource has not fetched %s after a minute", commit)
}
