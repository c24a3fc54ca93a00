package rolloutcontroller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// gatesFleet is the state of the acceptance test of the rollout gates: six HostedClusters, two
// in each of early, normal and late, and the commits and revisions rolled out so far.
type gatesFleet struct {
	*rolloutFleet
	e1, e2, n1, n2, l1, l2 string
	// current and currentRevision are the last commit that completed and its revision.
	current, currentRevision string
}

// TestRolloutGatesEndToEnd is the acceptance test of the rollout gates, on a real API server
// and real Git, with six HostedClusters in three partitions and maxUnavailable 2: a soak
// between partitions, an approval, a freeze, a failure tolerance of one and a rollback, each on
// a commit of its own, in that order (each step starts from the completed rollout of the one
// before).
func TestRolloutGatesEndToEnd(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	f := &rolloutFleet{t: t, name: "gates-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	c1 := f.commit(1, true, false)
	names := prefixed(f.name, []string{"e1", "e2", "n1", "n2", "l1", "l2"}, "")
	gf := &gatesFleet{rolloutFleet: f, e1: names[0], e2: names[1], n1: names[2], n2: names[3], l1: names[4], l2: names[5]}
	f.addClusters(gf.e1+":early", gf.e2+":early", gf.n1+":normal", gf.n2+":normal", gf.l1+":late", gf.l2+":late")
	two := intstr.FromInt32(2)
	newHostedClusterPackage(t, f.name, f.ns, func(o *convoyv1alpha1.HostedClusterPackage) {
		o.Spec.Strategy.RollingUpgrade.MaxUnavailable = &two
	})
	gf.current, gf.currentRevision = c1, f.expectComplete(g, c1, 6)

	steps := []struct {
		name string
		run  func(*testing.T)
	}{
		{"a partition soaks before the next one starts", gf.testSoak},
		{"a partition waits for an approval of its own revision", gf.testApproval},
		{"a freeze holds a commit until it ends", gf.testFreeze},
		{"maxFailures 1 lets one broken cluster through and stops at the second", gf.testMaxFailures},
		{"a rollback returns the clusters to the previous commit one slot at a time", gf.testRollback},
	}
	for _, step := range steps {
		if !t.Run(step.name, step.run) {
			t.Fatalf("step %q failed; the steps after it start from its end", step.name)
		}
	}
}

// testSoak rolls a commit out with a soak of 4s after early (its policy) and 3s after normal
// (the rollout's): each partition starts only once the soak before it ended, the Soak gate
// naming it meanwhile, and late, the last partition, has none.
func (gf *gatesFleet) testSoak(t *testing.T) {
	g := NewWithT(t)
	soakEarly := int32(4)
	gf.editSpec(g, func(spec *convoyv1alpha1.HostedClusterPackageSpec) {
		spec.Strategy.RollingUpgrade.SoakSeconds = 3
		spec.Partition.Policies = []convoyv1alpha1.PartitionPolicy{{Name: "early", SoakSeconds: &soakEarly}}
	})
	c2 := gf.commit(2, true, false)

	earlyEnd := gf.expectSoak(g, "early", "normal", soakEarly)
	gf.expectStartedAfter(g, c2, earlyEnd, gf.n1, gf.n2)
	lateEnd := gf.expectSoak(g, "normal", "late", 3)
	gf.expectStartedAfter(g, c2, lateEnd, gf.l1, gf.l2)
	gf.complete(g, c2)
	g.Expect(partitionStates(getHCPkg(g, gf.name).Status)).To(Equal([]string{"early=Done", "normal=Done", "late=Done"}),
		"no soak after the last partition")

	gf.editSpec(g, func(spec *convoyv1alpha1.HostedClusterPackageSpec) {
		spec.Strategy.RollingUpgrade.SoakSeconds = 0
		spec.Partition.Policies = nil
	})
}

// expectSoak waits until partition soaking soaks for soak seconds at the update revision, with
// the Soak gate on next, Ready Gated, and returns when the soak ends.
func (gf *gatesFleet) expectSoak(g *WithT, soaking, next string, soak int32) time.Time {
	gf.t.Helper()
	var until time.Time
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, gf.name).Status
		g.Expect(st.UpdateRevision).NotTo(Equal(gf.currentRevision))
		g.Expect(st.Gate).To(And(HaveField("Type", convoyv1alpha1.GateSoak), HaveField("Partition", next),
			HaveField("Until", Not(BeNil()))))
		g.Expect(partitionNamed(st, soaking)).To(And(HaveField("State", convoyv1alpha1.PartitionSoaking),
			HaveField("Until.Time", BeTemporally("==", st.Gate.Until.Time))))
		g.Expect(metaCondition(st.Conditions, convoyv1alpha1.ReadyCondition)).To(And(
			HaveField("Reason", convoyv1alpha1.GatedReason),
			HaveField("Message", HavePrefix("Rollout of revision "+st.UpdateRevision+" is gated (Soak): "))))
		until = st.Gate.Until.Time
	}).Should(Succeed(), "partition %s soaks before %s starts", soaking, next)
	last := gf.lastSpecUpdate(g, gf.inPartition(soaking)...)
	g.Expect(until).To(BeTemporally(">=", last.Add(time.Duration(soak)*time.Second)),
		"the soak starts no earlier than the partition's last Package progressed")
	return until
}

