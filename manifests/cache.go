package manifests

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
)

// DefaultCacheSize is the number of entries a Cache keeps when NewCache is given zero.
const DefaultCacheSize = 512

// DefaultCacheBytes is the size a Cache keeps when CacheOptions.MaxBytes is zero, counted as
// the bytes of the packages' files and template output (and of the text of cached errors).
const DefaultCacheBytes = 256 << 20

// Key names a package directory at one commit of one source.
type Key struct {
	// Source identifies the source, for example the GitSource's namespace/name.
	Source string
	// Commit is the commit the directory is read at.
	Commit string
	// Dir is the package directory inside the source.
	Dir string
}

// Cache memoizes Load. It is bounded (least recently used entries are dropped first) and safe
// for concurrent use; concurrent loads of the same inputs render once and share the result.
//
// Keys are formed from the Key (source, commit, directory) and a hash of the template data:
//   - a package without templates depends on the data only through its config, so its render is
//     keyed by (source, commit, directory, hash of data.Config) and shared by every Load with an
//     equal config, whatever the Package or HostedCluster;
//   - a package with templates is keyed by (source, commit, directory, hash of the whole data).
//
// Which kind a (source, commit, directory) is comes from its first render, which is keyed (and
// deduplicated among concurrent loads) by config; a templated result is kept for its own data
// and the directory is remembered as templated, so that later loads go straight to the
// whole-data key.
//
// Results are shared: callers must treat a returned *Rendered as immutable and DeepCopy it (or
// the objects they change) before mutating anything. Load errors (Errors) are cached as well,
// keyed like a render, since rendering is pure; errors from opening the filesystem are not.
type Cache struct {
	max      int
	maxBytes int64
	budget   RenderBudget
	mu       sync.Mutex
	bytes    int64      // the sizes of the entries held
	order    *list.List // of *cacheEntry, most recently used first
	entries  map[string]*list.Element
	markers  int // entries that mark a directory templated, not renders
	flight   singleflight.Group
	hits     atomic.Int64
	misses   atomic.Int64
	// charts keeps the results of chart render processes (renderChart) apart from the
	// renders, so that charts that are not shared do not crowd out the Packages' renders.
	charts *Cache
	// chartRenders and chartHits count the chart render processes run and those shared.
	chartRenders atomic.Int64
	chartHits    atomic.Int64
}

// cacheEntry is one memoized render, or the mark that a directory at a commit has templates.
type cacheEntry struct {
	key      string
	rendered *Rendered
	err      error
	// size is what the entry counts against the cache's MaxBytes.
	size int64
	// marksTemplated is set on the mark, which holds no render.
	marksTemplated bool
	// chart holds the result of a chart's render process (Cache.renderChart), shared by the
	// loads whose charts get the same request.
	chart *renderResult
}

// CacheStats counts lookups.
type CacheStats struct {
	// Hits is the number of loads answered from the cache, or by sharing a concurrent render.
	Hits int64
	// Misses is the number of renders performed.
	Misses int64
	// Entries is the number of renders held.
	Entries int
	// Bytes is the size of the renders held (see DefaultCacheBytes).
	Bytes int64
	// ChartRenders is the number of chart render processes run; ChartHits the number of chart
	// renders answered by one cached or in flight (loads of charts whose inputs were equal).
	ChartRenders, ChartHits int64
}

// CacheOptions configure a Cache.
type CacheOptions struct {
	// MaxEntries bounds the entries: renders, and the marks of templated directories
	// (DefaultCacheSize when zero or negative).
	MaxEntries int
	// MaxBytes bounds the size of the renders held (DefaultCacheBytes when zero or negative); a
	// render larger than it is returned but not kept. The outputs of chart render processes,
	// shared among the renders of Packages whose charts get equal inputs, are kept apart in a
	// quarter of MaxEntries and MaxBytes more.
	MaxBytes int64
	// Budget bounds each render's templates (DefaultRenderBudget's limits where unset).
	Budget RenderBudget
}

// NewCache returns a cache holding at most maxEntries entries: renders, and the marks of
// templated directories. It holds DefaultCacheSize when maxEntries is zero or negative.
func NewCache(maxEntries int) *Cache {
	return NewCacheWithOptions(CacheOptions{MaxEntries: maxEntries})
}

// NewCacheWithOptions returns a cache configured by o.
func NewCacheWithOptions(o CacheOptions) *Cache {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultCacheSize
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultCacheBytes
	}
	return &Cache{max: o.MaxEntries, maxBytes: o.MaxBytes, budget: o.Budget.withDefaults(),
		order: list.New(), entries: map[string]*list.Element{},
		charts: &Cache{max: max(o.MaxEntries/4, 1), maxBytes: o.MaxBytes / 4, order: list.New(), entries: map[string]*list.Element{}}}
}

