package synccontroller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// A Package of a shard that has no replica (a removed shard, a mistyped label) must not hold up
// the deletion of its namespace: the unsharded replica releases it there, and only there.
func TestStrandedShardPackageDoesNotHoldUpItsNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "stranded-shard"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	key := newPackage(t, ns.Name, "addon", "addon", func(p *convoyv1alpha1.Package) {
		p.Labels = map[string]string{convoyv1alpha1.ShardLabel: "gone"}
		p.Finalizers = []string{convoyv1alpha1.Finalizer}
	})
	g.Expect(env.Client.Delete(ctx, getPackage(g, key))).To(Succeed())
	g.Consistently(func() []string { return getPackage(g, key).Finalizers }, 2*time.Second).
		Should(ContainElement(convoyv1alpha1.Finalizer), "outside a terminating namespace the object is its shard's")

	g.Expect(env.Client.Delete(ctx, ns)).To(Succeed())
	expectGone(g, key, 30*time.Second)
}
