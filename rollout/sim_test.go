package rollout

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// sim evolves a world the way the controller and the Package controller would: each step it
// computes a plan, applies it, promotes the update revision when the rollout completed, advances
// the clock by a tick, and lets Packages progress a seeded random number of ticks after their
// spec changed. Packages pinned to a bad commit never progress. It logs every step that changed
// something.
type sim struct {
	*world
	t    testing.TB
	rng  *rand.Rand
	tick time.Duration
	bad  map[string]bool
	// badServes keeps Packages at a bad commit Available: the old revision still serves.
	badServes bool
	// badOn holds "<namespace>@<commit>" for the Packages that never progress at one commit
	// (breakOn), whatever the others do.
	badOn map[string]bool
	// gates logs the gate, the partitions' until and a rejection of every step.
	gates   bool
	doneAt  map[string]time.Time
	breakAt map[string]time.Time
	events  []*event
	// check, when set, inspects each plan before it is applied.
	check func(plan *Plan)
	// amend, when set, completes each step's input (the dependencies of TestPropertyDependencies).
	amend func(in *Input)
	// checker, when set, evaluates each due check of a step before the step's plan, as the
	// controller does; the step's plan carries the results to the next step, as status does.
	checker func(s *sim, d DueCheck) Evaluation
	// specAt and progressedAt record, per namespace, when a Package's spec last changed and
	// when it progressed at that spec.
	specAt       map[string]time.Time
	progressedAt map[string]time.Time
	// deleting holds, by namespace, the Packages of live HostedClusters being deleted: their
	// teardown takes a tick, and they hold a budget slot meanwhile.
	deleting map[string]*convoyv1alpha1.Package
	step     int
	// created counts the Packages given a UID (stamp).
	created int
	// memo is carried from step to step (planWithMemo).
	memo Memo
	// start is the clock of the first step; the log counts from it.
	start time.Time
	plans []*Plan
	log   strings.Builder
	last  string
}

// event changes the world once, at the first step when is true.
type event struct {
	name  string
	when  func(s *sim) bool
	do    func(s *sim)
	fired bool
}

// newSim starts a simulation of w with the given seed.
func newSim(t testing.TB, w *world, seed uint64) *sim {
	s := &sim{
		world:   w,
		t:       t,
		rng:     rand.New(rand.NewPCG(seed, seed^0x5eed)),
		tick:    30 * time.Second,
		bad:     map[string]bool{},
		badOn:   map[string]bool{},
		doneAt:  map[string]time.Time{},
		breakAt: map[string]time.Time{},

		specAt:       map[string]time.Time{},
		progressedAt: map[string]time.Time{},
		deleting:     map[string]*convoyv1alpha1.Package{},
		start:        w.now,
	}
	for ns, p := range w.packages {
		s.specAt[ns] = specUpdatedAt(p, w.now)
		if p.Status.Revision == p.Spec.Revision {
			s.progressedAt[ns] = s.specAt[ns]
		}
	}
	return s
}

// on schedules an event.
func (s *sim) on(name string, when func(s *sim) bool, do func(s *sim)) {
	s.events = append(s.events, &event{name: name, when: when, do: do})
}

// atStep is an event condition true from step n on.
func atStep(n int) func(s *sim) bool { return func(s *sim) bool { return s.step >= n } }

// push makes rev the update revision; its commit never progresses when bad.
func (s *sim) push(rev Revision, bad bool) {
	if s.history[len(s.history)-1].Name != rev.Name {
		s.history = append(s.history, rev)
	}
	s.update = rev
	s.bad[rev.Commit] = bad
}

// breakOn makes the Package of the cluster named name never progress at rev.
func (s *sim) breakOn(name string, rev Revision) {
	s.badOn[namespaceOf(name)+"@"+rev.Commit] = true
}

