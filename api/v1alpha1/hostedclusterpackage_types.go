package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Rollout defaults.
const (
	// DefaultProgressDeadlineSeconds is how long an updating Package may take to become
	// available before it counts as failed.
	DefaultProgressDeadlineSeconds = 600
	// DefaultRevisionHistoryLimit is how many old ControllerRevisions are kept.
	DefaultRevisionHistoryLimit = 10
	// UnknownPartition is the implicit last partition of HostedClusters without a known label.
	UnknownPartition = "unknown"
	// UnlistedPartition, in a static order, stands for every label value the order does not
	// list: those HostedClusters form one partition at its place.
	UnlistedPartition = "*"
	// MaxSkippedSamples bounds status.skipped.
	MaxSkippedSamples = 10
	// MaxFailureSamples bounds status.failures.
	MaxFailureSamples = 10
)

// Partition states.
const (
	// PartitionPending: the rollout has not reached the partition yet.
	PartitionPending = "Pending"
	// PartitionProgressing: the partition's Packages are being updated.
	PartitionProgressing = "Progressing"
	// PartitionDone: every eligible target of the partition is updated and available.
	PartitionDone = "Done"
	// PartitionBlocked: a failed Package holds the budget in this partition.
	PartitionBlocked = "Blocked"
	// PartitionSoaking: every eligible target of the partition is done, and the next partition
	// waits until the partition's soak ends (partitions[].until).
	PartitionSoaking = "Soaking"
	// PartitionAwaitingApproval: the rollout reached the partition, which requires an approval
	// of the update revision that no RolloutApproval gives yet.
	PartitionAwaitingApproval = "AwaitingApproval"
	// PartitionOutsideWindow: the rollout would start the partition, but no allowed window is
	// open or a deny window is (partitions[].until says when that ends, when known).
	PartitionOutsideWindow = "OutsideWindow"
	// PartitionChecking: the partition's soak is over (or it has none) and its checks still
	// run; the next partition waits until every check passed (partitions[].until is when the
	// longest check's duration ends).
	PartitionChecking = "Checking"
)

// HostedClusterPackageSpec rolls a Git package out to every matching HostedCluster.
type HostedClusterPackageSpec struct {
	// hostedClusterSelector selects HostedClusters in all namespaces; empty selects all.
	// +optional
	HostedClusterSelector *metav1.LabelSelector `json:"hostedClusterSelector,omitempty"`

	// partition orders HostedClusters into groups by a label; a group starts once every
	// earlier group is updated and available.
	// +optional
	Partition *PartitionSpec `json:"partition,omitempty"`

	// strategy says how fast a new revision spreads.
	// +optional
	// +kubebuilder:default={rollingUpgrade: {maxUnavailable: 1}}
	Strategy HostedClusterPackageStrategy `json:"strategy,omitzero"`

	// paused stops starting new updates; updates in flight finish.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// windows restrict when a rollout may start updates: at least one allowed window must be
	// open (when any is listed) and no deny window (a freeze). Outside, nothing starts at the
	// update revision, as under paused; updates in flight finish.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Windows []RolloutWindow `json:"windows,omitempty"`

	// promotion rolls out only the commits that other sectors of management clusters ran
	// first, and publishes this one's progress for the sectors after it.
	// +optional
	Promotion *PromotionSpec `json:"promotion,omitempty"`

	// dependsOn lists the HostedClusterPackages whose Package must be available on a
	// HostedCluster before this one's Package installs there or moves to a new revision; a
	// dependency's Package is deleted from a HostedCluster only after this one's is gone.
	// Waiting is not failing: it takes no budget and no progress deadline runs.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	DependsOn []PackageDependency `json:"dependsOn,omitempty"`

	// failurePolicy says how many failed Packages the rollout tolerates, and what it does once
	// it stops.
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitzero"`

	// checks every partition must pass, from the moment its last Package progressed, before
	// the next partition starts and before the rollout completes; a failed check fails the
	// rollout. partition.policies[].checks replaces them for one partition, and
	// partition.policies[].skipChecks drops them.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Checks []RolloutCheck `json:"checks,omitempty"`

	// revisionHistoryLimit is how many old revisions are kept as ControllerRevisions.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// template is the Package stamped out in each HostedCluster's HCP namespace.
	// +required
	Template PackageTemplate `json:"template"`
}

