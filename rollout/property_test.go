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
