package probe

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Rule is a compiled ObjectSetProbe: the objects it selects and the checks they must all pass.
// A Rule is immutable and safe for concurrent use.
type Rule struct {
	// GroupKind selects objects by API group and kind.
	GroupKind schema.GroupKind
	// Selector narrows the selection by labels; labels.Everything() when the probe has none.
	Selector labels.Selector
	// Checks must all pass for a selected object to be available.
	Checks []Check
}

// Check is one compiled probe; exactly one field is set.
type Check struct {
	// Condition passes when the object has this status condition, observed at its generation.
	Condition *convoyv1alpha1.ConditionProbe
	// FieldsEqual passes when two fields of the object hold equal values.
	FieldsEqual *FieldsEqual
	// CEL passes when its rule evaluates to true.
	CEL *CEL
}

// FieldsEqual compares the values at two paths of an object.
type FieldsEqual struct {
	// A is the first path.
	A Path
	// B is the second path.
	B Path
}

// Selects reports whether the rule applies to obj.
func (r *Rule) Selects(obj *unstructured.Unstructured) bool {
	gk := obj.GroupVersionKind().GroupKind()
	return gk == r.GroupKind && r.Selector.Matches(labels.Set(obj.GetLabels()))
}

// Compile compiles probes; fldPath is where they sit in their document (for example
// spec.availabilityProbes) and prefixes every error. It returns every problem found.
func Compile(probes []convoyv1alpha1.ObjectSetProbe, fldPath *field.Path) ([]Rule, field.ErrorList) {
	var errs field.ErrorList
	rules := make([]Rule, 0, len(probes))
	for i := range probes {
		rule, ruleErrs := compileRule(&probes[i], fldPath.Index(i))
		errs = append(errs, ruleErrs...)
		rules = append(rules, rule)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return rules, nil
}

// compileRule compiles one ObjectSetProbe.
func compileRule(p *convoyv1alpha1.ObjectSetProbe, fldPath *field.Path) (Rule, field.ErrorList) {
	var errs field.ErrorList
	rule := Rule{
		GroupKind: schema.GroupKind{Group: p.Selector.Kind.Group, Kind: p.Selector.Kind.Kind},
		Selector:  labels.Everything(),
	}
	if p.Selector.Kind.Kind == "" {
		errs = append(errs, field.Required(fldPath.Child("selector", "kind", "kind"), "a probe selects objects by kind"))
	}
	if p.Selector.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.Selector.Selector)
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("selector", "selector"), p.Selector.Selector, err.Error()))
		} else {
			rule.Selector = sel
		}
	}
	if len(p.Probes) == 0 {
		errs = append(errs, field.Required(fldPath.Child("probes"), "at least one probe is needed"))
	}
	for i := range p.Probes {
		check, checkErrs := compileCheck(&p.Probes[i], fldPath.Child("probes").Index(i))
		errs = append(errs, checkErrs...)
		rule.Checks = append(rule.Checks, check)
	}
	return rule, errs
}

// compileCheck compiles one Probe, which must set exactly one of its fields.
func compileCheck(p *convoyv1alpha1.Probe, fldPath *field.Path) (Check, field.ErrorList) {
	set := 0
	for _, isSet := range []bool{p.Condition != nil, p.FieldsEqual != nil, p.CEL != nil} {
		if isSet {
			set++
		}
	}
	if set != 1 {
		return Check{}, field.ErrorList{field.Invalid(fldPath, set, "exactly one of condition, fieldsEqual or cel must be set")}
	}
	switch {
	case p.Condition != nil:
		return compileCondition(p.Condition, fldPath.Child("condition"))
	case p.FieldsEqual != nil:
		return compileFieldsEqual(p.FieldsEqual, fldPath.Child("fieldsEqual"))
	default:
		c, err := CompileCEL(p.CEL.Rule, p.CEL.Message)
		if err != nil {
			return Check{}, field.ErrorList{field.Invalid(fldPath.Child("cel", "rule"), p.CEL.Rule, err.Error())}
		}
		return Check{CEL: c}, nil
	}
}

