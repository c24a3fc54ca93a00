package deploy

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestDeploymentIsHardenedAndProbed(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	d := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: controllerNamespace, Name: "convoy-controller"}
	g.Expect(env.Client.Get(context.Background(), key, d)).To(Succeed())
	pod := d.Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(Equal("convoy-controller"))
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceCPU))
	g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceMemory))
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
	g.Expect(c.Args).To(ContainElements("controller", "--leader-elect=true", "--storage-path=/var/lib/convoy/sources"))
	g.Expect(c.VolumeMounts).To(ContainElement(HaveField("MountPath", "/var/lib/convoy/sources")))
}

func TestServiceExposesMetricsAndWebhook(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	svc := &corev1.Service{}
	key := client.ObjectKey{Namespace: controllerNamespace, Name: "convoy-controller"}
	g.Expect(env.Client.Get(context.Background(), key, svc)).To(Succeed())
	g.Expect(svc.Spec.Ports).To(ContainElements(HaveField("Name", "https-metrics"), HaveField("Name", "http-webhook")))
}

func TestKustomizeBuildHoldsTheCRDs(t *testing.T) {
	g := NewWithT(t)
	objs, err := buildDeploy()
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"gitsources", "packages", "objectdeployments", "hostedclusterpackages", "partitionapprovals",
		"manualpromotions", "rolloutapprovals", "promotionapprovals"} {
		g.Expect(findObject(objs, "CustomResourceDefinition", name+".convoy.dev")).NotTo(BeNil(), name)
	}
}
