package rollout

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// propertyRuns is the number of random fleets TestPropertyRandomFleets plays.
const propertyRuns = 200

// groups are the partition label values random clusters get; "" means no label.
var groups = []string{"early", "normal", "late", "canary", "1", "2", "10", ""}

// TestPropertyRandomFleets plays random fleets through random events (new revisions, some bad,
// relabels, HostedClusters going unavailable, added, removed, deselected, the rollout paused)
// and checks every plan before it is applied:
//   - the budget: no more Packages start updating, installing at a revision not rolled out
//     yet, or being deleted from a live HostedCluster than maxUnavailable minus those already
//     unavailable, updating, installing or being deleted; nothing is deleted under spec.paused;
//   - the barriers: nothing moves to the update revision in a partition after the first one
//     that is not done, except Packages that failed at a superseded revision of this rollout;
//   - ineligible and deselected targets are left alone;
//   - with only good revisions, nothing fails;
//   - planning with the Memo carried from step to step gives the plan planned from scratch
//     (sim.planWithMemo, as in every simulation): the differential test of the Memo;
//
// and, once the events stop and a good revision is pushed, that every target ends on it.
func TestPropertyRandomFleets(t *testing.T) {
	for run := range propertyRuns {
		t.Run(strconv.Itoa(run), func(t *testing.T) {
			g := NewWithT(t)
			rng := rand.New(rand.NewPCG(uint64(run), 0xf1ee7))
			pc := &propertyCheck{g: g, faulty: rng.IntN(3) == 0}
			pc.sim = newSim(t, randomWorld(rng), uint64(run))
			pc.sim.check = pc.check
			for range 60 {
				pc.perturb(rng)
				pc.sim.advance()
			}
			pc.settle()
		})
	}
}

// randomWorld returns a fleet of 1 to 24 HostedClusters with a random partition order and
// strategy, either settled on rev1 or before its first rollout.
func randomWorld(rng *rand.Rand) *world {
	w := newWorld()
	w.hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}
	w.hcpkg.Spec.Partition = randomPartition(rng)
	w.hcpkg.Spec.Strategy = randomStrategy(rng)
	for i := range 1 + rng.IntN(24) {
		w.cluster(fmt.Sprintf("hc-%02d", i), groups[rng.IntN(len(groups))])
	}
	w.update, w.history = revision(1), []Revision{revision(1)}
	if rng.IntN(5) == 0 {
		w.current = nil
		return w
	}
	return w.progressedAll(revision(1))
}

// randomPartition returns a shuffled static order of some values, natural order, or none.
func randomPartition(rng *rand.Rand) *convoyv1alpha1.PartitionSpec {
	switch rng.IntN(3) {
	case 0:
		static := append(slices.Clone(groups[:len(groups)-1]), "*")
		rng.Shuffle(len(static), func(i, j int) { static[i], static[j] = static[j], static[i] })
		return &convoyv1alpha1.PartitionSpec{LabelKey: riskKey, Order: convoyv1alpha1.PartitionOrder{Static: static[:1+rng.IntN(len(static))]}}
	case 1:
		return &convoyv1alpha1.PartitionSpec{LabelKey: riskKey, Order: convoyv1alpha1.PartitionOrder{AlphanumericAsc: &convoyv1alpha1.AlphanumericAscOrder{}}}
	}
	return nil
}

// randomStrategy returns instant now and then, else a rolling upgrade with a random budget and
// minReadySeconds.
func randomStrategy(rng *rand.Rand) convoyv1alpha1.HostedClusterPackageStrategy {
	if rng.IntN(10) == 0 {
		return convoyv1alpha1.HostedClusterPackageStrategy{Instant: &convoyv1alpha1.InstantStrategy{}}
	}
	budgets := []intstr.IntOrString{intstr.FromInt32(1), intstr.FromInt32(2), intstr.FromInt32(4),
		intstr.FromString("10%"), intstr.FromString("34%"), intstr.FromString("50%")}
	s := rolling(budgets[rng.IntN(len(budgets))])
	s.RollingUpgrade.MinReadySeconds = int32(60 * rng.IntN(2))
	return s
}

