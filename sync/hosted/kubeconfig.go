package hosted

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// inClusterHost is the short host of the kubeconfig HyperShift writes into an HCP namespace.
const inClusterHost = "kube-apiserver"

// build makes a client from the kubeconfig in secret.
func (c *Clients) build(key secretKey, secret *corev1.Secret) (*entry, error) {
	raw, ok := secret.Data[key.key]
	if !ok || len(raw) == 0 {
		return nil, fmt.Errorf("%w: Secret %s/%s has no key %q", ErrNoKubeconfig, key.namespace, key.name, key.key)
	}
	cfg, err := RESTConfig(raw, key.namespace, c.opts.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s key %q: %w", key.namespace, key.name, key.key, err)
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = c.opts.QPS, c.opts.Burst, c.opts.Timeout
	c.guard(cfg)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", key.namespace, key.name, err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", key.namespace, key.name, err)
	}
	cl, err := client.New(cfg, client.Options{HTTPClient: httpClient, Mapper: mapper, Scheme: c.opts.Scheme})
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", key.namespace, key.name, err)
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", key.namespace, key.name, err)
	}
	return &entry{resourceVersion: secret.ResourceVersion, client: cl, discovery: disc, http: httpClient}, nil
}

// guard bounds the connect and TLS handshake of cfg's transport, puts a circuit in front of
// it, which every new connection's handshake reports to, and bounds the size of each answer
// in front of the circuit: an answer too large is an answer all the same. Note: a custom dialer also gives
// each client its own transport, so that the connections of one hosted cluster never wait
// behind another's.
func (c *Clients) guard(cfg *rest.Config) {
	cb := &circuit{host: cfg.Host, probes: c.probes, base: c.opts.UnreachableBackoff,
		cap: c.opts.MaxUnreachableBackoff, timeout: c.opts.Timeout, now: c.now}
	dialer := &net.Dialer{Timeout: c.opts.ConnectTimeout, KeepAlive: 30 * time.Second}
	tls := strings.HasPrefix(cfg.Host, "https://")
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil || !tls {
			return conn, err
		}
		return c.handshakes.watch(conn, cb, c.opts.ConnectTimeout), nil
	}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		cb.next = rt
		return &capped{host: cfg.Host, limit: c.opts.MaxResponseBytes, next: cb}
	}
}

// RESTConfig parses a kubeconfig from the HCP namespace, refuses what policy does not allow
// (a *KubeconfigRefusedError) and rewrites its server's host kube-apiserver, which only
// resolves inside that namespace, to kube-apiserver.<namespace>.svc, keeping the scheme, port
// and path. Any other server is kept.
func RESTConfig(kubeconfig []byte, namespace string, policy KubeconfigPolicy) (*rest.Config, error) {
	parsed, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("invalid kubeconfig: %w", err)
	}
	if err := policy.Check(parsed); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*parsed, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("invalid kubeconfig: %w", err)
	}
	host, err := rewriteHost(cfg.Host, namespace)
	if err != nil {
		return nil, err
	}
	cfg.Host = host
	return cfg, nil
}

// rewriteHost rewrites the host of server when it is kube-apiserver.
func rewriteHost(server, namespace string) (string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", fmt.Errorf("invalid server URL %q: %w", server, err)
	}
	if u.Hostname() != inClusterHost {
		return server, nil
	}
	host := inClusterHost + "." + namespace + ".svc"
	if port := u.Port(); port != "" {
		host = net.JoinHostPort(host, port)
	}
	u.Host = host
	return u.String(), nil
}
