package rolloutcontroller

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

func TestNewlyFailedLogsEachFailureOnce(t *testing.T) {
	g := NewWithT(t)
	r := &HostedClusterPackageReconciler{}
	failure := func(cluster, commit string) (convoyv1alpha1.PackageFailure, rollout.FailedPackage) {
		return convoyv1alpha1.PackageFailure{HostedCluster: "clusters/" + cluster, Reason: rollout.ProgressDeadlineExceededReason},
			rollout.FailedPackage{Package: types.NamespacedName{Namespace: "clusters-" + cluster, Name: "addon"}, Commit: commit}
	}
	pass := func(before []convoyv1alpha1.PackageFailure, failed ...string) []int {
		plan := &rollout.Plan{}
		for i := 0; i+1 < len(failed); i += 2 {
			f, p := failure(failed[i], failed[i+1])
			plan.Failed, plan.FailedPackages = append(plan.Failed, f), append(plan.FailedPackages, p)
		}
		obj := &convoyv1alpha1.HostedClusterPackage{}
		obj.Name = "addon"
		return r.newlyFailed(&scope{obj: obj, before: &convoyv1alpha1.HostedClusterPackageStatus{Failures: before}, plan: plan})
	}
	inStatus, _ := failure("a", "c1")

	g.Expect(pass([]convoyv1alpha1.PackageFailure{inStatus}, "a", "c1", "b", "c1")).To(Equal([]int{1}),
		"after a start, the failures in status were said already")
	g.Expect(pass(nil, "a", "c1", "b", "c1")).To(BeEmpty(), "the next pass remembers them")
	g.Expect(pass(nil, "a", "c2", "b", "c1")).To(Equal([]int{0}), "a failure at another commit is new")
	g.Expect(pass(nil)).To(BeEmpty())
	g.Expect(pass(nil, "a", "c2")).To(Equal([]int{0}), "a failure that cleared and came back is new")
}
