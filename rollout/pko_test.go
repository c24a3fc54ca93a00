package rollout

// The three ways Package Operator's HostedClusterPackage rollout goes wrong, as measured on it,
// each replayed against the planner.

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Package Operator counts a Package as done when it is Available at its new generation, which
// it is about a second after its spec changes because the old revision still serves: at 1,000
// clusters under maxUnavailable 10, all 1,000 were mid-update at once.
func TestPKOAvailableAloneIsNotDone(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1000, "early").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(10))
	s := newSim(t, w, seed)
	s.tick = time.Second
	s.bad[revision(2).Commit] = true // never gets there,
	s.badServes = true               // but keeps reporting Available

	for range 30 {
		plan := s.advance()
		g.Expect(plan.Counts.Available).To(Equal(int32(1000)), "every Package keeps reporting Available")
	}
	g.Expect(onRevision(s, "rev2")).To(HaveLen(10))
	g.Expect(s.plans[len(s.plans)-1].Counts.Progressed).To(BeZero())
}

// The same at the level of one Package: Available=True and Progressing=False at the current
// generation, with status.revision still the old commit, is not progressed.
func TestPKOAvailableAtNewGenerationWithOldRevision(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	p := w.packages[namespaceOf("early-1")]
	setSpec(p, revision(2), t0.Add(-time.Second))
	setCondition(p, convoyv1alpha1.ProgressingCondition, "False", t0, "")

	plan := compute(g, w)
	g.Expect(plan.Counts.Available).To(Equal(int32(2)))
	g.Expect(plan.Counts.Progressed).To(BeZero())
	g.Expect(describe(plan)).To(BeEmpty(), "early-1 still holds the only slot")
}

// Package Operator's partitions are a priority order, not a barrier: a budget larger than the
// first partition's remaining work spills into the next partition in the same pass.
func TestPKOPartitionsWaitForEachOther(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").fleet(5, "normal").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(10))
	s := newSim(t, w, seed)
	s.push(revision(2), false)
	s.run(100)

	g.Expect(s.current.Name).To(Equal("rev2"))
	first := s.plans[0]
	g.Expect(describe(first)).To(Equal([]string{"update early-1 rev2 WithinBudget", "update early-2 rev2 WithinBudget"}))
	normalStart := -1
	for i, plan := range s.plans {
		if len(plan.Updates) > 0 && plan.Updates[0].Partition == "normal" {
			normalStart = i
			break
		}
	}
	g.Expect(normalStart).To(BeNumerically(">", 0))
	g.Expect(s.plans[normalStart].Partitions[0].State).To(Equal(convoyv1alpha1.PartitionDone))
	g.Expect(s.plans[normalStart].Updates).To(HaveLen(5))
}

// With a static order that does not list a value (and without "*"), Package Operator never
// updates those clusters nor the unlabelled ones, while status says every Package progressed.
func TestPKOStaticOrderUpdatesUnlistedValuesLast(t *testing.T) {
	g := NewWithT(t)
	w := newWorld()
	w.hcpkg.Spec.Partition.Order.Static = []string{"early", "late"}
	w.fleet(2, "early", "late", "normal")
	w.cluster("bare-1", "")
	w.progressedAll(revision(1))
	s := newSim(t, w, seed)
	s.push(revision(2), false)
	s.run(100)

	g.Expect(s.current.Name).To(Equal("rev2"))
	g.Expect(updatedOrder(s, "rev2")).To(Equal([]string{
		"early-1", "early-2", "late-1", "late-2", "bare-1", "normal-1", "normal-2",
	}))
	for _, plan := range s.plans {
		progressing := plan.Conditions[1]
		if plan.Counts.Progressed < 7 {
			g.Expect(progressing.Status).To(BeEquivalentTo("True"))
			g.Expect(progressing.Message).To(Equal(fmt.Sprintf("%d/7 packages progressed.", plan.Counts.Progressed)))
			g.Expect(plan.Completed).To(BeFalse())
		}
	}
	last := s.plans[len(s.plans)-1]
	g.Expect(last.Conditions[1].Reason).To(Equal(convoyv1alpha1.AllPackagesProgressedReason))
	g.Expect(last.Conditions[1].Message).To(Equal("7/7 packages progressed."))
}
