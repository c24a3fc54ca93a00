package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// TestApprovalsCannotBeChanged edits the spec of a PartitionApproval and of a ManualPromotion to
// point them at another revision or commit: the API server refuses both, so an approval given
// for one commit can never be turned into one for another (a new one has a new creation time,
// which an approval older than its revision fails).
func TestApprovalsCannotBeChanged(t *testing.T) {
	env.Require(t)
	ns := env.NewNamespace(t)
	commit := strings.Repeat("a", 40)
	cases := []struct {
		name string
		obj  client.Object
		edit func(client.Object)
		want string
	}{
		{"PartitionApproval", &convoyv1alpha1.PartitionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "approval"},
			Spec: convoyv1alpha1.PartitionApprovalSpec{HostedClusterPackage: "addon", HostedClusterPackageUID: "uid", Partition: "late",
				Revision: "addon-0123456789abcdef", Commit: commit}},
			func(o client.Object) { o.(*convoyv1alpha1.PartitionApproval).Spec.Commit = strings.Repeat("f", 40) },
			"an approval cannot be changed; create another"},
		{"ManualPromotion", &convoyv1alpha1.ManualPromotion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "promotion"},
			Spec: convoyv1alpha1.ManualPromotionSpec{HostedClusterPackage: "addon", HostedClusterPackageUID: "uid", Sector: "eu", Commit: commit}},
			func(o client.Object) { o.(*convoyv1alpha1.ManualPromotion).Spec.Sector = "us" },
			"a promotion cannot be changed; create another"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			g.Expect(env.Client.Create(ctx, tc.obj)).To(Succeed())
			tc.edit(tc.obj)
			err := env.Client.Update(ctx, tc.obj)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}
