package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PackageManifestKind is the kind of manifest.yaml, in convoy's group or Package Operator's.
const PackageManifestKind = "PackageManifest"

// PKOManifestAPIVersion is Package Operator's manifest API version, accepted as convoy's.
const PKOManifestAPIVersion = "manifests.package-operator.run/v1alpha1"

// PackageManifest is the manifest.yaml at the root of a package directory in Git. It is a file
// format, not a custom resource.
type PackageManifest struct {
	metav1.TypeMeta `json:",inline"`

	// metadata names the package; metadata.name is required.
	// +required
	Metadata metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the phases, probes and config schema of the package.
	// +required
	Spec PackageManifestSpec `json:"spec"`
}

// PackageManifestSpec declares how a package is applied.
type PackageManifestSpec struct {
	// phases in apply order, at least one; each object of the package names one with the
	// convoy.dev/phase annotation.
	// +required
	Phases []PackageManifestPhase `json:"phases"`

	// availabilityProbes judge the objects; objects no probe selects are judged by kstatus.
	// +optional
	AvailabilityProbes []ObjectSetProbe `json:"availabilityProbes,omitempty"`

	// config declares the schema of the values templates receive as .config.
	// +optional
	Config PackageManifestConfig `json:"config,omitempty"`

	// scopes is Package Operator's list of scopes (Cluster, Namespaced); accepted and ignored.
	// +optional
	Scopes []string `json:"scopes,omitempty"`

	// chart makes the package a Helm chart's: its rendered objects join the package's own.
	// +optional
	Chart *PackageManifestChart `json:"chart,omitempty"`
}

// PackageManifestPhase names a phase and where it lands.
type PackageManifestPhase struct {
	// name of the phase, unique in the manifest.
	// +required
	Name string `json:"name"`

	// class is "" (the management cluster namespace) or "hosted-cluster".
	// +optional
	Class string `json:"class,omitempty"`
}

// PackageManifestConfig holds the config schema.
type PackageManifestConfig struct {
	// openAPIV3Schema is a structural OpenAPI v3 schema for .config, with defaults.
	// +optional
	OpenAPIV3Schema *runtime.RawExtension `json:"openAPIV3Schema,omitempty"`
}
