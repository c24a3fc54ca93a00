package manifests

import (
	"errors"
	"fmt"
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"
)

// testManifest declares phases one (management) and two (hosted cluster).
const testManifest = `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata:
  name: test
spec:
  phases:
  - name: one
  - name: two
    class: hosted-cluster
`

// pkgFS builds a package filesystem; testManifest is added unless files has a manifest.
func pkgFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for p, content := range files {
		fsys[p] = &fstest.MapFile{Data: []byte(content)}
	}
	_, hasYAML := files["manifest.yaml"]
	_, hasYML := files["manifest.yml"]
	_, skip := files["-no-manifest"]
	delete(fsys, "-no-manifest")
	if !hasYAML && !hasYML && !skip {
		fsys["manifest.yaml"] = &fstest.MapFile{Data: []byte(testManifest)}
	}
	return fsys
}

// configMap returns a ConfigMap document in a phase ("" for none).
func configMap(name, phase string) string {
	doc := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n", name)
	if phase != "" {
		doc += fmt.Sprintf("  annotations:\n    convoy.dev/phase: %s\n", phase)
	}
	return doc
}

// mustLoad loads a package that must be valid.
func mustLoad(t *testing.T, fsys fstest.MapFS, data TemplateData) *Rendered {
	t.Helper()
	r, err := Load(fsys, ".", data)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return r
}

// loadErrors loads a package that must be invalid and returns its problems.
func loadErrors(t *testing.T, fsys fstest.MapFS, data TemplateData) Errors {
	t.Helper()
	g := NewWithT(t)
	r, err := Load(fsys, ".", data)
	g.Expect(r).To(BeNil())
	var errs Errors
	g.Expect(errors.As(err, &errs)).To(BeTrue(), "want Errors, got %v", err)
	return errs
}

// haveProblem matches an *Error by file, rule and a message fragment.
func haveProblem(file string, rule Rule, fragment string) OmegaMatcher {
	return ContainElement(SatisfyAll(
		HaveField("File", file),
		HaveField("Rule", rule),
		WithTransform(func(e *Error) string { return e.Error() }, SatisfyAll(
			HavePrefix(file),
			ContainSubstring(": "+string(rule)+": "),
			ContainSubstring(fragment),
		)),
	))
}

// objectNames lists "phase/Kind/name" for every object of a render.
func objectNames(r *Rendered) []string {
	var out []string
	for _, ph := range r.Phases {
		for _, o := range ph.Objects {
			out = append(out, ph.Name+"/"+o.GetKind()+"/"+o.GetName())
		}
	}
	return out
}
