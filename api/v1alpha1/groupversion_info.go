package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of convoy's API.
	GroupVersion = schema.GroupVersion{Group: "convoy.dev", Version: "v1alpha1"}

	// SchemeBuilder registers convoy's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds convoy's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
