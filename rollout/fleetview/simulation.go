package fleetview

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// simulation evolves a copy of the planner's input the way the controllers would if every
// Package became available as soon as its spec changed, every gate opened as soon as it could
// (a soak at its end, a window at its opening), every approval were given when asked for and
// every running check passed at the end of its duration.
type simulation struct {
	in    rollout.Input
	tick  time.Duration
	gates *gateLog
}

// run plans pass after pass, recording each pass's changes as a batch of f, until the rollout
// completes or nothing can change any more.
func (s *simulation) run(f *Forecast) error {
	defer func() {
		s.gates.noteRequiredApprovals(s.in.HostedClusterPackage, s.in.Approvals)
		f.Partitions = s.gates.partitions()
	}()
	// Note: each partition may wait for a soak, checks, an approval and a window, one pass each.
	limit := 6*len(s.in.HostedClusters) + 4
	for pass := 0; pass < limit; pass++ {
		if err := s.passChecks(); err != nil {
			return err
		}
		plan, err := rollout.Compute(s.in)
		if err != nil {
			return err
		}
		if pass == 0 {
			f.MaxUnavailable, f.Ineligible, f.AlreadyUpdated = plan.MaxUnavailable, skipped(plan), plan.Counts.Updated
			f.Waiting = plan.Waiting[:min(len(plan.Waiting), convoyv1alpha1.MaxWaitingSamples)]
		}
		s.gates.notePlan(plan, s.in.Now)
		settled := s.settleInFlight(plan)
		changes := append(append([]rollout.Change{}, plan.Creates...), plan.Updates...)
		switch {
		case len(changes) > 0:
			f.Batches = append(f.Batches, batchOf(plan))
			s.apply(changes)
		case plan.Completed:
			return nil
		case settled:
		case s.passGate(plan):
			continue
		default:
			f.Blocked = s.blockedReason(plan)
			return nil
		}
		s.in.Now = s.in.Now.Add(s.tick)
	}
	f.Blocked = fmt.Sprintf("the rollout did not complete within %d passes", limit)
	return nil
}

// batchOf lists the creates and updates of plan as one batch.
func batchOf(plan *rollout.Plan) Batch {
	var b Batch
	add := func(action string, changes []rollout.Change) {
		for _, c := range changes {
			b.Steps = append(b.Steps, Step{HostedCluster: c.HostedCluster, Partition: c.Partition,
				Action: action, Revision: revisionName(c.Revision), Reason: c.Reason})
		}
	}
	add("create", plan.Creates)
	add("update", plan.Updates)
	return b
}

// apply creates or updates the Packages of changes and lets them progress at once.
func (s *simulation) apply(changes []rollout.Change) {
	for _, c := range changes {
		pkg := s.packageIn(c.Package.Namespace)
		if pkg == nil {
			s.in.Packages = append(s.in.Packages, convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{
				Namespace: c.Package.Namespace, Name: c.Package.Name}})
			pkg = &s.in.Packages[len(s.in.Packages)-1]
		}
		pkg.Generation++
		pkg.Spec = convoyv1alpha1.PackageSpec{PackageTemplateSpec: *c.Revision.Template.DeepCopy(), Revision: c.Revision.Commit}
		if pkg.Annotations == nil {
			pkg.Annotations = map[string]string{}
		}
		pkg.Annotations[rollout.SpecUpdatedAtAnnotation] = rollout.FormatSpecUpdatedAt(s.in.Now)
		s.progress(pkg)
	}
}

// settleInFlight lets the Packages that have not progressed yet progress, except failed, paused
// and deleted ones, and reports whether any did: updates in flight finish.
func (s *simulation) settleInFlight(plan *rollout.Plan) bool {
	failed := map[string]bool{}
	for _, f := range plan.Failed {
		ns, name, _ := strings.Cut(f.HostedCluster, "/")
		failed[convoyv1alpha1.HostedControlPlaneNamespace(ns, name)] = true
	}
	settled := false
	for i := range s.in.Packages {
		pkg := &s.in.Packages[i]
		if failed[pkg.Namespace] || pkg.Spec.Paused || pkg.DeletionTimestamp != nil || rollout.Progressed(pkg) {
			continue
		}
		s.progress(pkg)
		settled = true
	}
	return settled
}

// progress makes pkg Available and done at its spec, as of now.
func (s *simulation) progress(pkg *convoyv1alpha1.Package) {
	now := metav1.NewTime(s.in.Now)
	pkg.Status.Revision = pkg.Spec.Revision
	pkg.Status.Conditions = []metav1.Condition{
		{Type: convoyv1alpha1.AvailableCondition, Status: metav1.ConditionTrue, ObservedGeneration: pkg.Generation,
			LastTransitionTime: now, Reason: convoyv1alpha1.RevisionAvailableReason},
		{Type: convoyv1alpha1.ProgressingCondition, Status: metav1.ConditionFalse, ObservedGeneration: pkg.Generation,
			LastTransitionTime: now, Reason: convoyv1alpha1.SucceededReason},
	}
}

// packageIn returns the simulated Package in namespace, or nil.
func (s *simulation) packageIn(namespace string) *convoyv1alpha1.Package {
	for i := range s.in.Packages {
		if s.in.Packages[i].Namespace == namespace {
			return &s.in.Packages[i]
		}
	}
	return nil
}

// blockedReason explains why a plan that changes nothing does not complete the rollout.
func (s *simulation) blockedReason(plan *rollout.Plan) string {
	if s.in.UpdateRevision.Rejected {
		return "a rollback rejected the revision: it is not rolled out again; a new commit or template change makes the next revision"
	}
	if s.in.HostedClusterPackage.Spec.Paused {
		return "spec.paused is set: no update starts until it is cleared"
	}
	if g := plan.Gate; g != nil && g.Type != convoyv1alpha1.GateFailures {
		return gateBlockedReason(plan)
	}
	if n := len(plan.Failed); n > 0 && plan.Failed[0].Check != "" {
		return plan.Failed[0].Message
	}
	if n := len(plan.Failed); n > 0 {
		f := plan.Failed[0]
		return fmt.Sprintf("%d failed Package(s) hold the budget of %d; first: %s: %s", n, plan.MaxUnavailable, f.HostedCluster, f.Message)
	}
	if n := plan.Counts.Waiting; n > 0 {
		return fmt.Sprintf("%d Package(s) wait for their dependencies, which the forecast holds as they are now; first: %s",
			n, plan.Waiting[len(plan.Waiting)-int(n)].Message)
	}
	var states []string
	for _, p := range plan.Partitions {
		states = append(states, p.Name+"="+p.State)
	}
	return "no Package can change: " + strings.Join(states, ", ")
}

// revisionName names rev by its ControllerRevision, or by its short commit when it has none.
func revisionName(rev rollout.Revision) string {
	if rev.Name == "" {
		return shortCommit(rev.Commit)
	}
	return rev.Name
}

// skipped lists the ineligible targets of plan.
func skipped(plan *rollout.Plan) []Skipped {
	var out []Skipped
	for _, t := range plan.Ineligible {
		out = append(out, Skipped{HostedCluster: t.HostedCluster, Partition: t.Partition, Reason: t.Reason, Message: t.Message})
	}
	return out
}