// cacheKeys are the cache keys one Load may use. The whole-data key is hashed only when a
// lookup needs it: a template-free package found by its config never hashes the Package's and
// HostedCluster's labels and annotations, which every settled pass would otherwise do.
type cacheKeys struct {
	// templated marks the directory at the commit as having templates.
	templated string
	// byConfig holds a template-free render; it also keys the first, deduplicated render.
	byConfig string
	// dir is the prefix of every key; data what the whole-data key hashes.
	dir  string
	data TemplateData
	// dataKey is the whole-data key once hashed.
	dataKey string
}

// newCacheKeys returns the keys of key for data.
func newCacheKeys(key Key, data TemplateData) (*cacheKeys, error) {
	configHash, err := hashConfig(data.Config)
	if err != nil {
		return nil, err
	}
	dir := key.Source + "\x00" + key.Commit + "\x00" + key.Dir + "\x00" + data.Component + "\x00" + data.Scope + "\x00"
	return &cacheKeys{templated: dir + "templated", byConfig: dir + "config\x00" + configHash, dir: dir, data: data}, nil
}

// byData returns the key that holds a templated render, hashing the data the first time.
func (k *cacheKeys) byData() (string, error) {
	if k.dataKey == "" {
		h, err := k.data.Hash()
		if err != nil {
			return "", err
		}
		k.dataKey = k.dir + "data\x00" + h
	}
	return k.dataKey, nil
}

// Load returns the render of key for data, calling open for the commit's filesystem and Load
// only when no render valid for data is cached or in flight.
func (c *Cache) Load(key Key, data TemplateData, open func() (fs.FS, error)) (*Rendered, error) {
	keys, err := newCacheKeys(key, data)
	if err != nil {
		return nil, err
	}
	if !c.isTemplated(keys) {
		e, err := c.loadByConfig(keys, key, data, open)
		if err != nil {
			return nil, err
		}
		if e != nil {
			return e.rendered, e.err
		}
	}
	e, err := c.loadByData(keys, key, data, open)
	if err != nil {
		return nil, err
	}
	return e.rendered, e.err
}

// loadByConfig answers from the config-level key, rendering for data under a flight keyed by
// it when nothing valid for data is cached. It returns nil (and no error) when the package turns
// out to have templates and the render in flight was for other data: the caller then loads by
// data.
func (c *Cache) loadByConfig(keys *cacheKeys, key Key, data TemplateData, open func() (fs.FS, error)) (*cacheEntry, error) {
	if e, ok, err := c.cachedFor(keys); err != nil || ok {
		if ok {
			c.hits.Add(1)
		}
		return e, err
	}
	rendered := false
	v, err, _ := c.flight.Do(keys.byConfig, func() (any, error) {
		if e, ok, err := c.cachedFor(keys); err != nil || ok {
			return e, err
		}
		if c.isTemplated(keys) {
			return (*cacheEntry)(nil), nil
		}
		rendered = true
		return c.render(keys, key, data, open)
	})
	if err != nil {
		return nil, err
	}
	e := v.(*cacheEntry)
	if rendered || e == nil {
		return e, nil
	}
	byData, err := keys.byData()
	if err != nil {
		return nil, err
	}
	if e.key == keys.byConfig || e.key == byData {
		c.hits.Add(1)
		return e, nil
	}
	return nil, nil
}

// loadByData answers from the whole-data key, rendering under a flight keyed by it on a miss.
func (c *Cache) loadByData(keys *cacheKeys, key Key, data TemplateData, open func() (fs.FS, error)) (*cacheEntry, error) {
	byData, err := keys.byData()
	if err != nil {
		return nil, err
	}
	if e, ok := c.get(byData); ok {
		c.hits.Add(1)
		return e, nil
	}
	rendered := false
	v, err, _ := c.flight.Do(byData, func() (any, error) {
		if e, ok := c.get(byData); ok {
			return e, nil
		}
		rendered = true
		return c.render(keys, key, data, open)
	})
	if err != nil {
		return nil, err
	}
	if !rendered {
		c.hits.Add(1)
	}
	return v.(*cacheEntry), nil
}

// render opens the commit and loads the package for data. Unless open failed or Load failed
// with something other than Errors, it caches the result: a template-free package's under the
// config-level key, a templated one's under the whole-data key, marking the directory templated.
func (c *Cache) render(keys *cacheKeys, key Key, data TemplateData, open func() (fs.FS, error)) (*cacheEntry, error) {
	c.misses.Add(1)
	fsys, err := open()
	if err != nil {
		return nil, fmt.Errorf("opening %s at %s: %w", key.Source, key.Commit, err)
	}
	data.renders = c
	r, templated, err := load(fsys, key.Dir, data, c.budget)
	e := &cacheEntry{key: keys.byConfig, rendered: r, err: err, size: entrySize(r, err)}
	if templated {
		byData, keyErr := keys.byData()
		if keyErr != nil {
			return nil, keyErr
		}
		e.key = byData
	}
	var loadErrs Errors
	if err != nil && !errors.As(err, &loadErrs) {
		return e, nil
	}
	if templated {
		c.put(&cacheEntry{key: keys.templated, marksTemplated: true})
	}
	c.put(e)
	return e, nil
}

