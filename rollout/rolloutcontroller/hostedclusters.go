package rolloutcontroller

import (
	"context"
	"fmt"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cachedHostedClusters returns every HostedCluster the cache holds, read only. A pass reads them
// all, and a List copies each into a new slice (the struct is large even trimmed); with
// Informers set they come straight from the informer's store, as pointers the informer shares:
// read only, as are their label maps, which the planner's input and the checks share in turn.
// Nothing checks that Informers is the cache behind Client; Setup gives the manager's.
func (r *HostedClusterPackageReconciler) cachedHostedClusters(ctx context.Context) ([]*hyperv1.HostedCluster, error) {
	if r.Informers != nil {
		inf, err := r.Informers.GetInformer(ctx, &hyperv1.HostedCluster{})
		if err != nil {
			return nil, err
		}
		if s, ok := inf.(interface{ GetStore() toolscache.Store }); ok {
			return hostedClustersIn(s.GetStore().List())
		}
	}
	list := &hyperv1.HostedClusterList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*hyperv1.HostedCluster, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// hostedClustersIn returns the HostedClusters of an informer store's objects.
func hostedClustersIn(objs []any) ([]*hyperv1.HostedCluster, error) {
	out := make([]*hyperv1.HostedCluster, 0, len(objs))
	for _, o := range objs {
		hc, ok := o.(*hyperv1.HostedCluster)
		if !ok {
			return nil, fmt.Errorf("the HostedCluster informer holds a %T", o)
		}
		out = append(out, hc)
	}
	return out, nil
}
