package manifests

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// dataTemplate prints every piece of template data into a ConfigMap.
const dataTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: data
  annotations: {convoy.dev/phase: one}
data:
  config: {{ .config | toJson | quote }}
  package: {{ printf "%s/%s" .package.namespace .package.name }}
  pkoPackage: {{ .package.metadata.name }}
  revision: {{ .revision | quote }}
  {{- with .hostedCluster }}
  hostedCluster: {{ printf "%s/%s" .namespace .name }}
  riskGroup: {{ get .labels "risk-group" }}
  owner: {{ index .annotations "owner" }}
  {{- end }}
  {{- with .environment.hyperShift }}
  pkoHCPNamespace: {{ .hostedCluster.hostedClusterNamespace }}
  pkoHostedCluster: {{ .hostedCluster.metadata.name }}
  {{- end }}
`

func TestTemplateDataReachesTemplates(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{"a.yaml.gotmpl": dataTemplate}), TemplateData{
		Config:  map[string]any{"replicas": 2, "name": "x"},
		Package: PackageRef{Name: "addon", Namespace: "clusters-demo"},
		HostedCluster: &HostedClusterRef{Name: "demo", Namespace: "clusters",
			Labels: map[string]string{"risk-group": "early"}, Annotations: map[string]string{"owner": "team-a"}},
		Revision: "abc123",
	})
	g.Expect(r.Phases[0].Objects[0].Object["data"]).To(Equal(map[string]any{
		"config":           `{"name":"x","replicas":2}`,
		"package":          "clusters-demo/addon",
		"pkoPackage":       "addon",
		"revision":         "abc123",
		"hostedCluster":    "clusters/demo",
		"riskGroup":        "early",
		"owner":            "team-a",
		"pkoHCPNamespace":  "clusters-demo",
		"pkoHostedCluster": "demo",
	}))
}

func TestTemplateWithoutHostedCluster(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{"a.yaml.gotmpl": dataTemplate}), TemplateData{Package: PackageRef{Name: "addon", Namespace: "ns"}})
	data := r.Phases[0].Objects[0].Object["data"].(map[string]any)
	g.Expect(data).NotTo(HaveKey("hostedCluster"))
	g.Expect(data).NotTo(HaveKey("pkoHCPNamespace"))
	g.Expect(data["config"]).To(Equal("{}"))
}

// TestTemplateForbiddenFunctions loads one package with a file per forbidden function (one
// render, as each template is its own problem) and finds each file refused.
func TestTemplateForbiddenFunctions(t *testing.T) {
	g := NewWithT(t)
	files := map[string]string{}
	for _, fn := range forbiddenFunctions {
		files[fn+".yaml.gotmpl"] = "x: {{ " + fn + " }}\n"
	}
	errs := loadErrors(t, pkgFS(files), TemplateData{})
	for _, fn := range forbiddenFunctions {
		g.Expect(errs).To(haveProblem(fn+".yaml.gotmpl", RuleForbiddenFunction, `function "`+fn+`" is not allowed`), fn)
	}
}

func TestTemplateIncludeAndHelpers(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{
		"_helpers.gotmpl": `{{ define "labels" }}app: {{ .package.name }}{{ end }}`,
		"a.yaml.gotmpl": configMap("a", "one") + "  labels:\n    {{- include \"labels\" . | nindent 4 }}\n" +
			"data:\n  yaml: {{ dict \"k\" (list 1 2) | toYAML | quote }}\n  parsed: {{ (fromYAML \"a: {b: c}\").a.b }}\n",
	}), TemplateData{Package: PackageRef{Name: "addon"}})
	g.Expect(r.Phases[0].Objects).To(HaveLen(1), "helpers render nothing")
	o := r.Phases[0].Objects[0]
	g.Expect(o.GetLabels()).To(Equal(map[string]string{"app": "addon"}))
	g.Expect(o.Object["data"]).To(Equal(map[string]any{"yaml": "k:\n- 1\n- 2", "parsed": "c"}))
}

func TestTemplateIncludeRecursionIsBounded(t *testing.T) {
	g := NewWithT(t)
	errs := loadErrors(t, pkgFS(map[string]string{
		"a.yaml.gotmpl": `{{ define "loop" }}{{ include "loop" . }}{{ end }}{{ include "loop" . }}`,
	}), TemplateData{})
	g.Expect(errs).To(haveProblem("a.yaml.gotmpl", RuleTemplate, "nested more than 100 deep"))
}

func TestTemplateOutputIsBounded(t *testing.T) {
	cases := map[string]string{
		"repeat":     `{{ repeat 100000000 "x" }}`,
		"range":      `{{ range until 10000 }}{{ range until 10000 }}xxxxxxxx{{ end }}{{ end }}`,
		"long until": `{{ until 100000000 }}`,
		"indent":     `{{ indent 100000000 "x" }}`,
	}
	for name, tmpl := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			errs := loadErrors(t, pkgFS(map[string]string{"a.yaml.gotmpl": tmpl}), TemplateData{})
			g.Expect(errs).To(HaveLen(1))
			g.Expect(errs[0].File).To(Equal("a.yaml.gotmpl"))
			g.Expect(errs[0].Rule).To(BeElementOf(RuleLimit, RuleTemplate))
		})
	}
}

func TestTemplateSeqAndUntilStep(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{"a.yaml.gotmpl": configMap("a", "one") +
		"data:\n  seq: '{{ seq 3 }} {{ seq 2 4 }} {{ seq 0 2 6 }} {{ seq 3 1 }}'\n  until: '{{ untilStep 0 10 4 }} {{ until 3 }}'\n"}), TemplateData{})
	g.Expect(r.Phases[0].Objects[0].Object["data"]).To(Equal(map[string]any{
		"seq":   "[1 2 3] [2 3 4] [0 2 4 6] [3 2 1]",
		"until": "[0 4 8] [0 1 2]",
	}))
}

func TestTemplatesDoNotChangeConfig(t *testing.T) {
	g := NewWithT(t)
	config := map[string]any{"a": "b"}
	r := mustLoad(t, pkgFS(map[string]string{"a.yaml.gotmpl": `{{ $_ := set .config "a" "changed" }}` + configMap("a", "one")}),
		TemplateData{Config: config})
	g.Expect(r.Config).To(Equal(map[string]any{"a": "b"}))
	g.Expect(config).To(Equal(map[string]any{"a": "b"}))
}

func TestTemplateRenderedOutputIsYAMLChecked(t *testing.T) {
	g := NewWithT(t)
	errs := loadErrors(t, pkgFS(map[string]string{"a.yaml.gotmpl": configMap("a", "one") + "---\n{{ print \"a: b: c\" }}\n"}), TemplateData{})
	g.Expect(errs).To(haveProblem("a.yaml.gotmpl", RuleInvalidYAML, "mapping values"))
	g.Expect(strings.Count(errs.Error(), "\n")).To(BeZero())
}
