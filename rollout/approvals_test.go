package rollout

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// TestApprovalCountsOnlyWhenBoundExactly gives partition normal, which requires an approval,
// one approval at a time, each of which misses one thing it must name; only the exact one lets
// the partition start.
func TestApprovalCountsOnlyWhenBoundExactly(t *testing.T) {
	created := t0.Add(-time.Hour)
	for _, tc := range []struct {
		name   string
		edit   func(a *Approval, w *world)
		counts bool
	}{
		{"exact", func(*Approval, *world) {}, true},
		{"exact, from the GitSource's namespace", func(a *Approval, w *world) {
			w.hcpkg.Spec.Template.Spec.SourceRef.Namespace = "team-a"
			a.Namespace = "team-a"
		}, true},
		{"another rollout's UID", func(a *Approval, _ *world) { a.HostedClusterPackageUID = "uid-of-another" }, false},
		{"no UID", func(a *Approval, _ *world) { a.HostedClusterPackageUID = "" }, false},
		{"another commit under the same revision name", func(a *Approval, _ *world) { a.Commit = strings.Repeat("f", 40) }, false},
		{"no commit", func(a *Approval, _ *world) { a.Commit = "" }, false},
		{"another partition", func(a *Approval, _ *world) { a.Partition = "late" }, false},
		{"another namespace than the GitSource's", func(a *Approval, w *world) {
			w.hcpkg.Spec.Template.Spec.SourceRef.Namespace = "team-a"
			a.Namespace = "team-b"
		}, false},
		{"older than the revision (given to one pruned since)", func(a *Approval, _ *world) { a.CreatedAt = created.Add(-time.Second) }, false},
		{"of the rejected revision", func(_ *Approval, w *world) { w.update.Rejected = true }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(1, "early", "normal").progressedAll(revision(1))
			w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(1))
			w.hcpkg.Spec.Partition.Policies = []convoyv1alpha1.PartitionPolicy{{Name: "normal", RequireApproval: true}}
			w.update.CreatedAt = created
			w.pkg("early-1", revision(2), t0.Add(-time.Hour))
			a := approval("a", "normal", revision(2))
			a.CreatedAt = created
			tc.edit(&a, w)
			w.approvals = []Approval{a}

			plan := compute(g, w)
			if tc.counts {
				g.Expect(describe(plan)).To(ConsistOf("update normal-1 rev2 WithinBudget"))
				return
			}
			g.Expect(describe(plan)).NotTo(ContainElement(ContainSubstring("normal-1")), "the approval does not count")
		})
	}
}
