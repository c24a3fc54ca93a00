package manifests

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// inline wraps a JSON object as an ObjectSetObject.
func inline(j string) convoyv1alpha1.ObjectSetObject {
	return convoyv1alpha1.ObjectSetObject{Object: runtime.RawExtension{Raw: []byte(j)}}
}

func TestFromObjectSetTemplate(t *testing.T) {
	g := NewWithT(t)
	r, err := FromObjectSetTemplate(&convoyv1alpha1.ObjectSetTemplateSpec{
		Phases: []convoyv1alpha1.ObjectSetPhase{
			{Name: "rbac", Class: "hosted-cluster", Objects: []convoyv1alpha1.ObjectSetObject{
				inline(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa","annotations":{"convoy.dev/phase":"x"}}}`),
			}},
			{Name: "deploy", Objects: []convoyv1alpha1.ObjectSetObject{
				{Object: runtime.RawExtension{Object: &runtime.Unknown{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`)}}},
			}},
		},
		AvailabilityProbes: []convoyv1alpha1.ObjectSetProbe{{
			Selector: convoyv1alpha1.ProbeSelector{Kind: convoyv1alpha1.GroupKindSelector{Kind: "ConfigMap"}},
			Probes:   []convoyv1alpha1.Probe{{CEL: &convoyv1alpha1.CELProbe{Rule: "has(self.data)", Message: "no data"}}},
		}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objectNames(r)).To(Equal([]string{"rbac/ServiceAccount/sa", "deploy/ConfigMap/cm"}))
	g.Expect(r.Phases[0].Objects[0].GetAnnotations()).To(BeEmpty())
	g.Expect(r.Probes).To(HaveLen(1))
}

func TestFromObjectSetTemplateErrors(t *testing.T) {
	g := NewWithT(t)
	_, err := FromObjectSetTemplate(&convoyv1alpha1.ObjectSetTemplateSpec{
		Phases: []convoyv1alpha1.ObjectSetPhase{{Name: "one", Objects: []convoyv1alpha1.ObjectSetObject{
			inline(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`),
			inline(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`),
			inline(`{"kind":"ConfigMap","metadata":{"name":"x"}}`),
			inline(`[1]`),
		}}},
		AvailabilityProbes: []convoyv1alpha1.ObjectSetProbe{{
			Selector: convoyv1alpha1.ProbeSelector{Kind: convoyv1alpha1.GroupKindSelector{Kind: "ConfigMap"}},
			Probes:   []convoyv1alpha1.Probe{{CEL: &convoyv1alpha1.CELProbe{Rule: "has(", Message: "m"}}},
		}},
	})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(And(
		ContainSubstring("spec.template.spec.phases[0].objects[1]: duplicate-object: ConfigMap cm is also defined at spec.template.spec.phases[0].objects[0]"),
		ContainSubstring("spec.template.spec.phases[0].objects[2]: missing-field"),
		ContainSubstring("spec.template.spec.phases[0].objects[3]: invalid-yaml"),
		ContainSubstring("spec.template.spec.availabilityProbes[0].probes[0].cel.rule: probe"),
	))
}
