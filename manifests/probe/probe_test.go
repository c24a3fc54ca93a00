package probe

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// deployment is a Deployment with the given labels and status.
func deployment(labels map[string]any, status map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "d", "labels": labels},
		"status":   status,
	}}
}

func TestCompile(t *testing.T) {
	g := NewWithT(t)
	rules, errs := Compile([]convoyv1alpha1.ObjectSetProbe{{
		Selector: convoyv1alpha1.ProbeSelector{
			Kind:     convoyv1alpha1.GroupKindSelector{Group: "apps", Kind: "Deployment"},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}},
		},
		Probes: []convoyv1alpha1.Probe{
			{Condition: &convoyv1alpha1.ConditionProbe{Type: "Available"}},
			{FieldsEqual: &convoyv1alpha1.FieldsEqualProbe{FieldA: ".status.updatedReplicas", FieldB: "{.status.replicas}"}},
			{CEL: &convoyv1alpha1.CELProbe{Rule: "self.status.readyReplicas >= 1", Message: "not ready"}},
		},
	}}, field.NewPath("spec", "availabilityProbes"))
	g.Expect(errs).To(BeEmpty())
	g.Expect(rules).To(HaveLen(1))
	r := rules[0]
	g.Expect(r.Selects(deployment(map[string]any{"tier": "web"}, nil))).To(BeTrue())
	g.Expect(r.Selects(deployment(map[string]any{"tier": "db"}, nil))).To(BeFalse())
	g.Expect(r.Checks[0].Condition.Status).To(Equal("True"), "status defaults to True")
	g.Expect(r.Checks[1].FieldsEqual.A.String()).To(Equal(".status.updatedReplicas"))
	g.Expect(r.Checks[1].FieldsEqual.B).To(Equal(Path{"status", "replicas"}))

	ready := deployment(nil, map[string]any{"readyReplicas": int64(2)}).Object
	ok, err := r.Checks[2].CEL.Eval(ready)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	ok, err = r.Checks[2].CEL.Eval(deployment(nil, map[string]any{"readyReplicas": int64(0)}).Object)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse())
}

func TestCompileErrors(t *testing.T) {
	cases := map[string]struct {
		probe convoyv1alpha1.ObjectSetProbe
		field string
	}{
		"no kind": {convoyv1alpha1.ObjectSetProbe{Probes: []convoyv1alpha1.Probe{{Condition: &convoyv1alpha1.ConditionProbe{Type: "A"}}}},
			"p[0].selector.kind.kind"},
		"no probes": {convoyv1alpha1.ObjectSetProbe{Selector: selector()}, "p[0].probes"},
		"bad label selector": {convoyv1alpha1.ObjectSetProbe{
			Selector: convoyv1alpha1.ProbeSelector{Kind: convoyv1alpha1.GroupKindSelector{Kind: "Pod"},
				Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}},
			Probes: []convoyv1alpha1.Probe{{Condition: &convoyv1alpha1.ConditionProbe{Type: "A"}}}}, "p[0].selector.selector"},
		"empty": {convoyv1alpha1.ObjectSetProbe{Selector: selector(), Probes: []convoyv1alpha1.Probe{{}}}, "p[0].probes[0]"},
		"condition without type": {convoyv1alpha1.ObjectSetProbe{Selector: selector(),
			Probes: []convoyv1alpha1.Probe{{Condition: &convoyv1alpha1.ConditionProbe{}}}}, "p[0].probes[0].condition.type"},
		"cel syntax": {convoyv1alpha1.ObjectSetProbe{Selector: selector(),
			Probes: []convoyv1alpha1.Probe{{CEL: &convoyv1alpha1.CELProbe{Rule: "self.(", Message: "m"}}}}, "p[0].probes[0].cel.rule"},
		"cel unknown variable": {convoyv1alpha1.ObjectSetProbe{Selector: selector(),
			Probes: []convoyv1alpha1.Probe{{CEL: &convoyv1alpha1.CELProbe{Rule: "object.status.ready", Message: "m"}}}}, "p[0].probes[0].cel.rule"},
		"fields path": {convoyv1alpha1.ObjectSetProbe{Selector: selector(),
			Probes: []convoyv1alpha1.Probe{{FieldsEqual: &convoyv1alpha1.FieldsEqualProbe{FieldA: ".a[0]", FieldB: ""}}}}, "p[0].probes[0].fieldsEqual.fieldA"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			rules, errs := Compile([]convoyv1alpha1.ObjectSetProbe{tc.probe}, field.NewPath("p"))
			g.Expect(rules).To(BeNil())
			g.Expect(errs).To(ContainElement(HaveField("Field", tc.field)))
		})
	}
}

// selector selects Deployments.
func selector() convoyv1alpha1.ProbeSelector {
	return convoyv1alpha1.ProbeSelector{Kind: convoyv1alpha1.GroupKindSelector{Group: "apps", Kind: "Deployment"}}
}

func TestPathLookup(t *testing.T) {
	g := NewWithT(t)
	obj := map[string]any{"status": map[string]any{"replicas": int64(3), "list": []any{1}}}
	v, ok := Path{"status", "replicas"}.Lookup(obj)
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal(int64(3)))
	_, ok = Path{"status", "missing"}.Lookup(obj)
	g.Expect(ok).To(BeFalse())
	_, ok = Path{"status", "list", "x"}.Lookup(obj)
	g.Expect(ok).To(BeFalse())
}

func TestCELEvalErrors(t *testing.T) {
	g := NewWithT(t)
	c, err := CompileCEL("self.status.phase", "m")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Eval(map[string]any{"status": map[string]any{"phase": "Active"}})
	g.Expect(err).To(MatchError(ContainSubstring("not a bool")))
	_, err = c.Eval(map[string]any{})
	g.Expect(err).To(MatchError(ContainSubstring("no such key")))
}

// TestDigestTellsRulesApart: a verdict recorded under one set of rules is reused under rules of
// the same digest, so rules that differ only in a label value, a CEL rule or a condition must
// not share one; the same rules compiled twice must.
func TestDigestTellsRulesApart(t *testing.T) {
	g := NewWithT(t)
	compile := func(tier, rule, condition string) []Rule {
		rules, errs := Compile([]convoyv1alpha1.ObjectSetProbe{{
			Selector: convoyv1alpha1.ProbeSelector{
				Kind:     convoyv1alpha1.GroupKindSelector{Kind: "ConfigMap"},
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": tier}},
			},
			Probes: []convoyv1alpha1.Probe{
				{Condition: &convoyv1alpha1.ConditionProbe{Type: condition}},
				{CEL: &convoyv1alpha1.CELProbe{Rule: rule, Message: "no"}},
			},
		}}, field.NewPath("probes"))
		g.Expect(errs).To(BeEmpty())
		return rules
	}
	base := Digest(compile("a", "true", "Ready"))
	g.Expect(base).NotTo(BeZero())
	g.Expect(Digest(compile("a", "true", "Ready"))).To(Equal(base), "the same rules")
	g.Expect(Digest(compile("b", "true", "Ready"))).NotTo(Equal(base), "another label value")
	g.Expect(Digest(compile("a", "false", "Ready"))).NotTo(Equal(base), "another CEL rule")
	g.Expect(Digest(compile("a", "true", "Available"))).NotTo(Equal(base), "another condition")
}
