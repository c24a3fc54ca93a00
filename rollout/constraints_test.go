package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// A Package whose package's constraints do not hold on its cluster has nothing to install
// there: it holds no budget slot, and the next cluster is updated.
func TestConstraintsNotMetCountsAsProgressed(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early").progressedAll(revision(1))
	p := w.packages[namespaceOf("early-1")]
	setSpec(p, revision(2), t0.Add(-time.Second))
	p.Status.LastAttemptedRevision = p.Spec.Revision
	setCondition(p, convoyv1alpha1.StalledCondition, metav1.ConditionTrue, t0, "constraints not met: OpenShift 4.12.9 does not meet constraint >=4.14")
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == convoyv1alpha1.StalledCondition {
			p.Status.Conditions[i].Reason = convoyv1alpha1.ConstraintsNotMetReason
		}
	}
	g.Expect(ConstraintsNotMet(p)).To(BeTrue())
	g.Expect(Progressed(p)).To(BeTrue())

	plan := compute(g, w)
	g.Expect(plan.Counts.Available).To(Equal(int32(2)))
	g.Expect(plan.Counts.Progressed).To(Equal(int32(1)))
	g.Expect(describe(plan)).To(ConsistOf(ContainSubstring("update early-2")))

	p.Status.LastAttemptedRevision = revision(1).Commit
	g.Expect(ConstraintsNotMet(p)).To(BeFalse(), "only for the commit the spec pins")
}
