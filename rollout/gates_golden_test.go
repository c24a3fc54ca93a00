package rollout

import (
	"testing"
	"time"
	_ "time/tzdata" // the windows' time zones, as the binary embeds them

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// gatedWorld returns two clusters in each of early, normal and late, settled on rev1, with
// maxUnavailable m.
func gatedWorld(m int32) *world {
	w := newWorld().fleet(2, "early", "normal", "late").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(m))
	return w
}

// gatedSim starts a simulation of w that logs gates, and pushes rev2.
func gatedSim(t *testing.T, w *world) *sim {
	s := newSim(t, w, seed)
	s.gates = true
	s.push(revision(2), false)
	return s
}

// policies sets the partition policies of w.
func policies(w *world, ps ...convoyv1alpha1.PartitionPolicy) {
	w.hcpkg.Spec.Partition.Policies = ps
}

// firstStart returns the time the first Package of partition part was moved to rev; the zero
// time when none was.
func firstStart(s *sim, part, rev string) time.Time {
	for i, plan := range s.plans {
		for _, c := range append(append([]Change{}, plan.Creates...), plan.Updates...) {
			if c.Partition == part && c.Revision.Name == rev {
				return s.start.Add(time.Duration(i) * s.tick)
			}
		}
	}
	return time.Time{}
}

// stateIs is an event condition: the last plan shows partition part in state.
func stateIs(part, state string) func(s *sim) bool {
	return func(s *sim) bool {
		if len(s.plans) == 0 {
			return false
		}
		for _, p := range s.plans[len(s.plans)-1].Partitions {
			if p.Name == part {
				return p.State == state
			}
		}
		return false
	}
}

// reasons lists the changes of every plan with reason as "<cluster> -> <revision>".
func reasons(s *sim, reason ChangeReason) []string {
	var out []string
	for _, plan := range s.plans {
		for _, c := range plan.Updates {
			if c.Reason == reason {
				out = append(out, clusterName(c)+" -> "+c.Revision.Name)
			}
		}
	}
	return out
}

func TestGoldenSoakHoldsTheNextPartition(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(1)
	w.hcpkg.Spec.Strategy.RollingUpgrade.SoakSeconds = 120
	policies(w, convoyv1alpha1.PartitionPolicy{Name: "early", SoakSeconds: ptr(int32(300))})
	s := gatedSim(t, w)
	var soaking *Plan
	s.check = func(plan *Plan) {
		if soaking == nil && plan.Gate != nil && plan.Gate.Type == convoyv1alpha1.GateSoak {
			soaking = plan
		}
	}
	s.run(200)

	g.Expect(s.current.Name).To(Equal("rev2"))
	g.Expect(soaking).NotTo(BeNil())
	g.Expect(soaking.Gate.Partition).To(Equal("normal"))
	g.Expect(states(soaking)).To(Equal([]string{"early=Soaking", "normal=Pending", "late=Pending"}))
	g.Expect(soaking.Partitions[0].Until).To(Equal(soaking.Gate.Until))
	g.Expect(soaking.RequeueAfter).To(BeNumerically(">", 0))
	// normal starts when early's soak of 300s ends, late 120s after normal's last progress.
	g.Expect(firstStart(s, "normal", "rev2")).To(Equal(soaking.Gate.Until.Time))
	g.Expect(firstStart(s, "late", "rev2").Sub(firstStart(s, "normal", "rev2"))).To(BeNumerically(">=", 120*time.Second))
	expectGolden(t, s, "soak")
}

func TestGoldenSoakRegression(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(1)
	w.hcpkg.Spec.Strategy.RollingUpgrade.SoakSeconds = 600
	s := gatedSim(t, w)
	s.on("early-1 stops being available", stateIs("early", convoyv1alpha1.PartitionSoaking), func(s *sim) {
		setCondition(s.packages[namespaceOf("early-1")], convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, s.now, "probe failed")
	})
	s.run(60)

	last := s.plans[len(s.plans)-1]
	g.Expect(last.Failed).To(HaveLen(1))
	g.Expect(last.Failed[0].HostedCluster).To(Equal(clusterNS + "/early-1"))
	g.Expect(last.Failed[0].Reason).To(Equal(SoakRegressionReason))
	g.Expect(last.Gate.Type).To(Equal(convoyv1alpha1.GateFailures))
	g.Expect(last.Gate.Partition).To(Equal("early"))
	g.Expect(states(last)).To(Equal([]string{"early=Blocked", "normal=Pending", "late=Pending"}))
	g.Expect(last.PartitionFailures).To(Equal([]int32{1, 0, 0}))
	g.Expect(onRevision(s, "rev2")).To(ConsistOf("early-1", "early-2"))
	expectGolden(t, s, "soak-regression")
}

