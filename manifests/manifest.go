package manifests

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests/probe"
)

// maxPhaseNameLength bounds phase names, as the ObjectDeployment API does.
const maxPhaseNameLength = 63

// pkoUnsupportedFields are Package Operator manifest features that would change what is applied
// and that convoy does not implement; a manifest using them is refused rather than half-applied.
// None is left: spec.dependencies became an order between HostedClusterPackages.
var pkoUnsupportedFields []string

// manifest is a parsed and checked manifest.yaml.
type manifest struct {
	// file is manifest.yaml or manifest.yml.
	file string
	// name is metadata.name.
	name string
	// pko is set for Package Operator's manifest format.
	pko bool
	// images is .images: Package Operator's spec.images resolved through manifest.lock.yaml.
	images map[string]any
	// scopes, pkoImages and testCases are Package Operator's spec.scopes, spec.images and
	// test.template.
	scopes    []string
	pkoImages []pkoImage
	testCases []TestCase
	// components is set when spec.components enables components.
	components bool
	// filter is Package Operator's spec.filter.
	filter pkoFilter
	// constraints are Package Operator's spec.constraints.
	constraints Constraints
	// dependencies are Package Operator's spec.dependencies, mapped (decodeDependencies).
	dependencies []Dependency
	spec         convoyv1alpha1.PackageManifestSpec
	// phases maps a phase name to its index in spec.phases.
	phases map[string]int
	probes []probe.Rule
	schema *configSchema
	lines  lineIndex
}

