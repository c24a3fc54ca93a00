package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Inventory clusters: where an inventory entry was applied.
const (
	// InventoryClusterManagement marks an object on the management cluster.
	InventoryClusterManagement = "management"
	// InventoryClusterHosted marks an object inside the hosted cluster.
	InventoryClusterHosted = "hosted"
)

// MaxStatusWarnings bounds SyncStatus.Warnings.
const MaxStatusWarnings = 10

// SyncStatus is the status of a Package or an ObjectDeployment: what the sync engine applied and
// whether it is available.
type SyncStatus struct {
	// observedGeneration is the generation last reconciled successfully or found stalled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Reconciling, Stalled, Available, Progressing, Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// revision is the last revision whose phases were all applied and available.
	// +optional
	Revision string `json:"revision,omitempty"`

	// lastAttemptedRevision is the revision of the last apply attempt.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// phases reports each phase of the last attempted revision, in order.
	// +optional
	// +listType=atomic
	Phases []PhaseStatus `json:"phases,omitempty"`

	// inventory lists every object applied, so that objects leaving the package are pruned.
	// +optional
	// +listType=atomic
	Inventory []InventoryEntry `json:"inventory,omitempty"`

	// warnings are the problems of the last render that did not fail it (a Package Operator
	// feature convoy does not evaluate, a repeated key), as "file:line: rule: message", at most
	// MaxStatusWarnings.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MaxLength=1024
	Warnings []string `json:"warnings,omitempty"`

	// lastHandledReconcileAt echoes the convoy.dev/requestedAt annotation last handled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// PhaseStatus is the state of one phase.
type PhaseStatus struct {
	// name of the phase.
	// +required
	Name string `json:"name"`

	// class of the phase: "" (management) or "hosted-cluster".
	// +optional
	Class string `json:"class,omitempty"`

	// objects is the number of objects in the phase.
	// +optional
	Objects int32 `json:"objects,omitempty"`

	// available is true when every object of the phase passes its probes.
	// +optional
	Available bool `json:"available,omitempty"`

	// message says why the phase is not available.
	// +optional
	Message string `json:"message,omitempty"`
}

// InventoryEntry identifies one applied object. Its format never changes: pruning compares
// inventories written by older versions.
type InventoryEntry struct {
	// id is "<namespace>_<name>_<group>_<kind>".
	// +required
	ID string `json:"id"`

	// v is the API version the object was applied with.
	// +required
	Version string `json:"v"`

	// cluster is "management" or "hosted".
	// +required
	// +kubebuilder:validation:Enum=management;hosted
	Cluster string `json:"cluster"`

	// phase is the name of the phase that applied the object; teardown deletes phase by phase
	// in reverse order.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Phase string `json:"phase,omitempty"`
}