// propertyCheck holds one random run.
type propertyCheck struct {
	g      Gomega
	sim    *sim
	faulty bool // bad revisions may be pushed
	pushes int
	added  int
	// rng draws the outcomes of check evaluations; healthy makes every one pass; ledger is the
	// test's own account of each check, by "<revision>/<partition>/<check>" (TestPropertyChecks).
	rng     *rand.Rand
	healthy bool
	ledger  map[string]*checkLedger
}

// perturb applies at most a few random events to the world.
func (pc *propertyCheck) perturb(rng *rand.Rand) {
	s := pc.sim
	if rng.IntN(12) == 0 && pc.pushes < 3 {
		pc.pushes++
		s.push(revision(len(s.history)+1), pc.faulty && rng.IntN(2) == 0)
	}
	if len(s.clusters) == 0 {
		return
	}
	hc := &s.clusters[rng.IntN(len(s.clusters))]
	switch rng.IntN(30) {
	case 0, 1:
		hc.Labels[riskKey] = groups[rng.IntN(len(groups))]
	case 2:
		hc.Available = !hc.Available
	case 3:
		hc.Labels["tier"] = map[string]string{"prod": "dev", "dev": "prod"}[hc.Labels["tier"]]
	case 4:
		s.remove(hc.Name)
	case 5:
		pc.added++
		s.cluster(fmt.Sprintf("new-%02d", pc.added), groups[rng.IntN(len(groups))])
	case 6:
		s.hcpkg.Spec.Paused = !s.hcpkg.Spec.Paused
	}
}

// settle stops the events, makes every HostedCluster an available target, pushes a good
// revision when bad ones may be around, and runs until the rollout completes: every target
// must end on the newest revision, progressed.
func (pc *propertyCheck) settle() {
	s, g := pc.sim, pc.g
	s.hcpkg.Spec.Paused = false
	for i := range s.clusters {
		s.clusters[i].Available, s.clusters[i].Labels["tier"] = true, "prod"
	}
	if pc.faulty {
		s.push(revision(len(s.history)+1), false)
	}
	s.run(600)
	last := s.plans[len(s.plans)-1]
	g.Expect(last.Completed).To(BeTrue(), s.log.String())
	g.Expect(s.packages).To(HaveLen(len(s.clusters)))
	for _, hc := range s.clusters {
		g.Expect(s.revisionOf(namespaceOf(hc.Name))).To(Equal(s.update.Name), hc.Name)
		g.Expect(s.progressedAt).To(HaveKey(namespaceOf(hc.Name)), hc.Name)
	}
	g.Expect(last.Conditions[1].Reason).To(Equal(convoyv1alpha1.AllPackagesProgressedReason))
}

// check verifies one plan against the simulated world it was computed from.
func (pc *propertyCheck) check(plan *Plan) {
	f := pc.observe(plan)
	pc.checkBudget(plan, f)
	pc.checkBarriers(plan, f)
	pc.checkTargets(plan, f)
	if !pc.faulty {
		pc.g.Expect(plan.Failed).To(BeEmpty())
	}
}

// facts is the test's own view of the world at one step.
type facts struct {
	selected, eligible, holder map[string]bool
	partition                  map[string]int
	firstNotDone               int
	maxUnavailable             int
}

// observe derives facts from the simulation, using only the plan's partition names.
func (pc *propertyCheck) observe(plan *Plan) facts {
	s := pc.sim
	f := facts{selected: map[string]bool{}, eligible: map[string]bool{}, holder: map[string]bool{}, partition: map[string]int{}}
	f.firstNotDone = len(plan.Partitions)
	for _, hc := range s.clusters {
		f.selected[hc.Name] = hc.Labels["tier"] == "prod"
		f.eligible[hc.Name] = f.selected[hc.Name] && hc.Available
		if !f.selected[hc.Name] {
			continue
		}
		f.partition[hc.Name] = pc.partitionIndex(plan, hc)
		ns := namespaceOf(hc.Name)
		done := s.revisionOf(ns) == s.update.Name && pc.ready(ns)
		// A cluster that went unavailable while its Package was in this rollout still counts.
		held := f.selected[hc.Name] && !hc.Available && s.packages[ns] != nil &&
			pc.newerThanCurrent(s.revisionOf(ns)) && !pc.ready(ns)
		f.holder[hc.Name] = (f.eligible[hc.Name] || held) && !pc.ready(ns)
		if (f.eligible[hc.Name] || held) && !done {
			f.firstNotDone = min(f.firstNotDone, f.partition[hc.Name])
		}
	}
	f.maxUnavailable = pc.budget(f)
	return f
}

