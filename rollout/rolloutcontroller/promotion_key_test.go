package rolloutcontroller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// TestThePromotionKeyGoesToTheOldestPublisher: of two HostedClusterPackages publishing one
// key, the older publishes, whichever passes first, so a restarted controller gives the key to
// the same one; one that does not publish, or another key, is no rival.
func TestThePromotionKeyGoesToTheOldestPublisher(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(convoyv1alpha1.AddToScheme(scheme)).To(Succeed())
	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	hcpkg := func(name, key string, publish bool, created time.Time) *convoyv1alpha1.HostedClusterPackage {
		h := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
		h.Spec.Promotion = &convoyv1alpha1.PromotionSpec{Key: key, Publish: publish}
		return h
	}
	first := hcpkg("zeta", "addon", true, at)
	second := hcpkg("alpha", "addon", true, at.Add(time.Minute))
	silent := hcpkg("aaa", "addon", false, at.Add(-time.Hour))
	other := hcpkg("beta", "other", true, at.Add(-time.Hour))
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&convoyv1alpha1.HostedClusterPackage{}, publishedKeyIndex, indexPublishedKey).WithObjects(first, second, silent, other).Build()
	r := &HostedClusterPackageReconciler{Client: c}
	for _, obj := range []*convoyv1alpha1.HostedClusterPackage{second, first} {
		owner, err := r.contextOwner(context.Background(), publishing(obj))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(owner).To(Equal("zeta"), "asked by %s", obj.Name)
	}
	tie := hcpkg("aardvark", "addon", true, at)
	g.Expect(older(tie, first)).To(BeTrue(), "the name breaks a tie")

	// A HostedClusterPackage named like a publisher's key that does not publish itself posts no
	// status under it: it would read as the publisher's record downstream.
	named := hcpkg("addon", "", false, at.Add(-time.Hour))
	g.Expect(c.Create(context.Background(), named)).To(Succeed())
	owner, err := r.contextOwner(context.Background(), publishing(named))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(owner).To(Equal("zeta"))
	owner, err = r.contextOwner(context.Background(), publishing(other))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(owner).To(Equal("beta"), "alone with its key")
}

// publishing is a pass of obj far enough to publish: a plan and an update commit.
func publishing(obj *convoyv1alpha1.HostedClusterPackage) *scope {
	s := &scope{obj: obj, plan: &rollout.Plan{}}
	s.update.Commit = "c1"
	return s
}
