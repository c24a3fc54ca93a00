package synccontroller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sync/hosted"
)

// +kubebuilder:rbac:groups=config.openshift.io,resources=clusterversions;proxies,verbs=get

// environmentTTL is how long the management cluster's environment is reused before it is read
// again: versions and the proxy change rarely, and every Package renders with it.
const environmentTTL = time.Minute

// Where managed OpenShift (OSD, ROSA) keeps the data of .environment.openShift.managed.
const (
	managedOpenShiftNamespace = "openshift-config"
	managedOpenShiftConfigMap = "osd-cluster-metadata"
)

// ClusterEnvironment reads the environment Package Operator packages are rendered for from the
// management cluster, as Package Operator does: the Kubernetes version from discovery; on
// OpenShift, the version of the ClusterVersion's latest completed update, the managed-OpenShift
// metadata and the cluster-wide Proxy; on a HyperShift management cluster (one that serves
// HostedClusters), .hyperShift, whose hostedCluster the Package's own HostedCluster fills. It
// caches the answer for environmentTTL and is safe for concurrent use.
type ClusterEnvironment struct {
	// Discovery reads the API server's version.
	Discovery discovery.ServerVersionInterface
	// Reader reads ClusterVersion, Proxy and the managed-OpenShift ConfigMap (uncached: they
	// are read once a minute at most).
	Reader client.Reader
	// Mapper tells whether the cluster serves HostedClusters.
	Mapper apimeta.RESTMapper

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
	if _, err := c.Mapper.RESTMapping(hosted.HostedClusterGVK.GroupKind(), hosted.HostedClusterGVK.Version); err == nil {
		env.HyperShift = &manifests.HyperShiftEnvironment{}
	}
	cv, err := c.getOpenShift(ctx, "ClusterVersion", "version")
	if err != nil || cv == nil {
		return env, err
	}
	env.OpenShift = &manifests.OpenShiftEnvironment{Version: completedVersion(cv)}
	if env.OpenShift.Managed, err = c.managedOpenShift(ctx); err != nil {
		return nil, err
	}
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

// completedVersion returns the version of a ClusterVersion's latest completed update (its
// status.history is newest first), or "".
func completedVersion(cv *unstructured.Unstructured) string {
	history, _, _ := unstructured.NestedSlice(cv.Object, "status", "history")
	for _, h := range history {
		if m, ok := h.(map[string]any); ok && m["state"] == "Completed" {
			v, _ := m["version"].(string)
			return v
		}
	}
	return ""
}

// managedOpenShift returns the managed-OpenShift metadata; nil on a cluster that has none.
func (c *ClusterEnvironment) managedOpenShift(ctx context.Context) (*manifests.ManagedOpenShiftEnvironment, error) {
	cm := &corev1.ConfigMap{}
	err := c.Reader.Get(ctx, client.ObjectKey{Namespace: managedOpenShiftNamespace, Name: managedOpenShiftConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the ConfigMap %s/%s: %w", managedOpenShiftNamespace, managedOpenShiftConfigMap, err)
	}
	return &manifests.ManagedOpenShiftEnvironment{Data: cm.Data}, nil
}
