package synccontroller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/convoy-gitops/convoy/manifests"
)

// How long the API versions a cluster serves are reused before its discovery is read again.
// Every chart package rendered for a cluster shares one read, so a thousand hosted clusters
// cost a discovery read each per apiVersionsTTL (two requests with aggregated discovery), never
// one per render. A read in which some group failed discovery (an aggregated API down) is
// kept only for partialAPIVersionsTTL, so the missing group comes back soon.
const (
	apiVersionsTTL        = 2 * time.Minute
	partialAPIVersionsTTL = 10 * time.Second
)

// maxAPIVersions bounds the API versions of one cluster that reach a chart. A hosted
// cluster's tenant decides its CRDs, and the set travels into every chart render request of
// that cluster and into its render cache key; a cluster serving more (a real cluster serves a
// few thousand) gets a clear error instead of a render.
const maxAPIVersions = 20000

// sharedReadTimeout bounds a discovery read shared by the Packages of one cluster: it runs
// apart from the context of the caller that started it, so that this caller ending (its
// pass cancelled) fails none of the others.
const sharedReadTimeout = time.Minute

// discoveryReader reads the API groups and resources of one cluster.
type discoveryReader func(ctx context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error)

// apiVersionsMemo caches the API versions of clusters, by a key naming the cluster ("" for
// the management cluster, the HCP namespace for a hosted cluster). Safe for concurrent use:
// the Packages of one cluster that miss the cache together share one discovery read. The zero
// value is empty.
type apiVersionsMemo struct {
	mu    sync.Mutex
	byKey map[string]apiVersionsRead
	reads singleflight.Group
}

// apiVersionsRead is a cluster's API versions and until when they are reused.
type apiVersionsRead struct {
	versions *manifests.APIVersions
	until    time.Time
}

// get returns the API versions of the cluster key, read with read when none are cached or the
// cached ones expired. The read is shared with the callers that miss the cache meanwhile; each
// waits for it until its own ctx ends.
func (m *apiVersionsMemo) get(ctx context.Context, key string, read discoveryReader) (*manifests.APIVersions, error) {
	m.mu.Lock()
	cached, ok := m.byKey[key]
	m.mu.Unlock()
	if ok && time.Now().Before(cached.until) {
		return cached.versions, nil
	}
	shared := context.WithoutCancel(ctx)
	answer := m.reads.DoChan(key, func() (any, error) {
		ctx, cancel := context.WithTimeout(shared, sharedReadTimeout)
		defer cancel()
		return m.read(ctx, key, read)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-answer:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*manifests.APIVersions), nil
	}
}

// read reads the cluster key's discovery and caches what it serves.
func (m *apiVersionsMemo) read(ctx context.Context, key string, read discoveryReader) (*manifests.APIVersions, error) {
	now := time.Now()
	groups, resources, err := read(ctx)
	partial := discovery.IsGroupDiscoveryFailedError(err)
	if err != nil && !partial {
		return nil, err
	}
	versions, err := apiVersionsOf(groups, resources)
	if err != nil {
		return nil, err
	}
	ttl := apiVersionsTTL
	if partial {
		ttl = partialAPIVersionsTTL
	}
	m.store(key, apiVersionsRead{versions: versions, until: now.Add(ttl)}, now)
	return versions, nil
}

// forget drops the cached read of the cluster key: the next get reads its discovery.
func (m *apiVersionsMemo) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byKey, key)
}

// store caches a read and forgets those expired long ago (their clusters are gone, or no
// longer have chart packages).
func (m *apiVersionsMemo) store(key string, r apiVersionsRead, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byKey == nil {
		m.byKey = map[string]apiVersionsRead{}
	}
	for k, old := range m.byKey {
		if now.Sub(old.until) > 10*apiVersionsTTL {
			delete(m.byKey, k)
		}
	}
	m.byKey[key] = r
}

