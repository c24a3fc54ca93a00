package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestIneligibleHostedClusters(t *testing.T) {
	for _, tc := range []struct {
		name       string
		makeIt     func(hc *HostedCluster)
		wantReason string
		wantMsg    string
	}{{
		name:       "not available",
		makeIt:     func(hc *HostedCluster) { hc.Available, hc.AvailableMessage = false, "etcd is degraded" },
		wantReason: HostedClusterNotAvailableReason,
		wantMsg:    "HostedCluster is not Available: etcd is degraded",
	}, {
		name:       "being deleted",
		makeIt:     func(hc *HostedCluster) { hc.Deleting = true },
		wantReason: HostedClusterDeletingReason,
		wantMsg:    "HostedCluster is being deleted",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(2, "early", "normal").progressedAll(revision(1))
			// early-2 is ineligible and its Package is down with it.
			tc.makeIt(w.find("early-2"))
			setCondition(w.packages[namespaceOf("early-2")], "Available", "False", t0.Add(-time.Hour), "unreachable")
			w.pkg("early-1", revision(2), t0.Add(-time.Hour))

			plan := compute(g, w)
			// early-2 holds neither the barrier nor the budget, keeps its Package, and is reported.
			g.Expect(describe(plan)).To(Equal([]string{"update normal-1 rev2 WithinBudget"}))
			g.Expect(states(plan)).To(Equal([]string{"early=Done", "normal=Progressing", "late=Done"}))
			g.Expect(plan.Ineligible).To(Equal([]IneligibleTarget{{
				HostedCluster: "clusters/early-2", Partition: "early", Reason: tc.wantReason, Message: tc.wantMsg,
			}}))
			g.Expect(plan.Failed).To(BeEmpty(), "environmental unavailability is not a package failure")
			g.Expect(plan.Counts.Total).To(Equal(int32(4)))
			g.Expect(plan.Counts.Unavailable).To(Equal(int32(1)))
		})
	}
}

func TestIneligibleTargetWithoutPackageGetsNone(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early").progressedAll(revision(1))
	w.cluster("new-1", "early").Available = false
	g.Expect(describe(compute(g, w))).To(Equal([]string{"update early-1 rev2 WithinBudget"}))
}

func TestPackagePausedByHandIsSkipped(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	w.packages[namespaceOf("early-1")].Spec.Paused = true

	plan := compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{"update early-2 rev2 WithinBudget"}))
	g.Expect(plan.Ineligible).To(HaveLen(1))
	g.Expect(plan.Ineligible[0].Reason).To(Equal(PackagePausedReason))
	g.Expect(plan.Counts.Paused).To(Equal(int32(1)))
}

func TestNewTargetsGetTheRevisionTheirPartitionReached(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  bool // no current revision yet
		group  string
		budget int32
		want   []string
	}{
		{name: "reached partition", group: "early", budget: 2, want: []string{"create new-1 rev2 NewTarget"}},
		{name: "reached partition, no free slot", group: "early", budget: 1, want: nil},
		{name: "partition not reached yet", group: "late", budget: 1, want: []string{"create new-1 rev1 NewTarget"}},
		{name: "unknown partition not reached yet", group: "", budget: 1, want: []string{"create new-1 rev1 NewTarget"}},
		{name: "first rollout, reached partition", first: true, group: "early", budget: 2, want: []string{"create new-1 rev2 NewTarget"}},
		{name: "first rollout, reached partition, no free slot", first: true, group: "early", budget: 1, want: nil},
		{name: "first rollout, partition not reached", first: true, group: "late", budget: 2, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(1, "early", "normal", "late").progressedAll(revision(1))
			if tc.first {
				// Only early-1 has a Package yet.
				w.current, w.history = nil, []Revision{revision(2)}
				delete(w.packages, namespaceOf("normal-1"))
				delete(w.packages, namespaceOf("late-1"))
			}
			w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(tc.budget))
			setSpec(w.packages[namespaceOf("early-1")], revision(2), t0.Add(-time.Minute))
			w.cluster("new-1", tc.group)
			// Creating a Package at a revision whose rollout has not completed takes a slot
			// (early-1 holds one); at the completed current revision it takes none.
			g.Expect(describe(compute(g, w))).To(Equal(tc.want))
		})
	}
}

func TestDeletions(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal", "late").progressedAll(revision(1))
	w.hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(3))
	w.find("normal-1").Labels["tier"] = "dev"
	w.remove("late-1")
	now := metav1.NewTime(t0)
	w.pkg("gone-being-deleted", revision(1), t0).DeletionTimestamp = &now

	plan := compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{
		"update early-1 rev2 WithinBudget",
		"delete clusters-late-1/addon HostedClusterGone",
		"delete clusters-normal-1/addon Deselected",
	}))
	g.Expect(plan.Deletes[1].HostedCluster).To(Equal("clusters/normal-1"))
	g.Expect(plan.Counts.Total).To(Equal(int32(1)))
	g.Expect(plan.RevisionsInUse).To(Equal([]string{"rev1"}))
}

func TestPackageBeingDeletedIsWaitedFor(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	now := metav1.NewTime(t0)
	w.packages[namespaceOf("early-1")].DeletionTimestamp = &now

	plan := compute(g, w)
	// Neither recreated nor updated while it goes away; it holds the only slot.
	g.Expect(describe(plan)).To(BeEmpty())
	g.Expect(states(plan)[0]).To(Equal("early=Progressing"))
}

func TestNamespaceConflict(t *testing.T) {
	g := NewWithT(t)
	w := newWorld()
	w.clusters = append(w.clusters,
		HostedCluster{Namespace: "a-b", Name: "c", Available: true},
		HostedCluster{Namespace: "a", Name: "b-c", Available: true},
	)
	w.current, w.history = nil, []Revision{revision(2)}

	plan := compute(g, w)
	g.Expect(plan.Creates).To(HaveLen(1))
	g.Expect(plan.Creates[0].HostedCluster).To(Equal("a-b/c"))
	g.Expect(plan.Ineligible).To(HaveLen(1))
	g.Expect(plan.Ineligible[0].HostedCluster).To(Equal("a/b-c"))
	g.Expect(plan.Ineligible[0].Reason).To(Equal(NamespaceConflictReason))
}
