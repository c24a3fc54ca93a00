package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromotionSpec makes a HostedClusterPackage roll out only the commits that other sectors of
// management clusters have run first. The management clusters publish what they did with each
// commit on refs of the package repository (refs/convoy/promotion/<sector>/<management
// cluster>/<key>), which every GitSource poll reads; no management cluster needs credentials
// to another, and there is no server between them.
type PromotionSpec struct {
	// key matches this HostedClusterPackage with those of the other management clusters; by
	// default its name.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Key string `json:"key,omitempty"`

	// sectorMapPath is the file of the package repository, at the GitSource's commit, that
	// declares which management clusters make up each sector (kind SectorMap); by default
	// "sectors.yaml".
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^/].*$`
	SectorMapPath string `json:"sectorMapPath,omitempty"`

	// after lists the sectors that must have completed a commit, each for its soak, before this
	// HostedClusterPackage rolls it out. Empty: no upstream; the HostedClusterPackage still
	// publishes its progress for the sectors after it.
	// +optional
	// +listType=map
	// +listMapKey=sector
	// +kubebuilder:validation:MaxItems=16
	After []UpstreamSector `json:"after,omitempty"`

	// publish writes this management cluster's progress on the package repository's
	// promotion refs, pushed with the GitSource's credentials. It needs the controller's
	// --management-cluster and --sector.
	// +optional
	Publish bool `json:"publish,omitempty"`

	// bus is where the upstream sectors' progress is read: GitRefs (the default), the records
	// under refs/convoy/promotion/ that the GitSource's poll brings in; or CommitStatuses, the
	// statuses "convoy/<sector>/<management cluster>/<key>" that the upstream management
	// clusters post on each commit, read through the GitSource's spec.commitStatus (its forge,
	// repository and token). A publishing HostedClusterPackage writes both when its GitSource
	// has a spec.commitStatus.
	// +optional
	// +kubebuilder:default=GitRefs
	Bus PromotionBus `json:"bus,omitempty"`
}

// PromotionBus names where the upstream sectors' records are read.
// +kubebuilder:validation:Enum=GitRefs;CommitStatuses
type PromotionBus string

// The promotion buses.
const (
	// PromotionBusGitRefs reads the records on the package repository's promotion refs.
	PromotionBusGitRefs PromotionBus = "GitRefs"
	// PromotionBusCommitStatuses reads the upstream management clusters' commit statuses.
	PromotionBusCommitStatuses PromotionBus = "CommitStatuses"
)

// UpstreamSector is a sector that runs a commit first.
type UpstreamSector struct {
	// sector is the upstream sector's name, as in the sector map.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Sector string `json:"sector"`

	// soakSeconds is how long after the last of its management clusters completed a commit the
	// commit waits before it comes here.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SoakSeconds int64 `json:"soakSeconds,omitempty"`
}

// PromotionStatus says which commit the HostedClusterPackage may roll out and what the upstream
// sectors did with the GitSource's newest commit.
type PromotionStatus struct {
	// commit is the newest commit promoted into this sector; empty when none is yet.
	// +optional
	Commit string `json:"commit,omitempty"`

	// byHand is true when commit came through a PromotionApproval, skipping its upstream.
	// +optional
	ByHand bool `json:"byHand,omitempty"`

	// headCommit is the GitSource's commit, which upstream is reported for.
	// +optional
	HeadCommit string `json:"headCommit,omitempty"`

	// upstream is what each upstream sector did with headCommit.
	// +optional
	// +listType=atomic
	Upstream []UpstreamSectorStatus `json:"upstream,omitempty"`

	// message says what holds promotion, when something does.
	// +optional
	Message string `json:"message,omitempty"`
}

// UpstreamSectorStatus is what one upstream sector did with a commit.
type UpstreamSectorStatus struct {
	// sector is its name.
	// +required
	Sector string `json:"sector"`

	// completedAt is when its last management cluster completed the commit; empty unless all did.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// managementClusters lists what each did, as the sector map orders them.
	// +optional
	// +listType=atomic
	ManagementClusters []ManagementClusterStatus `json:"managementClusters,omitempty"`
}

// ManagementClusterStatus is what one management cluster published for a commit.
type ManagementClusterStatus struct {
	// name of the management cluster.
	// +required
	Name string `json:"name"`

	// state: Progressing, Completed, Failed, Rejected or Superseded; empty when it has not
	// reported the commit.
	// +optional
	State string `json:"state,omitempty"`

	// progress is "<partitions done>/<partitions> partitions, <clusters>/<total> clusters".
	// +optional
	Progress string `json:"progress,omitempty"`
}

// PromotionApprovalSpec names the one commit a person lets into one sector without its upstream.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a promotion cannot be changed; create another"
type PromotionApprovalSpec struct {
	// hostedClusterPackage is the name of the HostedClusterPackage.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	HostedClusterPackage string `json:"hostedClusterPackage"`

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

// PromotionApproval is the cluster-scoped manual promotion of the releases before
// ManualPromotion, which replaces it: whoever may create one may promote into every rollout.
// Deprecated: the controller still honours one owned by the HostedClusterPackage it names (as
// `convoy promote` of those releases made it), which binds it to that rollout's UID; no role of
// deploy/ grants creating one.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=promotion,categories=convoy
// +kubebuilder:deprecatedversion:warning="convoy.dev/v1alpha1 PromotionApproval is deprecated; create a ManualPromotion in the namespace of the rollout's GitSource (convoy promote)"
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.spec.hostedClusterPackage`
// +kubebuilder:printcolumn:name="Sector",type=string,JSONPath=`.spec.sector`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.spec.commit`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PromotionApproval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names what is promoted.
	// +required
	Spec PromotionApprovalSpec `json:"spec"`
}

// PromotionApprovalList is a list of PromotionApprovals.
//
// +kubebuilder:object:root=true
type PromotionApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PromotionApproval `json:"items"`
}

// PromotionRefsStatus is what the last poll read of the package repository's promotion refs.
type PromotionRefsStatus struct {
	// digest of the promotion refs' names and commits; it changes when a record does.
	// +optional
	Digest string `json:"digest,omitempty"`

	// error says why the last poll could not read them; promotion holds meanwhile.
	// +optional
	Error string `json:"error,omitempty"`
}

func init() {
	knownTypes = append(knownTypes, &PromotionApproval{}, &PromotionApprovalList{})
}
