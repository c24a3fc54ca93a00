package synccontroller

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
)

func TestAnUnsupportedScopeStallsWithItsOwnReason(t *testing.T) {
	g := NewWithT(t)
	scope := manifests.Errors{{File: "manifest.yaml", Rule: manifests.RuleScope, Message: "installed with the Namespaced scope"}}
	var stalling *pass.Stalling
	g.Expect(errors.As(packageRenderError(scope), &stalling)).To(BeTrue())
	g.Expect(stalling.Reason).To(Equal(convoyv1alpha1.ScopeUnsupportedReason))
	other := manifests.Errors{{File: "a.yaml", Rule: manifests.RuleTemplate, Message: "bad"}}
	g.Expect(errors.As(packageRenderError(other), &stalling)).To(BeTrue())
	g.Expect(stalling.Reason).To(Equal(convoyv1alpha1.RenderFailedReason))
}

func TestOnlyCurrentConditionsWithValidFieldsAreMapped(t *testing.T) {
	g := NewWithT(t)
	live := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "d", "generation": int64(3)},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "observedGeneration": int64(3)},
			map[string]any{"type": "Stale", "status": "True", "reason": "Old", "observedGeneration": int64(2)},
			map[string]any{"type": "Odd", "status": "Maybe"},
			map[string]any{"type": "Progressing", "status": "False", "reason": "not a reason!"},
		}},
	}}
	g.Expect(currentConditions(live)).To(Equal([]metav1.Condition{
		{Type: "Available", Status: metav1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
		{Type: "Progressing", Status: metav1.ConditionFalse, Reason: mappedReason},
	}))
	g.Expect(currentConditions(nil)).To(BeEmpty())
}

func TestStatusWarningsAreBounded(t *testing.T) {
	g := NewWithT(t)
	var ws manifests.Errors
	for range 12 {
		ws = append(ws, &manifests.Error{File: "manifest.yaml", Line: 3, Rule: manifests.RuleUnsupported, Message: "test.kubeconform is not run"})
	}
	out := statusWarnings(ws)
	g.Expect(out).To(HaveLen(convoyv1alpha1.MaxStatusWarnings))
	g.Expect(out[0]).To(Equal("manifest.yaml:3: unsupported: test.kubeconform is not run"))
	g.Expect(statusWarnings(nil)).To(BeNil())
}

func TestScopeMemoForgetsEverythingWhenFull(t *testing.T) {
	g := NewWithT(t)
	var m scopeMemo
	_, ok := m.get("a")
	g.Expect(ok).To(BeFalse())
	for i := range maxScopeMemo {
		m.put(string(rune(i)), placement{scope: "Cluster"})
	}
	p, ok := m.get(string(rune(0)))
	g.Expect(ok).To(BeTrue())
	g.Expect(p.scope).To(Equal("Cluster"))
	m.put("one more", placement{})
	_, ok = m.get(string(rune(0)))
	g.Expect(ok).To(BeFalse())
}
