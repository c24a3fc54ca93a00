package hosted

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// HyperShift kinds, read as metadata only.
var (
	// HostedControlPlaneGVK is the kind whose presence makes a namespace an HCP namespace.
	HostedControlPlaneGVK = schema.GroupVersionKind{Group: "hypershift.openshift.io", Version: "v1beta1", Kind: "HostedControlPlane"}
	// HostedClusterGVK is the kind of the HostedCluster an HCP namespace belongs to.
	HostedClusterGVK = schema.GroupVersionKind{Group: "hypershift.openshift.io", Version: "v1beta1", Kind: "HostedCluster"}
)

// ErrNoHostedCluster is returned (wrapped) by Discover for a namespace without a hosted control
// plane.
var ErrNoHostedCluster = errors.New("no hosted cluster")

// Cluster describes the HostedCluster of an HCP namespace.
type Cluster struct {
	// Namespace and Name of the HostedCluster object.
	Namespace, Name string
	// Labels and Annotations of the HostedCluster.
	Labels, Annotations map[string]string
	// Deleting is true when the HostedCluster is being deleted or is gone: its hosted cluster
	// is going away.
	Deleting bool
}

// Discover returns the HostedCluster of the HCP namespace, or an error wrapping
// ErrNoHostedCluster when namespace holds no HostedControlPlane (or HyperShift is not
// installed).
func Discover(ctx context.Context, r client.Reader, namespace string) (*Cluster, error) {
	hcp, err := controlPlaneOf(ctx, r, namespace)
	if err != nil {
		return nil, err
	}
	return clusterOf(ctx, r, namespace, hcp)
}

// clusterOf returns the HostedCluster hcp, the HostedControlPlane of namespace, belongs to,
// read through r.
func clusterOf(ctx context.Context, r client.Reader, namespace string, hcp *metav1.PartialObjectMetadata) (*Cluster, error) {
	ref := hcp.GetAnnotations()[convoyv1alpha1.HostedClusterAnnotation]
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return nil, fmt.Errorf("%w: HostedControlPlane %s/%s has no valid %s annotation (%q)",
			ErrNoHostedCluster, namespace, hcp.GetName(), convoyv1alpha1.HostedClusterAnnotation, ref)
	}
	hc := &metav1.PartialObjectMetadata{}
	hc.SetGroupVersionKind(HostedClusterGVK)
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, hc)
	switch {
	case apierrors.IsNotFound(err):
		return &Cluster{Namespace: ns, Name: name, Deleting: true}, nil
	case err != nil:
		return nil, fmt.Errorf("reading HostedCluster %s/%s: %w", ns, name, err)
	}
	return &Cluster{Namespace: ns, Name: name, Labels: hc.Labels, Annotations: hc.Annotations,
		Deleting: hc.DeletionTimestamp != nil}, nil
}

// controlPlaneOf returns the HostedControlPlane of namespace.
func controlPlaneOf(ctx context.Context, r client.Reader, namespace string) (*metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(HostedControlPlaneGVK.GroupVersion().WithKind(HostedControlPlaneGVK.Kind + "List"))
	// Read-only, and only one annotation is read: no copy of the namespace's HostedControlPlanes.
	err := r.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy)
	switch {
	case apimeta.IsNoMatchError(err):
		return nil, fmt.Errorf("%w: HyperShift is not installed (no HostedControlPlane API)", ErrNoHostedCluster)
	case err != nil:
		return nil, fmt.Errorf("listing HostedControlPlanes in %s: %w", namespace, err)
	case len(list.Items) == 0:
		return nil, noControlPlane(namespace)
	}
	return &list.Items[0], nil
}

// noControlPlane is the error of a namespace without a HostedControlPlane.
func noControlPlane(namespace string) error {
	return fmt.Errorf("%w: namespace %s holds no HostedControlPlane", ErrNoHostedCluster, namespace)
}