// cachedFor returns a cached render valid for the data keys were made for: by config, or by
// the whole data (found there when the directory's templated mark was dropped before it).
func (c *Cache) cachedFor(keys *cacheKeys) (*cacheEntry, bool, error) {
	if e, ok := c.get(keys.byConfig); ok {
		return e, true, nil
	}
	byData, err := keys.byData()
	if err != nil {
		return nil, false, err
	}
	e, ok := c.get(byData)
	return e, ok, nil
}

// isTemplated reports whether the directory is marked as having templates.
func (c *Cache) isTemplated(keys *cacheKeys) bool {
	_, ok := c.get(keys.templated)
	return ok
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	n, size := len(c.entries)-c.markers, c.bytes
	c.mu.Unlock()
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Entries: n, Bytes: size,
		ChartRenders: c.chartRenders.Load(), ChartHits: c.chartHits.Load()}
}

// get returns a cached entry and marks it most recently used.
func (c *Cache) get(k string) (*cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry), true
}

// put stores an entry, dropping the least recently used beyond the bounds; an entry larger
// than the byte bound is not stored.
func (c *Cache) put(e *cacheEntry) {
	if e.size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[e.key]; ok {
		c.bytes += e.size - el.Value.(*cacheEntry).size
		el.Value = e
		c.order.MoveToFront(el)
	} else {
		c.entries[e.key] = c.order.PushFront(e)
		c.bytes += e.size
		if e.marksTemplated {
			c.markers++
		}
	}
	for c.order.Len() > c.max || c.bytes > c.maxBytes {
		last := c.order.Remove(c.order.Back()).(*cacheEntry)
		delete(c.entries, last.key)
		c.bytes -= last.size
		if last.marksTemplated {
			c.markers--
		}
	}
}

// entrySize is what a render, or its error, counts against the cache's byte bound.
func entrySize(r *Rendered, err error) int64 {
	if r != nil {
		return r.size
	}
	if err != nil {
		return int64(len(err.Error()))
	}
	return 0
}

// Hash returns a digest of the template data (SHA-256 of its canonical JSON, map keys sorted,
// with the digests of the environments' API versions), so that equal data hash equally
// whatever the order maps were built in.
func (d TemplateData) Hash() (string, error) {
	return hashJSON(struct {
		Data              TemplateData `json:"data"`
		APIVersions       string       `json:"apiVersions,omitempty"`
		HostedAPIVersions string       `json:"hostedAPIVersions,omitempty"`
	}{d, d.Environment.apiVersionsDigest(), d.HostedEnvironment.apiVersionsDigest()})
}

// hashConfig returns a digest of a config like Hash's; nil and empty hash equally, as Load
// treats them alike.
func hashConfig(config map[string]any) (string, error) {
	if len(config) == 0 {
		config = nil
	}
	return hashJSON(config)
}

// hashJSON returns the SHA-256 of v's JSON.
func hashJSON(v any) (string, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("hashing template data: %w", err)
	}
	sum := sha256.Sum256(j)
	return hex.EncodeToString(sum[:]), nil
}

// renderChart runs a chart's render request in a render process under budget b, once per
// distinct request while its result is cached: the request is everything that reaches the
// chart (its files or archive, the values after the per-cluster values files, the release's
// name and namespace, the Kubernetes version and API versions), so Packages of many clusters
// whose charts get equal inputs share one render. Each load still decodes and places the
// shared output itself. A nil Cache renders every time.
func (c *Cache) renderChart(req renderRequest, b RenderBudget) (*renderResult, error) {
	if c == nil {
		return renderIsolated(req, b)
	}
	digest, err := hashJSON(req)
	if err != nil {
		return nil, err
	}
	key := "chart\x00" + digest
	if e, ok := c.charts.get(key); ok {
		c.chartHits.Add(1)
		return e.chart, nil
	}
	rendered := false
	v, err, _ := c.charts.flight.Do(key, func() (any, error) {
		if e, ok := c.charts.get(key); ok {
			return e.chart, nil
		}
		rendered = true
		c.chartRenders.Add(1)
		res, err := renderIsolated(req, b)
		if err != nil {
			return nil, err
		}
		c.charts.put(&cacheEntry{key: key, chart: res, size: res.size()})
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	if !rendered {
		c.chartHits.Add(1)
	}
	return v.(*renderResult), nil
}
