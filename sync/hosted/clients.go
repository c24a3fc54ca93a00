package hosted

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Defaults of Options.
const (
	// DefaultQPS is the default of Options.QPS.
	DefaultQPS = 50
	// DefaultBurst is the default of Options.Burst.
	DefaultBurst = 100
	// DefaultTimeout is the default of Options.Timeout.
	DefaultTimeout = 15 * time.Second
	// DefaultIdleTimeout is the default of Options.IdleTimeout.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultConnectTimeout is the default of Options.ConnectTimeout.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultUnreachableBackoff is the default of Options.UnreachableBackoff.
	DefaultUnreachableBackoff = 5 * time.Second
	// DefaultMaxUnreachableBackoff is the default of Options.MaxUnreachableBackoff.
	DefaultMaxUnreachableBackoff = 2 * time.Minute
	// DefaultMaxProbes is the default of Options.MaxProbes.
	DefaultMaxProbes = 1
)

// ErrNoKubeconfig is returned (wrapped) when the kubeconfig Secret or its key is missing.
var ErrNoKubeconfig = errors.New("no kubeconfig")

// Options tune the clients of hosted clusters.
type Options struct {
	// QPS limits the requests per second of each hosted client; default 50.
	QPS float32
	// Burst is the burst of each hosted client; default 100.
	Burst int
	// Timeout bounds each request to a hosted API server, from dialling to the end of the
	// body; default 15s.
	Timeout time.Duration
	// ConnectTimeout bounds the TCP connect and the TLS handshake; default 5s.
	ConnectTimeout time.Duration
	// UnreachableBackoff is how long requests to a hosted cluster fail at once after one got
	// no answer; it doubles with each failure in a row up to MaxUnreachableBackoff. Default 5s.
	UnreachableBackoff time.Duration
	// MaxUnreachableBackoff caps UnreachableBackoff; default 2m.
	MaxUnreachableBackoff time.Duration
	// MaxProbes is the number of requests that may try unreachable hosted clusters at once,
	// across all of them: the circuits' probes, sent in the background, never by a worker.
	// Default 1.
	MaxProbes int
	// IdleTimeout drops a client unused that long; default 10m.
	IdleTimeout time.Duration
	// MaxResponseBytes bounds each answer of a hosted API server, decompressed; a longer one
	// fails with a *ResponseTooLargeError. Default DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Scheme of the clients; default client-go's.
	Scheme *runtime.Scheme
	// Kubeconfig says what a kubeconfig Secret may ask for beyond plain data; the zero value
	// refuses exec, auth-provider, file references, proxy-url and insecure-skip-tls-verify.
	Kubeconfig KubeconfigPolicy
}

