package importer

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clusterKinds are the kinds ReadCluster lists, at the versions the tools serve.
var clusterKinds = []schema.GroupVersionKind{
	GitRepositoryKind.WithVersion("v1"),
	KustomizationKind.WithVersion("v1"),
	PKOHostedClusterPackageKind.WithVersion("v1alpha1"),
}

// ReadCluster lists the objects Import reads in every namespace of a cluster; a kind the
// cluster does not serve (no Flux, no Package Operator) is skipped.
func ReadCluster(ctx context.Context, c client.Reader) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, gvk := range clusterKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := c.List(ctx, list)
		if apimeta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvk.GroupKind(), err)
		}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
	}
	return objs, nil
}
