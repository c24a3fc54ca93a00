package rollout

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

func TestHostedClusterGoingAwayReleasesItsPackageAtOnce(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	w.hcpkg.Spec.Paused = true
	w.find("early-1").Deleting = true
	w.remove("early-2")
	w.hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "none"}}

	plan := compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{
		"delete clusters-early-1/addon HostedClusterDeleting",
		"delete clusters-early-2/addon HostedClusterGone",
	}), "paused or not, within budget or not")
}

func TestDeselectedPackageBeingDeletedHoldsASlot(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	w.hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}
	w.find("early-1").Labels["tier"] = "dev"
	now := metav1.NewTime(t0)
	w.packages[namespaceOf("early-1")].DeletionTimestamp = &now

	plan := compute(g, w)
	g.Expect(describe(plan)).To(BeEmpty(), "early-2 waits until early-1's Package is gone")
}

func TestForeignPackageIsAConflictAndLeftAlone(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early")
	w.current, w.history = nil, []Revision{revision(2)}
	in := w.input()
	in.ForeignPackages = []ForeignPackage{
		{Namespace: namespaceOf("early-1"), Name: hcpkgName, Owner: "HostedClusterPackage other"},
		{Namespace: namespaceOf("early-2"), Name: "another-name"},
	}

	plan, err := Compute(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(describe(plan)).To(Equal([]string{"create early-2 rev2 NewTarget"}))
	g.Expect(plan.Ineligible).To(HaveLen(1))
	g.Expect(plan.Ineligible[0].Reason).To(Equal(PackageConflictReason))
	g.Expect(plan.Ineligible[0].Message).To(Equal("Package clusters-early-1/addon exists and is not owned by " +
		"HostedClusterPackage addon (its controller is HostedClusterPackage other); convoy leaves it unchanged"))
	g.Expect(plan.Counts.Skipped).To(Equal(int32(1)))
}

func TestTemplateMetadataReachesEveryPackage(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "late").progressedAll(revision(1))
	w.update = revision(1)
	w.hcpkg.Spec.Template.Metadata.Labels = map[string]string{"team": "observability"}
	hash := TemplateMetadataHash(w.hcpkg.Spec.Template.Metadata)
	w.packages[namespaceOf("late-1")].Annotations[TemplateMetadataAnnotation] = hash

	plan := compute(g, w)
	g.Expect(plan.Relabels).To(HaveLen(1))
	g.Expect(plan.Relabels[0].Package.Namespace).To(Equal(namespaceOf("early-1")))
	g.Expect(plan.Relabels[0].Revision.Name).To(Equal("rev1"), "the revision it has")
	g.Expect(plan.Creates).To(BeEmpty())
	g.Expect(plan.Updates).To(BeEmpty())

	w.hcpkg.Spec.Paused = true
	g.Expect(compute(g, w).Relabels).To(BeEmpty(), "nothing changes while paused")
}

func TestUnlistedValuesGoWhereTheStarIs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		static []string
		want   []string
	}{
		{name: "star in the middle", static: []string{"early", "*", "late"},
			want: []string{"early-1", "canary-1", "qa-1", "late-1", "bare-1"}},
		{name: "no star: unlisted values last", static: []string{"early", "late"},
			want: []string{"early-1", "late-1", "bare-1", "canary-1", "qa-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld()
			w.hcpkg.Spec.Partition.Order.Static = tc.static
			w.cluster("bare-1", "")
			w.fleet(1, "qa", "late", "canary", "early").progressedAll(revision(1))
			s := newSim(t, w, seed)
			s.push(revision(2), false)
			s.run(100)
			g.Expect(updatedOrder(s, "rev2")).To(Equal(tc.want))
		})
	}
}

