package rollout

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// packageState is what the planner concludes about one Package at Input.Now. Conditions count
// only at the Package's current generation (their observedGeneration equals
// metadata.generation).
type packageState struct {
	exists   bool
	deleting bool

	// revision is the known revision the spec matches; nil when none does.
	revision *Revision
	// updated: the spec matches the update revision.
	updated bool
	// available: Available=True.
	available bool
	// progressed: status.revision equals spec.revision, Available=True and Progressing=False.
	progressed bool
	// ready: progressed for minReadySeconds.
	ready bool
	// progressedAt is when the Package progressed at its spec; zero when it has not.
	progressedAt time.Time
	// regressedAt is when a Package that was available at its spec's commit (status.revision)
	// stopped being available; zero when it did not.
	regressedAt time.Time
	// paused: spec.paused or Paused=True; pausedByHand: spec.paused while the template of the
	// revision the Package has does not ask for it.
	paused       bool
	pausedByHand bool
	// failed: not progressed for progressDeadlineSeconds, or regressed in a soak (failReason);
	// failure says why.
	failed     bool
	failReason string
	failure    string

	// wakeAt is when ready or failed changes next; zero when neither can.
	wakeAt time.Time
}

// pinnedToUpdate reports whether the Package exists and is on the update revision.
func (s *packageState) pinnedToUpdate() bool { return s.exists && s.updated }

// Progressed reports whether pkg has progressed: status.revision equals spec.revision, and
// Available=True and Progressing=False at the current generation. Available alone is never
// enough: a Package still applying its revision may be Available at the previous one.
//
// A Package whose package cannot be installed on its cluster (ConstraintsNotMet) has
// progressed too: there is nothing to install there until the cluster changes.
func Progressed(pkg *convoyv1alpha1.Package) bool {
	return (pkg.Status.Revision == pkg.Spec.Revision &&
		isStatus(conditionAt(pkg, convoyv1alpha1.AvailableCondition), metav1.ConditionTrue) &&
		isStatus(conditionAt(pkg, convoyv1alpha1.ProgressingCondition), metav1.ConditionFalse)) ||
		ConstraintsNotMet(pkg)
}

// ConstraintsNotMet reports a Package stalled, at its current generation and for the commit
// its spec pins, because its package's spec.constraints do not hold on its cluster: nothing
// is applied there. The rollout counts it as available and progressed, so that it holds no
// budget and no partition barrier and the other clusters proceed; the Package's own status
// reports it.
func ConstraintsNotMet(pkg *convoyv1alpha1.Package) bool {
	c := conditionAt(pkg, convoyv1alpha1.StalledCondition)
	return isStatus(c, metav1.ConditionTrue) && c.Reason == convoyv1alpha1.ConstraintsNotMetReason &&
		pkg.Status.LastAttemptedRevision == pkg.Spec.Revision
}

// waitsForGoneCommit reports a Package that waits because the commit its spec pins is gone:
// neither the store nor the remote has it, as when a force-push dropped it before a new
// replica's store fetched it (Progressing=True, CommitNotFound, at its generation). Its
// Available condition may be older than its spec: a Package that never applied that commit
// has nothing to say about it.
func waitsForGoneCommit(pkg *convoyv1alpha1.Package) bool {
	c := conditionAt(pkg, convoyv1alpha1.ProgressingCondition)
	return isStatus(c, metav1.ConditionTrue) && c.Reason == convoyv1alpha1.CommitNotFoundReason
}

// commitGone reports an available Package, at its generation, that waits for a gone commit.
func commitGone(pkg *convoyv1alpha1.Package) bool {
	return waitsForGoneCommit(pkg) && isStatus(conditionAt(pkg, convoyv1alpha1.AvailableCondition), metav1.ConditionTrue)
}

// settledAtGoneCommit reports a Package at the completed current revision that progressed at
// its commit (status.revision) and waits only because that commit is gone now: whatever
// comes back, it has applied it, so it counts as progressed and holds no budget slot. Counted
// as progressing, every such Package held a slot it could never give back, and the next
// rollout stalled (the soak's failure, seed 1795816713665098014).
//
// Note: a Package pinned to a gone commit it has not applied keeps its slot: were the commit
// to come back, it would apply it. The rollout moves it (returnFromGoneCommits).
func (p *planner) settledAtGoneCommit(pkg *convoyv1alpha1.Package, rev *Revision) bool {
	return rev != nil && p.completed(rev) && pkg.Status.Revision == pkg.Spec.Revision && commitGone(pkg)
}

// assess reads pkg at Input.Now; a nil pkg is missing.
func (p *planner) assess(pkg *convoyv1alpha1.Package) packageState {
	if pkg == nil {
		return packageState{}
	}
	s := packageState{exists: true, deleting: pkg.DeletionTimestamp != nil}
	s.revision = p.matchRevision(pkg)
	s.updated = s.revision == &p.in.UpdateRevision
	available := conditionAt(pkg, convoyv1alpha1.AvailableCondition)
	progressing := conditionAt(pkg, convoyv1alpha1.ProgressingCondition)
	s.available = isStatus(available, metav1.ConditionTrue) || ConstraintsNotMet(pkg)
	s.progressed = Progressed(pkg) || p.settledAtGoneCommit(pkg, s.revision)
	s.paused = pkg.Spec.Paused || isStatus(conditionAt(pkg, convoyv1alpha1.PausedCondition), metav1.ConditionTrue)
	s.pausedByHand = pkg.Spec.Paused && (s.revision == nil || !s.revision.Template.Paused)
	updatedAt := specUpdatedAt(pkg, p.in.Now)
	if s.progressed {
		s.progressedAt = latest(updatedAt, transitionTime(available), transitionTime(progressing))
		p.assessReadiness(&s, s.progressedAt)
	} else {
		p.assessDeadline(&s, pkg, stuckSince(updatedAt, available, progressing))
	}
	if pkg.Status.Revision == pkg.Spec.Revision && available != nil && !s.available {
		s.regressedAt = available.LastTransitionTime.Time
	}
	return s
}

