package manifests

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests/probe"
)

// FromObjectSetTemplate turns an ObjectDeployment's inline phases into a Rendered, with the same
// checks as Load: every object complete (apiVersion, kind, metadata.name), no duplicates,
// probes compiled. Phase annotations on inline objects are removed. Errors name the field
// (spec.template.spec.phases[i].objects[j]) in Error.File.
func FromObjectSetTemplate(spec *convoyv1alpha1.ObjectSetTemplateSpec) (*Rendered, error) {
	errs := &errorList{}
	root := field.NewPath("spec", "template", "spec")
	manifestPhases := make([]convoyv1alpha1.PackageManifestPhase, len(spec.Phases))
	for i, ph := range spec.Phases {
		manifestPhases[i] = convoyv1alpha1.PackageManifestPhase{Name: ph.Name, Class: ph.Class}
	}
	ps := newPhaseSet(manifestPhases)
	for i, ph := range spec.Phases {
		for j, obj := range ph.Objects {
			at := root.Child("phases").Index(i).Child("objects").Index(j).String()
			for _, o := range decodeInline(at, obj.Object, errs) {
				if key, ok := checkIdentity(o, errs); ok {
					removeAnnotations(o.u, convoyv1alpha1.PhaseAnnotation, convoyv1alpha1.PKOPhaseAnnotation)
					ps.add(o, key, ph.Name, errs)
				}
			}
		}
	}
	rules, probeErrs := probe.Compile(spec.AvailabilityProbes, root.Child("availabilityProbes"))
	for _, fe := range probeErrs {
		errs.add(fe.Field, 0, RuleProbe, "%s", fe.ErrorBody())
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	if len(ps.phases) == 0 {
		return nil, fmt.Errorf("the template has no phases")
	}
	return &Rendered{Phases: ps.phases, Probes: rules, Config: map[string]any{}}, nil
}

// decodeInline decodes an inline object (or v1 List) located at the field path at.
func decodeInline(at string, ext runtime.RawExtension, errs *errorList) []*object {
	raw := ext.Raw
	if raw == nil && ext.Object != nil {
		var err error
		if raw, err = json.Marshal(ext.Object); err != nil {
			errs.add(at, 0, RuleInvalidYAML, "%v", err)
			return nil
		}
	}
	objs, decodeErr := decodeDocument(document{file: at, data: raw})
	if decodeErr != nil {
		decodeErr.Line = 0
		errs.errs = append(errs.errs, decodeErr)
		return nil
	}
	for _, o := range objs {
		o.doc, o.line, o.docLine = nil, 0, 0
	}
	return objs
}