// apiVersionsOf is what a chart sees of a cluster's discovery in .Capabilities.APIVersions, as
// `helm install` builds it: every group/version served, and every group/version/Kind of its
// resources (subresources left out: their kinds are those of other resources, or not kinds
// one creates). More than maxAPIVersions is an error.
func apiVersionsOf(groups []*metav1.APIGroup, resources []*metav1.APIResourceList) (*manifests.APIVersions, error) {
	var out []string
	for _, g := range groups {
		for _, v := range g.Versions {
			out = append(out, v.GroupVersion)
		}
	}
	for _, list := range resources {
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") {
				out = append(out, list.GroupVersion+"/"+r.Kind)
			}
		}
	}
	if len(out) > maxAPIVersions {
		return nil, fmt.Errorf("the cluster serves %d API versions and kinds, more than the %d a chart is given", len(out), maxAPIVersions)
	}
	return manifests.NewAPIVersions(out), nil
}

// withAPIVersions returns a copy of env with versions; nil when env is nil (no environment
// is read).
func withAPIVersions(env *manifests.Environment, versions *manifests.APIVersions) *manifests.Environment {
	if env == nil {
		return nil
	}
	out := *env
	out.APIVersions = versions
	return &out
}

// chartCapabilities gives a chart package the API versions of the clusters it is rendered
// for: data.Environment's cluster's (the hosted cluster for a chart wholly in it, else the
// management cluster), and for a chart split across both clusters, the hosted cluster's
// environment with its API versions as data.HostedEnvironment. Packages without a chart read
// no discovery.
func (r *PackageReconciler) chartCapabilities(ctx context.Context, s *scope, where placement, data *manifests.TemplateData) error {
	if !where.chart || data.Environment == nil {
		return nil
	}
	versions, err := r.apiVersions(ctx, s, where.inHosted())
	if err != nil {
		return err
	}
	data.Environment = withAPIVersions(data.Environment, versions)
	if !where.splitChart || s.hostedCluster == nil || r.HostedEnvironments == nil {
		return nil
	}
	hostedEnv, err := r.renderEnvironment(ctx, s, true)
	if err != nil {
		return err
	}
	if versions, err = r.apiVersions(ctx, s, true); err != nil {
		return err
	}
	data.HostedEnvironment = withAPIVersions(hostedEnv, versions)
	return nil
}

// apiVersions returns the API versions of the hosted cluster of the Package's namespace
// (inHosted), else of the management cluster; nil (Helm's built-in set) when the reconciler
// has no way to reach that cluster's discovery.
func (r *PackageReconciler) apiVersions(ctx context.Context, s *scope, inHosted bool) (*manifests.APIVersions, error) {
	if !inHosted {
		return r.Environment.APIVersions(ctx)
	}
	if r.HostedEnvironments == nil || r.HostedEnvironments.Clients == nil {
		return nil, nil
	}
	ns := s.obj.GetNamespace()
	versions, err := r.HostedEnvironments.apiVersions.get(ctx, ns, func(ctx context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
		return r.HostedEnvironments.Clients.ServerGroupsAndResources(ctx, ns, s.kubeconfigRef)
	})
	if err != nil {
		return nil, hostedEnvironmentError(ns, fmt.Errorf("reading the API versions of the hosted cluster: %w", err))
	}
	return versions, nil
}

// APIVersions returns the API versions the management cluster serves, nil when c reads no
// resources (Helm's built-in set is used).
func (c *ClusterEnvironment) APIVersions(ctx context.Context) (*manifests.APIVersions, error) {
	if c == nil || c.Resources == nil {
		return nil, nil
	}
	versions, err := c.apiVersions.get(ctx, "", func(context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
		return c.Resources.ServerGroupsAndResources()
	})
	if err != nil {
		return nil, fmt.Errorf("reading the API versions of the management cluster: %w", err)
	}
	return versions, nil
}

// reconcilePackageApply is reconcileApply for a Package. When a chart package's apply finds
// an API missing from its cluster (no such kind, or the resource is not found: a CRD removed
// since the cluster's API versions were read), the API versions of its clusters are read again
// at the next pass instead of after apiVersionsTTL, so that the chart is rendered again for
// what the cluster serves now. The pass waits as before (DependencyNotReady); a package that
// keeps waiting costs one discovery read of its cluster per wait.
func (r *PackageReconciler) reconcilePackageApply(ctx context.Context, s *scope) error {
	err := r.reconcileApply(ctx, s)
	if err != nil && s.chart && (apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err)) {
		if r.Environment != nil {
			r.Environment.apiVersions.forget("")
		}
		if r.HostedEnvironments != nil {
			r.HostedEnvironments.apiVersions.forget(s.obj.GetNamespace())
		}
	}
	return err
}
