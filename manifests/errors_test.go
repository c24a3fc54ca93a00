package manifests

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// errorCase is a package that breaks one rule, and the problem Load must report.
type errorCase struct {
	name     string
	files    map[string]string
	data     TemplateData
	file     string
	line     int
	rule     Rule
	fragment string
}

// checkErrorCase loads the case's package and checks the problem.
func checkErrorCase(t *testing.T, tc errorCase) {
	g := NewWithT(t)
	errs := loadErrors(t, pkgFS(tc.files), tc.data)
	g.Expect(errs).To(haveProblem(tc.file, tc.rule, tc.fragment), "got:\n%v", errs)
	if tc.line > 0 {
		g.Expect(errs).To(ContainElement(SatisfyAll(HaveField("Rule", tc.rule), HaveField("Line", tc.line))), "got:\n%v", errs)
	}
}

func TestLoadErrorMissingManifest(t *testing.T) {
	checkErrorCase(t, errorCase{
		files: map[string]string{"-no-manifest": "", "a.yaml": configMap("a", "one")},
		file:  "manifest.yaml", rule: RuleMissingManifest, fragment: "no manifest.yaml",
	})
}

func TestLoadErrorInvalidManifest(t *testing.T) {
	cases := []errorCase{
		{name: "wrong kind", files: map[string]string{"manifest.yaml": "apiVersion: v1\nkind: ConfigMap\n"},
			line: 2, fragment: "want kind PackageManifest"},
		{name: "unknown field", files: map[string]string{"manifest.yaml": testManifest + "  phasez: []\n"},
			line: 10, fragment: `unknown field "spec.phasez"`},
		{name: "no phases", files: map[string]string{"manifest.yaml": strings.Split(testManifest, "  - name: one")[0]},
			fragment: "at least one phase"},
		{name: "duplicate phase", files: map[string]string{"manifest.yaml": testManifest + "  - name: one\n"},
			line: 10, fragment: `phase "one" is declared twice`},
		{name: "bad class", files: map[string]string{"manifest.yaml": testManifest + "  - name: three\n    class: elsewhere\n"},
			line: 10, fragment: `class "elsewhere"`},
		{name: "no name", files: map[string]string{"manifest.yaml": strings.Replace(testManifest, "name: test", "labels: {}", 1)},
			line: 3, fragment: "metadata.name is required"},
		{name: "manifest among objects", files: map[string]string{"sub/m.yaml": testManifest},
			file: "sub/m.yaml", fragment: "only read from manifest.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.rule, tc.file = RuleInvalidManifest, cmpOr(tc.file, "manifest.yaml")
			checkErrorCase(t, tc)
		})
	}
}

func TestLoadErrorInvalidYAML(t *testing.T) {
	cases := []errorCase{
		{name: "syntax", files: map[string]string{"a.yaml": configMap("a", "one") + "---\n" + configMap("b", "one") + "data:\n  k: v: w\n"},
			line: 15, fragment: "yaml: line 15: mapping values are not allowed"},
		{name: "not a mapping", files: map[string]string{"a.yaml": "- a\n- b\n"}, line: 1, fragment: "not an object"},
		{name: "duplicate key", files: map[string]string{"a.yaml": configMap("a", "one") + "kind: Secret\n"},
			fragment: "already set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.file, tc.rule = "a.yaml", RuleInvalidYAML
			checkErrorCase(t, tc)
		})
	}
}

func TestLoadErrorMissingField(t *testing.T) {
	for _, f := range []string{"apiVersion", "kind", "name"} {
		t.Run(f, func(t *testing.T) {
			doc := configMap("a", "one")
			doc = strings.Replace(doc, f+":", "x"+f+":", 1)
			checkErrorCase(t, errorCase{files: map[string]string{"a.yaml": "# comment\n" + doc},
				file: "a.yaml", line: 2, rule: RuleMissingField, fragment: "has no " + strings.Replace(f, "name", "metadata.name", 1)})
		})
	}
}

func TestLoadErrorMissingPhase(t *testing.T) {
	checkErrorCase(t, errorCase{
		files: map[string]string{"a.yaml": configMap("a", "one") + "---\n" + configMap("b", "")},
		file:  "b.yaml", rule: RuleMissingPhase, fragment: "",
	}.withFile("a.yaml", 10, `ConfigMap "b" has no phase: set annotation convoy.dev/phase to one of: one, two`))
}

