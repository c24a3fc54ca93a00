package manifests

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ConditionMapping copies a condition of an applied object onto the Package's conditions, as
// Package Operator's package-operator.run/condition-map annotation asks: the object's
// condition of type Source, when current, becomes the Package's condition of type
// Destination with the same status, reason and message.
type ConditionMapping struct {
	// Source is the condition type on the object.
	Source string
	// Destination is the condition type on the Package; it has a domain prefix
	// ("example.com/Ready"), so it never clashes with convoy's own conditions.
	Destination string
}

// parseConditionMap reads and removes an object's condition-map annotation: one "Source =>
// Destination" mapping per line. A malformed line is recorded against the object.
func parseConditionMap(o *object, errs *errorList) []ConditionMapping {
	raw, ok := o.u.GetAnnotations()[pkoConditionMapAnnotation]
	if !ok {
		return nil
	}
	removeAnnotations(o.u, pkoConditionMapAnnotation)
	at := o.fieldLine("metadata.annotations." + pkoConditionMapAnnotation)
	var out []ConditionMapping
	for i, line := range strings.Split(strings.TrimSpace(raw), "\n") {
		src, dst, found := strings.Cut(line, "=>")
		m := ConditionMapping{Source: strings.TrimSpace(src), Destination: strings.TrimSpace(dst)}
		switch {
		case !found || m.Source == "" || m.Destination == "":
			errs.add(o.file, at, RuleObjectMetadata, "%s: annotation %s line %d: want \"SourceType => prefix/DestinationType\", got %q",
				describe(o.u), pkoConditionMapAnnotation, i+1, line)
			continue
		case !strings.Contains(m.Destination, "/") || len(validation.IsQualifiedName(m.Destination)) > 0:
			// Package Operator's validate accepts it; its API refuses it when deploying.
			errs.warn(o.file, at, RuleObjectMetadata,
				"%s: annotation %s line %d: destination %q is not a condition type with a domain prefix (\"example.com/Ready\"): not mapped",
				describe(o.u), pkoConditionMapAnnotation, i+1, m.Destination)
			continue
		}
		out = append(out, m)
	}
	return out
}
