package rolloutcontroller

import (
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/procstat"
	"github.com/convoy-gitops/convoy/rollout"
)

// Metric label names. There is deliberately no HostedCluster label: a fleet of thousands would
// make thousands of series.
const (
	hcpkgLabel     = "hostedclusterpackage"
	partitionLabel = "partition"
	stateLabel     = "state"
	gateLabel      = "gate"
	checkLabel     = "check"
	outcomeLabel   = "outcome"
)

// gateTypes are the values of the gate label: each is 1 while that gate holds the rollout, else 0.
var gateTypes = []string{convoyv1alpha1.GateSoak, convoyv1alpha1.GateApproval, convoyv1alpha1.GateWindow,
	convoyv1alpha1.GateFailures, convoyv1alpha1.GateCheck, convoyv1alpha1.GatePromotion}

// checkStates are the values of the state label of the checks gauge, by check state.
var checkStates = map[string]string{convoyv1alpha1.CheckRunning: "running", convoyv1alpha1.CheckPassed: "passed",
	convoyv1alpha1.CheckFailed: "failed", convoyv1alpha1.CheckInconclusive: "inconclusive"}

// outcomeValues are the values of the outcome label of the evaluations counter.
var outcomeValues = map[rollout.CheckOutcome]string{rollout.CheckPass: "pass", rollout.CheckFail: "fail",
	rollout.CheckError: "inconclusive"}

// Package states of the packages gauge.
const (
	stateTotal      = "total"
	stateUpdated    = "updated"
	stateAvailable  = "available"
	stateProgressed = "progressed"
	stateFailed     = "failed"
	stateSkipped    = "skipped"
)

// Metrics of the rollout, registered with controller-runtime's registry.
var (
	packagesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convoy_rollout_packages",
		Help: "Packages of a HostedClusterPackage by partition and state (total, updated, available, progressed, failed, skipped).",
	}, []string{hcpkgLabel, partitionLabel, stateLabel})

	rolloutDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "convoy_rollout_duration_seconds",
		Help:    "Time from the creation of an update revision to the completion of its rollout, by HostedClusterPackage.",
		Buckets: prometheus.ExponentialBuckets(10, 2, 14),
	}, []string{hcpkgLabel})

	partitionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "convoy_rollout_partition_duration_seconds",
		Help:    "Time from the start to the completion of a partition's rollout, as seen by this controller process.",
		Buckets: prometheus.ExponentialBuckets(10, 2, 14),
	}, []string{hcpkgLabel, partitionLabel})

	failuresCounter = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_rollout_package_failures_total",
		Help: "Packages newly found past their progress deadline, by HostedClusterPackage and partition.",
	}, []string{hcpkgLabel, partitionLabel})

	gateGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convoy_rollout_gate",
		Help: "1 while the gate (Soak, Approval, Window, Failures, Check, Promotion) holds the rollout of a HostedClusterPackage, else 0.",
	}, []string{hcpkgLabel, gateLabel})

	awaitingApprovalGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convoy_rollout_partitions_awaiting_approval",
		Help: "Partitions of a HostedClusterPackage that wait for a PartitionApproval of the update revision.",
	}, []string{hcpkgLabel})

	rollbacksCounter = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_rollout_rollbacks_total",
		Help: "Update revisions the failure policy rejected and rolled back, by HostedClusterPackage.",
	}, []string{hcpkgLabel})

	checkEvaluations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_rollout_check_evaluations_total",
		Help: "Evaluations of the rollout checks, by HostedClusterPackage, check and outcome (pass, fail, inconclusive).",
	}, []string{hcpkgLabel, checkLabel, outcomeLabel})

	checksGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convoy_rollout_checks",
		Help: "Checks of the update revision of a HostedClusterPackage, over its partitions, by state (running, passed, failed, inconclusive).",
	}, []string{hcpkgLabel, stateLabel})

	passCPU = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_rollout_pass_cpu_seconds_total",
		Help: "CPU time the passes of a HostedClusterPackage used on their own thread (reading the cache, planning, writing), by HostedClusterPackage; Linux only.",
	}, []string{hcpkgLabel})
)