func (o Options) withDefaults() Options {
	if o.QPS <= 0 {
		o.QPS = DefaultQPS
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.UnreachableBackoff <= 0 {
		o.UnreachableBackoff = DefaultUnreachableBackoff
	}
	if o.MaxUnreachableBackoff < o.UnreachableBackoff {
		o.MaxUnreachableBackoff = max(DefaultMaxUnreachableBackoff, o.UnreachableBackoff)
	}
	if o.MaxProbes <= 0 {
		o.MaxProbes = DefaultMaxProbes
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.Scheme == nil {
		o.Scheme = clientgoscheme.Scheme
	}
	return o
}

// Clients hands out clients of hosted clusters, built from kubeconfig Secrets on the
// management cluster and cached per Secret until its resourceVersion changes or the client has
// been idle for Options.IdleTimeout. Every client has a circuit: once a request to its
// cluster gets no answer, its requests fail at once with an *UnreachableError until a backoff
// has passed, and then a probe tries the cluster in the background, Options.MaxProbes at a
// time across all clusters. It is safe for concurrent use.
type Clients struct {
	reader    client.Reader
	apiReader client.Reader
	opts      Options
	now       func() time.Time
	probes    chan struct{}
	// handshakes derives, from the handshakes of every cluster, how long a request waits for
	// a pending one.
	handshakes handshakes

	mu      sync.Mutex
	entries map[secretKey]*entry
}

// secretKey names one key of one Secret.
type secretKey struct{ namespace, name, key string }

// entry is a cached client.
type entry struct {
	resourceVersion string
	client          client.Client
	discovery       discovery.DiscoveryInterface
	http            *http.Client
	lastUsed        time.Time
}

// NewClients returns a client cache. reader reads Secret metadata (a manager's cached client
// with a metadata-only Secret informer is ideal); apiReader reads the Secret's data, only when
// its resourceVersion changed.
func NewClients(reader, apiReader client.Reader, opts Options) *Clients {
	opts = opts.withDefaults()
	return &Clients{reader: reader, apiReader: apiReader, opts: opts, now: time.Now,
		probes: make(chan struct{}, opts.MaxProbes), entries: map[secretKey]*entry{}}
}

// Client returns a client of the hosted cluster whose kubeconfig is in the Secret ref of
// namespace; a nil ref means service-network-admin-kubeconfig/kubeconfig.
func (c *Clients) Client(ctx context.Context, namespace string, ref *convoyv1alpha1.SecretKeyReference) (client.Client, error) {
	e, err := c.entryFor(ctx, namespace, ref)
	if err != nil {
		return nil, err
	}
	return e.client, nil
}

// ServerVersion returns the version of the hosted cluster's API server, reached as Client
// reaches it (same credentials, circuit and limits).
func (c *Clients) ServerVersion(ctx context.Context, namespace string, ref *convoyv1alpha1.SecretKeyReference) (*version.Info, error) {
	e, err := c.entryFor(ctx, namespace, ref)
	if err != nil {
		return nil, err
	}
	return e.discovery.ServerVersion()
}

// ServerGroupsAndResources returns the API groups and resources the hosted cluster serves,
// from its discovery, reached as Client reaches it. A group that failed discovery is left out,
// with the error naming it; the rest is returned.
func (c *Clients) ServerGroupsAndResources(ctx context.Context, namespace string, ref *convoyv1alpha1.SecretKeyReference) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	e, err := c.entryFor(ctx, namespace, ref)
	if err != nil {
		return nil, nil, err
	}
	return e.discovery.ServerGroupsAndResources()
}

// entryFor returns the cached entry of the Secret ref of namespace, built again when the
// Secret changed.
func (c *Clients) entryFor(ctx context.Context, namespace string, ref *convoyv1alpha1.SecretKeyReference) (*entry, error) {
	key := keyFor(namespace, ref)
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := c.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: key.name}, meta); err != nil {
		return nil, secretError(key, err)
	}
	if e := c.cached(key, meta.ResourceVersion); e != nil {
		return e, nil
	}
	secret := &corev1.Secret{}
	if err := c.apiReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: key.name}, secret); err != nil {
		return nil, secretError(key, err)
	}
	e, err := c.build(key, secret)
	if err != nil {
		return nil, err
	}
	c.store(key, e)
	return e, nil
}

// keyFor defaults ref.
func keyFor(namespace string, ref *convoyv1alpha1.SecretKeyReference) secretKey {
	key := secretKey{namespace: namespace, name: convoyv1alpha1.KubeconfigSecretName, key: convoyv1alpha1.KubeconfigSecretKey}
	if ref != nil {
		key.name = ref.Name
		if ref.Key != "" {
			key.key = ref.Key
		}
	}
	return key
}

func secretError(key secretKey, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: Secret %s/%s not found", ErrNoKubeconfig, key.namespace, key.name)
	}
	return fmt.Errorf("reading Secret %s/%s: %w", key.namespace, key.name, err)
}

// cached returns the cached entry of key if it was built from resourceVersion.
func (c *Clients) cached(key secretKey, resourceVersion string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil || e.resourceVersion != resourceVersion {
		return nil
	}
	e.lastUsed = c.now()
	return e
}

// store caches e, dropping the client it replaces.
func (c *Clients) store(key secretKey, e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[key]; old != nil {
		old.http.CloseIdleConnections()
	}
	e.lastUsed = c.now()
	c.entries[key] = e
}

// Len returns the number of cached clients.
func (c *Clients) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Sweep drops the clients unused for IdleTimeout.
func (c *Clients) Sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	cutoff := c.now().Add(-c.opts.IdleTimeout)
	for k, e := range c.entries {
		if e.lastUsed.Before(cutoff) {
			e.http.CloseIdleConnections()
			delete(c.entries, k)
		}
	}
}

// Start sweeps idle clients until ctx is done; it makes Clients a manager Runnable.
func (c *Clients) Start(ctx context.Context) error {
	t := time.NewTicker(c.opts.IdleTimeout / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			c.Sweep()
		}
	}
}

// NeedLeaderElection returns false: every replica may sweep its own cache.
func (c *Clients) NeedLeaderElection() bool { return false }
