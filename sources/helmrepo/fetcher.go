package helmrepo

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/dialpolicy"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sources"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds one fetch (index and archive), as a GitSource's default timeout
	// bounds one Git operation.
	DefaultTimeout = convoyv1alpha1.DefaultGitSourceTimeout
	// DefaultMaxIndexSize bounds a repository's index.yaml.
	DefaultMaxIndexSize = 32 << 20
	// DefaultMaxChartSize bounds a packaged chart as the Git store of a default controller
	// bounds one file it fetches (--git-max-file-size).
	DefaultMaxChartSize = sources.DefaultMaxFileSize
	// DefaultCacheBytes bounds the charts kept in memory.
	DefaultCacheBytes = 64 << 20
)

// Options configure a Fetcher.
type Options struct {
	// Timeout bounds one fetch; DefaultTimeout when zero.
	Timeout time.Duration
	// MaxIndexSize and MaxChartSize bound what is downloaded; defaults when zero.
	MaxIndexSize int64
	MaxChartSize int64
	// CacheBytes bounds the charts kept by digest; DefaultCacheBytes when zero.
	CacheBytes int64
	// Client makes the requests; when nil, New makes one that connects only where Network
	// allows and follows redirects to the same host only (unless AllowRedirectsToOtherHosts).
	Client *http.Client
	// Network says which addresses chart repositories may be reached at: no link-local or
	// metadata address unless allowed (--allow-link-local-addresses).
	Network dialpolicy.Policy
	// AllowRedirectsToOtherHosts lets a chart repository's answer redirect the request to
	// another scheme, host or port (--chart-allow-redirects-to-other-hosts).
	AllowRedirectsToOtherHosts bool
}

// Fetcher fetches packaged charts from Helm repositories and keeps them by digest. It is safe
// for concurrent use; concurrent fetches of one digest download once.
type Fetcher struct {
	opts   Options
	flight singleflight.Group
	mu     sync.Mutex
	bytes  int64
	order  *list.List // of *entry, most recently used first
	byKey  map[string]*list.Element
}

// entry is a cached chart.
type entry struct {
	key  string
	data []byte
}