func init() {
	metrics.Registry.MustRegister(packagesGauge, rolloutDuration, partitionDuration, failuresCounter,
		gateGauge, awaitingApprovalGauge, rollbacksCounter, checkEvaluations, checksGauge, passCPU)
}

// rolloutMetrics records the metrics of each pass and remembers when partitions started.
type rolloutMetrics struct {
	mu sync.Mutex
	// started holds, per HostedClusterPackage, revision and partition, when this process saw
	// the partition start.
	started map[string]time.Time
	// failed holds the failed count per HostedClusterPackage and partition at the last pass.
	failed map[string]int32
	// rejected and completed hold, per HostedClusterPackage, the last rejected revision this
	// process counted and the last revision whose rollout duration it observed: a pass that
	// starts from a cache not yet showing the previous pass's status write sees the same
	// transition again, and must not count it twice.
	rejected, completed map[string]string
}

// newRolloutMetrics returns an empty recorder.
func newRolloutMetrics() *rolloutMetrics {
	return &rolloutMetrics{started: map[string]time.Time{}, failed: map[string]int32{},
		rejected: map[string]string{}, completed: map[string]string{}}
}

// record sets the gauges of the pass, counts new failures and observes the durations of
// partitions and of the rollout that completed.
func (m *rolloutMetrics) record(s *scope) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name, st := s.obj.Name, &s.obj.Status
	packagesGauge.DeletePartialMatch(prometheus.Labels{hcpkgLabel: name})
	m.dropClocks(name+"/", name+"/"+st.UpdateRevision+"/")
	for i, p := range st.Partitions {
		failed := s.plan.PartitionFailures[i]
		for state, n := range map[string]int32{stateTotal: p.Total, stateUpdated: p.Updated,
			stateAvailable: p.Available, stateProgressed: p.Progressed, stateFailed: failed, stateSkipped: p.Skipped} {
			packagesGauge.WithLabelValues(name, p.Name, state).Set(float64(n))
		}
		fkey := name + "/" + p.Name
		if prev := m.failed[fkey]; failed > prev {
			failuresCounter.WithLabelValues(name, p.Name).Add(float64(failed - prev))
		}
		m.failed[fkey] = failed
		m.partitionClock(name, st.UpdateRevision, p, s.now)
	}
	if s.plan.Completed && newly(m.completed, name, s.before.CurrentRevision, st.CurrentRevision) && s.updateObj != nil {
		rolloutDuration.WithLabelValues(name).Observe(s.now.Sub(startedAt(s.updateObj)).Seconds())
	}
	m.recordGates(name, s.before, st)
	recordChecks(name, st)
}

// recordChecks sets the checks gauge: the checks of the update revision in each state, every
// state at 0 or more.
func recordChecks(name string, st *convoyv1alpha1.HostedClusterPackageStatus) {
	counts := map[string]int{}
	for _, p := range st.Partitions {
		for _, c := range p.Checks {
			if c.Revision == st.UpdateRevision {
				counts[checkStates[c.State]]++
			}
		}
	}
	for _, state := range checkStates {
		checksGauge.WithLabelValues(name, state).Set(float64(counts[state]))
	}
}

// outcomeValue is the outcome label of an evaluation.
func outcomeValue(o rollout.CheckOutcome) string {
	if v, ok := outcomeValues[o]; ok {
		return v
	}
	return outcomeValues[rollout.CheckError]
}

// zeroCheckEvaluations puts the evaluation counters of each named check at 0 for every
// outcome, so that rate() and the dashboard see a check from its compilation on.
func zeroCheckEvaluations(name string, checkNames []string) {
	for _, check := range checkNames {
		for _, outcome := range outcomeValues {
			checkEvaluations.WithLabelValues(name, check, outcome)
		}
	}
}

