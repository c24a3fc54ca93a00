package synccontroller

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// hcpNamespace creates a namespace that HyperShift would have made for hc: a copy of its
// HostedControlPlane (naming the same HostedCluster) and of its kubeconfig Secret. Tests get
// their own HCP namespace while sharing one hosted API server.
func hcpNamespace(t *testing.T, hc *fleet.HostedCluster) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := fleet.NewNamespaceIn(t, env.Client)
	hcps := &hyperv1.HostedControlPlaneList{}
	g.Expect(env.Client.List(ctx, hcps, client.InNamespace(hc.HCPNamespace))).To(Succeed())
	g.Expect(hcps.Items).NotTo(BeEmpty())
	hcp := hcps.Items[0].DeepCopy()
	hcp.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: hcp.Name, Annotations: hcp.Annotations}
	g.Expect(env.Client.Create(ctx, hcp)).To(Succeed())
	copySecret(g, hc.HCPNamespace, ns)
	return ns
}

// copySecret copies the kubeconfig Secret from one namespace to another.
func copySecret(g Gomega, from, to string) {
	ctx := context.Background()
	src := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: from, Name: convoyv1alpha1.KubeconfigSecretName}, src)).To(Succeed())
	dst := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: to, Name: src.Name}, Data: src.Data}
	g.Expect(env.Client.Create(ctx, dst)).To(Succeed())
}

// raw wraps an object for an ObjectDeployment template.
func raw(g Gomega, u *unstructured.Unstructured) convoyv1alpha1.ObjectSetObject {
	data, err := json.Marshal(u.Object)
	g.Expect(err).NotTo(HaveOccurred())
	return convoyv1alpha1.ObjectSetObject{Object: runtime.RawExtension{Raw: data}}
}

// kstatusOf computes the kstatus of a convoy object.
func kstatusOf(g Gomega, obj client.Object) status.Status {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	g.Expect(err).NotTo(HaveOccurred())
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	g.Expect(err).NotTo(HaveOccurred())
	return res.Status
}

// conditionOf returns a condition of conds, or an empty one.
func conditionOf(conds []metav1.Condition, condType string) metav1.Condition {
	if c := apimeta.FindStatusCondition(conds, condType); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// haveCondition matches a condition with type, status and a message containing msg.
func haveCondition(condType string, st metav1.ConditionStatus, msg string) OmegaMatcher {
	return ContainElement(And(
		HaveField("Type", condType), HaveField("Status", st), HaveField("Message", ContainSubstring(msg))))
}
