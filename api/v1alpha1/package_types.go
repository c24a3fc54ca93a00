package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DefaultPackageInterval is the drift-correction period when spec.interval is unset.
const DefaultPackageInterval = 10 * time.Minute

// PackageTemplateSpec is a Package's spec without its revision: what a HostedClusterPackage
// stamps out per hosted cluster.
type PackageTemplateSpec struct {
	// sourceRef names the GitSource holding the package.
	// +required
	SourceRef SourceReference `json:"sourceRef"`

	// path of the package directory inside the repository, relative to its root.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(s, s == '..')",message="path must be relative and must not contain '..'"
	Path string `json:"path"`

	// component selects a component of a multi-component Package Operator package: the package
	// in components/COMPONENT/ of path, whose manifest enables spec.components. Empty selects
	// the root package.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	Component string `json:"component,omitempty"`

	// scope is the Package Operator scope the package is installed with. Namespaced installs
	// it as a Package Operator Package: its phases land where their class says. Cluster installs
	// it as a ClusterPackage inside the hosted cluster of the namespace: every phase lands in
	// the hosted cluster, objects keep their own namespaces, cluster-scoped objects are allowed
	// and templates see an empty .package.metadata.namespace. Empty picks what Package
	// Operator would for a package installed here: Namespaced when the package's spec.scopes
	// lists it, else Cluster. A scope the package does not list stalls the Package.
	// +optional
	// +kubebuilder:validation:Enum=Namespaced;Cluster
	Scope string `json:"scope,omitempty"`

	// config holds values for the package's templates, validated and defaulted by the schema in
	// its manifest.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Config *runtime.RawExtension `json:"config,omitempty"`

	// paused stops reconciling: no apply, no prune, no teardown; status is kept.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// interval between two re-applies that correct drift, at least 1s.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="interval must be at least 1s"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// hostedCluster overrides how the hosted cluster of the namespace is reached; by default
	// it is discovered from the namespace's HostedControlPlane.
	// +optional
	HostedCluster *HostedClusterTarget `json:"hostedCluster,omitempty"`

	// serviceAccountName makes the controller apply, prune and tear down the package's
	// management-side objects as this ServiceAccount of the Package's namespace, with its
	// rights only. Empty means the controller's --default-service-account (deploy/ sets
	// convoy-system/convoy-package-applier), or the controller's own rights when that is empty
	// too. Phases of class hosted-cluster keep using the hosted cluster's kubeconfig.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// adopt lets the Package take over existing objects that another tool applied, without
	// the per-object convoy.dev/adopt annotation: an object whose only owner is one of
	// adopt.from keeps its UID and loses that owner's marks in the same write; objects of any
	// other owner stay refused. On a HostedClusterPackage's template it reaches every Package
	// through the rollout, partition by partition.
	// +optional
	Adopt *AdoptSpec `json:"adopt,omitempty"`
}

// AdoptSpec names the tools whose objects a Package takes over.
type AdoptSpec struct {
	// from lists the previous owners to take objects over from: flux (a Flux Kustomization's
	// kustomize.toolkit.fluxcd.io labels and its kustomize-controller field manager) and
	// package-operator (Package Operator's package-operator.run marks, its owner references to
	// ObjectSets and ObjectSetPhases, and its package-operator field manager).
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	From []AdoptOwner `json:"from"`
}

// AdoptOwner is a tool whose objects convoy can take over.
// +kubebuilder:validation:Enum=flux;package-operator
type AdoptOwner string

const (
	// AdoptFromFlux takes over the objects a Flux Kustomization applied.
	AdoptFromFlux AdoptOwner = "flux"
	// AdoptFromPackageOperator takes over the objects Package Operator applied.
	AdoptFromPackageOperator AdoptOwner = "package-operator"
)

// PackageSpec is one package instance applied to one target.
type PackageSpec struct {
	PackageTemplateSpec `json:",inline"`

	// revision is the commit to apply; empty means the GitSource's current artifact.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40})?$`
	Revision string `json:"revision,omitempty"`
}

// SourceReference names a GitSource, by default in the referrer's namespace.
type SourceReference struct {
	// name of the GitSource.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace of the GitSource; defaults to the Package's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// HostedClusterTarget says how to reach a hosted cluster.
type HostedClusterTarget struct {
	// kubeconfigSecretRef names the Secret and key holding the kubeconfig of the hosted cluster.
	// +optional
	KubeconfigSecretRef *SecretKeyReference `json:"kubeconfigSecretRef,omitempty"`
}

// Package applies a package directory from Git to the management cluster namespace it lives in
// and, for phases of class hosted-cluster, to the hosted cluster of that namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pkg,categories=convoy
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.spec.path`,priority=1
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Package struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec PackageSpec `json:"spec"`

	// status is the observed state.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status SyncStatus `json:"status,omitempty"`
}

// PackageList is a list of Packages.
//
// +kubebuilder:object:root=true
type PackageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Package `json:"items"`
}

// GetInterval returns the drift-correction period.
func (p *Package) GetInterval() time.Duration {
	return durationOr(p.Spec.Interval, DefaultPackageInterval)
}

// SourceKey returns the namespace and name of the GitSource, defaulting the namespace.
func (p *Package) SourceKey() (namespace, name string) {
	namespace = p.Spec.SourceRef.Namespace
	if namespace == "" {
		namespace = p.Namespace
	}
	return namespace, p.Spec.SourceRef.Name
}

// GetConditions returns the status conditions.
func (p *Package) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions replaces the status conditions.
func (p *Package) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }

func init() {
	knownTypes = append(knownTypes, &Package{}, &PackageList{})
}