// reject marks the update revision rejected, as the controller does when a plan says Reject.
func (s *sim) reject() {
	s.update.Rejected = true
	for i := range s.history {
		if s.history[i].Name == s.update.Name {
			s.history[i].Rejected = true
		}
	}
}

// run steps until the rollout completed with nothing left to do and no event pending, or for at
// most n steps.
func (s *sim) run(n int) {
	for range n {
		plan := s.advance()
		settled := plan.DeletionsWaiting == 0 && len(s.deleting) == 0
		if plan.Completed && settled && len(describe(plan)) == 0 && s.pendingEvents() == 0 {
			return
		}
	}
}

// pendingEvents counts the events not fired yet.
func (s *sim) pendingEvents() int {
	n := 0
	for _, e := range s.events {
		if !e.fired {
			n++
		}
	}
	return n
}

// advance runs one step and returns its plan.
func (s *sim) advance() *Plan {
	fired := s.fireEvents()
	in := s.input()
	if s.amend != nil {
		s.amend(&in)
	}
	evaluated := s.evaluateChecks(&in)
	plan, err := Compute(in)
	NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
	s.planWithMemo(in, plan)
	s.checkResults = CheckResultsOf(plan.Partitions)
	s.logStep(plan, fired, evaluated)
	if s.check != nil {
		s.check(plan)
	}
	if plan.Reject {
		s.reject()
	}
	s.apply(plan)
	if plan.Completed && (s.current == nil || s.current.Name != s.update.Name) {
		cur := s.update
		s.current = &cur
	}
	s.plans = append(s.plans, plan)
	s.now = s.now.Add(s.tick)
	s.finishDeletions()
	s.progressPackages()
	s.step++
	return plan
}

// evaluateChecks evaluates the checks due in in with s.checker, records their results in in,
// and describes them.
func (s *sim) evaluateChecks(in *Input) []string {
	if s.checker == nil {
		return nil
	}
	due, err := DueChecks(*in)
	NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
	var lines []string
	for _, d := range due {
		e := s.checker(s, d)
		e.At = s.now
		r := d.Record(e)
		in.SetCheckResult(d.Partition, r)
		lines = append(lines, fmt.Sprintf("check    %s/%s %s %q on %d cluster(s) -> %s (%d passed, %d failed, %d inconclusive)",
			d.Partition, d.Check.Name, e.Outcome, e.Value, len(d.HostedClusters), r.State, r.Passes, r.Failures, r.Inconclusive))
	}
	return lines
}

// fireEvents runs the due events and returns their names.
func (s *sim) fireEvents() []string {
	var names []string
	for _, e := range s.events {
		if !e.fired && e.when(s) {
			e.do(s)
			e.fired = true
			names = append(names, e.name)
		}
	}
	return names
}

// apply creates, updates and deletes Packages as the plan says.
func (s *sim) apply(plan *Plan) {
	for _, c := range plan.Creates {
		p := s.pkg(strings.TrimPrefix(c.HostedCluster, clusterNS+"/"), c.Revision, s.now)
		p.Status = convoyv1alpha1.SyncStatus{}
		setCondition(p, convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, s.now, "installing")
		setCondition(p, convoyv1alpha1.ProgressingCondition, metav1.ConditionTrue, s.now, "installing")
		s.schedule(p.Namespace, c.Revision)
	}
	for _, c := range plan.Updates {
		setSpec(s.packages[c.Package.Namespace], c.Revision, s.now)
		s.schedule(c.Package.Namespace, c.Revision)
	}
	for _, d := range plan.Deletes {
		if d.Reason == DeselectedReason {
			p := s.packages[d.Package.Namespace]
			p.DeletionTimestamp = &metav1.Time{Time: s.now}
			s.deleting[d.Package.Namespace] = p
		}
		delete(s.packages, d.Package.Namespace)
		delete(s.doneAt, d.Package.Namespace)
		delete(s.breakAt, d.Package.Namespace)
		delete(s.specAt, d.Package.Namespace)
		delete(s.progressedAt, d.Package.Namespace)
	}
}