// ready reports whether the Package in ns progressed at its spec minReadySeconds ago.
func (pc *propertyCheck) ready(ns string) bool {
	at, ok := pc.sim.progressedAt[ns]
	minReady := time.Duration(0)
	if ru := pc.sim.hcpkg.Spec.Strategy.RollingUpgrade; ru != nil {
		minReady = time.Duration(ru.MinReadySeconds) * time.Second
	}
	return ok && !pc.sim.now.Before(at.Add(minReady))
}

// partitionIndex returns the index of hc's partition among the plan's partitions: its label
// value when the order lists it (or has no list), "*" for another value when the static order
// has "*", else "unknown".
func (pc *propertyCheck) partitionIndex(plan *Plan, hc HostedCluster) int {
	spec := pc.sim.hcpkg.Spec.Partition
	name := "unknown"
	v := hc.Labels[riskKey]
	switch {
	case spec == nil || v == "":
	case spec.Order.Static == nil || slices.Contains(spec.Order.Static, v):
		name = v
	case slices.Contains(spec.Order.Static, "*"):
		name = "*"
	}
	i := slices.IndexFunc(plan.Partitions, func(p convoyv1alpha1.PartitionStatus) bool { return p.Name == name })
	pc.g.Expect(i).To(BeNumerically(">=", 0), "partition "+name)
	return i
}

// budget computes maxUnavailable: the integer, or the percentage of eligible targets rounded
// down, at least 1.
func (pc *propertyCheck) budget(f facts) int {
	ru := pc.sim.hcpkg.Spec.Strategy.RollingUpgrade
	if ru == nil {
		return len(f.eligible)
	}
	if ru.MaxUnavailable.Type == intstr.Int {
		return ru.MaxUnavailable.IntValue()
	}
	eligible := 0
	for _, ok := range f.eligible {
		eligible += int(one(ok))
	}
	pct, _ := strconv.Atoi(strings.TrimSuffix(ru.MaxUnavailable.StrVal, "%"))
	return max(1, pct*eligible/100)
}

// checkBudget: the changes that take a slot fit in the slots that the unavailable or updating
// Packages and the Packages of deselected HostedClusters being deleted leave free. A change
// takes a slot when it updates an available Package, creates one at a revision whose rollout
// has not completed, or deletes the Package of a live HostedCluster; creating a Package at the
// completed current revision, and releasing the Package of a HostedCluster that is gone, take
// none.
func (pc *propertyCheck) checkBudget(plan *Plan, f facts) {
	s := pc.sim
	if s.hcpkg.Spec.Strategy.Instant != nil {
		return
	}
	holders, started := len(s.deleting), 0
	for name, ok := range f.holder {
		if ok && s.packages[namespaceOf(name)] != nil {
			holders++
		}
	}
	for _, c := range plan.Creates {
		if s.current == nil || c.Revision.Name != s.current.Name {
			started++
		}
	}
	for _, c := range plan.Updates {
		if !f.holder[clusterName(c)] {
			started++
		}
	}
	for _, d := range plan.Deletes {
		if d.Reason == DeselectedReason {
			started++
			pc.g.Expect(s.hcpkg.Spec.Paused).To(BeFalse(), "a deletion under spec.paused")
		}
	}
	pc.g.Expect(started).To(BeNumerically("<=", max(0, f.maxUnavailable-holders)), s.log.String())
}

