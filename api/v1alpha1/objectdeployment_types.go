package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ObjectDeploymentSpec feeds the sync engine with inline phases instead of a Git package.
type ObjectDeploymentSpec struct {
	// template holds the phases and probes to apply.
	// +required
	Template ObjectSetTemplate `json:"template"`

	// paused stops reconciling: no apply, no prune, no teardown; status is kept.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// ObjectSetTemplate wraps the phases in the shape Package Operator users know.
type ObjectSetTemplate struct {
	// spec holds the phases and probes.
	// +required
	Spec ObjectSetTemplateSpec `json:"spec"`
}

// ObjectSetTemplateSpec is an ordered list of phases and the probes that judge them.
type ObjectSetTemplateSpec struct {
	// phases are applied in order; a phase starts once the previous one is available.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Phases []ObjectSetPhase `json:"phases"`

	// availabilityProbes judge the objects; objects no probe selects are judged by kstatus.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	AvailabilityProbes []ObjectSetProbe `json:"availabilityProbes,omitempty"`
}

// ObjectSetPhase is a named, ordered group of objects that land in one cluster.
type ObjectSetPhase struct {
	// name of the phase, unique in the list.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// class says where the phase lands: "" for the Package's namespace on the management
	// cluster, "hosted-cluster" for the hosted cluster.
	// +optional
	// +kubebuilder:validation:Enum="";hosted-cluster
	Class string `json:"class,omitempty"`

	// objects of the phase.
	// +optional
	// +listType=atomic
	Objects []ObjectSetObject `json:"objects,omitempty"`
}

// ObjectSetObject is one inline object.
type ObjectSetObject struct {
	// object is a complete Kubernetes object (apiVersion, kind, metadata.name).
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	Object runtime.RawExtension `json:"object"`
}

// ObjectDeployment applies inline phases of objects with the same engine as a Package; its
// revision is a hash of the template.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=objdeploy,categories=convoy
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ObjectDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec ObjectDeploymentSpec `json:"spec"`

	// status is the observed state.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status SyncStatus `json:"status,omitempty"`
}

// ObjectDeploymentList is a list of ObjectDeployments.
//
// +kubebuilder:object:root=true
type ObjectDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ObjectDeployment `json:"items"`
}

// GetConditions returns the status conditions.
func (d *ObjectDeployment) GetConditions() []metav1.Condition { return d.Status.Conditions }

// SetConditions replaces the status conditions.
func (d *ObjectDeployment) SetConditions(c []metav1.Condition) { d.Status.Conditions = c }

func init() {
	knownTypes = append(knownTypes, &ObjectDeployment{}, &ObjectDeploymentList{})
}
