package manifests

import (
	"maps"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkMetadata validates an object's labels, annotations and namespace with apimachinery's
// validation, as the API server would (and as Package Operator does for labels), so that a
// package the cluster would refuse is refused when it is loaded. It reports whether the
// metadata is valid.
func checkMetadata(o *object, errs *errorList) bool {
	meta := field.NewPath("metadata")
	fieldErrs := stringMapErrors(o.u, meta, "labels")
	fieldErrs = append(fieldErrs, stringMapErrors(o.u, meta, "annotations")...)
	fieldErrs = append(fieldErrs, metav1validation.ValidateLabels(o.u.GetLabels(), meta.Child("labels"))...)
	fieldErrs = append(fieldErrs, apivalidation.ValidateAnnotations(o.u.GetAnnotations(), meta.Child("annotations"))...)
	if ns := o.u.GetNamespace(); ns != "" {
		for _, msg := range validation.IsDNS1123Label(ns) {
			fieldErrs = append(fieldErrs, field.Invalid(meta.Child("namespace"), ns, msg))
		}
	}
	for _, fe := range fieldErrs {
		errs.add(o.file, o.fieldLine(strings.TrimSuffix(fe.Field, "["+fieldKey(fe)+"]")), RuleObjectMetadata,
			"%s: %s", describe(o.u), fe.Error())
	}
	return len(fieldErrs) == 0
}

// fieldKey returns the map key a field error's path ends with ("metadata.labels[KEY]"), or "".
func fieldKey(fe *field.Error) string {
	i := strings.LastIndexByte(fe.Field, '[')
	if i < 0 || !strings.HasSuffix(fe.Field, "]") {
		return ""
	}
	return fe.Field[i+1 : len(fe.Field)-1]
}

// stringMapErrors reports metadata.<name> when it is not a map of strings (a null value is an
// empty string, as the API server reads it). GetLabels and GetAnnotations give nothing for
// such a map, so the validation above would see none of its keys.
func stringMapErrors(u *unstructured.Unstructured, meta *field.Path, name string) field.ErrorList {
	metadata, _ := u.Object["metadata"].(map[string]any)
	raw, found := metadata[name]
	if !found || raw == nil {
		return nil
	}
	path := meta.Child(name)
	m, ok := raw.(map[string]any)
	if !ok {
		return field.ErrorList{field.Invalid(path, raw, "must be a map of strings")}
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if _, ok := m[k].(string); !ok && m[k] != nil {
			errs = append(errs, field.Invalid(path.Key(k), m[k], "must be a string"))
		}
	}
	return errs
}