// expectStartedAfter waits until every one of clusters is on commit, and checks that none of
// them was set to it before at.
func (gf *gatesFleet) expectStartedAfter(g *WithT, commit string, at time.Time, clusters ...string) {
	gf.t.Helper()
	g.Eventually(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, gf.name), commit)).To(ContainElements(clusters))
	}).Should(Succeed())
	pkgs := packagesOf(g, gf.name)
	for _, c := range clusters {
		g.Expect(specUpdatedAt(g, pkgs[c])).NotTo(BeTemporally("<", at), "%s started before %s", c, at)
	}
}

// testApproval rolls a commit out to a fleet whose normal partition requires an approval: it
// waits at normal; an approval of the previous commit's revision does not let it through; the
// approval of its own revision, as `convoy approve` gives it, does.
func (gf *gatesFleet) testApproval(t *testing.T) {
	g := NewWithT(t)
	gf.editSpec(g, func(spec *convoyv1alpha1.HostedClusterPackageSpec) {
		spec.Partition.Policies = []convoyv1alpha1.PartitionPolicy{{Name: "normal", RequireApproval: true}}
	})
	c3 := gf.commit(3, true, false)
	rev3 := gf.expectAwaitingApproval(g, "normal", c3, gf.e1, gf.e2)
	g.Expect(rev3).NotTo(Equal(gf.currentRevision))
	gf.expectEvent(g, GatedReason, "convoy approve "+gf.name+" --partition normal")

	gf.approve(g, "normal", gf.currentRevision)
	g.Consistently(func(g Gomega) {
		st := getHCPkg(g, gf.name).Status
		g.Expect(st.Gate).To(HaveField("Type", convoyv1alpha1.GateApproval))
		g.Expect(onCommit(packagesOf(g, gf.name), c3)).To(ConsistOf(gf.e1, gf.e2))
	}).WithTimeout(3*time.Second).Should(Succeed(), "the approval of the previous commit does not let this one through")

	gf.approve(g, "normal", rev3)
	gf.complete(g, c3)
	gf.editSpec(g, func(spec *convoyv1alpha1.HostedClusterPackageSpec) { spec.Partition.Policies = nil })
}

// freezeFor is how long after it is created the freeze of testFreeze ends: long enough for the
// GitSource to fetch the commit and the controller to plan it while the freeze holds.
const freezeFor = 15 * time.Second