// compileCondition checks a condition probe; the status defaults to "True", as in Package
// Operator.
func compileCondition(c *convoyv1alpha1.ConditionProbe, fldPath *field.Path) (Check, field.ErrorList) {
	if c.Type == "" {
		return Check{}, field.ErrorList{field.Required(fldPath.Child("type"), "the condition type is required")}
	}
	out := *c
	if out.Status == "" {
		out.Status = string(metav1.ConditionTrue)
	}
	return Check{Condition: &out}, nil
}

// compileFieldsEqual parses both paths of a fieldsEqual probe.
func compileFieldsEqual(f *convoyv1alpha1.FieldsEqualProbe, fldPath *field.Path) (Check, field.ErrorList) {
	var errs field.ErrorList
	a, err := ParsePath(f.FieldA)
	if err != nil {
		errs = append(errs, field.Invalid(fldPath.Child("fieldA"), f.FieldA, err.Error()))
	}
	b, err := ParsePath(f.FieldB)
	if err != nil {
		errs = append(errs, field.Invalid(fldPath.Child("fieldB"), f.FieldB, err.Error()))
	}
	if len(errs) > 0 {
		return Check{}, errs
	}
	return Check{FieldsEqual: &FieldsEqual{A: a, B: b}}, nil
}

// Path is a dotted field path such as .status.updatedReplicas, split into its fields.
type Path []string

// ParsePath parses ".a.b.c"; the leading dot is optional and so are JSONPath braces ("{.a.b}").
// Fields may not be empty.
func ParsePath(s string) (Path, error) {
	trimmed := strings.TrimSpace(s)
	if strings.HasPrefix(trimmed, "{") && strings.HasSuffix(trimmed, "}") {
		trimmed = trimmed[1 : len(trimmed)-1]
	}
	trimmed = strings.TrimPrefix(trimmed, ".")
	if trimmed == "" {
		return nil, fmt.Errorf("empty path")
	}
	fields := strings.Split(trimmed, ".")
	for _, f := range fields {
		if f == "" {
			return nil, fmt.Errorf("path %q has an empty field", s)
		}
		if strings.ContainsAny(f, "[]{}*@$ ") {
			return nil, fmt.Errorf("path %q: only dotted field names are supported", s)
		}
	}
	return fields, nil
}

// String returns the path in its dotted form.
func (p Path) String() string {
	return "." + strings.Join(p, ".")
}

// Lookup returns the value at the path in obj and whether every field along it exists.
func (p Path) Lookup(obj map[string]any) (any, bool) {
	var cur any = obj
	for _, f := range p {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[f]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// Digest identifies rules: verdicts reached under one set of rules hold under rules of the same
// digest. It is zero, which no verdict is recorded under, when the rules do not encode.
//
// It encodes what a rule says, not its compiled form: a label selector as its canonical string
// (a labels.Selector encodes each requirement as {}, so rules differing only in a label value
// would share a digest) and a CEL check as its source and message.
func Digest(rules []Rule) [sha256.Size]byte {
	type celSource struct{ Rule, Message string }
	type check struct {
		Condition   *convoyv1alpha1.ConditionProbe `json:",omitempty"`
		FieldsEqual *FieldsEqual                   `json:",omitempty"`
		CEL         *celSource                     `json:",omitempty"`
	}
	type rule struct {
		GroupKind schema.GroupKind
		Selector  string
		Checks    []check
	}
	said := make([]rule, len(rules))
	for i, r := range rules {
		said[i] = rule{GroupKind: r.GroupKind, Checks: make([]check, len(r.Checks))}
		if r.Selector != nil {
			said[i].Selector = r.Selector.String()
		}
		for j, c := range r.Checks {
			said[i].Checks[j] = check{Condition: c.Condition, FieldsEqual: c.FieldsEqual}
			if c.CEL != nil {
				said[i].Checks[j].CEL = &celSource{Rule: c.CEL.Rule, Message: c.CEL.Message}
			}
		}
	}
	raw, err := json.Marshal(said)
	if err != nil {
		return [sha256.Size]byte{}
	}
	return sha256.Sum256(raw)
}