// input returns the planner's input, with the Packages being deleted still listed. Each
// Package has a UID and a resourceVersion as the API server would give it: a UID of its own
// from its creation on, and a resourceVersion that changes whenever the Package does.
func (s *sim) input() Input {
	for _, p := range s.packages {
		s.stamp(p)
	}
	for _, p := range s.deleting {
		s.stamp(p)
	}
	in := s.world.input()
	for _, p := range s.deleting {
		in.Packages = append(in.Packages, *p)
	}
	return in
}

// stamp gives p a UID unless it has one, and a resourceVersion that is a digest of the rest of
// it.
func (s *sim) stamp(p *convoyv1alpha1.Package) {
	if p.UID == "" {
		s.created++
		p.UID = types.UID(fmt.Sprintf("uid-%d", s.created))
	}
	p.ResourceVersion = ""
	data, err := json.Marshal(p)
	NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
	p.ResourceVersion = fmt.Sprintf("%x", sha256.Sum256(data))
}

// planWithMemo plans in again with the Memo the simulation carries from step to step, and
// expects the plan computed from scratch: the Memo changes no answer, whatever the fleet and
// the order of its events.
func (s *sim) planWithMemo(in Input, want *Plan) {
	in.Memo = &s.memo
	got, err := Compute(in)
	g := NewWithT(s.t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(want), "step %d planned with a Memo", s.step)
}

// finishDeletions lets the Packages being deleted go, a tick after their deletion.
func (s *sim) finishDeletions() {
	for ns, p := range s.deleting {
		if s.now.Sub(p.DeletionTimestamp.Time) >= s.tick {
			delete(s.deleting, ns)
		}
	}
}

// schedule decides when the Package in namespace ns progresses at rev: one to three ticks from
// now; a bad commit never does, and its probes fail one tick from now.
func (s *sim) schedule(ns string, rev Revision) {
	s.specAt[ns] = s.now
	delete(s.progressedAt, ns)
	delete(s.doneAt, ns)
	delete(s.breakAt, ns)
	if s.bad[rev.Commit] || s.badOn[ns+"@"+rev.Commit] {
		if !s.badServes {
			s.breakAt[ns] = s.now.Add(s.tick)
		}
		return
	}
	s.doneAt[ns] = s.now.Add(time.Duration(1+s.rng.IntN(3)) * s.tick)
}

// progressPackages lets every Package whose time has come progress, or break.
func (s *sim) progressPackages() {
	for ns, at := range s.doneAt {
		if !s.now.Before(at) {
			progress(s.packages[ns], s.now)
			s.progressedAt[ns] = s.now
			delete(s.doneAt, ns)
		}
	}
	for ns, at := range s.breakAt {
		if !s.now.Before(at) {
			setCondition(s.packages[ns], convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, s.now, "probe failed")
			delete(s.breakAt, ns)
		}
	}
}

// revisionOf names the revision a Package in namespace ns is pinned to, "-" without a Package.
func (s *sim) revisionOf(ns string) string {
	p, ok := s.packages[ns]
	if !ok {
		return "-"
	}
	for _, rev := range s.history {
		if rev.Commit == p.Spec.Revision {
			return rev.Name
		}
	}
	return "?"
}

// logStep writes the step to the log when it fired events, changed Packages, or reports
// something new.
func (s *sim) logStep(plan *Plan, fired, evaluated []string) {
	summary := summarize(plan)
	if s.gates {
		summary += gateLines(plan)
	}
	changes := append(evaluated, s.changeLines(plan)...)
	if len(fired) == 0 && len(changes) == 0 && summary == s.last {
		return
	}
	s.last = summary
	current := "none"
	if s.current != nil {
		current = s.current.Name
	}
	fmt.Fprintf(&s.log, "step %d (+%s) update=%s current=%s\n", s.step, s.now.Sub(s.start), s.update.Name, current)
	for _, name := range fired {
		fmt.Fprintf(&s.log, "  event    %s\n", name)
	}
	for _, line := range changes {
		fmt.Fprintf(&s.log, "  %s\n", line)
	}
	s.log.WriteString(summary)
}