// PartitionSpec groups HostedClusters by the value of a label.
type PartitionSpec struct {
	// labelKey is the HostedCluster label whose value names the partition.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	LabelKey string `json:"labelKey"`

	// order of the partitions; HostedClusters without the label, or with a value not listed,
	// form the implicit "unknown" partition, always last.
	// +optional
	// +kubebuilder:default={alphanumericAsc: {}}
	Order PartitionOrder `json:"order,omitzero"`

	// policies set gates of named partitions: a soak of their own, an approval, no tolerated
	// failure, checks of their own or none.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Policies []PartitionPolicy `json:"policies,omitempty"`
}

// PartitionOrder orders partitions. Exactly one field is set.
// +kubebuilder:validation:XValidation:rule="has(self.static) != has(self.alphanumericAsc)",message="exactly one of static or alphanumericAsc must be set"
type PartitionOrder struct {
	// static lists label values in rollout order. "*" stands for every value not listed: those
	// HostedClusters form one partition named "*" at its place. Without "*", they join the
	// implicit "unknown" partition, last, with the HostedClusters that have no label.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!self.exists(v, v == 'unknown')",message="unknown is the implicit last partition of HostedClusters without a listed value; it cannot be listed"
	Static []string `json:"static,omitempty"`

	// alphanumericAsc orders label values in natural ascending order ("2" before "10").
	// +optional
	AlphanumericAsc *AlphanumericAscOrder `json:"alphanumericAsc,omitempty"`
}

// AlphanumericAscOrder selects natural ascending order of label values.
type AlphanumericAscOrder struct{}

// HostedClusterPackageStrategy says how a revision spreads. Exactly one field is set.
// +kubebuilder:validation:XValidation:rule="has(self.instant) != has(self.rollingUpgrade)",message="exactly one of instant or rollingUpgrade must be set"
type HostedClusterPackageStrategy struct {
	// instant updates every eligible Package at once.
	// +optional
	Instant *InstantStrategy `json:"instant,omitempty"`

	// rollingUpgrade updates Packages a few at a time, partition by partition.
	// +optional
	RollingUpgrade *RollingUpgradeStrategy `json:"rollingUpgrade,omitempty"`
}

// InstantStrategy updates everything at once.
type InstantStrategy struct{}

// RollingUpgradeStrategy bounds how many Packages may be updating or unavailable at once.
type RollingUpgradeStrategy struct {
	// maxUnavailable is the number (at least 1) or percentage ("1%" to "100%", of eligible
	// targets, rounded down, at least 1) of Packages that may be updating or unavailable.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]?|100)%$')",message="maxUnavailable must be an integer of at least 1 or a percentage from 1% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// progressDeadlineSeconds: an updating Package not available by then has failed; it keeps
	// its budget slot, so the rollout stops.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// minReadySeconds a Package must stay available before its update counts as done.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// soakSeconds a partition holds the next one after its last Package progressed; a Package
	// of the partition that stops being available meanwhile fails the rollout.
	// partition.policies[].soakSeconds overrides it per partition.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SoakSeconds int32 `json:"soakSeconds,omitempty"`
}

// PackageTemplate is the metadata and spec of the Packages a HostedClusterPackage creates.
type PackageTemplate struct {
	// metadata: labels and annotations copied onto each Package.
	// +optional
	Metadata PackageTemplateMetadata `json:"metadata,omitempty"`

	// spec of each Package, without the revision, which the rollout pins.
	// +required
	Spec PackageTemplateSpec `json:"spec"`
}