func TestGoldenApproval(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(1)
	policies(w, convoyv1alpha1.PartitionPolicy{Name: "normal", RequireApproval: true})
	w.approvals = []Approval{approval("normal-rev1", "normal", revision(1))}
	s := gatedSim(t, w)
	s.run(30)

	last := s.plans[len(s.plans)-1]
	g.Expect(states(last)).To(Equal([]string{"early=Done", "normal=AwaitingApproval", "late=Pending"}))
	g.Expect(last.Gate.Type).To(Equal(convoyv1alpha1.GateApproval))
	g.Expect(last.Gate.Message).To(ContainSubstring("convoy approve addon --partition normal"))
	g.Expect(onRevision(s, "rev2")).To(ConsistOf("early-1", "early-2"), "an approval of rev1 does not let rev2 through")

	approvedAt := s.now
	s.on("approve normal at rev2", atStep(s.step), func(s *sim) {
		s.approvals = append(s.approvals, approval("normal-rev2", "normal", revision(2)))
	})
	s.run(100)
	g.Expect(s.current.Name).To(Equal("rev2"))
	g.Expect(firstStart(s, "normal", "rev2")).To(Equal(approvedAt))
	expectGolden(t, s, "approval")
}

func TestGoldenWindowFreeze(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(1)
	// t0 is noon UTC: a freeze from noon to ten past.
	w.hcpkg.Spec.Windows = []convoyv1alpha1.RolloutWindow{{
		Kind: convoyv1alpha1.WindowDeny, Schedule: "0 12 * * *", Duration: metav1.Duration{Duration: 10 * time.Minute},
	}}
	s := gatedSim(t, w)
	s.on("add late-3", atStep(4), func(s *sim) { s.cluster("late-3", "late") })
	s.run(100)

	first := s.plans[0]
	g.Expect(first.Gate.Type).To(Equal(convoyv1alpha1.GateWindow))
	g.Expect(first.Gate.Until.Time).To(Equal(t0.Add(10 * time.Minute)))
	g.Expect(states(first)).To(Equal([]string{"early=OutsideWindow", "normal=Pending", "late=Pending"}))
	g.Expect(first.RequeueAfter).To(Equal(10 * time.Minute))
	g.Expect(firstStart(s, "early", "rev2")).To(Equal(t0.Add(10 * time.Minute)))
	g.Expect(updatedOrder(s, "rev1")).To(Equal([]string{"late-3"}), "a new target gets the current revision in a freeze")
	g.Expect(s.current.Name).To(Equal("rev2"))
	expectGolden(t, s, "window-freeze")
}

func TestGoldenWindowAllowedAcrossDST(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(1)
	// 03:00 in Berlin is 02:00 UTC on 28 March 2026 and 01:00 UTC from the 29th (CEST).
	w.hcpkg.Spec.Windows = []convoyv1alpha1.RolloutWindow{{
		Kind: convoyv1alpha1.WindowAllow, Schedule: "0 3 * * *", Duration: metav1.Duration{Duration: 4 * time.Minute},
		TimeZone: "Europe/Berlin",
	}}
	start := time.Date(2026, 3, 28, 1, 30, 0, 0, time.UTC)
	w.now = start
	s := gatedSim(t, w)
	s.run(3 * 2880)

	berlin, err := time.LoadLocation("Europe/Berlin")
	g.Expect(err).NotTo(HaveOccurred())
	var starts []time.Time
	for i, plan := range s.plans {
		at := s.start.Add(time.Duration(i) * s.tick)
		for _, c := range append(append([]Change{}, plan.Creates...), plan.Updates...) {
			local := at.In(berlin)
			g.Expect(local.Hour()*60+local.Minute()).To(BeNumerically("<", 3*60+4), c.HostedCluster)
			g.Expect(local.Hour()).To(Equal(3), c.HostedCluster)
			starts = append(starts, at)
		}
	}
	g.Expect(starts[0]).To(Equal(time.Date(2026, 3, 28, 2, 0, 0, 0, time.UTC)))
	g.Expect(starts).To(ContainElement(time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)))
	g.Expect(s.current.Name).To(Equal("rev2"))
	expectGolden(t, s, "window-allowed-dst")
}

