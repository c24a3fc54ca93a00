package manifests

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/manifests/probe"
)

// countingOpener returns fsys and counts the calls.
func countingOpener(fsys fs.FS, calls *atomic.Int32) func() (fs.FS, error) {
	return func() (fs.FS, error) {
		calls.Add(1)
		return fsys, nil
	}
}

// gatedOpener is a countingOpener whose opens wait until release is called.
func gatedOpener(fsys fs.FS, calls *atomic.Int32) (open func() (fs.FS, error), release func()) {
	gate := make(chan struct{})
	return func() (fs.FS, error) {
		calls.Add(1)
		<-gate
		return fsys, nil
	}, func() { close(gate) }
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
	g.Expect(counts(c.Stats())).To(Equal(CacheStats{Hits: 1, Misses: 3, Entries: 3}))
}

func TestCacheSingleFlight(t *testing.T) {
	g := NewWithT(t)
	c := NewCache(10)
	fsys := pkgFS(map[string]string{"a.yaml": configMap("a", "one")})
	var calls atomic.Int32
	open, release := gatedOpener(fsys, &calls)
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
	g.Eventually(calls.Load).Should(BeEquivalentTo(1), "the first load opens the package")
	g.Consistently(calls.Load, "50ms", "5ms").Should(BeEquivalentTo(1), "the others wait for it")
	release()
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

// faultFS is a package whose storage failed while it was read, as a Git store's tree reports.
type faultFS struct {
	fs.FS
	fault error
}

// Fault returns the failure of the storage.
func (f faultFS) Fault() error { return f.fault }

// TestCacheRetriesAStorageFault checks that a storage failure during a load, which load reports
// as templated, is not cached: the next Load reads the package again.
func TestCacheRetriesAStorageFault(t *testing.T) {
	g := NewWithT(t)
	c := NewCache(10)
	var calls atomic.Int32
	fault := errors.New("reading object abc: disk failed")
	broken := faultFS{FS: pkgFS(map[string]string{"a.yaml": configMap("a", "")}), fault: fault}
	for range 2 {
		_, err := c.Load(Key{Source: "s", Commit: "c"}, TemplateData{}, countingOpener(broken, &calls))
		g.Expect(err).To(MatchError(fault))
	}
	g.Expect(calls.Load()).To(BeEquivalentTo(2), "a storage fault is retried")
	healthy := pkgFS(map[string]string{"a.yaml": configMap("a", "one")})
	_, err := c.Load(Key{Source: "s", Commit: "c"}, TemplateData{}, countingOpener(healthy, &calls))
	g.Expect(err).NotTo(HaveOccurred())
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

// followers is the number of Packages following one package directory in the fan-out tests.
const followers = 1000

// followerData is the template data of the i-th Package following a package directory, each in
// its own namespace and hosted cluster.
func followerData(i int, config map[string]any) TemplateData {
	return TemplateData{
		Config:  config,
		Package: PackageRef{Name: fmt.Sprintf("addon-%d", i), Namespace: fmt.Sprintf("clusters-%d", i)},
		HostedCluster: &HostedClusterRef{
			Name:      fmt.Sprintf("hc-%d", i),
			Namespace: "clusters",
			Labels:    map[string]string{"id": fmt.Sprint(i), "shard": fmt.Sprint(i % 7)},
		},
		Revision: "c1",
	}
}

// loadAll loads key from c once for each data, all at once when concurrent is set, and returns
// the results and errors in the order of datas.
func loadAll(c *Cache, key Key, datas []TemplateData, open func() (fs.FS, error), concurrent bool) ([]*Rendered, []error) {
	results := make([]*Rendered, len(datas))
	errs := make([]error, len(datas))
	if !concurrent {
		for i, d := range datas {
			results[i], errs[i] = c.Load(key, d, open)
		}
		return results, errs
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, d := range datas {
		wg.Go(func() {
			<-start
			results[i], errs[i] = c.Load(key, d, open)
		})
	}
	close(start)
	wg.Wait()
	return results, errs
}

// forEachMode runs a test once loading one after another and once loading concurrently.
func forEachMode(t *testing.T, test func(t *testing.T, concurrent bool)) {
	t.Run("sequential", func(t *testing.T) { test(t, false) })
	t.Run("concurrent", func(t *testing.T) { test(t, true) })
}

// templateFreePackage is a package with a config schema and no templates.
func templateFreePackage() fs.FS {
	return pkgFS(map[string]string{"manifest.yaml": schemaManifest, "a.yaml": configMap("a", "one")})
}

func TestCacheRendersATemplateFreePackageOncePerCommit(t *testing.T) {
	forEachMode(t, func(t *testing.T, concurrent bool) {
		g := NewWithT(t)
		c := NewCache(0)
		var calls atomic.Int32
		datas := make([]TemplateData, followers)
		for i := range datas {
			datas[i] = followerData(i, map[string]any{"replicas": 3})
		}
		results, errs := loadAll(c, Key{Source: "fleet/addons", Commit: "c1", Dir: "."}, datas,
			countingOpener(templateFreePackage(), &calls), concurrent)

		g.Expect(errs).To(HaveEach(Not(HaveOccurred())))
		g.Expect(results).To(HaveEach(BeIdenticalTo(results[0])))
		g.Expect(results[0].Config).To(HaveKeyWithValue("replicas", int64(3)))
		g.Expect(calls.Load()).To(BeEquivalentTo(1))
		g.Expect(counts(c.Stats())).To(Equal(CacheStats{Hits: followers - 1, Misses: 1, Entries: 1}))
	})
}

func TestCacheRendersATemplateFreePackageOncePerConfig(t *testing.T) {
	forEachMode(t, func(t *testing.T, concurrent bool) {
		g := NewWithT(t)
		c := NewCache(0)
		var calls atomic.Int32
		configs := []map[string]any{{"replicas": 3}, nil}
		datas := make([]TemplateData, followers)
		for i := range datas {
			datas[i] = followerData(i, configs[i%2])
		}
		results, errs := loadAll(c, Key{Source: "fleet/addons", Commit: "c1", Dir: "."}, datas,
			countingOpener(templateFreePackage(), &calls), concurrent)

		g.Expect(errs).To(HaveEach(Not(HaveOccurred())))
		g.Expect(counts(c.Stats())).To(Equal(CacheStats{Hits: followers - 2, Misses: 2, Entries: 2}))
		g.Expect(results[0]).NotTo(BeIdenticalTo(results[1]))
		for i, r := range results {
			g.Expect(r).To(BeIdenticalTo(results[i%2]))
		}
		g.Expect(results[0].Config).To(HaveKeyWithValue("replicas", int64(3)))
		g.Expect(results[1].Config).To(HaveKeyWithValue("replicas", int64(2)), "defaulted")
		g.Expect(results[1].Config).To(HaveKeyWithValue("logLevel", "Info"), "defaulted")
	})
}

func TestCacheRendersATemplatedPackageOncePerData(t *testing.T) {
	forEachMode(t, func(t *testing.T, concurrent bool) {
		g := NewWithT(t)
		c := NewCache(0)
		var calls atomic.Int32
		fsys := pkgFS(map[string]string{
			"manifest.yaml": schemaManifest,
			"a.yaml.gotmpl": configMap("a", "one") +
				"data:\n  package: {{ .package.name }}\n  id: {{ index .hostedCluster.labels \"id\" | quote }}\n",
		})
		const distinct, repeats = 3, 100
		datas := make([]TemplateData, distinct*repeats)
		for i := range datas {
			datas[i] = followerData(i%distinct, map[string]any{"replicas": 3})
		}
		results, errs := loadAll(c, Key{Source: "fleet/addons", Commit: "c1", Dir: "."}, datas,
			countingOpener(fsys, &calls), concurrent)

		g.Expect(errs).To(HaveEach(Not(HaveOccurred())))
		g.Expect(counts(c.Stats())).To(Equal(CacheStats{Hits: distinct*repeats - distinct, Misses: distinct, Entries: distinct}))
		for i, r := range results {
			g.Expect(r).To(BeIdenticalTo(results[i%distinct]))
			g.Expect(r.Phases[0].Objects[0].Object["data"]).To(Equal(map[string]any{
				"package": fmt.Sprintf("addon-%d", i%distinct),
				"id":      fmt.Sprint(i % distinct),
			}))
		}
	})
}

func TestCacheKeepsTheConfigErrorsOfATemplateFreePackage(t *testing.T) {
	g := NewWithT(t)
	c := NewCache(0)
	var calls atomic.Int32
	key := Key{Source: "fleet/addons", Commit: "c1", Dir: "."}
	open := countingOpener(templateFreePackage(), &calls)
	invalid := []TemplateData{followerData(0, map[string]any{"replicas": 0}), followerData(1, map[string]any{"replicas": 0})}
	results, errs := loadAll(c, key, invalid, open, false)

	g.Expect(results).To(HaveEach(BeNil()))
	for _, err := range errs {
		var problems Errors
		g.Expect(errors.As(err, &problems)).To(BeTrue(), "want Errors, got %v", err)
		g.Expect(problems).To(ContainElement(HaveField("Rule", RuleConfig)))
	}
	g.Expect(calls.Load()).To(BeEquivalentTo(1), "the error is cached for every Package with that config")

	r, err := c.Load(key, followerData(2, map[string]any{"replicas": 5}), open)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Config).To(HaveKeyWithValue("replicas", int64(5)))
	g.Expect(calls.Load()).To(BeEquivalentTo(2))
	g.Expect(counts(c.Stats())).To(Equal(CacheStats{Hits: 1, Misses: 2, Entries: 2}))
}

func TestCacheFindsATemplatedRenderWhoseMarkWasDropped(t *testing.T) {
	g := NewWithT(t)
	c := NewCache(2)
	var calls atomic.Int32
	templated := countingOpener(pkgFS(map[string]string{"a.yaml.gotmpl": configMap("a", "one")}), &calls)
	data := followerData(0, nil)
	_, err := c.Load(Key{Source: "s", Commit: "c1"}, data, templated) // holds the render, then the mark
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Load(Key{Source: "s", Commit: "c2"}, data, countingOpener(pkgFS(nil), &calls)) // drops the mark
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Load(Key{Source: "s", Commit: "c1"}, data, templated)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls.Load()).To(BeEquivalentTo(2))
	g.Expect(counts(c.Stats())).To(Equal(CacheStats{Hits: 1, Misses: 2, Entries: 2}))
}

func TestCacheSingleFlightOfATemplatedPackage(t *testing.T) {
	g := NewWithT(t)
	c := NewCache(0)
	fsys := pkgFS(map[string]string{"a.yaml.gotmpl": configMap("a", "one") + "data: {package: '{{ .package.name }}'}\n"})
	var calls atomic.Int32
	open, release := gatedOpener(fsys, &calls)
	const n = 30
	datas := make([]TemplateData, n)
	for i := range datas {
		datas[i] = followerData(i%3, nil)
	}
	var results []*Rendered
	var errs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		results, errs = loadAll(c, Key{Source: "s", Commit: "c", Dir: "."}, datas, open, true)
	}()
	g.Eventually(calls.Load).Should(BeEquivalentTo(1))
	g.Consistently(calls.Load, "50ms", "5ms").Should(BeEquivalentTo(1), "all wait on the first render, not knowing it is templated")
	release()
	<-done

	g.Expect(errs).To(HaveEach(Not(HaveOccurred())))
	g.Expect(calls.Load()).To(BeEquivalentTo(3))
	g.Expect(counts(c.Stats())).To(Equal(CacheStats{Hits: n - 3, Misses: 3, Entries: 3}))
	for i, r := range results {
		g.Expect(r).To(BeIdenticalTo(results[i%3]))
		g.Expect(r.Phases[0].Objects[0].Object["data"]).To(Equal(map[string]any{"package": fmt.Sprintf("addon-%d", i%3)}))
	}
}

