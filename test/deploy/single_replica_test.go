package deploy

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestSingleReplicaComponent builds examples/deploy/single-replica, the overlay of deploy/ with
// the single-replica component: one replica, leader election still on for upgrades, and
// everything else of deploy/.
func TestSingleReplicaComponent(t *testing.T) {
	g := NewWithT(t)
	objs, err := buildOverlay("single-replica")
	g.Expect(err).NotTo(HaveOccurred())
	base, err := buildDeploy()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(len(base)))

	u := findObject(objs, "Deployment", "convoy-controller")
	g.Expect(u).NotTo(BeNil())
	d := &appsv1.Deployment{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d)).To(Succeed())
	g.Expect(*d.Spec.Replicas).To(Equal(int32(1)))
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--leader-elect=true"))
}
