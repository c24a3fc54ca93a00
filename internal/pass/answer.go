package pass

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MetadataAnswer returns the object to send a write with when only the metadata of the API
// server's answer is wanted: an empty PartialObjectMetadata of gvk named key. The client then
// asks for the answer as PartialObjectMetadata in protobuf, which the API server encodes and the
// controller decodes for a fraction of the cost of the whole object in JSON.
func MetadataAnswer(gvk schema.GroupVersionKind, key client.ObjectKey) *metav1.PartialObjectMetadata {
	answer := &metav1.PartialObjectMetadata{}
	answer.SetGroupVersionKind(gvk)
	answer.SetNamespace(key.Namespace)
	answer.SetName(key.Name)
	return answer
}

// ApplyForMetadata applies u with server-side apply and returns the metadata of the object the
// API server answers (MetadataAnswer).
func ApplyForMetadata(ctx context.Context, c client.Client, u *unstructured.Unstructured, opts ...client.PatchOption) (*metav1.PartialObjectMetadata, error) {
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	answer := MetadataAnswer(u.GroupVersionKind(), client.ObjectKeyFromObject(u))
	return answer, c.Patch(ctx, answer, client.RawPatch(types.ApplyPatchType, data), opts...)
}