// assessReadiness decides whether a Package that progressed at since has stayed so long enough.
// Note: since is the latest of the spec update and the transitions of Available and Progressing;
// a Package whose conditions never flipped for a change (a quick template-only change) is thus
// measured from its spec update.
func (p *planner) assessReadiness(s *packageState, since time.Time) {
	readyAt := since.Add(p.minReady)
	s.ready = !p.in.Now.Before(readyAt)
	if !s.ready {
		s.wakeAt = readyAt
	}
}

// assessDeadline decides whether a Package that has not progressed since since has failed.
func (p *planner) assessDeadline(s *packageState, pkg *convoyv1alpha1.Package, since time.Time) {
	failAt := since.Add(p.deadline)
	s.failed = !p.in.Now.Before(failAt)
	if !s.failed {
		s.wakeAt = failAt
		return
	}
	s.failReason = ProgressDeadlineExceededReason
	s.failure = fmt.Sprintf("Package %s/%s has not progressed at revision %s for %s: %s",
		pkg.Namespace, pkg.Name, shortCommit(pkg.Spec.Revision), p.deadline, stuckMessage(pkg))
}

// stuckSince returns when a Package that has not progressed was last seen moving: the later of
// its spec update and the transition of the condition that holds it back (Progressing=True, or
// else Available not True). A Package that progressed and later regressed is thus measured from
// the regression, not from its last spec update.
func stuckSince(updatedAt time.Time, available, progressing *metav1.Condition) time.Time {
	switch {
	case isStatus(progressing, metav1.ConditionTrue):
		return latest(updatedAt, progressing.LastTransitionTime.Time)
	case available != nil && available.Status != metav1.ConditionTrue:
		return latest(updatedAt, available.LastTransitionTime.Time)
	}
	return updatedAt
}

// stuckMessage quotes the condition that holds a Package back.
func stuckMessage(pkg *convoyv1alpha1.Package) string {
	if c := conditionAt(pkg, convoyv1alpha1.ProgressingCondition); isStatus(c, metav1.ConditionTrue) {
		return c.Message
	}
	if c := conditionAt(pkg, convoyv1alpha1.AvailableCondition); c != nil && c.Status != metav1.ConditionTrue {
		return c.Message
	}
	if pkg.Status.Revision != pkg.Spec.Revision {
		return "status.revision is " + shortCommit(pkg.Status.Revision)
	}
	return fmt.Sprintf("generation %d not observed", pkg.Generation)
}

// matchRevision returns the known revision pkg's spec matches, or nil; Input.Memo remembers
// the answer for a Package that has not changed.
func (p *planner) matchRevision(pkg *convoyv1alpha1.Package) *Revision {
	i := p.in.Memo.match(pkg, p.findRevision)
	if i < 0 {
		return nil
	}
	return p.revisions[i]
}

// findRevision returns the index in p.revisions of the first revision pkg's spec matches, -1
// when none does.
func (p *planner) findRevision(pkg *convoyv1alpha1.Package) int {
	for i, rev := range p.revisions {
		if rev.Commit == pkg.Spec.Revision && templateMatches(pkg.Spec.PackageTemplateSpec, rev.Template) {
			return i
		}
	}
	return -1
}

// templateMatches reports whether a Package's spec equals a revision's template. A Package
// paused by hand still matches a template that does not ask for a pause: server-side apply
// leaves a field the template omits to whoever set it.
func templateMatches(spec, template convoyv1alpha1.PackageTemplateSpec) bool {
	if !template.Paused {
		spec.Paused = false
	}
	return equality.Semantic.DeepEqual(spec, template)
}

// conditionAt returns the condition of type t if it was observed at pkg's current generation.
func conditionAt(pkg *convoyv1alpha1.Package, t string) *metav1.Condition {
	for i := range pkg.Status.Conditions {
		c := &pkg.Status.Conditions[i]
		if c.Type == t && c.ObservedGeneration == pkg.Generation {
			return c
		}
	}
	return nil
}

// isStatus reports whether c exists with status s.
func isStatus(c *metav1.Condition, s metav1.ConditionStatus) bool {
	return c != nil && c.Status == s
}

// transitionTime returns c's last transition time; zero for a nil c.
func transitionTime(c *metav1.Condition) time.Time {
	if c == nil {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}

// specUpdatedAt returns when pkg's spec was last set to a revision: SpecUpdatedAtAnnotation,
// else the creation timestamp, else now (so that a Package of unknown age never fails at once).
func specUpdatedAt(pkg *convoyv1alpha1.Package, now time.Time) time.Time {
	if v, ok := pkg.Annotations[SpecUpdatedAtAnnotation]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t
		}
	}
	if !pkg.CreationTimestamp.IsZero() {
		return pkg.CreationTimestamp.Time
	}
	return now
}

// latest returns the latest of ts.
func latest(ts ...time.Time) time.Time {
	var last time.Time
	for _, t := range ts {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// shortCommit abbreviates a commit for messages.
func shortCommit(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	if commit == "" {
		return `""`
	}
	return commit
}
