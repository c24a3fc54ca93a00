package rollout

import (
	"errors"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// DueCheck is one check the controller evaluates now, with what its evaluation needs.
type DueCheck struct {
	// HostedClusterPackage names the rollout.
	HostedClusterPackage string

	// Partition names the partition the check judges.
	Partition string

	// Revision and Commit are the update revision's name and commit.
	Revision, Commit string

	// Check is the check's spec.
	Check convoyv1alpha1.RolloutCheck

	// HostedClusters are the partition's targets whose Package is on the update revision, in
	// rollout order: the clusters the check looks at.
	HostedClusters []CheckTarget

	// Since is when the partition started: the earliest spec update of its Packages on the
	// update revision. An alert that started before is not this revision's.
	Since time.Time

	// StartedAt is when the check started: the partition's last Package progressed.
	StartedAt time.Time

	// Until is when the check's duration ends: an evaluation at or after it may pass the check.
	Until time.Time

	// Result is the check's result so far at the update revision; nil when it starts over.
	Result *convoyv1alpha1.CheckStatus
}

// CheckTarget is a HostedCluster a check looks at.
type CheckTarget struct {
	// Name and Namespace of the HostedCluster.
	Name, Namespace string

	// HCPNamespace is its hosted control plane namespace, where its Package lives.
	HCPNamespace string

	// Labels of the HostedCluster.
	Labels map[string]string
}

// CheckOutcome is the outcome of one evaluation of a check.
type CheckOutcome string

// Outcomes of an evaluation.
const (
	// CheckPass: the condition held (a query's), no alert matched, or the endpoint answered 2xx.
	CheckPass CheckOutcome = "Pass"
	// CheckFail: the condition did not hold, an alert matched, or the endpoint answered
	// otherwise.
	CheckFail CheckOutcome = "Fail"
	// CheckError: the evaluation could not decide: an unreachable server, a timeout, an error
	// of the query or the condition.
	CheckError CheckOutcome = "Inconclusive"
)

// Evaluation is the result of evaluating a DueCheck once.
type Evaluation struct {
	// Outcome of the evaluation.
	Outcome CheckOutcome
	// Value is what it saw (bounded to MaxCheckValue bytes by Record).
	Value string
	// Message says why, for humans (bounded to MaxCheckMessage bytes by Record).
	Message string
	// At is when it was evaluated: Input.Now.
	At time.Time
}

// DueChecks returns the checks due at Input.Now, in rollout order: those of every partition
// whose checks run (rule 19 of the package doc) that have no result at the update revision yet,
// or whose last evaluation was an interval ago, and that neither passed nor failed. The
// controller evaluates them, records each with DueCheck.Record into Input.CheckResults, and
// then calls Compute. It fails as Compute does.
func DueChecks(in Input) ([]DueCheck, error) {
	if in.HostedClusterPackage == nil {
		return nil, errors.New("no HostedClusterPackage")
	}
	in.Memo.begin(&in)
	defer in.Memo.end()
	p, err := newPlanner(in)
	if err != nil {
		return nil, err
	}
	var due []DueCheck
	for _, part := range p.runningChecks() {
		for _, c := range part.checks.specs {
			r := part.checks.results[c.Name]
			if next, ok := p.nextEvaluation(part, &c, r); ok && !next.After(in.Now) {
				due = append(due, p.dueCheck(part, c, r))
			}
		}
	}
	return due, nil
}

// runningChecks returns the partitions whose checks are evaluated: they started, and none of
// them failed.
func (p *planner) runningChecks() []*partition {
	var out []*partition
	for _, part := range p.partitions {
		if p.checksStarted(part) && part.checks.failed == nil {
			out = append(out, part)
		}
	}
	return out
}

// nextEvaluation returns when check c of part is next evaluated: at once without a result, an
// interval after its last evaluation, but no later than the end of its duration; false once it
// passed or failed.
func (p *planner) nextEvaluation(part *partition, c *convoyv1alpha1.RolloutCheck, r *convoyv1alpha1.CheckStatus) (time.Time, bool) {
	if r == nil || r.LastEvaluated == nil {
		return p.lastProgressed(part), true
	}
	if r.State == convoyv1alpha1.CheckPassed || r.State == convoyv1alpha1.CheckFailed {
		return time.Time{}, false
	}
	last, until := r.LastEvaluated.Time, p.lastProgressed(part).Add(c.Duration())
	next := last.Add(c.Interval())
	if last.Before(until) && next.After(until) {
		next = until
	}
	return next, true
}

// checkWakeAt returns the earliest next evaluation of a running check, no earlier than a second
// after Input.Now; zero when no check runs.
func (p *planner) checkWakeAt() time.Time {
	var next time.Time
	for _, part := range p.runningChecks() {
		for _, c := range part.checks.specs {
			at, ok := p.nextEvaluation(part, &c, part.checks.results[c.Name])
			if !ok {
				continue
			}
			at = latest(at, p.in.Now.Add(time.Second))
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	return next
}

// dueCheck describes check c of part for its evaluation.
func (p *planner) dueCheck(part *partition, c convoyv1alpha1.RolloutCheck, r *convoyv1alpha1.CheckStatus) DueCheck {
	start := p.lastProgressed(part)
	d := DueCheck{
		HostedClusterPackage: p.name, Partition: part.name,
		Revision: p.in.UpdateRevision.Name, Commit: p.in.UpdateRevision.Commit,
		Check: *c.DeepCopy(), Since: p.partitionStart(part), StartedAt: start, Until: start.Add(c.Duration()),
	}
	if r != nil {
		d.Result = r.DeepCopy()
	}
	for _, t := range part.targets {
		if t.accountable() && t.state.pinnedToUpdate() {
			d.HostedClusters = append(d.HostedClusters, CheckTarget{Name: t.cluster.Name, Namespace: t.cluster.Namespace,
				HCPNamespace: t.namespace, Labels: t.cluster.Labels})
		}
	}
	return d
}

// partitionStart returns the earliest spec update of part's Packages on the update revision.
func (p *planner) partitionStart(part *partition) time.Time {
	var start time.Time
	for _, t := range part.targets {
		if !t.accountable() || !t.state.pinnedToUpdate() {
			continue
		}
		if at := specUpdatedAt(t.pkg, p.in.Now); start.IsZero() || at.Before(start) {
			start = at
		}
	}
	return start
}

// Record applies evaluation e to the check's result and returns the new result: a pass or a
// failure is counted and ends a run of inconclusive evaluations, which are counted in a row.
// The check has Failed once its failures exceed failureLimit; it is Inconclusive while its
// inconclusive evaluations in a row exceed inconclusiveLimit; it has Passed at its first
// passing evaluation at or after the end of its duration; else it is Running.
func (d *DueCheck) Record(e Evaluation) convoyv1alpha1.CheckStatus {
	r := convoyv1alpha1.CheckStatus{Name: d.Check.Name, Revision: d.Revision}
	if d.Result != nil && d.Result.Revision == d.Revision {
		r = *d.Result.DeepCopy()
	}
	switch e.Outcome {
	case CheckPass:
		r.Passes, r.Inconclusive = r.Passes+1, 0
	case CheckFail:
		r.Failures, r.Inconclusive = r.Failures+1, 0
	default:
		r.Inconclusive++
	}
	r.LastValue = boundBytes(e.Value, convoyv1alpha1.MaxCheckValue)
	r.Message = boundBytes(e.Message, convoyv1alpha1.MaxCheckMessage)
	r.LastEvaluated, r.StartedAt = metaTime(e.At), metaTime(d.StartedAt)
	switch {
	case r.Failures > d.Check.FailureLimit:
		r.State = convoyv1alpha1.CheckFailed
	case r.Inconclusive > d.Check.InconclusiveLimit:
		r.State = convoyv1alpha1.CheckInconclusive
	case e.Outcome == CheckPass && !e.At.Before(d.Until):
		r.State = convoyv1alpha1.CheckPassed
	default:
		r.State = convoyv1alpha1.CheckRunning
	}
	return r
}

// SetCheckResult stores r as the result of its check in partition, replacing the one of the
// same name.
func (in *Input) SetCheckResult(partition string, r convoyv1alpha1.CheckStatus) {
	if in.CheckResults == nil {
		in.CheckResults = map[string][]convoyv1alpha1.CheckStatus{}
	}
	results := in.CheckResults[partition]
	for i := range results {
		if results[i].Name == r.Name {
			results[i] = r
			return
		}
	}
	in.CheckResults[partition] = append(results, r)
}

// CheckResultsOf returns the check results of status.partitions, by partition name, for
// Input.CheckResults.
func CheckResultsOf(partitions []convoyv1alpha1.PartitionStatus) map[string][]convoyv1alpha1.CheckStatus {
	out := map[string][]convoyv1alpha1.CheckStatus{}
	for _, part := range partitions {
		if len(part.Checks) > 0 {
			out[part.Name] = append([]convoyv1alpha1.CheckStatus(nil), part.Checks...)
		}
	}
	return out
}
