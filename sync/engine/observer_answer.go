package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests/probe"
)

// What the engine keeps of the API server's answer to its own applies.
//
// An apply is answered with the whole object as the API server stored it, managedFields
// included, which the API server encodes as JSON and the controller decodes: for the small
// objects a package is mostly made of, that was the largest share of a rollout's controller CPU
// after the requests themselves. The engine reads an answer only to judge the object and to
// know its version, so an object that is judged without its body is answered with its metadata
// only (PartialObjectMetadata, in protobuf).

// metadataJudged are the kinds kstatus judges by their metadata alone: they have no status (it
// finds them Current unless they are being deleted), and neither spec nor data says anything
// about their availability.
var metadataJudged = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}:      true,
	{Kind: "Secret"}:         true,
	{Kind: "ServiceAccount"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               true,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
}

// MetadataJudgedKind reports whether the engine judges the objects of gk by their metadata
// alone, and so asks for an apply's answer as metadata where no probe selects the object.
func MetadataJudgedKind(gk schema.GroupKind) bool { return metadataJudged[gk] }

// judgedByMetadata reports whether obj's availability follows from its metadata: its kind is
// one kstatus judges so, and no probe of the revision selects it (a probe reads the body).
func judgedByMetadata(obj *unstructured.Unstructured, probes []probe.Rule) bool {
	if !MetadataJudgedKind(obj.GroupVersionKind().GroupKind()) {
		return false
	}
	for i := range probes {
		if probes[i].Selects(obj) {
			return false
		}
	}
	return true
}

// applyForMetadata applies obj and returns its live state as the metadata of the answer, without
// its managedFields, under obj's apiVersion and kind. Where a probe selects the live object
// after all (a label obj does not set, left by another writer), it reads the whole object: the
// judge reads the live labels, and a probe must never judge a body it was not given.
func (o *observer) applyForMetadata(ctx context.Context, obj *unstructured.Unstructured, opts ...client.PatchOption) (*unstructured.Unstructured, error) {
	answer, err := pass.ApplyForMetadata(ctx, o.Client, obj, opts...)
	if err != nil {
		return nil, err
	}
	answer.ManagedFields = nil
	meta, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&answer.ObjectMeta)
	if err != nil {
		return nil, err
	}
	live := &unstructured.Unstructured{Object: map[string]any{"metadata": meta}}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if judgedByMetadata(live, o.probes) {
		return live, nil
	}
	whole := &unstructured.Unstructured{}
	whole.SetGroupVersionKind(obj.GroupVersionKind())
	return whole, o.Client.Get(ctx, client.ObjectKeyFromObject(obj), whole)
}
