package rollout

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// seed makes every simulation reproducible.
const seed = 8

// expectGolden compares the simulation log with testdata/<name>.golden, or rewrites the file
// under -update.
func expectGolden(t *testing.T, s *sim, name string) {
	g := NewWithT(t)
	path := filepath.Join("testdata", name+".golden")
	got := s.log.String()
	if *update {
		g.Expect(os.WriteFile(path, []byte(got), 0o644)).To(Succeed())
		return
	}
	want, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred(), "run go test ./rollout/ -run Golden -update")
	g.Expect(got).To(Equal(string(want)))
}

// updatedOrder lists the clusters in the order they were moved to rev.
func updatedOrder(s *sim, rev string) []string {
	var order []string
	for _, plan := range s.plans {
		for _, c := range append(append([]Change{}, plan.Creates...), plan.Updates...) {
			if c.Revision.Name == rev {
				order = append(order, strings.TrimPrefix(c.HostedCluster, clusterNS+"/"))
			}
		}
	}
	return order
}

// onRevision lists the clusters whose Package is pinned to rev, in cluster order.
func onRevision(s *sim, rev string) []string {
	var names []string
	for _, hc := range s.clusters {
		if s.revisionOf(namespaceOf(hc.Name)) == rev {
			names = append(names, hc.Name)
		}
	}
	return names
}

// partitionOrder returns the partition of each cluster in updated order, collapsing repeats.
func partitionOrder(s *sim, order []string) []string {
	var parts []string
	for _, name := range order {
		p := s.find(name).Labels[riskKey]
		if len(parts) == 0 || parts[len(parts)-1] != p {
			parts = append(parts, p)
		}
	}
	return parts
}

func TestGoldenRollingMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		golden string
		max    intstr.IntOrString
		batch  int
	}{
		{golden: "rolling-max1", max: intstr.FromInt32(1), batch: 1},
		{golden: "rolling-34pct", max: intstr.FromString("34%"), batch: 4},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(4, "early", "normal", "late").progressedAll(revision(1))
			w.hcpkg.Spec.Strategy = rolling(tc.max)
			s := newSim(t, w, seed)
			s.push(revision(2), false)
			s.run(100)

			g.Expect(s.current.Name).To(Equal("rev2"))
			g.Expect(onRevision(s, "rev2")).To(HaveLen(12))
			g.Expect(partitionOrder(s, updatedOrder(s, "rev2"))).To(Equal([]string{"early", "normal", "late"}))
			for _, plan := range s.plans {
				g.Expect(len(plan.Updates)).To(BeNumerically("<=", tc.batch))
			}
			expectGolden(t, s, tc.golden)
		})
	}
}

func TestGoldenBadRevisionThenFix(t *testing.T) {
	for _, tc := range []struct {
		golden string
		max    intstr.IntOrString
		onBad  int
	}{
		{golden: "bad-revision-max1", max: intstr.FromInt32(1), onBad: 1},
		{golden: "bad-revision-max2", max: intstr.FromInt32(2), onBad: 2},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(3, "early", "normal", "late").progressedAll(revision(1))
			w.hcpkg.Spec.Strategy = rolling(tc.max)
			s := newSim(t, w, seed)
			s.push(revision(2), true)
			s.run(25) // 12.5 minutes: past the 10 minute progress deadline

			g.Expect(s.current.Name).To(Equal("rev1"))
			g.Expect(onRevision(s, "rev2")).To(HaveLen(tc.onBad))
			last := s.plans[len(s.plans)-1]
			g.Expect(last.Failed).To(HaveLen(tc.onBad))
			g.Expect(states(last)).To(Equal([]string{"early=Blocked", "normal=Pending", "late=Pending"}))

			s.on("push rev3 (fix)", atStep(s.step), func(s *sim) { s.push(revision(3), false) })
			fixFrom := len(s.plans)
			s.run(100)
			first := s.plans[fixFrom].Updates
			g.Expect(first).To(HaveLen(tc.onBad))
			for _, c := range first {
				g.Expect(c.Reason).To(Equal(ReplaceFailedReason))
			}
			g.Expect(s.current.Name).To(Equal("rev3"))
			g.Expect(onRevision(s, "rev3")).To(HaveLen(9))
			expectGolden(t, s, tc.golden)
		})
	}
}

