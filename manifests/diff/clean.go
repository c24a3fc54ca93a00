package diff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// lastAppliedAnnotation is kubectl's copy of the last applied configuration.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// serverMetadata are the metadata fields the API server sets, which no change asks for.
var serverMetadata = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"}

// Clean returns a copy of o without the fields that say nothing about a change: status, the
// server-set metadata, managed fields and the last-applied annotation; empty annotations and
// labels are dropped too.
func Clean(o *unstructured.Unstructured) *unstructured.Unstructured {
	c := o.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "status")
	for _, f := range serverMetadata {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "metadata", "annotations", lastAppliedAnnotation)
	for _, f := range []string{"annotations", "labels"} {
		if m, found, _ := unstructured.NestedMap(c.Object, "metadata", f); found && len(m) == 0 {
			unstructured.RemoveNestedField(c.Object, "metadata", f)
		}
	}
	return c
}
