package sourcecontroller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// createSource creates a GitSource in ns.
func createSource(t *testing.T, ns string, spec convoyv1alpha1.GitSourceSpec) *convoyv1alpha1.GitSource {
	t.Helper()
	gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "src-"}, Spec: spec}
	NewWithT(t).Expect(k8sClient.Create(context.Background(), gs)).To(Succeed())
	return gs
}

// createSecret creates a Secret in ns.
func createSecret(t *testing.T, ns, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	NewWithT(t).Expect(k8sClient.Create(context.Background(), s)).To(Succeed())
}

// fetchSource reads a GitSource again.
func fetchSource(g Gomega, gs *convoyv1alpha1.GitSource) *convoyv1alpha1.GitSource {
	out := &convoyv1alpha1.GitSource{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(gs), out)).To(Succeed())
	return out
}

// waitReady waits until gs is Ready (kstatus Current) at commit and returns it.
func waitReady(t *testing.T, gs *convoyv1alpha1.GitSource, commit string) *convoyv1alpha1.GitSource {
	t.Helper()
	var out *convoyv1alpha1.GitSource
	NewWithT(t).Eventually(func(g Gomega) {
		out = fetchSource(g, gs)
		g.Expect(out.Status.Artifact).NotTo(BeNil())
		g.Expect(out.Status.Artifact.Commit).To(Equal(commit))
		g.Expect(pass.IsReady(out)).To(BeTrue(), "conditions: %v", out.Status.Conditions)
		g.Expect(out.Status.ObservedGeneration).To(Equal(out.Generation))
	}).Should(Succeed())
	return out
}

// waitCondition waits until condType is True with reason and returns the GitSource.
func waitCondition(t *testing.T, gs *convoyv1alpha1.GitSource, condType, reason string) *convoyv1alpha1.GitSource {
	t.Helper()
	var out *convoyv1alpha1.GitSource
	NewWithT(t).Eventually(func(g Gomega) {
		out = fetchSource(g, gs)
		c := pass.Get(out, condType)
		g.Expect(c).NotTo(BeNil(), "conditions: %v", out.Status.Conditions)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(out.Generation))
	}).Should(Succeed())
	return out
}

// updateSpec changes the spec of gs.
func updateSpec(t *testing.T, gs *convoyv1alpha1.GitSource, mutate func(*convoyv1alpha1.GitSourceSpec)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cur := fetchSource(g, gs)
		mutate(&cur.Spec)
		g.Expect(k8sClient.Update(context.Background(), cur)).To(Succeed())
	}).Should(Succeed())
}

// requestReconcile sets the requestedAt annotation and returns its value.
func requestReconcile(t *testing.T, gs *convoyv1alpha1.GitSource) string {
	t.Helper()
	v := time.Now().UTC().Format(time.RFC3339Nano)
	patch := client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+convoyv1alpha1.RequestedAtAnnotation+`":"`+v+`"}}}`))
	NewWithT(t).Expect(k8sClient.Patch(context.Background(), gs.DeepCopy(), patch)).To(Succeed())
	return v
}
