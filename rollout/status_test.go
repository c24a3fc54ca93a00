package rollout

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

func TestProgressedNeedsStatusRevisionAvailableAndNotProgressing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(p *convoyv1alpha1.Package)
		want  bool
		avail bool
	}{
		{name: "progressed", edit: func(p *convoyv1alpha1.Package) {}, want: true, avail: true},
		{name: "status.revision is the old commit", edit: func(p *convoyv1alpha1.Package) {
			p.Status.Revision = revision(1).Commit
		}, avail: true},
		{name: "still progressing", edit: func(p *convoyv1alpha1.Package) {
			setCondition(p, "Progressing", "True", t0, "applying")
		}, avail: true},
		{name: "not available", edit: func(p *convoyv1alpha1.Package) {
			setCondition(p, "Available", "False", t0, "probe failed")
		}},
		{name: "conditions of an older generation", edit: func(p *convoyv1alpha1.Package) {
			p.Generation++
		}},
		{name: "no conditions", edit: func(p *convoyv1alpha1.Package) {
			p.Status.Conditions = nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(1, "early").progressedAll(revision(2))
			pkg := w.packages[namespaceOf("early-1")]
			tc.edit(pkg)
			g.Expect(Progressed(pkg)).To(Equal(tc.want), "the rule fleetview shares")
			plan := compute(g, w)
			g.Expect(plan.Counts.Updated).To(Equal(int32(1)))
			g.Expect(plan.Counts.Progressed).To(Equal(one(tc.want)))
			g.Expect(plan.Counts.Available).To(Equal(one(tc.avail)))
			g.Expect(plan.Completed).To(Equal(tc.want))
		})
	}
}

func TestCountsAndConditions(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal").progressedAll(revision(1))
	w.hcpkg.Generation = 7
	w.pkg("early-1", revision(2), t0.Add(-time.Hour))                                           // progressed
	setSpec(w.pkg("early-2", revision(1), t0.Add(-time.Hour)), revision(2), t0.Add(-time.Hour)) // failed
	setCondition(w.packages[namespaceOf("early-2")], "Available", "False", t0.Add(-time.Hour), "probe failed")
	w.packages[namespaceOf("normal-1")].Spec.Paused = true
	setCondition(w.packages[namespaceOf("normal-1")], "Paused", "True", t0, "")

	plan := compute(g, w)
	g.Expect(plan.Counts).To(Equal(Counts{Total: 4, Updated: 2, Available: 3, Unavailable: 1, Progressed: 1, Paused: 1, Failed: 1, Skipped: 1}))
	g.Expect(plan.Partitions).To(Equal([]convoyv1alpha1.PartitionStatus{
		{Name: "early", Total: 2, Updated: 2, Available: 1, Progressed: 1, State: convoyv1alpha1.PartitionBlocked},
		{Name: "normal", Total: 2, Updated: 0, Available: 2, Progressed: 0, Skipped: 1, State: convoyv1alpha1.PartitionPending},
		{Name: "late", State: convoyv1alpha1.PartitionDone},
	}))
	at := metav1.NewTime(t0)
	g.Expect(plan.Conditions).To(Equal([]metav1.Condition{
		{Type: "Available", Status: "True", Reason: "EnoughPackagesAvailable", Message: "3/4 packages available.", ObservedGeneration: 7, LastTransitionTime: at},
		{Type: "Progressing", Status: "True", Reason: "NotAllPackagesProgressed", Message: "1/4 packages progressed.", ObservedGeneration: 7, LastTransitionTime: at},
		{Type: "HasPausedPackage", Status: "True", Reason: "AtLeastOnePackagePaused", Message: "1/4 packages paused.", ObservedGeneration: 7, LastTransitionTime: at},
	}))
}

func TestConditionsWhenAllDone(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early", "normal", "late").progressedAll(revision(2))
	plan := compute(g, w)
	g.Expect(plan.Completed).To(BeTrue())
	g.Expect(describe(plan)).To(BeEmpty())
	g.Expect(plan.RequeueAfter).To(BeZero())
	for i, want := range [][3]string{
		{"True", "EnoughPackagesAvailable", "3/3 packages available."},
		{"False", "AllPackagesProgressed", "3/3 packages progressed."},
		{"False", "NoPackagePaused", "0/3 packages paused."},
	} {
		c := plan.Conditions[i]
		g.Expect([3]string{string(c.Status), c.Reason, c.Message}).To(Equal(want))
	}
}