// changeLines describes the plan's changes with the revision each Package leaves.
func (s *sim) changeLines(plan *Plan) []string {
	var lines []string
	name := func(hc string) string { return strings.TrimPrefix(hc, clusterNS+"/") }
	for _, c := range plan.Creates {
		lines = append(lines, fmt.Sprintf("create   %s [%s] -> %s (%s)", name(c.HostedCluster), c.Partition, c.Revision.Name, c.Reason))
	}
	for _, c := range plan.Updates {
		lines = append(lines, fmt.Sprintf("update   %s [%s] %s -> %s (%s)", name(c.HostedCluster), c.Partition,
			s.revisionOf(c.Package.Namespace), c.Revision.Name, c.Reason))
	}
	for _, d := range plan.Deletes {
		lines = append(lines, fmt.Sprintf("delete   %s (%s)", d.Package, d.Reason))
	}
	return lines
}

// summarize renders the partitions, counts, conditions and failures of a plan.
func summarize(plan *Plan) string {
	var b strings.Builder
	b.WriteString("  parts   ")
	for i, p := range plan.Partitions {
		if i > 0 {
			b.WriteString(" |")
		}
		fmt.Fprintf(&b, " %s=%s %d/%d updated %d progressed", p.Name, p.State, p.Updated, p.Total, p.Progressed)
	}
	c := plan.Counts
	fmt.Fprintf(&b, "\n  status   total=%d updated=%d available=%d unavailable=%d progressed=%d paused=%d failed=%d\n",
		c.Total, c.Updated, c.Available, c.Unavailable, c.Progressed, c.Paused, c.Failed)
	b.WriteString("  conds   ")
	for _, cond := range plan.Conditions {
		fmt.Fprintf(&b, " %s=%s(%s)", cond.Type, cond.Status, cond.Message)
	}
	b.WriteString("\n")
	for _, f := range plan.Failed {
		if f.Check != "" {
			fmt.Fprintf(&b, "  failed   check %s/%s %s\n", f.Partition, f.Check, f.Reason)
			continue
		}
		fmt.Fprintf(&b, "  failed   %s %s\n", strings.TrimPrefix(f.HostedCluster, clusterNS+"/"), f.Reason)
	}
	for _, t := range plan.Ineligible {
		fmt.Fprintf(&b, "  skipped  %s [%s] %s\n", strings.TrimPrefix(t.HostedCluster, clusterNS+"/"), t.Partition, t.Reason)
	}
	if plan.DeletionsWaiting > 0 {
		fmt.Fprintf(&b, "  waiting  %d deletion(s)\n", plan.DeletionsWaiting)
	}
	return b.String()
}

// gateLines renders the gate, the partitions' until and a rejection of a plan.
func gateLines(plan *Plan) string {
	var b strings.Builder
	if g := plan.Gate; g != nil {
		fmt.Fprintf(&b, "  gate     %s %s", g.Type, g.Partition)
		if g.Until != nil {
			fmt.Fprintf(&b, " until %s", g.Until.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(&b, ": %s\n", g.Message)
	}
	for _, p := range plan.Partitions {
		if p.Until != nil {
			fmt.Fprintf(&b, "  until    %s=%s %s\n", p.Name, p.State, p.Until.UTC().Format(time.RFC3339))
		}
	}
	for _, p := range plan.Partitions {
		for _, c := range p.Checks {
			fmt.Fprintf(&b, "  checks   %s/%s=%s\n", p.Name, c.Name, c.State)
		}
	}
	if plan.Reject {
		fmt.Fprintf(&b, "  reject   %s\n", plan.RejectReason)
	}
	return b.String()
}
