package manifests

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// benchPackage is a package of n objects: half plain YAML, half templated, across the phases.
func benchPackage(n int) fstest.MapFS {
	fsys := pkgFS(nil)
	var plain, tmpl strings.Builder
	for i := range n {
		phase := []string{"one", "two"}[i%2]
		doc := configMap(fmt.Sprintf("cm-%03d", i), phase) + "  labels:\n    app: bench\ndata:\n  index: \"" + fmt.Sprint(i) + "\"\n"
		if i%2 == 0 {
			plain.WriteString("---\n" + doc)
			continue
		}
		tmpl.WriteString("---\n" + doc + "  namespace: {{ .package.namespace | quote }}\n  level: {{ .config.level | default \"info\" | quote }}\n")
	}
	fsys["objects.yaml"] = &fstest.MapFile{Data: []byte(plain.String())}
	fsys["templated.yaml.gotmpl"] = &fstest.MapFile{Data: []byte(tmpl.String())}
	return fsys
}

// benchData is the template data of the benchmarks.
var benchData = TemplateData{Package: PackageRef{Name: "bench", Namespace: "clusters-demo"}, Config: map[string]any{"level": "debug"}}

// BenchmarkLoad200Cold renders a 200-object package from scratch each time.
func BenchmarkLoad200Cold(b *testing.B) {
	fsys := benchPackage(200)
	if _, err := Load(fsys, ".", benchData); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(fsys, ".", benchData); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad200Cached answers the same render from a Cache (the steady state of a thousand
// Packages on one revision).
func BenchmarkLoad200Cached(b *testing.B) {
	benchCachedLoad(b, benchPackage(200), benchData)
}

// benchCachedLoad measures loads of fsys for data that a Cache answers, after a first one that
// renders.
func benchCachedLoad(b *testing.B, fsys fs.FS, data TemplateData) {
	c := NewCache(0)
	open := func() (fs.FS, error) { return fsys, nil }
	key := Key{Source: "fleet/addons", Commit: "0123456789abcdef0123456789abcdef01234567", Dir: "."}
	if _, err := c.Load(key, data, open); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Load(key, data, open); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadTemplateFreeCached answers a template-free package from a Cache for a Package
// and HostedCluster with the labels and annotations they carry on a fleet: what each settled
// pass of such a Package asks.
func BenchmarkLoadTemplateFreeCached(b *testing.B) {
	fsys := pkgFS(nil)
	fsys["objects.yaml"] = &fstest.MapFile{Data: []byte(configMap("settled", "one"))}
	meta := map[string]string{}
	for i := range 8 {
		meta[fmt.Sprintf("example.com/key-%d", i)] = strings.Repeat("v", 40)
	}
	data := TemplateData{Package: PackageRef{Name: "addon", Namespace: "clusters-demo", Labels: meta, Annotations: meta},
		HostedCluster: &HostedClusterRef{Name: "demo", Namespace: "clusters", Labels: meta, Annotations: meta},
		Revision:      "0123456789abcdef0123456789abcdef01234567"}
	benchCachedLoad(b, fsys, data)
}

func TestBenchPackageIsValid(t *testing.T) {
	r := mustLoad(t, benchPackage(200), benchData)
	if n := len(r.Phases[0].Objects) + len(r.Phases[1].Objects); n != 200 {
		t.Fatalf("want 200 objects, got %d", n)
	}
}