// checkBarriers: the update revision goes only to partitions up to the first one not done
// (failed Packages excepted), the current revision only to new targets beyond it.
func (pc *propertyCheck) checkBarriers(plan *Plan, f facts) {
	s := pc.sim
	instant := s.hcpkg.Spec.Strategy.Instant != nil
	for _, c := range append(slices.Clone(plan.Creates), plan.Updates...) {
		name := clusterName(c)
		pc.g.Expect(c.Partition).To(Equal(plan.Partitions[f.partition[name]].Name))
		switch {
		case c.Reason == ReplaceFailedReason:
			// Only a Package that failed at a revision of this rollout jumps the barrier.
			ns := namespaceOf(name)
			pc.g.Expect(s.now.Sub(s.specAt[ns])).To(BeNumerically(">=", 10*time.Minute))
			pc.g.Expect(s.progressedAt).NotTo(HaveKey(ns))
			pc.g.Expect(pc.newerThanCurrent(s.revisionOf(ns))).To(BeTrue(), s.log.String())
		case c.Reason == CommitGoneReason:
			// Back to the current revision, only where the update revision has not reached.
			pc.g.Expect(c.Revision.Name).To(Equal(s.current.Name))
			pc.g.Expect(f.partition[name] > f.firstNotDone).To(BeTrue(), s.log.String())
		case c.Reason == NewTargetReason && s.current != nil && c.Revision.Name == s.current.Name:
			notReached := f.partition[name] > f.firstNotDone
			pc.g.Expect(s.hcpkg.Spec.Paused || notReached || s.current.Name == s.update.Name).To(BeTrue())
		case c.Revision.Name == s.update.Name:
			pc.g.Expect(instant || f.partition[name] <= f.firstNotDone).To(BeTrue(), s.log.String())
		default:
			pc.g.Expect(c).To(BeNil(), "unexpected revision")
		}
	}
	if s.hcpkg.Spec.Paused {
		pc.g.Expect(plan.Updates).To(BeEmpty())
	}
}

// newerThanCurrent reports whether the revision named name was pushed after the current one.
func (pc *propertyCheck) newerThanCurrent(name string) bool {
	s := pc.sim
	at := slices.IndexFunc(s.history, func(r Revision) bool { return r.Name == name })
	if at < 0 || s.current == nil {
		return at >= 0
	}
	return at > slices.IndexFunc(s.history, func(r Revision) bool { return r.Name == s.current.Name })
}

// checkTargets: only eligible targets change, and only Packages of non-targets are deleted.
func (pc *propertyCheck) checkTargets(plan *Plan, f facts) {
	for _, c := range append(slices.Clone(plan.Creates), plan.Updates...) {
		pc.g.Expect(f.eligible[clusterName(c)]).To(BeTrue(), c.HostedCluster)
	}
	for _, d := range plan.Deletes {
		name := strings.TrimPrefix(d.Package.Namespace, clusterNS+"-")
		pc.g.Expect(f.selected[name]).To(BeFalse(), d.Package.String())
	}
}

// clusterName returns the name of a change's HostedCluster.
func clusterName(c Change) string {
	return strings.TrimPrefix(c.HostedCluster, clusterNS+"/")
}

// gatedRuns is the number of random fleets TestPropertyGates plays.
const gatedRuns = 100

// TestPropertyGates plays random fleets with random soaks, approvals, windows, failure
// policies, clocks and failures through the events of TestPropertyRandomFleets, and checks
// every plan before it is applied:
//   - no partition starts (gets its first Package at the update revision) before the soak of
//     every partition before it ended, without an approval of that exact revision when it
//     requires one, or outside the windows; nothing at all starts at the update revision
//     outside the windows;
//   - a rollback moves Packages only back to the current revision, only once the update
//     revision is rejected, never under spec.paused, and within the budget;
//   - failures beyond maxFailures, or in a canary partition, stop the rollout: no partition
//     after the one where they go beyond starts;
//
// and, once the gates are lifted and a good revision is pushed, that every target ends on it.
func TestPropertyGates(t *testing.T) {
	for run := range gatedRuns {
		t.Run(strconv.Itoa(run), func(t *testing.T) {
			g := NewWithT(t)
			rng := rand.New(rand.NewPCG(uint64(run), 0x9a7e5))
			pc := &propertyCheck{g: g, faulty: true}
			w := randomWorld(rng)
			randomGates(rng, w)
			pc.sim = newSim(t, w, uint64(run))
			pc.sim.check = pc.checkGated
			pc.sim.gates = true
			for range 90 {
				pc.perturbGates(rng)
				pc.perturb(rng)
				pc.sim.advance()
			}
			pc.settleGates()
		})
	}
}

