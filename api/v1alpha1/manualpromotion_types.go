package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ManualPromotionSpec names the one commit a person lets into one sector without its upstream,
// for one HostedClusterPackage (by name and UID).
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a promotion cannot be changed; create another"
type ManualPromotionSpec struct {
	// hostedClusterPackage is the name of the HostedClusterPackage.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	HostedClusterPackage string `json:"hostedClusterPackage"`

	// hostedClusterPackageUID is the UID of the HostedClusterPackage.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	HostedClusterPackageUID string `json:"hostedClusterPackageUID"`

	// sector is the sector the commit enters; it must be the controller's own.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Sector string `json:"sector"`

	// commit is the full commit id promoted.
	// +required
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{40}|[0-9a-f]{64})$`
	Commit string `json:"commit"`

	// reason says why, for the people reading it later.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// ManualPromotion lets one commit into one sector without waiting for the upstream sectors: the
// emergency fix. It lives in the namespace of the HostedClusterPackage's GitSource and counts only
// there, so that a RoleBinding of the ClusterRole convoy-promoter in that namespace lets a team
// promote its own rollouts by hand and no other team's. `convoy promote` creates one, owned by
// the HostedClusterPackage.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mpromotion,categories=convoy
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.spec.hostedClusterPackage`
// +kubebuilder:printcolumn:name="Sector",type=string,JSONPath=`.spec.sector`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.spec.commit`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ManualPromotion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names what is promoted.
	// +required
	Spec ManualPromotionSpec `json:"spec"`
}

// ManualPromotionList is a list of ManualPromotions.
//
// +kubebuilder:object:root=true
type ManualPromotionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManualPromotion `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &ManualPromotion{}, &ManualPromotionList{})
}