// counts returns a cache's counters without its size, which depends on the packages' text.
func counts(s CacheStats) CacheStats {
	s.Bytes = 0
	return s
}

func TestCacheIsBoundedInBytes(t *testing.T) {
	g := NewWithT(t)
	fsys := pkgFS(map[string]string{"a.yaml": configMap("a", "one") + "data: {v: '" + strings.Repeat("x", 10_000) + "'}\n"})
	one, err := Load(fsys, ".", TemplateData{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(one.size).To(BeNumerically(">", 10_000))

	c := NewCacheWithOptions(CacheOptions{MaxEntries: 100, MaxBytes: 3*one.size + one.size/2})
	var calls atomic.Int32
	for i := range 5 {
		_, err := c.Load(Key{Source: "s", Commit: fmt.Sprint(i), Dir: "."}, TemplateData{}, countingOpener(fsys, &calls))
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(c.Stats().Entries).To(Equal(3), "the least recently used renders are dropped beyond the byte bound")
	g.Expect(c.Stats().Bytes).To(Equal(3 * one.size))

	small := NewCacheWithOptions(CacheOptions{MaxBytes: one.size - 1})
	r, err := small.Load(Key{Source: "s", Commit: "c", Dir: "."}, TemplateData{}, countingOpener(fsys, &calls))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Name).To(Equal("test"))
	g.Expect(small.Stats().Entries).To(BeZero(), "a render larger than the bound is returned, not kept")
}

func TestRendersCarryTheDigestOfEachObject(t *testing.T) {
	g := NewWithT(t)
	r, err := Load(pkgFS(map[string]string{"a.yaml": configMap("a", "one"), "b.yaml": configMap("b", "one")}), ".", TemplateData{})
	g.Expect(err).NotTo(HaveOccurred())
	ph := r.Phases[0]
	g.Expect(ph.Digests).To(HaveLen(len(ph.Objects)))
	want, ok := ObjectDigest(ph.Objects[0])
	g.Expect(ok).To(BeTrue())
	g.Expect(ph.Digests[0]).To(Equal(want))
	g.Expect(ph.Digests[1]).NotTo(Equal(want))
	g.Expect(r.DeepCopy().Phases[0].Digests).To(BeNil(), "a copy is made to be changed")
	g.Expect(r.ProbesDigest).To(Equal(probe.Digest(r.Probes)), "the probes' digest too, once per render")
	g.Expect(r.ProbesDigest).NotTo(BeZero())
	g.Expect(r.DeepCopy().ProbesDigest).To(BeZero())
}
