package manifests

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// objectKey identifies an object in a package.
type objectKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

// String formats the key as "group/Kind namespace/name".
func (k objectKey) String() string {
	id := k.name
	if k.namespace != "" {
		id = k.namespace + "/" + k.name
	}
	if k.gk.Group == "" {
		return k.gk.Kind + " " + id
	}
	return k.gk.Group + "/" + k.gk.Kind + " " + id
}

// phaseSet collects objects into phases, refusing incomplete and duplicate objects.
type phaseSet struct {
	phases []Phase
	index  map[string]int
	seen   map[objectKey]*object
	count  int
}

// newPhaseSet starts phases in the given order.
func newPhaseSet(phases []convoyv1alpha1.PackageManifestPhase) *phaseSet {
	ps := &phaseSet{index: map[string]int{}, seen: map[objectKey]*object{}}
	for i, ph := range phases {
		ps.phases = append(ps.phases, Phase{Name: ph.Name, Class: ph.Class})
		ps.index[ph.Name] = i
	}
	return ps
}

// add puts an object, whose identity was checked, into a phase unless it is a duplicate.
func (ps *phaseSet) add(o *object, key objectKey, phase string, errs *errorList) {
	if first, dup := ps.seen[key]; dup {
		errs.add(o.file, o.fieldLine("metadata.name"), RuleDuplicateObject, "%s is also defined at %s", key, first.location())
		return
	}
	ps.seen[key] = o
	if ps.count++; ps.count > MaxObjects {
		if ps.count == MaxObjects+1 {
			errs.add(o.file, o.line, RuleLimit, "the package has more than %d objects", MaxObjects)
		}
		return
	}
	i := ps.index[phase]
	ph := &ps.phases[i]
	if len(o.conditionMap) > 0 {
		if ph.ConditionMaps == nil {
			ph.ConditionMaps = map[int][]ConditionMapping{}
		}
		ph.ConditionMaps[len(ph.Objects)] = o.conditionMap
	}
	ph.Objects = append(ph.Objects, o.u)
}

// checkIdentity checks apiVersion, kind and metadata.name and returns the object's key.
func checkIdentity(o *object, errs *errorList) (objectKey, bool) {
	u := o.u
	var missing []string
	if u.GetAPIVersion() == "" {
		missing = append(missing, "apiVersion")
	}
	if u.GetKind() == "" {
		missing = append(missing, "kind")
	}
	if u.GetName() == "" {
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		errs.add(o.file, o.line, RuleMissingField, "object %s has no %s", describe(u), strings.Join(missing, ", "))
		return objectKey{}, false
	}
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		errs.add(o.file, o.fieldLine("apiVersion"), RuleMissingField, "object %s: %v", describe(u), err)
		return objectKey{}, false
	}
	return objectKey{gk: schema.GroupKind{Group: gv.Group, Kind: u.GetKind()}, namespace: u.GetNamespace(), name: u.GetName()}, true
}

// describe names an object that may lack its identity, for error messages.
func describe(u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %q", u.GetKind(), u.GetName())
}

// assignPhases sorts a package's objects into the manifest's phases by their phase annotation,
// which is removed from each object.
func assignPhases(m *manifest, objs []*object, errs *errorList) []Phase {
	ps := newPhaseSet(m.spec.Phases)
	for _, o := range objs {
		if isManifestKind(o.u) {
			errs.add(o.file, o.line, RuleInvalidManifest, "a PackageManifest is only read from %s at the package root", manifestFile)
			continue
		}
		key, ok := checkIdentity(o, errs)
		if !ok || !checkMetadata(o, errs) {
			continue
		}
		if m.pko {
			o.conditionMap = parseConditionMap(o, errs)
		}
		if phase, ok := objectPhase(m, o, errs); ok {
			ps.add(o, key, phase, errs)
		}
	}
	return ps.phases
}

// objectPhase reads and removes an object's phase annotation and checks the phase exists.
// Lines are looked up only for errors: locating a field re-parses the document.
func objectPhase(m *manifest, o *object, errs *errorList) (string, bool) {
	ann := o.u.GetAnnotations()
	phase, hasConvoy := ann[convoyv1alpha1.PhaseAnnotation]
	pkoPhase, hasPKO := ann[convoyv1alpha1.PKOPhaseAnnotation]
	removeAnnotations(o.u, convoyv1alpha1.PhaseAnnotation, convoyv1alpha1.PKOPhaseAnnotation)
	annotation := convoyv1alpha1.PhaseAnnotation
	switch {
	case hasConvoy && hasPKO && phase != pkoPhase:
		errs.add(o.file, o.fieldLine("metadata.annotations."+annotation), RuleUnknownPhase,
			"%s has conflicting phases %q (%s) and %q (%s)", describe(o.u),
			phase, convoyv1alpha1.PhaseAnnotation, pkoPhase, convoyv1alpha1.PKOPhaseAnnotation)
		return "", false
	case !hasConvoy && !hasPKO:
		want := convoyv1alpha1.PhaseAnnotation
		if m.pko {
			want = convoyv1alpha1.PKOPhaseAnnotation
		}
		errs.add(o.file, o.fieldLine("metadata"), RuleMissingPhase, "%s has no phase: set annotation %s to one of: %s",
			describe(o.u), want, m.phaseNames())
		return "", false
	case !hasConvoy:
		phase, annotation = pkoPhase, convoyv1alpha1.PKOPhaseAnnotation
	}
	if _, ok := m.phases[phase]; !ok {
		errs.add(o.file, o.fieldLine("metadata.annotations."+annotation), RuleUnknownPhase,
			"%s names phase %q, which the manifest does not declare (phases: %s)", describe(o.u), phase, m.phaseNames())
		return "", false
	}
	return phase, true
}

// isManifestKind reports whether an object is a PackageManifest of either format.
func isManifestKind(u *unstructured.Unstructured) bool {
	return u.GetKind() == convoyv1alpha1.PackageManifestKind &&
		(u.GetAPIVersion() == convoyv1alpha1.GroupVersion.String() || u.GetAPIVersion() == convoyv1alpha1.PKOManifestAPIVersion)
}

// removeAnnotations deletes annotations, and the annotations map when it ends up empty.
func removeAnnotations(u *unstructured.Unstructured, keys ...string) {
	ann := u.GetAnnotations()
	if ann == nil {
		return
	}
	changed := false
	for _, k := range keys {
		if _, ok := ann[k]; ok {
			delete(ann, k)
			changed = true
		}
	}
	if !changed {
		return
	}
	if len(ann) == 0 {
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
		return
	}
	u.SetAnnotations(ann)
}

// location formats where an object was defined, as "file:line" or "file".
func (o *object) location() string {
	if o.line > 0 {
		return fmt.Sprintf("%s:%d", o.file, o.line)
	}
	return o.file
}
