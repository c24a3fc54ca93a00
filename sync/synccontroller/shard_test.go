package synccontroller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// A Package of a shard that has no replica (a removed shard, a mistyped label) must not hold up
// the deletion of its namespace: the unsharded replica releases it there, and only there.
func TestStrandedShardPackageDoesNotHoldUpItsNamespace(t *testing.T) {
	env.Require(t)
	expectStrandedReleased(t, &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Name: "addon"},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
			SourceRef: convoyv1alpha1.SourceReference{Name: gitSourceName}, Path: "addon"}}})
}

// An ObjectDeployment of a shard that has no replica is released alike: the unsharded replica
// sees every ObjectDeployment, not only the unlabelled ones, so that it can.
func TestStrandedShardObjectDeploymentDoesNotHoldUpItsNamespace(t *testing.T) {
	env.Require(t)
	expectStrandedReleased(t, objectDeployment(NewWithT(t), "", "unused", "v"))
}

// expectStrandedReleased creates obj on shard "gone", which has no replica, with convoy's
// finalizer, in a namespace of its own, and deletes it: the unsharded replica leaves it to its
// shard while the namespace lives, and releases it once the namespace terminates.
func expectStrandedReleased(t *testing.T, obj client.Object) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "stranded-shard-" + fleet.NameSuffix()}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	obj.SetNamespace(ns.Name)
	obj.SetLabels(map[string]string{convoyv1alpha1.ShardLabel: "gone"})
	obj.SetFinalizers([]string{convoyv1alpha1.Finalizer})
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Expect(env.Client.Delete(ctx, obj)).To(Succeed())
	g.Consistently(func() []string {
		g.Expect(env.Client.Get(ctx, key, obj)).To(Succeed())
		return obj.GetFinalizers()
	}, 2*time.Second).Should(ContainElement(convoyv1alpha1.Finalizer), "outside a terminating namespace the object is its shard's")

	g.Expect(env.Client.Delete(ctx, ns)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, key, obj)) }).
		WithTimeout(30 * time.Second).Should(BeTrue())
}

// Templates see a Package's labels but its shard: a shard move must render the same objects.
func TestTemplatesDoNotSeeTheShardLabel(t *testing.T) {
	g := NewWithT(t)
	pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Name: "addon", Namespace: "ns",
		Labels: map[string]string{convoyv1alpha1.ShardLabel: "a", "team": "x"}}}
	data, err := PackageTemplateData(pkg, nil, "c0ffee")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data.Package.Labels).To(Equal(map[string]string{"team": "x"}))
	g.Expect(pkg.Labels).To(HaveKeyWithValue(convoyv1alpha1.ShardLabel, "a"), "the Package itself is left alone")

	moved := pkg.DeepCopy()
	moved.Labels[convoyv1alpha1.ShardLabel] = "b"
	other, err := PackageTemplateData(moved, nil, "c0ffee")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other).To(Equal(data))
}
