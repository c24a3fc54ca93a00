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

// DefaultCacheSize is the number of renders a Cache keeps when NewCache is given zero.
const DefaultCacheSize = 512

// Key names a package directory at one commit of one source.
type Key struct {
	// Source identifies the source, for example the GitSource's namespace/name.
	Source string
	// Commit is the commit the directory is read at.
	Commit string
	// Dir is the package directory inside the source.
	Dir string
}

// Cache memoizes Load by (source, commit, directory, hash of the template data). It is bounded
// (least recently used renders are dropped first) and safe for concurrent use; concurrent
// loads of the same inputs render once and share the result.
//
// Results are shared: callers must treat a returned *Rendered as immutable and DeepCopy it (or
// the objects they change) before mutating anything. Load errors (Errors) are cached as well,
// since rendering is pure; errors from opening the filesystem are not.
type Cache struct {
	max     int
	mu      sync.Mutex
	order   *list.List // of *cacheEntry, most recently used first
	entries map[string]*list.Element
	flight  singleflight.Group
	hits    atomic.Int64
	misses  atomic.Int64
}

// cacheEntry is one memoized render.
type cacheEntry struct {
	key      string
	rendered *Rendered
	err      error
}

// CacheStats counts lookups.
type CacheStats struct {
	// Hits is the number of loads answered from the cache, or by sharing a concurrent render.
	Hits int64
	// Misses is the number of renders performed.
	Misses int64
	// Entries is the number of renders held.
	Entries int
}

// NewCache returns a cache holding at most maxEntries renders (DefaultCacheSize when zero or
// negative).
func NewCache(maxEntries int) *Cache {
	if maxEntries <= 0 {
		maxEntries = DefaultCacheSize
	}
	return &Cache{max: maxEntries, order: list.New(), entries: map[string]*list.Element{}}
}

// Load returns the render of key for data, calling open for the commit's filesystem and Load
// only when no render of the same inputs is cached or in flight.
func (c *Cache) Load(key Key, data TemplateData, open func() (fs.FS, error)) (*Rendered, error) {
	hash, err := data.Hash()
	if err != nil {
		return nil, err
	}
	k := key.Source + "\x00" + key.Commit + "\x00" + key.Dir + "\x00" + hash
	if e, ok := c.get(k); ok {
		c.hits.Add(1)
		return e.rendered, e.err
	}
	rendered := false
	v, err, _ := c.flight.Do(k, func() (any, error) {
		if e, ok := c.get(k); ok {
			return e, nil
		}
		rendered = true
		c.misses.Add(1)
		fsys, err := open()
		if err != nil {
			return nil, fmt.Errorf("opening %s at %s: %w", key.Source, key.Commit, err)
		}
		r, err := Load(fsys, key.Dir, data)
		e := &cacheEntry{key: k, rendered: r, err: err}
		var loadErrs Errors
		if err == nil || errors.As(err, &loadErrs) {
			c.put(e)
		}
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	if !rendered {
		c.hits.Add(1)
	}
	e := v.(*cacheEntry)
	return e.rendered, e.err
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	n := len(c.entries)
	c.mu.Unlock()
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Entries: n}
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

// put stores an entry, dropping the least recently used beyond the bound.
func (c *Cache) put(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[e.key]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	c.entries[e.key] = c.order.PushFront(e)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).key)
	}
}

// Hash returns a digest of the template data (SHA-256 of its canonical JSON, map keys sorted),
// so that equal data hash equally whatever the order maps were built in.
func (d TemplateData) Hash() (string, error) {
	j, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("hashing template data: %w", err)
	}
	sum := sha256.Sum256(j)
	return hex.EncodeToString(sum[:]), nil
}