func TestLoadErrorUnknownPhase(t *testing.T) {
	checkErrorCase(t, errorCase{
		files: map[string]string{"a.yaml": configMap("a", "three")},
		file:  "a.yaml", line: 6, rule: RuleUnknownPhase, fragment: `names phase "three", which the manifest does not declare`,
	})
}

func TestLoadErrorConflictingPhases(t *testing.T) {
	doc := configMap("a", "one") + "    package-operator.run/phase: two\n"
	checkErrorCase(t, errorCase{
		files: map[string]string{"a.yaml": doc},
		file:  "a.yaml", rule: RuleUnknownPhase, fragment: "conflicting phases",
	})
}

func TestLoadErrorDuplicateObject(t *testing.T) {
	checkErrorCase(t, errorCase{
		files: map[string]string{"a.yaml": configMap("same", "one"), "b/c.yaml": "\n" + configMap("same", "two")},
		file:  "b/c.yaml", line: 5, rule: RuleDuplicateObject, fragment: "ConfigMap same is also defined at a.yaml:1",
	})
}

func TestLoadErrorTemplate(t *testing.T) {
	cases := []errorCase{
		{name: "parse", files: map[string]string{"a.yaml.gotmpl": "a: {{ .config.x \n"}, line: 2, fragment: "unclosed action"},
		{name: "missing key", files: map[string]string{"a.yaml.gotmpl": configMap("a", "one") + "data:\n  x: {{ .config.nope }}\n"},
			line: 8, fragment: `map has no entry for key "nope"`},
		{name: "clash", files: map[string]string{"a.yaml.gotmpl": configMap("a", "one"), "a.yaml": configMap("b", "one")},
			fragment: "renders to a.yaml, which the package also holds"},
		{name: "fail", files: map[string]string{"a.yaml.gotmpl": `{{ fail "config.x is required" }}`}, fragment: "config.x is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.file, tc.rule = "a.yaml.gotmpl", RuleTemplate
			checkErrorCase(t, tc)
		})
	}
}

func TestLoadErrorForbiddenFunction(t *testing.T) {
	checkErrorCase(t, errorCase{
		files: map[string]string{"a.yaml.gotmpl": configMap("a", "one") + "data:\n  home: {{ env \"HOME\" }}\n"},
		file:  "a.yaml.gotmpl", line: 8, rule: RuleForbiddenFunction, fragment: `function "env" is not allowed`,
	})
}

func TestLoadErrorKustomize(t *testing.T) {
	checkErrorCase(t, errorCase{
		files: map[string]string{
			"kustomization.yaml": "resources: [a.yaml]\npatches:\n- path: p.yaml\n",
			"a.yaml":             configMap("a", "one"),
			"p.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-there\n",
		},
		file: "kustomization.yaml", rule: RuleKustomize, fragment: "not-there",
	})
}

func TestLoadErrorConfigSchema(t *testing.T) {
	manifest := testManifest + "  config:\n    openAPIV3Schema:\n      type: object\n      properties:\n        a: {default: 1}\n"
	checkErrorCase(t, errorCase{
		files: map[string]string{"manifest.yaml": manifest},
		file:  "manifest.yaml", rule: RuleConfigSchema, fragment: "spec.config.openAPIV3Schema.properties[a].type: Required value",
	})
}

func TestLoadErrorConfig(t *testing.T) {
	manifest := testManifest + "  config:\n    openAPIV3Schema:\n      type: object\n      properties:\n        replicas: {type: integer, maximum: 3}\n"
	checkErrorCase(t, errorCase{
		files: map[string]string{"manifest.yaml": manifest},
		data:  TemplateData{Config: map[string]any{"replicas": 5}},
		file:  "manifest.yaml", line: 14, rule: RuleConfig, fragment: "config.replicas: Invalid value: 5: replicas in body should be less than or equal to 3",
	})
}