// randomGates gives w a random clock, soaks, partition policies, windows and failure policy.
func randomGates(rng *rand.Rand, w *world) {
	w.now = t0.Add(time.Duration(rng.IntN(72*60)) * time.Minute)
	if ru := w.hcpkg.Spec.Strategy.RollingUpgrade; ru != nil {
		ru.SoakSeconds = []int32{0, 0, 60, 300}[rng.IntN(4)]
	}
	if w.hcpkg.Spec.Partition != nil {
		names := append(slices.Clone(groups[:len(groups)-1]), "*", "unknown")
		for _, name := range names {
			if rng.IntN(3) != 0 {
				continue
			}
			pol := convoyv1alpha1.PartitionPolicy{Name: name, RequireApproval: rng.IntN(2) == 0, Canary: rng.IntN(4) == 0}
			if rng.IntN(2) == 0 {
				pol.SoakSeconds = ptr([]int32{0, 90, 240}[rng.IntN(3)])
			}
			w.hcpkg.Spec.Partition.Policies = append(w.hcpkg.Spec.Partition.Policies, pol)
		}
	}
	for range rng.IntN(3) {
		w.hcpkg.Spec.Windows = append(w.hcpkg.Spec.Windows, randomWindow(rng))
	}
	fp := &w.hcpkg.Spec.FailurePolicy
	fp.MaxFailures = []*intstr.IntOrString{nil, ptr(intstr.FromInt32(1)), ptr(intstr.FromInt32(2)), ptr(intstr.FromString("25%"))}[rng.IntN(4)]
	fp.Action = []string{"", convoyv1alpha1.FailureActionStop, convoyv1alpha1.FailureActionRollback}[rng.IntN(3)]
	fp.RollbackScope = []string{"", convoyv1alpha1.RollbackFailed, convoyv1alpha1.RollbackUpdated}[rng.IntN(3)]
}

// randomWindow returns an Allow or Deny window with a random schedule, duration and time zone.
func randomWindow(rng *rand.Rand) convoyv1alpha1.RolloutWindow {
	kinds := []string{convoyv1alpha1.WindowAllow, convoyv1alpha1.WindowDeny}
	schedules := []string{"*/30 * * * *", "0 * * * *", "@hourly", "30 12 * * *", "*/20 * * * 1-5", "15,45 * * * *"}
	durations := []time.Duration{2 * time.Minute, 5 * time.Minute, 20 * time.Minute, 45 * time.Minute}
	zones := []string{"", "Europe/Berlin", "America/New_York", "Asia/Kolkata"}
	return convoyv1alpha1.RolloutWindow{
		Kind: kinds[rng.IntN(2)], Schedule: schedules[rng.IntN(len(schedules))],
		Duration: metav1.Duration{Duration: durations[rng.IntN(len(durations))]}, TimeZone: zones[rng.IntN(len(zones))],
	}
}

// perturbGates gives approvals, of the update revision or of another, breaks one cluster at
// the update revision, or makes a progressed Package regress.
func (pc *propertyCheck) perturbGates(rng *rand.Rand) {
	s := pc.sim
	names := append(slices.Clone(groups[:len(groups)-1]), "*", "unknown")
	switch rng.IntN(16) {
	case 0, 1:
		rev := s.update
		if rng.IntN(3) == 0 {
			rev = s.history[rng.IntN(len(s.history))]
		}
		s.approvals = append(s.approvals, approval(fmt.Sprintf("a%d", len(s.approvals)), names[rng.IntN(len(names))], rev))
	case 2:
		if len(s.clusters) > 0 {
			s.breakOn(s.clusters[rng.IntN(len(s.clusters))].Name, s.update)
		}
	case 3:
		if len(s.clusters) > 0 {
			ns := namespaceOf(s.clusters[rng.IntN(len(s.clusters))].Name)
			if p := s.packages[ns]; p != nil && s.progressedAt[ns] != (time.Time{}) {
				setCondition(p, convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, s.now, "probe failed")
				delete(s.progressedAt, ns)
			}
		}
	}
}

