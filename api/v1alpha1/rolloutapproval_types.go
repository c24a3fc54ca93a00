package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RolloutApprovalSpec names what a person approves: one partition of one HostedClusterPackage,
// at one revision. An approval of one revision never lets another through, so a newer commit
// waits for an approval of its own.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an approval cannot be changed; create another"
type RolloutApprovalSpec struct {
	// hostedClusterPackage is the name of the approved HostedClusterPackage.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	HostedClusterPackage string `json:"hostedClusterPackage"`

	// partition is the name of the approved partition.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Partition string `json:"partition"`

	// revision is the name of the approved ControllerRevision (the HostedClusterPackage's
	// status.updateRevision when the approval was given).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Revision string `json:"revision"`

	// commit is the Git commit of that revision, for the people reading the approval; the
	// rollout matches on revision only.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Commit string `json:"commit,omitempty"`
}

// RolloutApproval lets a partition of a HostedClusterPackage start at one revision. It is a kind
// of its own so that who may approve (create RolloutApprovals) is granted apart from who may
// edit the rollout; `convoy approve` creates one, owned by the HostedClusterPackage so that it
// goes when the rollout does.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=approval,categories=convoy
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.spec.hostedClusterPackage`
// +kubebuilder:printcolumn:name="Partition",type=string,JSONPath=`.spec.partition`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.spec.revision`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.spec.commit`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RolloutApproval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names what is approved.
	// +required
	Spec RolloutApprovalSpec `json:"spec"`
}

// RolloutApprovalList is a list of RolloutApprovals.
//
// +kubebuilder:object:root=true
type RolloutApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutApproval `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &RolloutApproval{}, &RolloutApprovalList{})
}
