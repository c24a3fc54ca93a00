package manifests

import (
	"errors"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// countingOpener returns fsys and counts the calls.
func countingOpener(fsys fs.FS, calls *atomic.Int32) func() (fs.FS, error) {
	return func() (fs.FS, error) {
		calls.Add(1)
		return fsys, nil
	}
}

func TestCacheRendersOncePerInput(t *testing.T) {
	g := NewWithT(t)
	c := NewCache(10)
	fsys := pkgFS(map[string]string{"a.yaml.gotmpl": configMap("a", "one") + "data: {ns: '{{ .package.namespace }}'}\n"})
	var calls atomic.Int32
	key := Key{Source: "fleet/addons", Commit: "c1", Dir: "."}
	data := TemplateData{Package: PackageRef{Name: "p", Namespace: "a"}, Config: map[string]any{"x": 1, "y": "z"}}

	r1, err := c.Load(key, data, countingOpener(fsys, &calls))
	g.Expect(err).NotTo(HaveOccurred())
	sameData := TemplateData{Package: PackageRef{Name: "p", Namespace: "a"}, Config: map[string]any{"y": "z", "x": int64(1)}}
	r2, err := c.Load(key, sameData, countingOpener(fsys, &calls))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r2).To(BeIdenticalTo(r1))
	g.Expect(calls.Load()).To(BeEquivalentTo(1))

	other := data
	other.Package.Namespace = "b"
	r3, err := c.Load(key, other, countingOpener(fsys, &calls))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r3.Phases[0].Objects[0].Object["data"]).To(Equal(map[string]any{"ns": "b"}))
	_, err = c.Load(Key{Source: "fleet/addons", Commit: "c2", Dir: "."}, data, countingOpener(fsys, &calls))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls.Load()).To(BeEquivalentTo(3))
	g.Expect(c.Stats()).To(Equal(CacheStats{Hits: 1, Misses: 3, Entries: 3}))
}

func TestCacheSingleFlight(t *testing.T) {
	g := NewWithT(t)
	c := NewCache(10)
	fsys := pkgFS(map[string]string{"a.yaml": configMap("a", "one")})
	var calls atomic.Int32
	release := make(chan struct{})
	open := func() (fs.FS, error) {
		calls.Add(1)
		<-release
		return fsys, nil
	}
	const n = 50
	results := make([]*Rendered, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Load(Key{Source: "s", Commit: "c", Dir: "."}, TemplateData{}, open)
			if err == nil {
				results[i] = r
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	g.Expect(calls.Load()).To(BeEquivalentTo(1))
	for _, r := range results {
		g.Expect(r).To(BeIdenticalTo(results[0]))
	}
	g.Expect(c.Stats().Misses).To(BeEquivalentTo(1))
	g.Expect(c.Stats().Hits).To(BeEquivalentTo(n - 1))
}

func TestCacheIsBounded(t *testing.T) {
	g := NewWithT(t)
	c := NewCache(2)
	fsys := pkgFS(nil)
	var calls atomic.Int32
	load := func(commit string) {
		_, err := c.Load(Key{Source: "s", Commit: commit}, TemplateData{}, countingOpener(fsys, &calls))
		g.Expect(err).NotTo(HaveOccurred())
	}
	load("a")
	load("b")
	load("a") // a is now the most recently used
	load("c") // evicts b
	g.Expect(c.Stats().Entries).To(Equal(2))
	load("a")
	g.Expect(calls.Load()).To(BeEquivalentTo(3))
	load("b")
	g.Expect(calls.Load()).To(BeEquivalentTo(4))
}

func TestCacheKeepsLoadErrorsNotOpenErrors(t *testing.T) {
	g := NewWithT(t)
	c := NewCache(10)
	var calls atomic.Int32
	broken := pkgFS(map[string]string{"a.yaml": configMap("a", "")})
	_, err := c.Load(Key{Source: "s", Commit: "bad"}, TemplateData{}, countingOpener(broken, &calls))
	var errs Errors
	g.Expect(errors.As(err, &errs)).To(BeTrue())
	_, err = c.Load(Key{Source: "s", Commit: "bad"}, TemplateData{}, countingOpener(broken, &calls))
	g.Expect(errors.As(err, &errs)).To(BeTrue())
	g.Expect(calls.Load()).To(BeEquivalentTo(1), "load errors are cached: rendering is pure")

	unreachable := errors.New("fetch failed")
	failing := func() (fs.FS, error) { calls.Add(1); return nil, unreachable }
	_, err = c.Load(Key{Source: "s", Commit: "missing"}, TemplateData{}, failing)
	g.Expect(err).To(MatchError(unreachable))
	_, err = c.Load(Key{Source: "s", Commit: "missing"}, TemplateData{}, failing)
	g.Expect(err).To(MatchError(unreachable))
	g.Expect(calls.Load()).To(BeEquivalentTo(3), "open errors are retried")
}

func TestRenderedDeepCopy(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{"a.yaml": configMap("a", "one")}), TemplateData{Config: map[string]any{"k": "v"}})
	cp := r.DeepCopy()
	cp.Phases[0].Objects[0].SetName("changed")
	cp.Config["k"] = "changed"
	g.Expect(r.Phases[0].Objects[0].GetName()).To(Equal("a"))
	g.Expect(r.Config["k"]).To(Equal("v"))
}

func TestTemplateDataHash(t *testing.T) {
	g := NewWithT(t)
	a, err := TemplateData{Config: map[string]any{"a": 1, "b": []any{"x"}}}.Hash()
	g.Expect(err).NotTo(HaveOccurred())
	b, err := TemplateData{Config: map[string]any{"b": []string{"x"}, "a": 1.0}}.Hash()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).To(Equal(b))
	c, err := TemplateData{Config: map[string]any{"a": 1}, HostedCluster: &HostedClusterRef{Name: "x"}}.Hash()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).NotTo(Equal(a))
}