// newly reports whether a pass moved a status field from before to now for the first time in
// this process, remembering now in seen[name]. An empty now is no transition and forgets what
// was seen: a revision rejected again after another came between counts again.
func newly(seen map[string]string, name, before, now string) bool {
	if now == "" {
		delete(seen, name)
		return false
	}
	if now == before || now == seen[name] {
		return false
	}
	seen[name] = now
	return true
}

// recordGates sets the gate gauges of a status (every gate type, 0 or 1, and the partitions
// awaiting approval), and counts a rollback when the status newly names a rejected revision.
// The caller holds m.mu.
func (m *rolloutMetrics) recordGates(name string, before, st *convoyv1alpha1.HostedClusterPackageStatus) {
	for _, gate := range gateTypes {
		held := 0.0
		if st.Gate != nil && st.Gate.Type == gate {
			held = 1
		}
		gateGauge.WithLabelValues(name, gate).Set(held)
	}
	awaiting := 0
	for _, p := range st.Partitions {
		if p.State == convoyv1alpha1.PartitionAwaitingApproval {
			awaiting++
		}
	}
	awaitingApprovalGauge.WithLabelValues(name).Set(float64(awaiting))
	rollbacks := rollbacksCounter.WithLabelValues(name) // at 0 from the first pass, for rate() and the dashboard
	if newly(m.rejected, name, before.RejectedRevision, st.RejectedRevision) {
		rollbacks.Inc()
	}
}

// partitionClock starts the clock of a partition that is reached and observes its duration
// when it is done.
func (m *rolloutMetrics) partitionClock(name, revision string, p convoyv1alpha1.PartitionStatus, now time.Time) {
	key := name + "/" + revision + "/" + p.Name
	start, running := m.started[key]
	switch {
	case p.State == convoyv1alpha1.PartitionDone && running:
		partitionDuration.WithLabelValues(name, p.Name).Observe(now.Sub(start).Seconds())
		delete(m.started, key)
	case !running && (p.State == convoyv1alpha1.PartitionProgressing || p.State == convoyv1alpha1.PartitionBlocked):
		m.started[key] = now
	}
}

// forget drops the series and clocks of a deleted HostedClusterPackage.
func (m *rolloutMetrics) forget(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, vec := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{packagesGauge, rolloutDuration, partitionDuration, failuresCounter, gateGauge, awaitingApprovalGauge, rollbacksCounter,
		checkEvaluations, checksGauge, promotionHeldGauge, promotionBehindGauge, passCPU} {
		vec.DeletePartialMatch(prometheus.Labels{hcpkgLabel: name})
	}
	prefix := name + "/"
	m.dropClocks(prefix, "")
	for k := range m.failed {
		if strings.HasPrefix(k, prefix) {
			delete(m.failed, k)
		}
	}
	delete(m.rejected, name)
	delete(m.completed, name)
}

// dropClocks forgets the partition clocks under prefix, except those under keep (when set):
// a superseded revision's partitions never complete.
func (m *rolloutMetrics) dropClocks(prefix, keep string) {
	for k := range m.started {
		if strings.HasPrefix(k, prefix) && (keep == "" || !strings.HasPrefix(k, keep)) {
			delete(m.started, k)
		}
	}
}

// measurePassCPU locks the pass of the HostedClusterPackage name to its OS thread and returns the
// function that adds the thread's CPU time since to convoy_rollout_pass_cpu_seconds_total and
// unlocks it. What the pass starts in goroutines of its own (the checks) is not counted.
//
// Note: this is what planning a fleet costs, per HostedClusterPackage, where a profile would
// mix it with the Package controller's work. Locked, a pass that waits for the API server parks
// its thread, and the other goroutines run on others: a few microseconds per request.
func measurePassCPU(name string) func() {
	runtime.LockOSThread()
	before, ok := procstat.ThreadCPU()
	return func() {
		if after, ok2 := procstat.ThreadCPU(); ok && ok2 {
			passCPU.WithLabelValues(name).Add((after - before).Seconds())
		}
		runtime.UnlockOSThread()
	}
}
