package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PartitionApprovalSpec names what a person approves, exactly: one partition of one
// HostedClusterPackage (by name and UID, so that a rollout deleted and made again under the same
// name needs approvals of its own), at one revision of one commit. It counts only while that
// revision is the update revision, was not rejected, and was made before the approval: an
// approval never lets another commit, another rollout or a revision made again after a prune
// through.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an approval cannot be changed; create another"
type PartitionApprovalSpec struct {
	// hostedClusterPackage is the name of the approved HostedClusterPackage.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	HostedClusterPackage string `json:"hostedClusterPackage"`

	// hostedClusterPackageUID is the UID of the approved HostedClusterPackage.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	HostedClusterPackageUID string `json:"hostedClusterPackageUID"`

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

	// commit is the full Git commit of that revision; an approval of another commit under the
	// same revision name does not count.
	// +required
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40}|[0-9a-f]{64})$`
	Commit string `json:"commit"`
}

// PartitionApproval lets a partition of a HostedClusterPackage start at one revision. It lives in
// the namespace of the HostedClusterPackage's GitSource, where the rollout's ControllerRevisions
// are, and counts only there: a RoleBinding of the ClusterRole convoy-rollout-approver in that
// namespace lets a team approve its own rollouts and no other team's, with Kubernetes RBAC alone.
// `convoy approve` creates one, owned by the HostedClusterPackage so that it goes when the rollout
// does.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=papproval,categories=convoy
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.spec.hostedClusterPackage`
// +kubebuilder:printcolumn:name="Partition",type=string,JSONPath=`.spec.partition`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.spec.revision`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.spec.commit`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PartitionApproval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names what is approved.
	// +required
	Spec PartitionApprovalSpec `json:"spec"`
}

// PartitionApprovalList is a list of PartitionApprovals.
//
// +kubebuilder:object:root=true
type PartitionApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PartitionApproval `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &PartitionApproval{}, &PartitionApprovalList{})
}
