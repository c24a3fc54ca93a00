package rollout

import (
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestCompareNatural(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"2", "10"},
		{"1", "2"},
		{"9", "10"},
		{"node-9", "node-10"},
		{"a", "b"},
		{"a", "a1"},
		{"a2", "a10"},
		{"a10b", "a10c"},
		{"1", "a"},
		{"01", "1"}, // equal numbers fall back to byte order
		{"early", "late"},
		{"", "a"},
	} {
		t.Run(tc.a+"<"+tc.b, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(compareNatural(tc.a, tc.b)).To(BeNumerically("<", 0))
			g.Expect(compareNatural(tc.b, tc.a)).To(BeNumerically(">", 0))
			g.Expect(compareNatural(tc.a, tc.a)).To(Equal(0))
		})
	}
}

func TestNaturalSort(t *testing.T) {
	g := NewWithT(t)
	values := []string{"10", "b", "2", "1", "a10", "a9", "100", "02"}
	slices.SortFunc(values, compareNatural)
	g.Expect(values).To(Equal([]string{"1", "02", "2", "10", "100", "a9", "a10", "b"}))
}

func TestPartitionOrder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		world    func() *world
		want     []string
		wantPart map[string]string
	}{{
		name: "static order, unlisted value and missing label last",
		world: func() *world {
			w := newWorld()
			w.cluster("a", "late")
			w.cluster("b", "canary")
			w.cluster("c", "")
			w.cluster("d", "early")
			return w
		},
		want:     []string{"early", "normal", "late", "unknown"},
		wantPart: map[string]string{"a": "late", "b": "unknown", "c": "unknown", "d": "early"},
	}, {
		name: "static order without unknown targets",
		world: func() *world {
			w := newWorld()
			w.cluster("a", "normal")
			return w
		},
		want: []string{"early", "normal", "late"},
	}, {
		name: "natural alphanumeric order, missing and empty label last",
		world: func() *world {
			w := newWorld().alphanumeric()
			for name, value := range map[string]string{"a": "10", "b": "2", "c": "b", "d": "1", "e": "", "f": "2"} {
				w.cluster(name, value)
			}
			w.find("e").Labels[riskKey] = "" // empty value; "g" has no label at all
			w.cluster("g", "")
			return w
		},
		wantPart: map[string]string{"a": "10", "e": "unknown", "g": "unknown"},
		want:     []string{"1", "2", "10", "b", "unknown"},
	}, {
		name: "no partition spec: one partition",
		world: func() *world {
			w := newWorld()
			w.hcpkg.Spec.Partition = nil
			w.cluster("a", "late")
			w.cluster("b", "early")
			return w
		},
		want:     []string{"unknown"},
		wantPart: map[string]string{"a": "unknown", "b": "unknown"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := tc.world().progressedAll(revision(1))
			plan := compute(g, w)
			var names []string
			for _, p := range plan.Partitions {
				names = append(names, p.Name)
			}
			g.Expect(names).To(Equal(tc.want))
			for _, c := range plan.Updates {
				if want, ok := tc.wantPart[c.HostedCluster[len(clusterNS)+1:]]; ok {
					g.Expect(c.Partition).To(Equal(want))
				}
			}
		})
	}
}

func TestPartitionsAreBarriers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *world)
		want  []string
	}{{
		name:  "budget larger than the first partition stays in it",
		setup: func(w *world) {},
		want:  []string{"update early-1 rev2 WithinBudget", "update early-2 rev2 WithinBudget"},
	}, {
		name: "updated but not progressed holds the barrier",
		setup: func(w *world) {
			setSpec(w.packages[namespaceOf("early-1")], revision(2), t0.Add(-time.Minute))
			setSpec(w.packages[namespaceOf("early-2")], revision(2), t0.Add(-time.Minute))
		},
		want: nil,
	}, {
		name: "done partitions open the next one",
		setup: func(w *world) {
			w.pkg("early-1", revision(2), t0.Add(-time.Hour))
			w.pkg("early-2", revision(2), t0.Add(-time.Hour))
		},
		want: []string{"update normal-1 rev2 WithinBudget", "update normal-2 rev2 WithinBudget"},
	}, {
		name: "a done target that becomes unavailable closes the barrier again",
		setup: func(w *world) {
			w.pkg("early-1", revision(2), t0.Add(-time.Hour))
			p := w.pkg("early-2", revision(2), t0.Add(-time.Hour))
			setCondition(p, "Available", "False", t0.Add(-time.Minute), "probe failed")
		},
		want: nil,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(2, "early", "normal", "late").progressedAll(revision(1))
			w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(5))
			tc.setup(w)
			g.Expect(describe(compute(g, w))).To(Equal(tc.want))
		})
	}
}

func TestRegroupingWhenALabelChanges(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal", "late").progressedAll(revision(1))
	w.pkg("early-1", revision(2), t0.Add(-time.Hour))
	w.pkg("early-2", revision(2), t0.Add(-time.Hour))
	w.pkg("normal-1", revision(2), t0.Add(-time.Hour))
	plan := compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{"update normal-2 rev2 WithinBudget"}))

	w.find("late-1").Labels[riskKey] = "early"
	plan = compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{"update late-1 rev2 WithinBudget"}))
	g.Expect(plan.Updates[0].Partition).To(Equal("early"))
	g.Expect(states(plan)).To(Equal([]string{"early=Progressing", "normal=Pending", "late=Pending"}))
}

func TestRegroupingKeepsInFlightUpdates(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal", "late").progressedAll(revision(1))
	setSpec(w.packages[namespaceOf("early-1")], revision(2), t0.Add(-time.Minute))
	w.find("early-1").Labels[riskKey] = "late"

	plan := compute(g, w)
	// early is empty and done; normal is reached, but early-1 still updates and holds the slot.
	g.Expect(describe(plan)).To(BeEmpty())
	g.Expect(states(plan)).To(Equal([]string{"early=Done", "normal=Progressing", "late=Pending"}))
}
