package rollout

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// deletedOrder lists the HostedClusters whose Package was deleted because it was deselected,
// in the order of the plans.
func deletedOrder(s *sim) []string {
	var order []string
	for _, plan := range s.plans {
		for _, d := range plan.Deletes {
			if d.Reason == DeselectedReason {
				order = append(order, strings.TrimPrefix(d.HostedCluster, clusterNS+"/"))
			}
		}
	}
	return order
}

func TestGoldenSelectorTypoWhilePausedThenUnpaused(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal", "late").progressedAll(revision(1))
	w.hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}
	w.update = revision(1)
	s := newSim(t, w, seed)
	s.on("pause, then a selector that matches nothing", atStep(1), func(s *sim) {
		s.hcpkg.Spec.Paused = true
		s.hcpkg.Spec.HostedClusterSelector.MatchLabels["tier"] = "prdo"
	})
	s.on("unpause", atStep(6), func(s *sim) { s.hcpkg.Spec.Paused = false })
	s.run(6)
	g.Expect(deletedOrder(s)).To(BeEmpty(), "nothing is deleted while paused")
	g.Expect(s.packages).To(HaveLen(6))
	g.Expect(s.plans[len(s.plans)-1].DeletionsWaiting).To(Equal(6))

	s.run(100)
	g.Expect(deletedOrder(s)).To(Equal([]string{"early-1", "early-2", "normal-1", "normal-2", "late-1", "late-2"}))
	for _, plan := range s.plans {
		g.Expect(len(plan.Deletes)).To(BeNumerically("<=", 1), "one deletion at a time with maxUnavailable 1")
	}
	g.Expect(s.packages).To(BeEmpty())
	expectGolden(t, s, "selector-typo-paused")
}

func TestGoldenFirstInstallOfABrokenPackage(t *testing.T) {
	g := NewWithT(t)
	w := newWorld()
	w.hcpkg.Spec.Partition = nil
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		w.cluster(name, "")
	}
	w.current, w.update, w.history = nil, revision(1), []Revision{revision(1)}
	s := newSim(t, w, seed)
	s.bad[revision(1).Commit] = true
	s.run(25) // past the 10 minute progress deadline

	g.Expect(s.packages).To(HaveLen(1), "exactly one Package is created at a revision that never progresses")
	last := s.plans[len(s.plans)-1]
	g.Expect(last.Failed).To(HaveLen(1))
	g.Expect(states(last)).To(Equal([]string{"unknown=Blocked"}))

	s.on("push rev2 (fix)", atStep(s.step), func(s *sim) { s.push(revision(2), false) })
	s.run(100)
	g.Expect(s.current.Name).To(Equal("rev2"))
	g.Expect(onRevision(s, "rev2")).To(HaveLen(6))
	expectGolden(t, s, "first-install-broken")
}

func TestGoldenClusterBrokenAtCurrentRevisionWaitsForItsPartition(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal", "late").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(2))
	setCondition(w.packages[namespaceOf("late-1")], "Available", "False", t0.Add(-time.Hour), "probe failed")
	s := newSim(t, w, seed)
	delete(s.progressedAt, namespaceOf("late-1"))
	s.push(revision(2), false)
	s.run(100)

	order := updatedOrder(s, "rev2")
	g.Expect(order[4:]).To(ConsistOf("late-1", "late-2"), "late-1 waits for early and normal")
	g.Expect(s.current.Name).To(Equal("rev2"))
	expectGolden(t, s, "broken-at-current")
}
