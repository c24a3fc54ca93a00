package synccontroller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sync/engine"
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
	// Resources reads the API groups and resources the cluster serves, which charts see as
	// .Capabilities.APIVersions (apiVersionsTTL); nil leaves Helm's built-in set.
	Resources discovery.ServerResourcesInterface

	apiVersions apiVersionsMemo
	mu          sync.Mutex
	env         *manifests.Environment
	read        time.Time
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
	if err := readOpenShift(ctx, c.Reader, "the management cluster", env); err != nil {
		return nil, err
	}
	return env, nil
}

// readOpenShift fills in env's OpenShift parts from the cluster reader reads (called where in
// messages): the version of the ClusterVersion's latest completed update, the managed-OpenShift
// metadata and the cluster-wide Proxy. A cluster that is not OpenShift leaves them nil.
func readOpenShift(ctx context.Context, reader client.Reader, where string, env *manifests.Environment) error {
	cv, err := getOpenShift(ctx, reader, where, "ClusterVersion", "version")
	if err != nil || cv == nil {
		return err
	}
	env.OpenShift = &manifests.OpenShiftEnvironment{Version: completedVersion(cv)}
	if env.OpenShift.Managed, err = managedOpenShift(ctx, reader); err != nil {
		return err
	}
	proxy, err := getOpenShift(ctx, reader, where, "Proxy", "cluster")
	if err != nil || proxy == nil {
		return err
	}
	p := manifests.ProxyEnvironment{}
	p.HTTPProxy, _, _ = unstructured.NestedString(proxy.Object, "status", "httpProxy")
	p.HTTPSProxy, _, _ = unstructured.NestedString(proxy.Object, "status", "httpsProxy")
	p.NoProxy, _, _ = unstructured.NestedString(proxy.Object, "status", "noProxy")
	if p != (manifests.ProxyEnvironment{}) {
		env.Proxy = &p
	}
	return nil
}

// getOpenShift reads a cluster-scoped config.openshift.io/v1 object; nil when the cluster has
// no such kind (it is not OpenShift) or no such object.
func getOpenShift(ctx context.Context, reader client.Reader, where, kind, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("config.openshift.io/v1")
	u.SetKind(kind)
	err := reader.Get(ctx, client.ObjectKey{Name: name}, u)
	switch {
	case apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) || discovery.IsGroupDiscoveryFailedError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the %s %q of %s: %w", kind, name, where, err)
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
func managedOpenShift(ctx context.Context, reader client.Reader) (*manifests.ManagedOpenShiftEnvironment, error) {
	cm := &corev1.ConfigMap{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: managedOpenShiftNamespace, Name: managedOpenShiftConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the ConfigMap %s/%s: %w", managedOpenShiftNamespace, managedOpenShiftConfigMap, err)
	}
	return &manifests.ManagedOpenShiftEnvironment{Data: cm.Data}, nil
}

// HostedEnvironments reads the environment of each hosted cluster from the hosted cluster
// itself, as Package Operator running inside it sees it: its Kubernetes version from its API
// server; on OpenShift, its ClusterVersion's completed version, its managed-OpenShift
// metadata and its Proxy; never .hyperShift (a hosted cluster serves no HostedClusters). Any
// renderer of objects bound for a hosted cluster asks it. Each cluster's answer is cached for
// environmentTTL; it is safe for concurrent use.
type HostedEnvironments struct {
	// Clients reach the hosted clusters.
	Clients *hosted.Clients

	// apiVersions caches, by HCP namespace, the API versions of the hosted clusters that chart
	// packages are rendered for.
	apiVersions apiVersionsMemo
	mu          sync.Mutex
	byNS        map[string]*environmentRead
}

// environmentRead is an environment and when it was read.
type environmentRead struct {
	env  *manifests.Environment
	read time.Time
}

// Get returns the environment of the hosted cluster of namespace, whose kubeconfig is in ref
// (nil for the default Secret). The caller must not change it. Errors are classified: missing
// or refused credentials and an unreachable cluster wait or stall as applying would.
func (h *HostedEnvironments) Get(ctx context.Context, namespace string, ref *convoyv1alpha1.SecretKeyReference) (*manifests.Environment, error) {
	now := time.Now()
	h.mu.Lock()
	cached := h.byNS[namespace]
	h.mu.Unlock()
	if cached != nil && now.Sub(cached.read) < environmentTTL {
		return cached.env, nil
	}
	env, err := h.read(ctx, namespace, ref)
	if err != nil {
		return nil, hostedEnvironmentError(namespace, err)
	}
	h.store(namespace, &environmentRead{env: env, read: now})
	return env, nil
}

// read reads the environment of one hosted cluster.
func (h *HostedEnvironments) read(ctx context.Context, namespace string, ref *convoyv1alpha1.SecretKeyReference) (*manifests.Environment, error) {
	cl, err := h.Clients.Client(ctx, namespace, ref)
	if err != nil {
		return nil, err
	}
	v, err := h.Clients.ServerVersion(ctx, namespace, ref)
	if err != nil {
		return nil, fmt.Errorf("reading the Kubernetes version of the hosted cluster of namespace %s: %w", namespace, err)
	}
	env := &manifests.Environment{Kubernetes: manifests.KubernetesEnvironment{Version: v.GitVersion}}
	if err := readOpenShift(ctx, cl, "the hosted cluster of namespace "+namespace, env); err != nil {
		return nil, err
	}
	return env, nil
}

// store caches the environment of namespace and forgets those not read again for ten TTLs
// (their hosted clusters are gone, or no longer need it).
func (h *HostedEnvironments) store(namespace string, e *environmentRead) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byNS == nil {
		h.byNS = map[string]*environmentRead{}
	}
	for ns, old := range h.byNS {
		if e.read.Sub(old.read) > 10*environmentTTL {
			delete(h.byNS, ns)
		}
	}
	h.byNS[namespace] = e
}

// hostedEnvironmentError classifies a failure to read a hosted cluster's environment.
func hostedEnvironmentError(namespace string, err error) error {
	var unreachable *hosted.UnreachableError
	if errors.As(err, &unreachable) {
		return pass.Waitf(convoyv1alpha1.HostedClusterUnreachableReason, engine.UnreachableInterval,
			"cannot read the environment of the hosted cluster of namespace %s: %w", namespace, err)
	}
	return hostedClientError(err)
}