// New returns a Fetcher configured by o.
func New(o Options) *Fetcher {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxIndexSize <= 0 {
		o.MaxIndexSize = DefaultMaxIndexSize
	}
	if o.MaxChartSize <= 0 {
		o.MaxChartSize = DefaultMaxChartSize
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.Client == nil {
		o.Client = newClient(o)
	}
	return &Fetcher{opts: o, order: list.New(), byKey: map[string]*list.Element{}}
}

// FetchChart returns the packaged chart ref names: from memory when the chart of its name,
// version and digest was fetched before, else from the repository. A chart whose digest is not ref's is returned but
// not kept (manifests.Load refuses it).
func (f *Fetcher) FetchChart(ref manifests.ChartRef) ([]byte, error) {
	return f.fetch(ref, f.opts.Timeout)
}

// WithTimeout returns f fetching under timeout (a GitSource's spec.timeout) instead of
// Options.Timeout; the charts kept are shared. A zero timeout keeps Options.Timeout.
func (f *Fetcher) WithTimeout(timeout time.Duration) manifests.ChartFetcher {
	if timeout <= 0 {
		timeout = f.opts.Timeout
	}
	return timedFetcher{f: f, timeout: timeout}
}

// timedFetcher is a Fetcher under another timeout.
type timedFetcher struct {
	f       *Fetcher
	timeout time.Duration
}

// FetchChart is Fetcher.FetchChart under the timeout.
func (t timedFetcher) FetchChart(ref manifests.ChartRef) ([]byte, error) {
	return t.f.fetch(ref, t.timeout)
}

// fetch returns the chart ref names, downloading it under timeout when no chart of its digest
// is kept.
func (f *Fetcher) fetch(ref manifests.ChartRef, timeout time.Duration) ([]byte, error) {
	key := cacheKey(ref)
	if data, ok := f.get(key); ok {
		return data, nil
	}
	v, err, _ := f.flight.Do(key+"\x00"+ref.Repository, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		data, err := f.download(ctx, ref)
		if err != nil {
			return nil, err
		}
		if Digest(data) == ref.Digest {
			f.put(key, data)
		}
		return data, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// cacheKey keys a chart kept: its digest, name and version. The digest alone would answer a
// version bump that pins an older version's digest with that older chart, rather than with the
// refusal of the new one's digest.
func cacheKey(ref manifests.ChartRef) string {
	return ref.Digest + "\x00" + ref.Name + "\x00" + ref.Version
}

// Digest returns "sha256:" and the hex SHA-256 of a packaged chart, as manifests pin it.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// download resolves ref in its repository's index and downloads the archive, or pulls it from
// an OCI registry.
func (f *Fetcher) download(ctx context.Context, ref manifests.ChartRef) ([]byte, error) {
	if strings.HasPrefix(ref.Repository, OCIScheme) {
		return f.downloadOCI(ctx, ref)
	}
	base, err := url.Parse(strings.TrimSuffix(ref.Repository, "/") + "/")
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return nil, fmt.Errorf("repository %q is not an http(s) or oci:// URL", ref.Repository)
	}
	raw, err := f.getURL(ctx, base.JoinPath("index.yaml").String(), f.opts.MaxIndexSize)
	if err != nil {
		return nil, fmt.Errorf("reading the repository's index: %w", err)
	}
	chartURL, err := chartURL(raw, base, ref)
	if err != nil {
		return nil, err
	}
	return f.getURL(ctx, chartURL, f.opts.MaxChartSize)
}

// index is the part of a repository's index.yaml a fetch reads.
type index struct {
	Entries map[string][]struct {
		Version string   `json:"version"`
		URLs    []string `json:"urls"`
	} `json:"entries"`
}

// chartURL finds the URL of ref's archive in an index, resolved against the repository's URL.
func chartURL(raw []byte, base *url.URL, ref manifests.ChartRef) (string, error) {
	var idx index
	if err := yaml.Unmarshal(raw, &idx); err != nil {
		return "", fmt.Errorf("the repository's index.yaml: %w", err)
	}
	for _, v := range idx.Entries[ref.Name] {
		if v.Version != ref.Version && strings.TrimPrefix(v.Version, "v") != strings.TrimPrefix(ref.Version, "v") {
			continue
		}
		if len(v.URLs) == 0 {
			return "", fmt.Errorf("the repository's index lists no URL for chart %s version %s", ref.Name, ref.Version)
		}
		u, err := base.Parse(v.URLs[0])
		if err != nil {
			return "", fmt.Errorf("chart URL %q: %w", v.URLs[0], err)
		}
		return u.String(), nil
	}
	return "", fmt.Errorf("the repository has no chart %s version %s", ref.Name, ref.Version)
}

// getURL downloads u, failing past max bytes.
func (f *Fetcher) getURL(ctx context.Context, u string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if err := f.opts.Network.CheckHost(req.URL.Hostname()); err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	resp, err := f.opts.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return readLimited(resp.Body, max, "GET "+u)
}

// get returns a cached chart and marks it most recently used.
func (f *Fetcher) get(key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	el, ok := f.byKey[key]
	if !ok {
		return nil, false
	}
	f.order.MoveToFront(el)
	return el.Value.(*entry).data, true
}

// put keeps a chart, dropping the least recently used beyond the byte bound.
func (f *Fetcher) put(key string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.byKey[key]; ok || int64(len(data)) > f.opts.CacheBytes {
		return
	}
	f.byKey[key] = f.order.PushFront(&entry{key: key, data: data})
	f.bytes += int64(len(data))
	for f.bytes > f.opts.CacheBytes {
		last := f.order.Remove(f.order.Back()).(*entry)
		delete(f.byKey, last.key)
		f.bytes -= int64(len(last.data))
	}
}
