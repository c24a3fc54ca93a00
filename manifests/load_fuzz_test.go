package manifests

import (
	"bytes"
	"errors"
	"io/fs"
	"path"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// FuzzSplitDocuments checks that splitting never panics, that documents keep their order and
// text, and that decoding each document never panics.
func FuzzSplitDocuments(f *testing.F) {
	for _, seed := range []string{
		"", "---", "a: 1\n---\nb: 2\n", "--- {a: 1}\n...\n", "a: |\n  ---\n", "---\r\n\r\n--- #c\n",
		configMap("a", "one"), "apiVersion: v1\nkind: List\nitems: [1, {a: b}]\n", "a: &x [*x]\n", "- [",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs := splitDocuments("f.yaml", data)
		prevLine := 0
		for _, d := range docs {
			if d.line < prevLine || d.content < d.line {
				t.Fatalf("lines out of order: %+v after %d", d, prevLine)
			}
			if !bytes.Contains(data, d.data) {
				t.Fatalf("document %q is not part of the input", d.data)
			}
			prevLine = d.line
			objs, err := decodeDocument(d)
			if err != nil && err.Line < d.line {
				t.Fatalf("error line %d before the document's line %d", err.Line, d.line)
			}
			for _, o := range objs {
				_ = o.fieldLine("metadata.name")
			}
		}
	})
}

// FuzzParseManifest checks that parsing and checking any manifest.yaml never panics.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(testManifest))
	f.Add([]byte(schemaManifest))
	f.Add([]byte("apiVersion: manifests.package-operator.run/v1alpha1\nkind: PackageManifest\nspec: {images: [{name: a, image: b}], components: {}}\n"))
	f.Add([]byte(testManifest + "  availabilityProbes:\n  - selector: {kind: {kind: X}}\n    probes: [{cel: {rule: 'self.a', message: m}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		errs := &errorList{}
		m := parseManifest("manifest.yaml", data, errs)
		if m != nil && m.schema != nil {
			m.schema.apply(map[string]any{"replicas": int64(1), "x": []any{"y"}})
		}
		for _, e := range errs.errs {
			_ = e.Error()
		}
	})
}

// fuzzBudget keeps a fuzzed template that loops or allocates from holding a fuzzing worker.
var fuzzBudget = RenderBudget{CPU: time.Second, Timeout: 5 * time.Second, Memory: 64 << 20}

// FuzzLoad checks that loading a package with one fuzzed object file and one fuzzed template
// (executed in a render process, under fuzzBudget) never panics and fails only with Errors.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(configMap("a", "one")), []byte(dataTemplate))
	f.Add([]byte("a: b: c"), []byte("{{ include \"x\" . }}"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{}]"), []byte("{{ define \"x\" }}{{ end }}{{ toYAML .config }}"))
	f.Fuzz(func(t *testing.T, objects, tmpl []byte) {
		fsys := fstest.MapFS{
			"manifest.yaml": {Data: []byte(testManifest)},
			"a.yaml":        {Data: objects},
			"b.yaml.gotmpl": {Data: tmpl},
		}
		r, err := LoadWithBudget(fsys, ".", TemplateData{Config: map[string]any{"a": "b"}, Package: PackageRef{Name: "p"}}, fuzzBudget)
		if err != nil {
			if !errors.As(err, new(Errors)) {
				t.Fatalf("want Errors, got %T: %v", err, err)
			}
			return
		}
		if r == nil || len(r.Phases) != 2 {
			t.Fatalf("want two phases, got %+v", r)
		}
	})
}

// FuzzKustomization checks that loading a package with a fuzzed kustomization and a fuzzed
// resource never panics, fails only with Errors, and never reads outside the package.
func FuzzKustomization(f *testing.F) {
	f.Add([]byte("resources: [cm.yaml]\nnamePrefix: x-\n"), []byte(configMap("cm", "one")))
	f.Add([]byte("resources: [../x]\n"), []byte(""))
	f.Add([]byte("patches: [{path: cm.yaml}]\nresources: [cm.yaml]\n"), []byte(configMap("cm", "one")+"data: {a: b}\n"))
	f.Add([]byte("configMapGenerator: [{name: g, literals: [a=b]}]\n"), []byte("- ["))
	f.Fuzz(func(t *testing.T, kustomization, resource []byte) {
		fsys := fstest.MapFS{
			"pkg/manifest.yaml":      {Data: []byte(testManifest)},
			"pkg/kustomization.yaml": {Data: kustomization},
			"pkg/cm.yaml":            {Data: resource},
			"secret.yaml":            {Data: []byte(configMap("secret", "one"))},
		}
		r, err := LoadWithBudget(fsys, "pkg", TemplateData{}, fuzzBudget)
		if err != nil {
			if !errors.As(err, new(Errors)) {
				t.Fatalf("want Errors, got %T: %v", err, err)
			}
			return
		}
		for _, ph := range r.Phases {
			for _, o := range ph.Objects {
				if strings.Contains(o.GetName(), "secret") {
					t.Fatalf("read a file outside the package: %v", o.GetName())
				}
			}
		}
	})
}

// FuzzSymlinkConfinement checks that a symlink, whatever its target, resolves inside the
// package directory or is refused.
func FuzzSymlinkConfinement(f *testing.F) {
	for _, seed := range []string{"a.yaml", "../pkg/a.yaml", "/etc/passwd", "sub/../../x", "./a.yaml", "sub/link", "..", "", "sub//a.yaml"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, target string) {
		fsys := fstest.MapFS{
			"pkg/a.yaml":     {Data: []byte("a")},
			"pkg/sub/b.yaml": {Data: []byte("b")},
			"pkg/sub/link":   {Data: []byte("../a.yaml"), Mode: fs.ModeSymlink},
			"pkg/link":       {Data: []byte(target), Mode: fs.ModeSymlink},
			"x":              {Data: []byte("outside")},
		}
		c := confine(fsys, "pkg").(*confinedFS)
		resolved, err := c.resolve("open", "pkg/link")
		if err != nil {
			return
		}
		if resolved != "pkg" && !strings.HasPrefix(resolved, "pkg/") || path.Clean(resolved) != resolved {
			t.Fatalf("target %q resolved to %q, outside the package", target, resolved)
		}
	})
}
