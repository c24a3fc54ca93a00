package hosted

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Discoverer finds the HostedCluster of HCP namespaces through a manager's cache. Every pass
// of every Package asks, and a cache List copies and converts its answer by reflection: at
// ten thousand settled Packages that was a twentieth of the controller's CPU. Once the
// informer of HostedControlPlanes has synced, the Discoverer reads them from its store by the
// namespace index instead, read-only. Until then (or when HyperShift is not installed), it
// asks Reader as Discover does, which waits for the cache.
type Discoverer struct {
	// Reader reads HostedControlPlanes and HostedClusters, metadata only.
	Reader client.Reader
	// Informers gives the informer of HostedControlPlanes (metadata only); nil always uses
	// Reader.
	Informers cache.Informers

	mu    sync.Mutex
	store toolscache.Indexer // the synced informer's, once known
	// retryAt is when to ask for the informer again after it could not be had (HyperShift
	// not installed: each ask is a discovery request).
	retryAt time.Time
}

// informerRetry is how long a Discoverer reads through Reader after the informer could not be
// had, before it asks again.
const informerRetry = 10 * time.Second

// Discover returns the HostedCluster of the HCP namespace, as the package function Discover.
func (d *Discoverer) Discover(ctx context.Context, namespace string) (*Cluster, error) {
	store := d.syncedStore(ctx)
	if store == nil {
		return Discover(ctx, d.Reader, namespace)
	}
	hcp, err := controlPlaneInStore(store, namespace)
	if err != nil {
		return nil, err
	}
	return clusterOf(ctx, d.Reader, namespace, hcp)
}

// syncedStore returns the store of the synced informer of HostedControlPlanes, or nil. It
// never waits.
func (d *Discoverer) syncedStore(ctx context.Context) toolscache.Indexer {
	if d.Informers == nil {
		return nil
	}
	d.mu.Lock()
	store, retryAt := d.store, d.retryAt
	d.mu.Unlock()
	if store != nil || time.Now().Before(retryAt) {
		return store
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(HostedControlPlaneGVK)
	inf, err := d.Informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		d.mu.Lock()
		d.retryAt = time.Now().Add(informerRetry)
		d.mu.Unlock()
		return nil
	}
	indexed, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok || !inf.HasSynced() {
		return nil
	}
	store = indexed.GetIndexer()
	d.mu.Lock()
	d.store = store // an informer of the cache stays synced and is never replaced
	d.mu.Unlock()
	return store
}

// controlPlaneInStore returns a HostedControlPlane of namespace from store: the store's own
// object, which must not be changed. Anything but metadata in the store is an error, never
// "no hosted cluster", which would abandon the hosted objects of a Package being deleted.
func controlPlaneInStore(store toolscache.Indexer, namespace string) (*metav1.PartialObjectMetadata, error) {
	items, err := store.ByIndex(toolscache.NamespaceIndex, namespace)
	if err != nil {
		return nil, fmt.Errorf("listing HostedControlPlanes in %s: %w", namespace, err)
	}
	if len(items) == 0 {
		return nil, noControlPlane(namespace)
	}
	hcp, ok := items[0].(*metav1.PartialObjectMetadata)
	if !ok {
		return nil, fmt.Errorf("listing HostedControlPlanes in %s: the cache holds a %T", namespace, items[0])
	}
	return hcp, nil
}