// settleGates lifts the windows, repairs the broken and regressed Packages, approves every
// partition at the revision settle pushes, and settles.
func (pc *propertyCheck) settleGates() {
	s := pc.sim
	s.hcpkg.Spec.Windows = nil
	s.badOn = map[string]bool{}
	next := revision(len(s.history) + 1)
	for _, name := range append(slices.Clone(groups[:len(groups)-1]), "*", "unknown") {
		s.approvals = append(s.approvals, approval("final-"+name, name, next))
	}
	for ns, p := range s.packages {
		if _, ok := s.progressedAt[ns]; !ok {
			// A broken or regressed Package recovers once the cause is gone: one broken at the
			// current revision would otherwise hold its slot until its partition is reached.
			progress(p, s.now)
			s.progressedAt[ns] = s.now
			delete(s.doneAt, ns)
			delete(s.breakAt, ns)
		}
	}
	pc.settle()
}

// checkGated verifies one plan of a run with gates; the barriers of checkBarriers no longer
// hold as they are (a tolerated failure lets the next partition start; a gate keeps new
// targets of a reached partition at the current revision), so checkStarts and checkStop
// take their place.
func (pc *propertyCheck) checkGated(plan *Plan) {
	f := pc.observe(plan)
	pc.checkBudget(plan, f)
	pc.checkTargets(plan, f)
	pc.checkStarts(plan, f)
	pc.checkRollback(plan)
	pc.checkStop(plan, f)
}

// startsAtUpdate lists the changes that move a Package to the update revision while the
// rollout is in progress, except the replacements of failed Packages, which jump barriers.
func (pc *propertyCheck) startsAtUpdate(plan *Plan) []Change {
	s := pc.sim
	if s.current != nil && s.current.Name == s.update.Name {
		return nil
	}
	var out []Change
	for _, c := range append(slices.Clone(plan.Creates), plan.Updates...) {
		if c.Revision.Name == s.update.Name && c.Reason != ReplaceFailedReason {
			out = append(out, c)
		}
	}
	return out
}

// started reports whether a selected cluster of the partition at index has a Package on the
// update revision.
func (pc *propertyCheck) started(f facts, index int) bool {
	for name, i := range f.partition {
		if i == index && pc.sim.revisionOf(namespaceOf(name)) == pc.sim.update.Name {
			return true
		}
	}
	return false
}

// checkStarts: nothing starts at the update revision outside the windows; a partition starts
// only after the soaks before it and with its approval.
func (pc *propertyCheck) checkStarts(plan *Plan, f facts) {
	s := pc.sim
	if !insideWindows(pc.g, s.hcpkg.Spec.Windows, s.now) {
		for _, c := range append(slices.Clone(plan.Creates), plan.Updates...) {
			fresh := s.current != nil && s.current.Name == s.update.Name
			pc.g.Expect(c.Revision.Name != s.update.Name || fresh).To(BeTrue(), "outside the windows: "+c.HostedCluster)
		}
	}
	for _, c := range pc.startsAtUpdate(plan) {
		index := f.partition[clusterName(c)]
		if pc.started(f, index) {
			continue
		}
		pc.g.Expect(pc.approved(c.Partition)).To(BeTrue(), "no approval: "+c.HostedCluster)
		if s.hcpkg.Spec.Strategy.Instant == nil {
			for k := range index {
				pc.g.Expect(s.now.Before(pc.soakEnd(plan, f, k))).To(BeFalse(), "soaking: "+c.HostedCluster+"\n"+s.log.String())
			}
		}
	}
}

// approved reports whether the partition needs no approval, or has one of the update revision.
func (pc *propertyCheck) approved(partition string) bool {
	s := pc.sim
	for _, pol := range pc.policies() {
		if pol.Name == partition && pol.RequireApproval {
			return slices.ContainsFunc(s.approvals, func(a Approval) bool {
				return a.Partition == partition && a.Revision == s.update.Name
			})
		}
	}
	return true
}

// soakEnd returns when the soak of the partition at index k ends: its soak after the last
// eligible cluster of it progressed at the update revision.
func (pc *propertyCheck) soakEnd(plan *Plan, f facts, k int) time.Time {
	s := pc.sim
	soak := time.Duration(s.hcpkg.Spec.Strategy.RollingUpgrade.SoakSeconds) * time.Second
	for _, pol := range pc.policies() {
		if pol.Name == plan.Partitions[k].Name && pol.SoakSeconds != nil {
			soak = time.Duration(*pol.SoakSeconds) * time.Second
		}
	}
	var last time.Time
	for name, i := range f.partition {
		ns := namespaceOf(name)
		if i == k && f.eligible[name] && s.revisionOf(ns) == s.update.Name {
			last = latest(last, s.progressedAt[ns])
		}
	}
	if soak == 0 || last.IsZero() {
		return time.Time{}
	}
	return last.Add(soak)
}