func TestAvailableConditionComparesWithTheBudget(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(2))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(1))
	setCondition(w.packages[namespaceOf("early-1")], "Available", "False", t0, "probe failed")
	g.Expect(compute(g, w).Conditions[0].Reason).To(Equal(convoyv1alpha1.EnoughPackagesAvailableReason))

	setCondition(w.packages[namespaceOf("early-2")], "Available", "False", t0, "probe failed")
	c := compute(g, w).Conditions[0]
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(convoyv1alpha1.NotEnoughPackagesAvailableReason))
	g.Expect(c.Message).To(Equal("0/2 packages available."))
}

func TestWriteStatus(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(12, "early").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(12))
	for i := 1; i <= 12; i++ {
		setSpec(w.packages[namespaceOf(fmt.Sprintf("early-%d", i))], revision(2), t0.Add(-time.Hour))
	}
	status := convoyv1alpha1.HostedClusterPackageStatus{CurrentRevision: "rev1"}
	plan := compute(g, w)
	plan.WriteStatus(&status)
	g.Expect(plan.Failed).To(HaveLen(12))
	g.Expect(status.Failures).To(HaveLen(convoyv1alpha1.MaxFailureSamples))
	g.Expect(status.FailedPackages).To(Equal(int32(12)))
	g.Expect(status.TotalPackages).To(Equal(int32(12)))
	g.Expect(status.CurrentRevision).To(Equal("rev1"))
	g.Expect(status.UpdateRevision).To(Equal("rev2"))
	g.Expect(status.Partitions).To(HaveLen(3))
	g.Expect(status.Conditions).To(HaveLen(3))

	// A later pass with the same outcome keeps the transition times: nothing to write.
	before := status.DeepCopy()
	w.now = t0.Add(time.Minute)
	compute(g, w).WriteStatus(&status)
	g.Expect(status).To(Equal(*before))
}

// TestOnlyProgressRemainsOnceEveryTargetIsPinned: a plan says that only the Packages' progress
// remains when it changes nothing and every eligible target is pinned at the update revision;
// not while a target waits for a slot, nor while the plan pins one.
func TestOnlyProgressRemainsOnceEveryTargetIsPinned(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	for _, p := range w.packages { // as the controller applies them: no relabel is due
		p.Annotations[TemplateMetadataAnnotation] = TemplateMetadataHash(w.hcpkg.Spec.Template.Metadata)
	}
	g.Expect(compute(g, w).OnlyProgressRemains).To(BeFalse(), "the plan pins the first target")

	setSpec(w.packages[namespaceOf("early-1")], revision(2), t0)
	plan := compute(g, w)
	g.Expect(plan.Updates).To(BeEmpty(), "the budget of one is spent")
	g.Expect(plan.OnlyProgressRemains).To(BeFalse(), "early-2 waits for a slot")

	setSpec(w.packages[namespaceOf("early-2")], revision(2), t0)
	g.Expect(compute(g, w).OnlyProgressRemains).To(BeTrue(), "both are pinned; only their progress remains")

	deleted := metav1.NewTime(t0)
	w.packages[namespaceOf("early-2")].DeletionTimestamp = &deleted
	g.Expect(compute(g, w).OnlyProgressRemains).To(BeFalse(), "someone deletes early-2: it is created again once gone")
	w.packages[namespaceOf("early-2")].DeletionTimestamp = nil

	w.hcpkg.Spec.Paused = true
	g.Expect(compute(g, w).OnlyProgressRemains).To(BeTrue(), "paused with every target pinned")
	w.hcpkg.Spec.Paused = false

	progress(w.packages[namespaceOf("early-1")], t0)
	progress(w.packages[namespaceOf("early-2")], t0)
	w.update, w.history = revision(3), append(w.history, revision(3))
	g.Expect(compute(g, w).OnlyProgressRemains).To(BeFalse(), "a new revision has targets to pin")
}