func TestGoldenMaxFailuresOne(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(2)
	w.hcpkg.Spec.FailurePolicy.MaxFailures = ptr(intstr.FromInt32(1))
	s := gatedSim(t, w)
	s.breakOn("early-1", revision(2))
	s.breakOn("normal-2", revision(2))
	s.run(100)

	last := s.plans[len(s.plans)-1]
	g.Expect(last.Failed).To(HaveLen(2))
	g.Expect(states(last)).To(Equal([]string{"early=Done", "normal=Blocked", "late=Pending"}))
	g.Expect(last.Gate.Type).To(Equal(convoyv1alpha1.GateFailures))
	g.Expect(last.Gate.Partition).To(Equal("normal"))
	g.Expect(last.Completed).To(BeFalse())
	g.Expect(onRevision(s, "rev2")).To(ConsistOf("early-1", "early-2", "normal-1", "normal-2"))
	expectGolden(t, s, "max-failures-1")
}

func TestGoldenCanaryToleratesNone(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(2)
	w.hcpkg.Spec.FailurePolicy.MaxFailures = ptr(intstr.FromInt32(1))
	policies(w, convoyv1alpha1.PartitionPolicy{Name: "early", Canary: true})
	s := gatedSim(t, w)
	s.breakOn("early-1", revision(2))
	s.run(60)

	last := s.plans[len(s.plans)-1]
	g.Expect(states(last)).To(Equal([]string{"early=Blocked", "normal=Pending", "late=Pending"}))
	g.Expect(last.Gate.Partition).To(Equal("early"))
	g.Expect(last.Gate.Message).To(ContainSubstring("canary"))
	g.Expect(onRevision(s, "rev2")).To(ConsistOf("early-1", "early-2"))
	expectGolden(t, s, "canary")
}

func TestGoldenRollback(t *testing.T) {
	for _, tc := range []struct {
		golden string
		scope  string
		back   []string
	}{
		{golden: "rollback-failed", scope: convoyv1alpha1.RollbackFailed, back: []string{"normal-2 -> rev1"}},
		{golden: "rollback-updated", scope: convoyv1alpha1.RollbackUpdated,
			back: []string{"normal-2 -> rev1", "normal-1 -> rev1", "early-2 -> rev1", "early-1 -> rev1"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			g := NewWithT(t)
			w := gatedWorld(2)
			w.hcpkg.Spec.FailurePolicy = convoyv1alpha1.FailurePolicy{
				Action: convoyv1alpha1.FailureActionRollback, RollbackScope: tc.scope,
			}
			s := gatedSim(t, w)
			s.breakOn("normal-2", revision(2))
			s.run(80)

			g.Expect(reasons(s, RollbackReason)).To(Equal(tc.back))
			g.Expect(s.update.Rejected).To(BeTrue())
			last := s.plans[len(s.plans)-1]
			g.Expect(last.Completed).To(BeFalse())
			g.Expect(last.Gate.Type).To(Equal(convoyv1alpha1.GateFailures))
			g.Expect(last.Gate.Message).To(ContainSubstring("rejected"))
			g.Expect(s.current.Name).To(Equal("rev1"))
			g.Expect(onRevision(s, "rev2")).To(HaveLen(4 - len(tc.back)))

			s.on("push rev3 (fix)", atStep(s.step), func(s *sim) { s.push(revision(3), false) })
			s.run(200)
			g.Expect(s.current.Name).To(Equal("rev3"))
			g.Expect(onRevision(s, "rev3")).To(HaveLen(6))
			g.Expect(s.history[1].Rejected).To(BeTrue(), "rev2 stays rejected")
			expectGolden(t, s, tc.golden)
		})
	}
}

func TestGoldenRollbackWaitsWhilePaused(t *testing.T) {
	g := NewWithT(t)
	w := gatedWorld(2)
	w.hcpkg.Spec.FailurePolicy = convoyv1alpha1.FailurePolicy{Action: convoyv1alpha1.FailureActionRollback}
	s := gatedSim(t, w)
	s.breakOn("normal-2", revision(2))
	s.on("pause", func(s *sim) bool { return s.revisionOf(namespaceOf("normal-2")) == "rev2" },
		func(s *sim) { s.hcpkg.Spec.Paused = true })
	s.run(60)

	g.Expect(reasons(s, RollbackReason)).To(BeEmpty())
	g.Expect(s.update.Rejected).To(BeFalse())
	last := s.plans[len(s.plans)-1]
	g.Expect(last.Failed).To(HaveLen(1))
	g.Expect(last.Reject).To(BeFalse())

	s.on("unpause", atStep(s.step), func(s *sim) { s.hcpkg.Spec.Paused = false })
	s.run(20)
	g.Expect(s.update.Rejected).To(BeTrue())
	g.Expect(reasons(s, RollbackReason)).To(Equal([]string{"normal-2 -> rev1"}))
	expectGolden(t, s, "rollback-paused")
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