// PackageTemplateMetadata is the part of ObjectMeta a template may set.
type PackageTemplateMetadata struct {
	// labels copied onto each Package.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations copied onto each Package.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// HostedClusterPackageStatus reports the rollout.
type HostedClusterPackageStatus struct {
	// observedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Available, Progressing, HasPausedPackage, Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// totalPackages is the number of targeted HostedClusters.
	// +optional
	TotalPackages int32 `json:"totalPackages"`
	// updatedPackages have the update revision's spec.
	// +optional
	UpdatedPackages int32 `json:"updatedPackages"`
	// availablePackages are Available=True at their current generation.
	// +optional
	AvailablePackages int32 `json:"availablePackages"`
	// unavailablePackages are not available, or missing.
	// +optional
	UnavailablePackages int32 `json:"unavailablePackages"`
	// progressedPackages are updated, Available=True and Progressing=False.
	// +optional
	ProgressedPackages int32 `json:"progressedPackages"`
	// pausedPackages are Paused=True.
	// +optional
	PausedPackages int32 `json:"pausedPackages"`
	// failedPackages missed their progress deadline.
	// +optional
	FailedPackages int32 `json:"failedPackages"`
	// skippedPackages are targets the rollout leaves alone for now (HostedCluster not Available
	// or being deleted, Package paused by hand, a Package convoy does not own): they may run an
	// older revision, or none.
	// +optional
	SkippedPackages int32 `json:"skippedPackages"`
	// pendingDeletions are Packages of HostedClusters that are no longer selected and wait for a
	// budget slot, or for spec.paused to be lifted, to be deleted.
	// +optional
	PendingDeletions int32 `json:"pendingDeletions,omitempty"`

	// packageName is the metadata.name of the manifest of the package the update revision
	// rolls out: the name Package Operator's spec.dependencies of other packages refer to.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PackageName string `json:"packageName,omitempty"`

	// dependencies names the HostedClusterPackages this one waits for on each HostedCluster:
	// those of spec.dependsOn, then those rolling out the packages that the manifest's
	// spec.dependencies (Package Operator's format) names.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Dependencies []string `json:"dependencies,omitempty"`

	// waitingPackages are targets whose Package waits for a dependency (spec.dependsOn) to be
	// available on their HostedCluster before it installs or moves.
	// +optional
	WaitingPackages int32 `json:"waitingPackages,omitempty"`

	// waiting samples the Packages that wait for a dependency, or for their dependants to be
	// gone before they are deleted, at most 10, in rollout order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Waiting []DependencyWait `json:"waiting,omitempty"`

	// currentRevision names the ControllerRevision every Package had when the last rollout
	// completed.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// updateRevision names the ControllerRevision being rolled out.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`

	// partitions in rollout order.
	// +optional
	// +listType=atomic
	Partitions []PartitionStatus `json:"partitions,omitempty"`

	// gate names what holds the rollout now (a soak, an approval, a window, the failure
	// policy); empty when nothing does.
	// +optional
	Gate *RolloutGate `json:"gate,omitempty"`

	// promotion says which commit the upstream sectors let through, under spec.promotion.
	// +optional
	Promotion *PromotionStatus `json:"promotion,omitempty"`

	// rejectedRevision names the update revision a rollback rejected: it is not rolled out again
	// until a new commit or template change makes another revision.
	// +optional
	RejectedRevision string `json:"rejectedRevision,omitempty"`

	// failures samples Packages that failed, and checks that failed, at most 10.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Failures []PackageFailure `json:"failures,omitempty"`

	// skipped samples the skipped targets and why, at most 10, in rollout order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Skipped []SkippedTarget `json:"skipped,omitempty"`
}

// SkippedTarget is one targeted HostedCluster the rollout leaves alone for now.
type SkippedTarget struct {
	// hostedCluster is "<namespace>/<name>".
	// +required
	HostedCluster string `json:"hostedCluster"`
	// partition is the name of its partition.
	// +optional
	Partition string `json:"partition,omitempty"`
	// reason is a CamelCase reason: HostedClusterNotAvailable, HostedClusterDeleting,
	// PackagePaused, PackageConflict or NamespaceConflict.
	// +required
	Reason string `json:"reason"`
	// message is for humans.
	// +optional
	Message string `json:"message,omitempty"`
}

// PartitionStatus reports one partition.
type PartitionStatus struct {
	// name is the label value, or "unknown".
	// +required
	Name string `json:"name"`
	// total is the number of targets in the partition.
	// +optional
	Total int32 `json:"total"`
	// updated is the number of its targets that have the update revision's spec.
	// +optional
	Updated int32 `json:"updated"`
	// available is the number of its targets that are Available=True at their current
	// generation.
	// +optional
	Available int32 `json:"available"`
	// progressed is the number of its targets that are updated, Available=True and
	// Progressing=False.
	// +optional
	Progressed int32 `json:"progressed"`
	// skipped is the number of its targets the rollout leaves alone for now (see
	// status.skipped).
	// +optional
	Skipped int32 `json:"skipped,omitempty"`
	// waiting is the number of its targets whose Package waits for a dependency (see
	// status.waiting).
	// +optional
	Waiting int32 `json:"waiting,omitempty"`
	// state of the partition: Pending, Progressing, Done, Blocked, Soaking, Checking,
	// AwaitingApproval or OutsideWindow.
	// +required
	// +kubebuilder:validation:Enum=Pending;Progressing;Done;Blocked;Soaking;Checking;AwaitingApproval;OutsideWindow
	State string `json:"state"`
	// until is when a Soaking partition's soak ends, when a Checking partition's longest check
	// duration ends, or when the window an OutsideWindow partition waits for opens.
	// +optional
	Until *metav1.Time `json:"until,omitempty"`
	// checks report the partition's checks for the revision they ran at.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Checks []CheckStatus `json:"checks,omitempty"`
}

// PackageFailure is one failed Package, or one failed check of a partition.
type PackageFailure struct {
	// hostedCluster is "<namespace>/<name>"; empty for a failed check.
	// +optional
	HostedCluster string `json:"hostedCluster,omitempty"`
	// partition of a failed check.
	// +optional
	Partition string `json:"partition,omitempty"`
	// check names a failed check of the partition.
	// +optional
	Check string `json:"check,omitempty"`
	// reason is a CamelCase reason.
	// +required
	Reason string `json:"reason"`
	// message is for humans.
	// +optional
	Message string `json:"message,omitempty"`
}

// HostedClusterPackage rolls a Git package out to a fleet of HostedClusters, one Package per HCP
// namespace, partition by partition, within a budget of unavailable Packages.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=hcpkg,categories=convoy
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.totalPackages`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedPackages`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availablePackages`
// +kubebuilder:printcolumn:name="Progressed",type=integer,JSONPath=`.status.progressedPackages`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failedPackages`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.updateRevision`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HostedClusterPackage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec HostedClusterPackageSpec `json:"spec"`

	// status is the observed state.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status HostedClusterPackageStatus `json:"status,omitempty"`
}

// HostedClusterPackageList is a list of HostedClusterPackages.
//
// +kubebuilder:object:root=true
type HostedClusterPackageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostedClusterPackage `json:"items"`
}

// GetProgressDeadline returns the rolling upgrade's progress deadline.
func (h *HostedClusterPackage) GetProgressDeadline() time.Duration {
	ru := h.Spec.Strategy.RollingUpgrade
	if ru == nil || ru.ProgressDeadlineSeconds == nil {
		return DefaultProgressDeadlineSeconds * time.Second
	}
	return time.Duration(*ru.ProgressDeadlineSeconds) * time.Second
}

// GetRevisionHistoryLimit returns how many old revisions to keep.
func (h *HostedClusterPackage) GetRevisionHistoryLimit() int {
	if h.Spec.RevisionHistoryLimit == nil {
		return DefaultRevisionHistoryLimit
	}
	return int(*h.Spec.RevisionHistoryLimit)
}

// GetConditions returns the status conditions.
func (h *HostedClusterPackage) GetConditions() []metav1.Condition { return h.Status.Conditions }

// SetConditions replaces the status conditions.
func (h *HostedClusterPackage) SetConditions(c []metav1.Condition) { h.Status.Conditions = c }

func init() {
	knownTypes = append(knownTypes, &HostedClusterPackage{}, &HostedClusterPackageList{})
}
