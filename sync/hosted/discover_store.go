package hosted

import (
	"context"
	"sync"

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
}

// Discover returns the HostedCluster of the HCP namespace, as the package function Discover.
func (d *Discoverer) Discover(ctx context.Context, namespace string) (*Cluster, error) {
	store := d.syncedStore(ctx)
	if store == nil {
		return Discover(ctx, d.Reader, namespace)
	}
	return discoverWith(ctx, d.Reader, namespace, func() (*metav1.PartialObjectMetadata, error) {
		return controlPlaneInStore(store, namespace)
	})
}

// syncedStore returns the store of the synced informer of HostedControlPlanes, or nil. It
// never waits.
func (d *Discoverer) syncedStore(ctx context.Context) toolscache.Indexer {
	if d.Informers == nil {
		return nil
	}
	d.mu.Lock()
	store := d.store
	d.mu.Unlock()
	if store != nil {
		return store
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(HostedControlPlaneGVK)
	inf, err := d.Informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil || !inf.HasSynced() {
		return nil
	}
	indexed, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil
	}
	d.mu.Lock()
	d.store = indexed.GetIndexer() // an informer of the cache stays synced and is never replaced
	d.mu.Unlock()
	return d.store
}

// controlPlaneInStore returns a HostedControlPlane of namespace from store, not a copy.
func controlPlaneInStore(store toolscache.Indexer, namespace string) (*metav1.PartialObjectMetadata, error) {
	items, err := store.ByIndex(toolscache.NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	for _, item := range items {
		if hcp, ok := item.(*metav1.PartialObjectMetadata); ok {
			return hcp, nil
		}
	}
	return nil, noControlPlane(namespace)
}
