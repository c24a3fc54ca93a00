package probe

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Evaluate reports whether obj is available and, when it is not, why. The rules that select
// obj must all pass; when none selects it, kstatus decides.
func Evaluate(rules []Rule, obj *unstructured.Unstructured) (bool, string) {
	selected := false
	var failures []string
	for i := range rules {
		if !rules[i].Selects(obj) {
			continue
		}
		selected = true
		failures = append(failures, checkRule(&rules[i], obj)...)
	}
	if !selected {
		return evaluateKStatus(obj)
	}
	if len(failures) > 0 {
		return false, strings.Join(failures, "; ")
	}
	return true, ""
}

// checkRule runs every check of rule and returns the failure messages. A stale status fails
// the whole rule: the checks would judge an outdated observation.
func checkRule(rule *Rule, obj *unstructured.Unstructured) []string {
	if msg, stale := staleStatus(obj); stale {
		return []string{msg}
	}
	var failures []string
	for _, c := range rule.Checks {
		if msg, ok := runCheck(c, obj); !ok {
			failures = append(failures, msg)
		}
	}
	return failures
}

// runCheck runs one check.
func runCheck(c Check, obj *unstructured.Unstructured) (string, bool) {
	switch {
	case c.Condition != nil:
		return checkCondition(c.Condition, obj)
	case c.FieldsEqual != nil:
		return checkFieldsEqual(c.FieldsEqual, obj)
	case c.CEL != nil:
		ok, err := c.CEL.Eval(obj.Object)
		if err != nil {
			return fmt.Sprintf("cel: %v", err), false
		}
		return c.CEL.Message, ok
	}
	return "empty probe", false
}

// staleStatus reports a status.observedGeneration behind metadata.generation.
func staleStatus(obj *unstructured.Unstructured) (string, bool) {
	observed, found, err := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if err != nil || !found {
		return "", false
	}
	if gen := obj.GetGeneration(); observed < gen {
		return fmt.Sprintf("status outdated (observedGeneration %d, generation %d)", observed, gen), true
	}
	return "", false
}

// checkCondition checks a status condition's status, refusing one observed at an older
// generation.
func checkCondition(want *convoyv1alpha1.ConditionProbe, obj *unstructured.Unstructured) (string, bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, raw := range conds {
		c, ok := raw.(map[string]any)
		if !ok || c["type"] != want.Type {
			continue
		}
		if gen, ok := c["observedGeneration"].(int64); ok && gen < obj.GetGeneration() {
			return fmt.Sprintf("condition %s outdated (observedGeneration %d, generation %d)", want.Type, gen, obj.GetGeneration()), false
		}
		if got, _ := c["status"].(string); got != want.Status {
			msg, _ := c["message"].(string)
			return strings.TrimSuffix(fmt.Sprintf("condition %s is %q, want %q: %s", want.Type, got, want.Status, msg), ": "), false
		}
		return "", true
	}
	return fmt.Sprintf("condition %s not reported", want.Type), false
}

// checkFieldsEqual compares two fields; numbers compare by value whatever their Go type.
func checkFieldsEqual(f *FieldsEqual, obj *unstructured.Unstructured) (string, bool) {
	a, okA := f.A.Lookup(obj.Object)
	b, okB := f.B.Lookup(obj.Object)
	switch {
	case !okA:
		return fmt.Sprintf("field %s not set", f.A), false
	case !okB:
		return fmt.Sprintf("field %s not set", f.B), false
	case !valuesEqual(a, b):
		return fmt.Sprintf("%s (%v) differs from %s (%v)", f.A, a, f.B, b), false
	}
	return "", true
}

// valuesEqual compares JSON values, treating int64 and float64 numbers alike.
func valuesEqual(a, b any) bool {
	fa, aNum := toFloat(a)
	fb, bNum := toFloat(b)
	if aNum && bNum {
		return fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// evaluateKStatus judges an unprobed object: available when kstatus computes Current.
func evaluateKStatus(obj *unstructured.Unstructured) (bool, string) {
	res, err := status.Compute(obj)
	if err != nil {
		return false, fmt.Sprintf("status: %v", err)
	}
	if res.Status == status.CurrentStatus {
		return true, ""
	}
	if res.Message == "" {
		return false, res.Status.String()
	}
	return false, fmt.Sprintf("%s: %s", res.Status, res.Message)
}
