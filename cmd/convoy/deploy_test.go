package main

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// TestDeploymentArgsAreControllerFlags keeps deploy/manager/deployment.yaml in step with the
// flags of convoy controller.
func TestDeploymentArgsAreControllerFlags(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile("../../deploy/manager/deployment.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	d := &appsv1.Deployment{}
	g.Expect(yaml.UnmarshalStrict(raw, d)).To(Succeed())
	args := d.Spec.Template.Spec.Containers[0].Args
	g.Expect(args[0]).To(Equal("controller"))
	g.Expect(newControllerCmd().ParseFlags(args[1:])).To(Succeed())
}