func TestLoadErrorProbe(t *testing.T) {
	probes := func(p string) map[string]string {
		return map[string]string{"manifest.yaml": testManifest + "  availabilityProbes:\n  - selector:\n      kind: {group: apps, kind: Deployment}\n    probes:\n" + p}
	}
	cases := []errorCase{
		{name: "cel does not compile", files: probes("    - cel: {rule: 'self.status.ready ==', message: m}\n"),
			line: 14, fragment: "spec.availabilityProbes[0].probes[0].cel.rule"},
		{name: "cel not bool", files: probes("    - cel: {rule: '1 + 1', message: m}\n"), fragment: "must return a bool"},
		{name: "two kinds", files: probes("    - {condition: {type: A, status: 'True'}, cel: {rule: 'true', message: m}}\n"), fragment: "exactly one of"},
		{name: "bad path", files: probes("    - fieldsEqual: {fieldA: .status..x, fieldB: .status.y}\n"), fragment: "empty field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.file, tc.rule = "manifest.yaml", RuleProbe
			checkErrorCase(t, tc)
		})
	}
}

func TestLoadErrorLimit(t *testing.T) {
	checkErrorCase(t, errorCase{
		files: map[string]string{"big.yaml": strings.Repeat("#", MaxFileSize+1)},
		file:  "big.yaml", rule: RuleLimit, fragment: "larger than",
	})
}

func TestLoadErrorUnsupported(t *testing.T) {
	cases := []errorCase{
		{name: "negated ignore pattern", files: map[string]string{".convoyignore": "docs/\n!docs/keep.yaml\n"},
			file: ".convoyignore", line: 2, fragment: "negated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.rule = RuleUnsupported
			checkErrorCase(t, tc)
		})
	}
}

func TestLoadCollectsAllErrors(t *testing.T) {
	g := NewWithT(t)
	errs := loadErrors(t, pkgFS(map[string]string{
		"a.yaml":        configMap("a", "") + "---\n" + configMap("b", "zero"),
		"b.yaml.gotmpl": "{{ now }}",
		"c.yaml":        "a: b: c\n",
	}), TemplateData{})
	g.Expect(errs).To(HaveLen(4))
	g.Expect(errs.Error()).To(Equal(strings.Join([]string{
		`a.yaml:3: missing-phase: ConfigMap "a" has no phase: set annotation convoy.dev/phase to one of: one, two`,
		`a.yaml:11: unknown-phase: ConfigMap "b" names phase "zero", which the manifest does not declare (phases: one, two)`,
		`b.yaml.gotmpl:1: forbidden-function: function "now" is not allowed: templates may not read the host or be nondeterministic`,
		`c.yaml:1: invalid-yaml: yaml: mapping values are not allowed in this context`,
	}, "\n")))
}

// withFile sets the expected file, line and message fragment.
func (tc errorCase) withFile(file string, line int, fragment string) errorCase {
	tc.file, tc.line, tc.fragment = file, line, fragment
	return tc
}

// cmpOr returns a unless it is empty, else b.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestErrorsListsTheFirstProblemsAndCountsTheRest(t *testing.T) {
	g := NewWithT(t)
	var b strings.Builder
	for i := range 1000 {
		b.WriteString(configMap(fmt.Sprintf("cm-%04d", i), ""))
		b.WriteString("---\n")
	}
	errs := loadErrors(t, pkgFS(map[string]string{"objects.yaml": b.String()}), TemplateData{})
	g.Expect(errs).To(HaveLen(1000))
	lines := strings.Split(errs.Error(), "\n")
	g.Expect(lines).To(HaveLen(MaxListedErrors + 1))
	g.Expect(lines[0]).To(HavePrefix("objects.yaml:3: missing-phase: ConfigMap \"cm-0000\""))
	g.Expect(lines[MaxListedErrors]).To(Equal("… and 980 more problems"))
}

func TestLoadErrorMetadataThatIsNoMapOfStrings(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
	for _, tc := range []errorCase{
		{name: "a number as a label", files: map[string]string{"a.yaml": cm + "  labels: {tier: 3}\n"},
			fragment: "metadata.labels[tier]: Invalid value: 3: must be a string"},
		{name: "labels as a list", files: map[string]string{"a.yaml": cm + "  labels: [a]\n"},
			fragment: "metadata.labels: Invalid value"},
		{name: "a map as an annotation", files: map[string]string{"a.yaml": cm + "  annotations: {note: {a: b}}\n"},
			fragment: "metadata.annotations[note]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.file, tc.rule = "a.yaml", RuleObjectMetadata
			checkErrorCase(t, tc)
		})
	}
	_, err := Load(pkgFS(map[string]string{"a.yaml": cm + "  labels: {tier: }\n  annotations: {convoy.dev/phase: one}\n"}), ".", TemplateData{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "a null value is an empty string")
}