// parseManifest parses and checks manifest.yaml. It returns nil when the manifest cannot be
// used at all; otherwise problems are recorded and the usable parts returned.
func parseManifest(file string, data []byte, errs *errorList) *manifest {
	m := &manifest{file: file, lines: indexLines(data), phases: map[string]int{}}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		errs.errs = append(errs.errs, yamlError(document{file: file, line: 1, content: 1, data: data}, err))
		return nil
	}
	var head struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Spec       map[string]any `json:"spec"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &head); err != nil {
		errs.add(file, 1, RuleInvalidManifest, "not a PackageManifest: %v", err)
		return nil
	}
	if head.Kind != convoyv1alpha1.PackageManifestKind ||
		(head.APIVersion != convoyv1alpha1.GroupVersion.String() && head.APIVersion != convoyv1alpha1.PKOManifestAPIVersion) {
		errs.add(file, m.lines.line("kind"), RuleInvalidManifest, "want kind %s of apiVersion %s or %s, got %q %q",
			convoyv1alpha1.PackageManifestKind, convoyv1alpha1.GroupVersion, convoyv1alpha1.PKOManifestAPIVersion, head.APIVersion, head.Kind)
		return nil
	}
	m.pko = head.APIVersion == convoyv1alpha1.PKOManifestAPIVersion
	if !m.decode(j, head.Spec, errs) {
		return nil
	}
	m.check(errs)
	return m
}

// decode decodes the manifest: strictly for convoy's format, leniently (after refusing the
// unsupported features) for Package Operator's, whose other fields convoy ignores.
func (m *manifest) decode(j []byte, spec map[string]any, errs *errorList) bool {
	var pm convoyv1alpha1.PackageManifest
	if m.pko {
		m.checkPKOFields(spec, errs)
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &pm); err != nil {
			errs.add(m.file, 1, RuleInvalidManifest, "%v", err)
			return false
		}
		m.decodePKO(j, errs)
	} else {
		strict, err := sigsjson.UnmarshalStrict(j, &pm)
		if err != nil {
			errs.add(m.file, 1, RuleInvalidManifest, "%v", err)
			return false
		}
		for _, e := range strict {
			p := ""
			var fe sigsjson.FieldError
			if errors.As(e, &fe) {
				p = fe.FieldPath()
			}
			errs.add(m.file, m.lines.line(p), RuleInvalidManifest, "%v", e)
		}
	}
	m.name = pm.Metadata.Name
	m.spec = pm.Spec
	return true
}

// pkoIgnoredFields are Package Operator manifest features that do not change what is applied
// and that convoy does not evaluate; a manifest using them gets a warning.
var pkoIgnoredFields = []string{"repositories"}

// checkPKOFields refuses Package Operator features convoy does not implement, and warns about
// those it ignores.
func (m *manifest) checkPKOFields(spec map[string]any, errs *errorList) {
	for _, f := range pkoUnsupportedFields {
		if _, ok := spec[f]; ok {
			errs.add(m.file, m.lines.line("spec."+f), RuleUnsupported, "spec.%s (a Package Operator feature) is not supported by convoy", f)
		}
	}
	for _, f := range pkoIgnoredFields {
		if _, ok := spec[f]; ok {
			errs.warn(m.file, m.lines.line("spec."+f), RuleUnsupported, "spec.%s (a Package Operator feature) is not evaluated by convoy: ignored", f)
		}
	}
}

// check enforces the manifest rules and compiles probes and config schema.
func (m *manifest) check(errs *errorList) {
	if m.name == "" {
		errs.add(m.file, m.lines.line("metadata"), RuleInvalidManifest, "metadata.name is required")
	}
	m.checkPhases(errs)
	rules, probeErrs := probe.Compile(m.spec.AvailabilityProbes, field.NewPath("spec", "availabilityProbes"))
	m.fieldErrors(probeErrs, RuleProbe, errs)
	m.probes = rules
	if raw := m.spec.Config.OpenAPIV3Schema; raw != nil && len(raw.Raw) > 0 && string(raw.Raw) != "null" {
		s, schemaErrs := compileSchema(raw)
		m.fieldErrors(schemaErrs, RuleConfigSchema, errs)
		m.schema = s
	}
}

// checkPhases checks phase names and classes and indexes them.
func (m *manifest) checkPhases(errs *errorList) {
	if len(m.spec.Phases) == 0 && m.spec.Chart != nil {
		m.spec.Phases = defaultChartPhases(m.spec.Chart)
	}
	if len(m.spec.Phases) == 0 {
		errs.add(m.file, m.lines.line("spec.phases"), RuleInvalidManifest, "spec.phases must declare at least one phase")
	}
	for i, ph := range m.spec.Phases {
		at := m.lines.line(fmt.Sprintf("spec.phases[%d]", i))
		switch {
		case ph.Name == "":
			errs.add(m.file, at, RuleInvalidManifest, "spec.phases[%d].name is required", i)
		case len(ph.Name) > maxPhaseNameLength || strings.ContainsAny(ph.Name, " \t\n"):
			errs.add(m.file, at, RuleInvalidManifest, "phase name %q must be at most %d characters without spaces", ph.Name, maxPhaseNameLength)
		}
		if _, dup := m.phases[ph.Name]; dup {
			errs.add(m.file, at, RuleInvalidManifest, "phase %q is declared twice", ph.Name)
		}
		if ph.Class != convoyv1alpha1.ClassManagement && ph.Class != convoyv1alpha1.ClassHostedCluster {
			errs.add(m.file, at, RuleInvalidManifest, "phase %q has class %q; want \"\" (management cluster) or %q",
				ph.Name, ph.Class, convoyv1alpha1.ClassHostedCluster)
		}
		m.phases[ph.Name] = i
	}
}

// fieldErrors records field errors against manifest.yaml at the lines of their fields.
func (m *manifest) fieldErrors(fieldErrs field.ErrorList, rule Rule, errs *errorList) {
	for _, fe := range fieldErrs {
		errs.add(m.file, m.lines.line(fe.Field), rule, "%s", fe.Error())
	}
}

// phaseNames lists the declared phases, for error messages.
func (m *manifest) phaseNames() string {
	names := make([]string, len(m.spec.Phases))
	for i, ph := range m.spec.Phases {
		names[i] = ph.Name
	}
	return strings.Join(names, ", ")
}