// testFreeze pushes a commit during a Deny window that opened at the start of the current
// minute and ends freezeFor from now: nothing starts at the commit, the Window gate says until
// when, and once the freeze ends the commit rolls out.
func (gf *gatesFleet) testFreeze(t *testing.T) {
	g := NewWithT(t)
	now := time.Now().UTC()
	opened, ends := now.Truncate(time.Minute), now.Truncate(time.Second).Add(freezeFor)
	gf.editSpec(g, func(spec *convoyv1alpha1.HostedClusterPackageSpec) {
		spec.Windows = []convoyv1alpha1.RolloutWindow{{Kind: convoyv1alpha1.WindowDeny,
			Schedule: fmt.Sprintf("%d %d * * *", opened.Minute(), opened.Hour()),
			Duration: metav1.Duration{Duration: ends.Sub(opened)}}}
	})
	c4 := gf.commit(4, true, false)
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, gf.name).Status
		g.Expect(st.UpdateRevision).NotTo(Equal(gf.currentRevision))
		g.Expect(st.Gate).To(And(HaveField("Type", convoyv1alpha1.GateWindow), HaveField("Partition", "early"),
			HaveField("Until.Time", BeTemporally("==", ends))))
		g.Expect(partitionNamed(st, "early")).To(And(HaveField("State", convoyv1alpha1.PartitionOutsideWindow),
			HaveField("Until.Time", BeTemporally("==", st.Gate.Until.Time))))
		g.Expect(metaCondition(st.Conditions, convoyv1alpha1.ReadyCondition)).To(
			HaveField("Message", HavePrefix("Rollout of revision "+st.UpdateRevision+" is gated (Window): ")))
		g.Expect(onCommit(packagesOf(g, gf.name), c4)).To(BeEmpty())
	}).WithTimeout(freezeFor).Should(Succeed(), "the freeze holds the commit")

	gf.expectStartedAfter(g, c4, ends, gf.e1, gf.e2)
	gf.complete(g, c4)
	gf.editSpec(g, func(spec *convoyv1alpha1.HostedClusterPackageSpec) { spec.Windows = nil })
}

// testMaxFailures pushes a gated commit under maxFailures 1 and a progress deadline of 10s, and
// opens the gate in e2 only: e1 fails and is tolerated, so early passes and normal starts; n1
// fails too, which stops the rollout at normal, late never starting.
func (gf *gatesFleet) testMaxFailures(t *testing.T) {
	g := NewWithT(t)
	one := intstr.FromInt32(1)
	gf.editSpec(g, func(spec *convoyv1alpha1.HostedClusterPackageSpec) {
		spec.FailurePolicy = convoyv1alpha1.FailurePolicy{MaxFailures: &one}
	})
	gf.setProgressDeadline(g, 10)
	c5 := gf.commit(5, true, true)
	g.Eventually(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, gf.name), c5)).To(ContainElement(gf.e2))
	}).Should(Succeed())
	gf.open(gf.e2, 5)

	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, gf.name).Status
		g.Expect(st.Failures).To(HaveExactElements(HaveField("HostedCluster", "clusters/"+gf.e1)))
		g.Expect(partitionNamed(st, "early")).To(HaveField("State", convoyv1alpha1.PartitionDone))
		g.Expect(onCommit(packagesOf(g, gf.name), c5)).To(ConsistOf(gf.e1, gf.e2, gf.n1))
		g.Expect(st.Conditions).NotTo(haveConditionStatus(convoyv1alpha1.StalledCondition, metav1.ConditionTrue))
	}).Should(Succeed(), "the first failure is tolerated: early passes and normal starts")

	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, gf.name).Status
		g.Expect(st.Failures).To(ConsistOf(HaveField("HostedCluster", "clusters/"+gf.e1), HaveField("HostedCluster", "clusters/"+gf.n1)))
		g.Expect(st.Gate).To(And(HaveField("Type", convoyv1alpha1.GateFailures), HaveField("Partition", "normal"),
			HaveField("Message", ContainSubstring("more than failurePolicy.maxFailures (1)"))))
		g.Expect(partitionStates(st)).To(Equal([]string{"early=Done", "normal=Blocked", "late=Pending"}))
		g.Expect(st.Conditions).To(haveConditionStatus(convoyv1alpha1.StalledCondition, metav1.ConditionTrue))
	}).Should(Succeed(), "the second failure stops the rollout")
	g.Consistently(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, gf.name), c5)).To(ConsistOf(gf.e1, gf.e2, gf.n1))
	}).WithTimeout(3*time.Second).Should(Succeed(), "no later partition starts")
	gf.expectEvent(g, GatedReason, "Rollout stopped: 2 package(s) failed")
}

