package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ObjectSetProbe checks the availability of the objects its selector matches. The same form is
// used in a PackageManifest and in an ObjectDeployment template.
type ObjectSetProbe struct {
	// selector picks the objects the probes apply to.
	// +required
	Selector ProbeSelector `json:"selector"`

	// probes must all pass for a selected object to be available.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Probes []Probe `json:"probes"`
}

// ProbeSelector picks objects by group and kind, optionally narrowed by labels.
type ProbeSelector struct {
	// kind selects objects by API group and kind.
	// +required
	Kind GroupKindSelector `json:"kind"`

	// selector narrows the selection by labels.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// GroupKindSelector matches an API group and kind; the core group is "".
type GroupKindSelector struct {
	// group of the objects, "" for the core group.
	// +optional
	Group string `json:"group,omitempty"`

	// kind of the objects.
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
}

// Probe is one availability check. Exactly one field is set.
// +kubebuilder:validation:XValidation:rule="[has(self.condition), has(self.fieldsEqual), has(self.cel)].filter(x, x).size() == 1",message="exactly one of condition, fieldsEqual or cel must be set"
type Probe struct {
	// condition passes when the object has a status condition of this type and status,
	// observed at the object's current generation.
	// +optional
	Condition *ConditionProbe `json:"condition,omitempty"`

	// fieldsEqual passes when two fields of the object hold equal values.
	// +optional
	FieldsEqual *FieldsEqualProbe `json:"fieldsEqual,omitempty"`

	// cel passes when the CEL rule evaluates to true; the object is bound to "self".
	// +optional
	CEL *CELProbe `json:"cel,omitempty"`
}

// ConditionProbe checks one status condition.
type ConditionProbe struct {
	// type of the condition, e.g. "Available".
	// +required
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`

	// status the condition must have, e.g. "True".
	// +required
	// +kubebuilder:validation:MinLength=1
	Status string `json:"status"`
}

// FieldsEqualProbe compares two fields given as dotted paths such as ".status.replicas".
type FieldsEqualProbe struct {
	// fieldA is the first path.
	// +required
	// +kubebuilder:validation:MinLength=1
	FieldA string `json:"fieldA"`

	// fieldB is the second path.
	// +required
	// +kubebuilder:validation:MinLength=1
	FieldB string `json:"fieldB"`
}

// CELProbe is a CEL expression over the object.
type CELProbe struct {
	// rule is a CEL expression returning a bool; the object is "self".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Rule string `json:"rule"`

	// message is reported when the rule is false.
	// +required
	// +kubebuilder:validation:MinLength=1
	Message string `json:"message"`
}