func TestOnlyAFailureOfThisRolloutJumpsTheBarrier(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   Revision
		want []string
	}{
		{name: "failed at a superseded revision of this rollout", at: revision(2),
			want: []string{"update late-1 rev3 ReplaceFailed"}},
		{name: "failed at the current revision", at: revision(1), want: nil},
		{name: "failed at a revision older than the current one", at: revision(0), want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(1, "early", "late").progressedAll(revision(1))
			w.update, w.history = revision(3), []Revision{revision(0), revision(1), revision(2), revision(3)}
			w.pkg("early-1", revision(3), t0.Add(-time.Minute))
			setSpec(w.packages[namespaceOf("early-1")], revision(3), t0.Add(-time.Minute))
			late := w.pkg("late-1", tc.at, t0.Add(-time.Hour))
			setCondition(late, convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, t0.Add(-time.Hour), "probe failed")

			plan := compute(g, w)
			g.Expect(describe(plan)).To(Equal(tc.want))
			g.Expect(plan.Failed).To(HaveLen(1), "reported either way")
		})
	}
}

func TestBadCommitThatTakesItsClusterDownKeepsItsSlot(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "late").progressedAll(revision(1))
	s := newSim(t, w, seed)
	s.push(revision(2), true)
	s.on("early-1 goes down with rev2", func(s *sim) bool { return s.revisionOf(namespaceOf("early-1")) == "rev2" },
		func(s *sim) { s.find("early-1").Available = false })
	s.run(40)

	g.Expect(onRevision(s, "rev2")).To(Equal([]string{"early-1"}), "nothing else moves while it is down")
	last := s.plans[len(s.plans)-1]
	g.Expect(last.Completed).To(BeFalse())
	g.Expect(last.Failed).To(HaveLen(1), "its deadline still runs")
	g.Expect(last.Ineligible).To(HaveLen(1))
	g.Expect(last.Ineligible[0].Message).To(HaveSuffix("holds its slot until it progresses"))
	g.Expect(states(last)).To(Equal([]string{"early=Blocked", "normal=Done", "late=Pending"}))
}

func TestHibernatedClusterOfASettledFleetHoldsNothing(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "late").progressedAll(revision(1))
	w.update = revision(1)
	w.find("early-1").Available = false
	setCondition(w.packages[namespaceOf("early-1")], "Available", "False", t0.Add(-time.Hour), "hosted cluster hibernated")

	w.update, w.history = revision(2), []Revision{revision(1), revision(2)}
	plan := compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{"update late-1 rev2 WithinBudget"}), "early-1 is skipped, not a barrier")
	g.Expect(plan.Failed).To(BeEmpty())
}

func TestTemplatePauseLiftedIsNotAPauseByHand(t *testing.T) {
	g := NewWithT(t)
	paused := revision(1)
	paused.Template.Paused = true
	w := newWorld().fleet(1, "early").progressedAll(paused)
	w.current, w.history = &paused, []Revision{paused, revision(2)}
	for _, p := range w.packages {
		p.Spec.Paused = true
	}
	plan := compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{"update early-1 rev2 WithinBudget"}))
	g.Expect(plan.Ineligible).To(BeEmpty())
}

func TestDeselectedUnavailableClusterWaitsAndAStuckDeletionIsReported(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	w.hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}
	w.find("early-1").Labels["tier"] = "dev"
	w.find("early-1").Available = false

	plan := compute(g, w)
	g.Expect(describe(plan)).To(Equal([]string{"update early-2 rev2 WithinBudget"}), "its teardown could not reach it")
	g.Expect(plan.DeletionsWaiting).To(Equal(1))

	since := metav1.NewTime(t0.Add(-11 * time.Minute))
	w.packages[namespaceOf("early-1")].DeletionTimestamp = &since
	plan = compute(g, w)
	g.Expect(describe(plan)).To(BeEmpty(), "the stuck deletion holds the only slot")
	g.Expect(plan.Failed).To(HaveLen(1))
	g.Expect(plan.Failed[0].Message).To(ContainSubstring("has been deleting for 10m0s"))
	g.Expect(plan.Counts.Failed).To(Equal(int32(1)))
}

