package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

func TestMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		value    intstr.IntOrString
		eligible int
		want     int
		wantErr  bool
	}{
		{name: "integer", value: intstr.FromInt32(3), eligible: 10, want: 3},
		{name: "integer above the fleet", value: intstr.FromInt32(30), eligible: 10, want: 30},
		{name: "percentage rounds down", value: intstr.FromString("34%"), eligible: 9, want: 3},
		{name: "percentage rounds down to 4", value: intstr.FromString("34%"), eligible: 12, want: 4},
		{name: "percentage at least 1", value: intstr.FromString("10%"), eligible: 5, want: 1},
		{name: "percentage of no targets", value: intstr.FromString("50%"), eligible: 0, want: 1},
		{name: "whole fleet", value: intstr.FromString("100%"), eligible: 7, want: 7},
		{name: "not a percentage", value: intstr.FromString("ten"), eligible: 7, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := maxUnavailable(rolling(tc.value), tc.eligible)
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestMaxUnavailableDefaults(t *testing.T) {
	g := NewWithT(t)
	got, err := maxUnavailable(convoyv1alpha1.HostedClusterPackageStrategy{}, 10)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(1))
	got, err = maxUnavailable(convoyv1alpha1.HostedClusterPackageStrategy{RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{}}, 10)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(1))
}

func TestInvalidSpecIsAnError(t *testing.T) {
	g := NewWithT(t)
	w := newWorld()
	w.hcpkg.Spec.Strategy = rolling(intstr.FromString("lots"))
	_, err := Compute(w.input())
	g.Expect(err).To(MatchError(ContainSubstring("maxUnavailable")))

	_, err = Compute(Input{})
	g.Expect(err).To(HaveOccurred())
}

func TestPercentageIsOfEligibleTargets(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(5, "early").fleet(5, "normal").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromString("50%"))
	for _, name := range []string{"normal-1", "normal-2", "normal-3", "normal-4"} {
		w.find(name).Available = false
	}
	plan := compute(g, w)
	// 6 eligible targets: 50% is 3.
	g.Expect(plan.MaxUnavailable).To(Equal(3))
	g.Expect(plan.Updates).To(HaveLen(3))
}

func TestBudgetCountsUnavailableAndUpdating(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *world)
		want  []string
	}{{
		name:  "all available: maxUnavailable updates",
		setup: func(w *world) {},
		want:  []string{"update early-1 rev2 WithinBudget", "update early-2 rev2 WithinBudget"},
	}, {
		name: "one updating leaves one slot",
		setup: func(w *world) {
			setSpec(w.packages[namespaceOf("early-1")], revision(2), t0.Add(-time.Minute))
		},
		want: []string{"update early-2 rev2 WithinBudget"},
	}, {
		name: "one unavailable in a later partition leaves one slot",
		setup: func(w *world) {
			setCondition(w.packages[namespaceOf("late-3")], "Available", "False", t0.Add(-time.Minute), "probe failed")
		},
		want: []string{"update early-1 rev2 WithinBudget"},
	}, {
		name: "two unavailable elsewhere leave none",
		setup: func(w *world) {
			setCondition(w.packages[namespaceOf("late-3")], "Available", "False", t0.Add(-time.Minute), "probe failed")
			setCondition(w.packages[namespaceOf("normal-3")], "Available", "False", t0.Add(-time.Minute), "probe failed")
		},
		want: nil,
	}, {
		name: "an ineligible target's unavailable Package costs nothing",
		setup: func(w *world) {
			setCondition(w.packages[namespaceOf("late-3")], "Available", "False", t0.Add(-time.Minute), "probe failed")
			w.find("late-3").Available = false
		},
		want: []string{"update early-1 rev2 WithinBudget", "update early-2 rev2 WithinBudget"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(3, "early", "normal", "late").progressedAll(revision(1))
			w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(2))
			tc.setup(w)
			g.Expect(describe(compute(g, w))).To(Equal(tc.want))
		})
	}
}

func TestAlreadyUnavailablePackagesFirst(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(3, "early", "normal").progressedAll(revision(1))
	setCondition(w.packages[namespaceOf("early-3")], "Available", "False", t0.Add(-time.Minute), "probe failed")

	plan := compute(g, w)
	// early-3 holds the only slot already: updating it costs nothing, nothing else fits.
	g.Expect(describe(plan)).To(Equal([]string{"update early-3 rev2 AlreadyUnavailable"}))
}

func TestAlreadyUnavailableWaitsForItsPartition(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(2))
	setCondition(w.packages[namespaceOf("normal-1")], "Available", "False", t0.Add(-time.Minute), "probe failed")

	plan := compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{"update early-1 rev2 WithinBudget"}))
}

func TestMinReadySeconds(t *testing.T) {
	for _, tc := range []struct {
		name        string
		progressed  time.Duration // before now
		want        []string
		wantRequeue time.Duration
		wantState   string
	}{
		{name: "too recent", progressed: 20 * time.Second, want: nil, wantRequeue: 40 * time.Second, wantState: "early=Progressing"},
		{name: "exactly minReadySeconds", progressed: time.Minute, want: []string{"update normal-1 rev2 WithinBudget"}, wantState: "early=Done"},
		{name: "long ago", progressed: time.Hour, want: []string{"update normal-1 rev2 WithinBudget"}, wantState: "early=Done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(1, "early", "normal").progressedAll(revision(1))
			w.hcpkg.Spec.Strategy.RollingUpgrade.MinReadySeconds = 60
			p := w.packages[namespaceOf("early-1")]
			setSpec(p, revision(2), t0.Add(-2*time.Hour))
			progress(p, t0.Add(-tc.progressed))

			plan := compute(g, w)
			g.Expect(describe(plan)).To(Equal(tc.want))
			g.Expect(states(plan)[0]).To(Equal(tc.wantState))
			g.Expect(plan.Counts.Progressed).To(Equal(int32(1)), "progressed does not wait for minReadySeconds")
			if tc.wantRequeue > 0 {
				g.Expect(plan.RequeueAfter).To(Equal(tc.wantRequeue))
			}
		})
	}
}

func TestMinReadySecondsCountsFromTheNewRevision(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy.RollingUpgrade.MinReadySeconds = 60
	// Available has been True since yesterday (the old revision served throughout); the new
	// revision arrived 10 seconds ago.
	p := w.packages[namespaceOf("early-1")]
	setSpec(p, revision(2), t0.Add(-time.Minute))
	progress(p, t0.Add(-10*time.Second))

	plan := compute(g, w)
	g.Expect(describe(plan)).To(BeEmpty())
	g.Expect(plan.RequeueAfter).To(Equal(50 * time.Second))
}
