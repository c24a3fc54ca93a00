package manifests

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// update rewrites the golden files instead of comparing with them:
// go test ./manifests -run TestGolden -update.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenData is the template data the example packages are rendered with.
var goldenData = TemplateData{
	Package: PackageRef{Name: "example", Namespace: "clusters-demo"},
	HostedCluster: &HostedClusterRef{
		Name: "demo", Namespace: "clusters",
		Labels: map[string]string{"hypershift.openshift.io/risk-group": "early"},
	},
	Revision: "0123456789abcdef0123456789abcdef01234567",
}

func TestGoldenExamples(t *testing.T) {
	examples, err := filepath.Glob("../examples/packages/*/manifest.yaml")
	if err != nil || len(examples) < 3 {
		t.Fatalf("want at least three example packages, got %v (%v)", examples, err)
	}
	for _, m := range examples {
		dir := filepath.Dir(m)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := Load(os.DirFS(dir), ".", goldenData)
			g.Expect(err).NotTo(HaveOccurred())
			compareGolden(t, filepath.Join("testdata", "golden", name+".yaml"), goldenText(t, r))
		})
	}
}

// goldenText is a render as convoy render prints it, preceded by the defaulted config and the
// probes as comments.
func goldenText(t *testing.T, r *Rendered) []byte {
	t.Helper()
	var b bytes.Buffer
	config, err := json.Marshal(r.Config)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "# package: %s\n# config: %s\n", r.Name, config)
	for _, p := range r.Probes {
		var checks []string
		for _, c := range p.Checks {
			switch {
			case c.Condition != nil:
				checks = append(checks, fmt.Sprintf("condition %s=%s", c.Condition.Type, c.Condition.Status))
			case c.FieldsEqual != nil:
				checks = append(checks, fmt.Sprintf("fieldsEqual %s == %s", c.FieldsEqual.A, c.FieldsEqual.B))
			case c.CEL != nil:
				checks = append(checks, fmt.Sprintf("cel %q", c.CEL.Rule))
			}
		}
		fmt.Fprintf(&b, "# probe %s [%s]: %s\n", p.GroupKind, p.Selector, strings.Join(checks, ", "))
	}
	if err := r.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// compareGolden compares got with a golden file, or rewrites it under -update.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	g := NewWithT(t)
	if *update {
		g.Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(path, got, 0o644)).To(Succeed())
		return
	}
	want, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred(), "run go test ./manifests -run TestGolden -update to create it")
	g.Expect(string(got)).To(Equal(string(want)), "run go test ./manifests -run TestGolden -update after an intended change")
}