func TestGoldenRelabelIntoEarlierPartition(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(3, "early", "normal", "late").progressedAll(revision(1))
	s := newSim(t, w, seed)
	s.push(revision(2), false)
	normalStarted := func(s *sim) bool { return len(onRevision(s, "rev2")) == 4 }
	s.on("relabel late-1 from late to early", normalStarted, func(s *sim) { s.find("late-1").Labels[riskKey] = "early" })
	s.run(100)

	order := updatedOrder(s, "rev2")
	g.Expect(order[:5]).To(Equal([]string{"early-1", "early-2", "early-3", "normal-1", "late-1"}))
	g.Expect(s.current.Name).To(Equal("rev2"))
	expectGolden(t, s, "relabel-late-to-early")
}

func TestGoldenUnknownPartitionLast(t *testing.T) {
	g := NewWithT(t)
	w := newWorld()
	w.cluster("canary-1", "canary")
	w.cluster("bare-1", "")
	w.fleet(2, "late", "normal", "early").progressedAll(revision(1))
	s := newSim(t, w, seed)
	s.push(revision(2), false)
	s.run(100)

	g.Expect(updatedOrder(s, "rev2")).To(Equal([]string{
		"early-1", "early-2", "normal-1", "normal-2", "late-1", "late-2", "bare-1", "canary-1",
	}))
	g.Expect(s.current.Name).To(Equal("rev2"))
	expectGolden(t, s, "unknown-partition-last")
}

func TestGoldenNaturalOrder(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().alphanumeric().fleet(1, "10", "2", "1", "b").progressedAll(revision(1))
	s := newSim(t, w, seed)
	s.push(revision(2), false)
	s.run(100)

	g.Expect(updatedOrder(s, "rev2")).To(Equal([]string{"1-1", "2-1", "10-1", "b-1"}))
	expectGolden(t, s, "natural-order")
}

func TestGoldenMembershipChanges(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal", "late").progressedAll(revision(1))
	s := newSim(t, w, seed)
	s.push(revision(2), false)
	s.on("add late-3", atStep(1), func(s *sim) { s.cluster("late-3", "late") })
	s.on("delete normal-2", atStep(2), func(s *sim) { s.remove("normal-2") })
	s.on("early-2 becomes unavailable", atStep(1), func(s *sim) { s.find("early-2").Available = false })
	s.on("early-2 is available again", atStep(12), func(s *sim) { s.find("early-2").Available = true })
	s.run(100)

	g.Expect(updatedOrder(s, "rev1")).To(Equal([]string{"late-3"}))
	g.Expect(s.packages).NotTo(HaveKey(namespaceOf("normal-2")))
	g.Expect(onRevision(s, "rev2")).To(ConsistOf("early-1", "early-2", "normal-1", "late-1", "late-2", "late-3"))
	expectGolden(t, s, "membership-changes")
}

func TestGoldenFirstRollout(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal", "late")
	w.current, w.update, w.history = nil, revision(1), []Revision{revision(1)}
	w.hcpkg.Spec.Strategy.RollingUpgrade.MinReadySeconds = 60
	s := newSim(t, w, seed)
	s.run(100)

	g.Expect(partitionOrder(s, updatedOrder(s, "rev1"))).To(Equal([]string{"early", "normal", "late"}))
	g.Expect(s.current.Name).To(Equal("rev1"))
	g.Expect(s.now.Sub(t0)).To(BeNumerically(">", 3*time.Minute))
	expectGolden(t, s, "first-rollout")
}
