package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RolloutApprovalSpec names what a person approves: one partition of one HostedClusterPackage,
// at one revision.
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

	// commit is the Git commit of that revision; an approval without it, or of another commit,
	// does not count.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Commit string `json:"commit,omitempty"`
}

// RolloutApproval is the cluster-scoped approval of the releases before PartitionApproval, which
// replaces it: whoever may create one may approve every rollout. Deprecated: the controller
// still honours one that `convoy approve` of those releases made (owned by the
// HostedClusterPackage it names, which binds it to that rollout's UID, with the commit of the
// revision), under the same rules as a PartitionApproval; no role of deploy/ grants creating one.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=approval,categories=convoy
// +kubebuilder:deprecatedversion:warning="convoy.dev/v1alpha1 RolloutApproval is deprecated; create a PartitionApproval in the namespace of the rollout's GitSource (convoy approve)"
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
