package deploy

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestPersistentStoreComponent builds examples/deploy/persistent-store, the overlay of deploy/
// with the persistent-store component, and applies what it changes: the store is a claim
// instead of an emptyDir, mounted by one replica replaced with Recreate.
func TestPersistentStoreComponent(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	objs, err := buildOverlay("persistent-store")
	g.Expect(err).NotTo(HaveOccurred())

	pvc := findObject(objs, "PersistentVolumeClaim", "convoy-sources")
	g.Expect(pvc).NotTo(BeNil())
	g.Expect(pvc.GetNamespace()).To(Equal(controllerNamespace))
	u := findObject(objs, "Deployment", "convoy-controller")
	g.Expect(u).NotTo(BeNil())
	d := &appsv1.Deployment{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d)).To(Succeed())
	g.Expect(*d.Spec.Replicas).To(Equal(int32(1)))
	g.Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
	var sources *corev1.Volume
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "sources" {
			sources = &d.Spec.Template.Spec.Volumes[i]
		}
	}
	g.Expect(sources).NotTo(BeNil())
	g.Expect(sources.EmptyDir).To(BeNil())
	g.Expect(sources.PersistentVolumeClaim.ClaimName).To(Equal("convoy-sources"))

	pvc.SetNamespace("default")
	u.SetNamespace("default")
	g.Expect(applyAll(context.Background(), env.Client, []*unstructured.Unstructured{pvc, u})).To(Succeed(), "the API server accepts both")
}
