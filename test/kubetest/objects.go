package kubetest

import (
	"context"
	"fmt"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// ReadyAnnotation opens a gate: the gate probe passes on a gate ConfigMap annotated with it.
const ReadyAnnotation = "test.convoy.dev/ready"

// Object builds an unstructured Object.
func Object(apiVersion, kind, namespace, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// ConfigMap builds a ConfigMap with data.
func ConfigMap(namespace, name string, data map[string]string) *unstructured.Unstructured {
	d := map[string]any{}
	for k, v := range data {
		d[k] = v
	}
	return Object("v1", "ConfigMap", namespace, name, map[string]any{"data": d})
}

// Gate builds a ConfigMap that the Gate probe judges.
func Gate(namespace, name string) *unstructured.Unstructured {
	cm := ConfigMap(namespace, name, map[string]string{"role": "gate"})
	cm.SetLabels(map[string]string{"test.convoy.dev/gate": "true"})
	return cm
}

// GateProbe passes on Gate ConfigMaps annotated test.convoy.dev/ready (by the test, by hand).
func GateProbe() convoyv1alpha1.ObjectSetProbe {
	return convoyv1alpha1.ObjectSetProbe{
		Selector: convoyv1alpha1.ProbeSelector{
			Kind:     convoyv1alpha1.GroupKindSelector{Kind: "ConfigMap"},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"test.convoy.dev/gate": "true"}},
		},
		Probes: []convoyv1alpha1.Probe{{CEL: &convoyv1alpha1.CELProbe{
			Rule:    fmt.Sprintf("has(self.metadata.annotations) && '%s' in self.metadata.annotations", ReadyAnnotation),
			Message: "the gate is closed",
		}}},
	}
}

// OpenGate annotates a live Gate ConfigMap as ready, as another actor would.
func OpenGate(g Gomega, c client.Client, namespace, name string) {
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, ReadyAnnotation)
	cm.SetNamespace(namespace)
	cm.SetName(name)
	g.Expect(c.Patch(context.Background(), cm, client.RawPatch("application/merge-patch+json", []byte(patch)))).To(Succeed())
}

// Exists reports whether obj Exists in c.
func Exists(g Gomega, c client.Client, obj *unstructured.Unstructured) bool {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), live)
	if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return true
}

// Get reads obj from c.
func Get(g Gomega, c client.Client, obj *unstructured.Unstructured) *unstructured.Unstructured {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), live)).To(Succeed())
	return live
}
