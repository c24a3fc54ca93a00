package manifests

import (
	"testing"

	. "github.com/onsi/gomega"
)

// schemaManifest is testManifest with a config schema.
const schemaManifest = testManifest + `  config:
    openAPIV3Schema:
      type: object
      properties:
        replicas: {type: integer, minimum: 1, default: 2}
        logLevel: {type: string, enum: [Debug, Info], default: Info}
        resources:
          type: object
          default: {}
          properties:
            cpu: {type: string, default: 100m}
        extra:
          type: object
          x-kubernetes-preserve-unknown-fields: true
        endpoints:
          type: array
          items:
            type: object
            properties:
              url: {type: string}
          x-kubernetes-validations:
          - rule: self.all(e, e.url.startsWith('https://'))
            message: endpoints must use https
`

func TestConfigDefaults(t *testing.T) {
	g := NewWithT(t)
	fsys := pkgFS(map[string]string{"manifest.yaml": schemaManifest})
	r := mustLoad(t, fsys, TemplateData{Config: map[string]any{"replicas": 3, "extra": map[string]any{"free": true}}})
	g.Expect(r.Config).To(Equal(map[string]any{
		"replicas":  int64(3),
		"logLevel":  "Info",
		"resources": map[string]any{"cpu": "100m"},
		"extra":     map[string]any{"free": true},
	}))
}

func TestConfigDefaultsReachTemplates(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{
		"manifest.yaml": schemaManifest,
		"a.yaml.gotmpl": configMap("a", "one") + "data:\n  cpu: {{ .config.resources.cpu }}\n  replicas: {{ .config.replicas | quote }}\n",
	}), TemplateData{})
	g.Expect(r.Phases[0].Objects[0].Object["data"]).To(Equal(map[string]any{"cpu": "100m", "replicas": "2"}))
}

func TestConfigSchemaViolations(t *testing.T) {
	cases := map[string]struct {
		config   map[string]any
		line     int
		fragment string
	}{
		"type":          {map[string]any{"replicas": "two"}, 14, `config.replicas: Invalid value: "string": replicas in body must be of type integer`},
		"minimum":       {map[string]any{"replicas": 0}, 14, "config.replicas: Invalid value: 0: replicas in body should be greater than or equal to 1"},
		"enum":          {map[string]any{"logLevel": "Trace"}, 15, `config.logLevel: Unsupported value: "Trace": supported values: "Debug", "Info"`},
		"unknown field": {map[string]any{"replica": 1}, 13, "config.replica: unknown field"},
		"nested":        {map[string]any{"resources": map[string]any{"cpu": 1}}, 20, "config.resources.cpu"},
		"cel rule":      {map[string]any{"endpoints": []any{map[string]any{"url": "http://x"}}}, 24, "config.endpoints: Invalid value: endpoints must use https"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			errs := loadErrors(t, pkgFS(map[string]string{"manifest.yaml": schemaManifest}), TemplateData{Config: tc.config})
			g.Expect(errs).To(haveProblem("manifest.yaml", RuleConfig, tc.fragment))
			g.Expect(errs[0].Line).To(Equal(tc.line))
		})
	}
}

func TestConfigInvalidSkipsTemplatesButChecksFiles(t *testing.T) {
	g := NewWithT(t)
	errs := loadErrors(t, pkgFS(map[string]string{
		"manifest.yaml": schemaManifest,
		"a.yaml.gotmpl": "{{ .config.replicas.nope }}",
		"b.yaml":        configMap("b", ""),
	}), TemplateData{Config: map[string]any{"replicas": "x"}})
	g.Expect(errs).To(HaveLen(2))
	g.Expect(errs).To(haveProblem("manifest.yaml", RuleConfig, "config.replicas"))
	g.Expect(errs).To(haveProblem("b.yaml", RuleMissingPhase, "no phase"))
}

func TestConfigWithoutSchemaPassesThrough(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(nil), TemplateData{Config: map[string]any{"anything": []int{1, 2}}})
	g.Expect(r.Config).To(Equal(map[string]any{"anything": []any{int64(1), int64(2)}}))
}

func TestConfigNotJSON(t *testing.T) {
	g := NewWithT(t)
	errs := loadErrors(t, pkgFS(nil), TemplateData{Config: map[string]any{"f": func() {}}})
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0].Rule).To(Equal(RuleConfig))
}