// checkRollback: a rollback goes to the current revision, of a rejected update revision, not
// under spec.paused (the budget is checkBudget's).
func (pc *propertyCheck) checkRollback(plan *Plan) {
	s := pc.sim
	for _, c := range plan.Updates {
		if c.Reason != RollbackReason {
			continue
		}
		pc.g.Expect(s.hcpkg.Spec.Paused).To(BeFalse(), "a rollback under spec.paused")
		pc.g.Expect(s.update.Rejected || plan.Reject).To(BeTrue())
		pc.g.Expect(c.Revision.Name).To(Equal(s.current.Name))
		pc.g.Expect(c.PreviousRevision).To(Equal(s.update.Name))
	}
	if plan.Reject {
		pc.g.Expect(s.hcpkg.Spec.Paused).To(BeFalse(), "a rejection under spec.paused")
	}
}

// checkStop: counting the failed targets in rollout order, no partition after the first one
// where they exceed maxFailures, or after a canary partition with a failure, starts.
func (pc *propertyCheck) checkStop(plan *Plan, f facts) {
	s := pc.sim
	limit := 0
	if m := s.hcpkg.Spec.FailurePolicy.MaxFailures; m != nil {
		eligible := 0
		for _, ok := range f.eligible {
			eligible += int(one(ok))
		}
		limit, _ = intstr.GetScaledValueFromIntOrPercent(m, eligible, false)
	}
	perPartition := make([]int, len(plan.Partitions))
	stop := len(plan.Partitions)
	for _, failure := range plan.Failed {
		if failure.Check != "" {
			// A failed check stops the rollout at its partition, whatever maxFailures says.
			stop = min(stop, slices.IndexFunc(plan.Partitions, func(p convoyv1alpha1.PartitionStatus) bool {
				return p.Name == failure.Partition
			}))
			continue
		}
		if i, ok := f.partition[strings.TrimPrefix(failure.HostedCluster, clusterNS+"/")]; ok {
			perPartition[i]++
		}
	}
	failures := 0
	for i, n := range perPartition[:stop] {
		failures += n
		if failures > limit || (n > 0 && pc.canary(plan.Partitions[i].Name)) {
			stop = i
			break
		}
	}
	for _, c := range pc.startsAtUpdate(plan) {
		index := f.partition[clusterName(c)]
		pc.g.Expect(index <= stop || pc.started(f, index)).To(BeTrue(), "after a stop: "+c.HostedCluster+"\n"+s.log.String())
	}
}

// canary reports whether the partition is a canary.
func (pc *propertyCheck) canary(partition string) bool {
	for _, pol := range pc.policies() {
		if pol.Name == partition {
			return pol.Canary
		}
	}
	return false
}

// insideWindows decides by brute force, minute by minute, whether t is inside the windows.
func insideWindows(g Gomega, specs []convoyv1alpha1.RolloutWindow, t time.Time) bool {
	allowed, anyAllow := false, false
	for _, spec := range specs {
		loc, err := time.LoadLocation(spec.TimeZone)
		g.Expect(err).NotTo(HaveOccurred())
		schedule, err := cron.ParseStandard(spec.Schedule)
		g.Expect(err).NotTo(HaveOccurred())
		open := false
		for m := t.Truncate(time.Minute); m.After(t.Add(-spec.Duration.Duration)); m = m.Add(-time.Minute) {
			open = open || schedule.Next(m.Add(-time.Second).In(loc)).Equal(m)
		}
		if spec.Kind == convoyv1alpha1.WindowDeny && open {
			return false
		}
		if spec.Kind == convoyv1alpha1.WindowAllow {
			anyAllow, allowed = true, allowed || open
		}
	}
	return allowed || !anyAllow
}

// policies returns the partition policies of the run; nil without a partition spec.
func (pc *propertyCheck) policies() []convoyv1alpha1.PartitionPolicy {
	if spec := pc.sim.hcpkg.Spec.Partition; spec != nil {
		return spec.Policies
	}
	return nil
}