func TestSampledMessagesAreBounded(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early").progressedAll(revision(1))
	w.find("early-1").Available = false
	w.find("early-1").AvailableMessage = strings.Repeat("é", 100_000)

	var status convoyv1alpha1.HostedClusterPackageStatus
	compute(g, w).WriteStatus(&status)
	g.Expect(status.Skipped).To(HaveLen(1))
	g.Expect(len(status.Skipped[0].Message)).To(BeNumerically("<=", MaxSampleMessage))
	g.Expect(utf8.ValidString(status.Skipped[0].Message)).To(BeTrue())
	g.Expect(status.Skipped[0].Message).To(HaveSuffix(" …"))
}

func TestAShardMoveIsARelabelAndNeverRidesOnAnUpdate(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "late").progressedAll(revision(1))
	w.update = revision(1)
	hash := TemplateMetadataHash(w.hcpkg.Spec.Template.Metadata)
	for _, pkg := range w.packages {
		pkg.Annotations[TemplateMetadataAnnotation] = hash
		pkg.Labels = map[string]string{convoyv1alpha1.ShardLabel: "a"}
	}
	w.packages[namespaceOf("late-1")].Labels[convoyv1alpha1.ShardLabel] = "removed"
	in := w.input()
	in.ShardFor = func(_, current string) string {
		if current == "a" {
			return "a"
		}
		return "b"
	}

	plan, err := Compute(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Relabels).To(HaveLen(1), "the Package on a shard that is gone moves, at the revision it has")
	g.Expect(plan.Relabels[0].Package.Namespace).To(Equal(namespaceOf("late-1")))
	g.Expect(plan.Relabels[0].Revision.Name).To(Equal("rev1"))

	w.hcpkg.Spec.Paused = true
	in = w.input()
	in.ShardFor = func(string, string) string { return "b" }
	plan, err = Compute(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Relabels).To(BeEmpty(), "nothing moves while paused")
}

func TestPlanNamesWhatAFailedPackageFailedAtAndLeaves(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "late").progressedAll(revision(1))
	w.update, w.history = revision(3), []Revision{revision(1), revision(2), revision(3)}
	late := w.pkg("late-1", revision(2), t0.Add(-time.Hour))
	setCondition(late, convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, t0.Add(-time.Hour), "probe failed")

	plan := compute(g, w)
	key := types.NamespacedName{Namespace: namespaceOf("late-1"), Name: hcpkgName}
	g.Expect(plan.Failed).To(HaveLen(1))
	g.Expect(plan.FailedPackages).To(Equal([]FailedPackage{{Package: key, Revision: "rev2", Commit: revision(2).Commit}}))
	g.Expect(plan.Updates).To(ContainElement(And(HaveField("Package", key), HaveField("Revision.Name", "rev3"),
		HaveField("PreviousRevision", "rev2"))))

	delete(w.packages, namespaceOf("late-1"))
	plan = compute(g, w)
	g.Expect(plan.Creates).NotTo(BeEmpty())
	for _, c := range append(plan.Creates, plan.Updates...) {
		want := "rev1"
		if c.Package == key {
			want = ""
		}
		g.Expect(c.PreviousRevision).To(Equal(want), c.Package.String())
	}
}

func TestPlanNamesAStuckDeletionsPackage(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early").progressedAll(revision(1))
	w.hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}
	w.find("early-1").Labels["tier"] = "dev"
	since := metav1.NewTime(t0.Add(-11 * time.Minute))
	w.packages[namespaceOf("early-1")].DeletionTimestamp = &since

	plan := compute(g, w)
	g.Expect(plan.FailedPackages).To(Equal([]FailedPackage{{
		Package: types.NamespacedName{Namespace: namespaceOf("early-1"), Name: hcpkgName}, Commit: revision(1).Commit}}))
}
