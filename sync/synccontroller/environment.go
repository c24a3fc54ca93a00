package synccontroller

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/manifests"
)

// +kubebuilder:rbac:groups=config.openshift.io,resources=clusterversions;proxies,verbs=get

// environmentTTL is how long the management cluster's environment is reused before it is read
// again: versions and the proxy change rarely, and every Package renders with it.
const environmentTTL = time.Minute

// ClusterEnvironment reads the environment Package Operator packages are rendered for from the
// management cluster: the Kubernetes version from discovery, and, on OpenShift, the
// ClusterVersion's version and the cluster-wide Proxy. It caches the answer for environmentTTL
// and is safe for concurrent use.
type ClusterEnvironment struct {
	// Discovery reads the API server's version.
	Discovery discovery.ServerVersionInterface
	// Reader reads ClusterVersion and Proxy (uncached: they are read once a minute at most).
	Reader client.Reader

	mu   sync.Mutex
	env  *manifests.Environment
	read time.Time
}

// Get returns the environment, read again when older than environmentTTL. The caller must not
// change it.
func (c *ClusterEnvironment) Get(ctx context.Context) (*manifests.Environment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.env != nil && time.Since(c.read) < environmentTTL {
		return c.env, nil
	}
	env, err := c.readEnvironment(ctx)
	if err != nil {
		return nil, err
	}
	c.env, c.read = env, time.Now()
	return env, nil
}

// readEnvironment reads the environment from the cluster.
func (c *ClusterEnvironment) readEnvironment(ctx context.Context) (*manifests.Environment, error) {
	v, err := c.Discovery.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the Kubernetes version of the management cluster: %w", err)
	}
	env := &manifests.Environment{Kubernetes: manifests.KubernetesEnvironment{Version: v.GitVersion}}
	cv, err := c.getOpenShift(ctx, "ClusterVersion", "version")
	if err != nil || cv == nil {
		return env, err
	}
	version, _, _ := unstructured.NestedString(cv.Object, "status", "desired", "version")
	env.OpenShift = &manifests.OpenShiftEnvironment{Version: version}
	proxy, err := c.getOpenShift(ctx, "Proxy", "cluster")
	if err != nil || proxy == nil {
		return env, err
	}
	p := manifests.ProxyEnvironment{}
	p.HTTPProxy, _, _ = unstructured.NestedString(proxy.Object, "status", "httpProxy")
	p.HTTPSProxy, _, _ = unstructured.NestedString(proxy.Object, "status", "httpsProxy")
	p.NoProxy, _, _ = unstructured.NestedString(proxy.Object, "status", "noProxy")
	if p != (manifests.ProxyEnvironment{}) {
		env.Proxy = &p
	}
	return env, nil
}

// getOpenShift reads a cluster-scoped config.openshift.io/v1 object; nil when the cluster has
// no such kind (it is not OpenShift) or no such object.
func (c *ClusterEnvironment) getOpenShift(ctx context.Context, kind, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("config.openshift.io/v1")
	u.SetKind(kind)
	err := c.Reader.Get(ctx, client.ObjectKey{Name: name}, u)
	switch {
	case apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) || discovery.IsGroupDiscoveryFailedError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the %s %q of the management cluster: %w", kind, name, err)
	}
	return u, nil
}
