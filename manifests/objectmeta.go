package manifests

import (
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
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
	fieldErrs := metav1validation.ValidateLabels(o.u.GetLabels(), meta.Child("labels"))
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