// testRollback turns the stopped rollout of testMaxFailures into a rollback of every Package on
// its revision, with maxUnavailable 1: the broken e1 and n1 go back to the previous commit at
// once (moving an unavailable Package back costs nothing), e2, which is available, only once
// they are available again; the revision is rejected and the rollout Stalled.
func (gf *gatesFleet) testRollback(t *testing.T) {
	g := NewWithT(t)
	bad := getHCPkg(g, gf.name).Status.UpdateRevision
	one := intstr.FromInt32(1)
	gf.editSpec(g, func(spec *convoyv1alpha1.HostedClusterPackageSpec) {
		spec.Strategy.RollingUpgrade.MaxUnavailable = &one
		spec.FailurePolicy.Action = convoyv1alpha1.FailureActionRollback
		spec.FailurePolicy.RollbackScope = convoyv1alpha1.RollbackUpdated
	})

	g.Eventually(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, gf.name), gf.current)).To(HaveLen(6))
		st := getHCPkg(g, gf.name).Status
		g.Expect(st.RejectedRevision).To(Equal(bad))
		g.Expect(st.CurrentRevision).To(Equal(gf.currentRevision))
		g.Expect(st.AvailablePackages).To(Equal(int32(6)))
		g.Expect(metaCondition(st.Conditions, convoyv1alpha1.StalledCondition)).To(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", convoyv1alpha1.RolloutRejectedReason)))
	}).Should(Succeed(), "every cluster is back on the previous commit")
	pkgs := packagesOf(g, gf.name)
	for _, broken := range []string{gf.e1, gf.n1} {
		g.Expect(specUpdatedAt(g, pkgs[gf.e2])).To(BeTemporally(">=", availableSince(g, pkgs[broken])),
			"e2 takes the one slot only once %s is available again", broken)
	}

	cr := &appsv1.ControllerRevision{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: gf.ns, Name: bad}, cr)).To(Succeed())
	g.Expect(cr.Annotations).To(HaveKeyWithValue(rollout.RejectedAnnotation,
		And(ContainSubstring(gf.e1), ContainSubstring(gf.n1))), "the reason names the failed clusters")
	gf.expectEvent(g, RevisionRejectedReason, "Revision "+bad)
	g.Consistently(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, gf.name), gf.current)).To(HaveLen(6))
		g.Expect(getHCPkg(g, gf.name).Status.UpdateRevision).To(Equal(bad))
	}).WithTimeout(3*time.Second).Should(Succeed(), "a rejected revision is not rolled out again")
}

// complete waits until every Package progressed at commit, and records it as the last
// completed commit.
func (gf *gatesFleet) complete(g *WithT, commit string) {
	gf.t.Helper()
	gf.current, gf.currentRevision = commit, gf.expectComplete(g, commit, 6)
}

// inPartition returns the test's clusters of partition early, normal or late.
func (gf *gatesFleet) inPartition(name string) []string {
	return map[string][]string{"early": {gf.e1, gf.e2}, "normal": {gf.n1, gf.n2}, "late": {gf.l1, gf.l2}}[name]
}

// lastSpecUpdate returns the latest time the spec of the Package of one of clusters was set.
func (gf *gatesFleet) lastSpecUpdate(g *WithT, clusters ...string) time.Time {
	var last time.Time
	pkgs := packagesOf(g, gf.name)
	for _, c := range clusters {
		if at := specUpdatedAt(g, pkgs[c]); at.After(last) {
			last = at
		}
	}
	return last
}

// editSpec changes the spec of the test's HostedClusterPackage with a merge patch.
func (f *rolloutFleet) editSpec(g *WithT, edit func(*convoyv1alpha1.HostedClusterPackageSpec)) {
	f.t.Helper()
	obj := getHCPkg(g, f.name)
	patch := client.MergeFrom(obj.DeepCopy())
	edit(&obj.Spec)
	g.Expect(env.Client.Patch(context.Background(), obj, patch)).To(Succeed())
}

// partitionNamed returns the status of the partition name; nil when status has none.
func partitionNamed(st convoyv1alpha1.HostedClusterPackageStatus, name string) *convoyv1alpha1.PartitionStatus {
	for i := range st.Partitions {
		if st.Partitions[i].Name == name {
			return &st.Partitions[i]
		}
	}
	return nil
}

// specUpdatedAt returns when the controller last set pkg's spec, from its
// rollout.SpecUpdatedAtAnnotation.
func specUpdatedAt(g Gomega, pkg *convoyv1alpha1.Package) time.Time {
	g.Expect(pkg).NotTo(BeNil())
	at, err := time.Parse(time.RFC3339, pkg.Annotations[rollout.SpecUpdatedAtAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	return at
}

// availableSince returns when pkg last became Available.
func availableSince(g Gomega, pkg *convoyv1alpha1.Package) time.Time {
	c := metaCondition(pkg.Status.Conditions, convoyv1alpha1.AvailableCondition)
	g.Expect(c).To(HaveField("Status", metav1.ConditionTrue))
	return c.LastTransitionTime.Time
}
