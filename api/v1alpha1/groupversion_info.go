package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of convoy's API.
	GroupVersion = schema.GroupVersion{Group: "convoy.dev", Version: "v1alpha1"}

	// SchemeBuilder registers convoy's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds convoy's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	// knownTypes are the kinds of this version; each <kind>_types.go adds its own.
	knownTypes []runtime.Object
)

// addKnownTypes registers knownTypes and the meta types of the group version.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
