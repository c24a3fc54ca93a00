package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// SpecUpdatedAtAnnotation records, in RFC 3339, when the controller last set a Package's spec to a
// revision. The controller writes it with every create and update from a Plan (value:
// FormatSpecUpdatedAt(Input.Now)); the planner measures progress deadlines and minReadySeconds
// from it. A Package without it is measured from its creation timestamp.
const SpecUpdatedAtAnnotation = "convoy.dev/spec-updated-at"

// Input is the world as the controller sees it at one instant.
type Input struct {
	// HostedClusterPackage is the object being rolled out; the planner reads its name,
	// generation and spec.
	HostedClusterPackage *convoyv1alpha1.HostedClusterPackage

	// HostedClusters lists every HostedCluster of the management cluster, in all namespaces.
	// The planner applies spec.hostedClusterSelector itself, so that Packages of HostedClusters
	// that stop matching are deleted.
	HostedClusters []HostedCluster

	// Packages lists every Package the HostedClusterPackage owns, matching or not.
	Packages []convoyv1alpha1.Package

	// ForeignPackages lists the Packages named like the HostedClusterPackage that it does not
	// own; the planner reports a target whose HCP namespace holds one as a conflict and never
	// changes it.
	ForeignPackages []ForeignPackage

	// UpdateRevision is the revision being rolled out (status.updateRevision).
	UpdateRevision Revision

	// CurrentRevision is the revision every Package had when the last rollout completed
	// (status.currentRevision); nil until the first rollout completes.
	CurrentRevision *Revision

	// OlderRevisions are the other stored revisions; the planner only uses them to report which
	// revisions Packages still use.
	OlderRevisions []Revision

	// Approvals lists the approvals that name the HostedClusterPackage: a partition that
	// requires an approval starts only once one of them approves it at UpdateRevision
	// (Approval.Approves).
	Approvals []Approval

	// Promotion is what the upstream sectors say of the update revision (spec.promotion); the
	// zero value when the HostedClusterPackage has none.
	Promotion PromotionGate

	// CheckResults holds, by partition name, the results of the partitions' checks
	// (status.partitions[].checks, see CheckResultsOf) with those the controller just recorded
	// (SetCheckResult); results of another revision than UpdateRevision are ignored.
	CheckResults map[string][]convoyv1alpha1.CheckStatus

	// ShardFor returns the convoy.dev/shard label a Package of namespace whose label is current
	// should have ("" for the unsharded replica); nil leaves every label as it is. A Package
	// whose label differs is relabelled: a shard move rides only on a relabel, never with a
	// change of revision, and the old replica cancels its pass of a Package that moves, so that
	// two replicas never apply two revisions of one Package at once.
	ShardFor func(namespace, current string) string

	// Dependencies holds what each HostedClusterPackage of spec.dependsOn has on the
	// HostedClusters, in the order of spec.dependsOn (rule 26); nil without spec.dependsOn.
	Dependencies []Dependency

	// Dependants names, by HCP namespace, the HostedClusterPackages that depend on this one
	// and still have a Package there, deleting or not: this one's Package there is not deleted
	// before theirs are gone (rule 26).
	Dependants map[string][]string

	// Now is the clock.
	Now time.Time

	// Memo, when set, carries what the last plan of this HostedClusterPackage concluded of its
	// Packages to this one (Memo); nil plans from scratch, with the same result.
	Memo *Memo
}

// HostedCluster is the part of a HyperShift HostedCluster the planner reads.
type HostedCluster struct {
	// Namespace of the HostedCluster.
	Namespace string

	// Name of the HostedCluster.
	Name string

	// Labels of the HostedCluster: the selector and the partition label key read them. The
	// controller passes the cache's own map: read only, here and in the checks.
	Labels map[string]string

	// Available is true when the HostedCluster's Available condition is True.
	Available bool

	// AvailableMessage is the message of the Available condition, reported when it is not True.
	AvailableMessage string

	// Deleting is true when the HostedCluster has a deletion timestamp.
	Deleting bool
}

// Revision is one (template spec, Git commit) pair a Package can be pinned to; the controller
// stores it as a ControllerRevision.
type Revision struct {
	// Name of the ControllerRevision.
	Name string

	// Commit is the resolved Git commit, written into the Package's spec.revision.
	Commit string

	// Number orders revisions by when they were last rolled out (the ControllerRevision's
	// .revision): a revision numbered above the current one was rolled out after it, so a
	// Package pinned to it took part in the rollout that is not complete yet.
	Number int64

	// Template is the Package spec without its revision.
	Template convoyv1alpha1.PackageTemplateSpec

	// Rejected is set on a revision a rollback rejected (RejectedAnnotation on its
	// ControllerRevision): the planner never rolls it out again.
	Rejected bool

	// CreatedAt is the creation timestamp of its ControllerRevision, set by the API server: an
	// approval older than it was given for another ControllerRevision of the same name, one
	// pruned since, and does not count.
	CreatedAt time.Time
}

// RejectedAnnotation marks a ControllerRevision that a rollback rejected; its value is the
// reason, for humans. The controller writes it when a Plan says Reject.
const RejectedAnnotation = "convoy.dev/rejected"

// Approval is the part of a PartitionApproval (or of a legacy RolloutApproval) the planner
// reads; Approves says when it counts.
type Approval struct {
	// Name of the approval.
	Name string

	// Namespace of the PartitionApproval; empty for a legacy, cluster-scoped RolloutApproval.
	Namespace string

	// HostedClusterPackageUID is the UID of the HostedClusterPackage it approves: the spec's,
	// or the owner reference's of a legacy RolloutApproval.
	HostedClusterPackageUID types.UID

	// Partition it approves.
	Partition string

	// Revision it approves: the name of a ControllerRevision.
	Revision string

	// Commit of that revision.
	Commit string

	// CreatedAt is the approval's creation timestamp, set by the API server.
	CreatedAt time.Time
}

// ForeignPackage is a Package the HostedClusterPackage does not own.
type ForeignPackage struct {
	// Namespace and Name of the Package.
	Namespace, Name string

	// Owner describes its controller ("HostedClusterPackage other"), or is empty when it has none.
	Owner string
}

// FormatSpecUpdatedAt formats t as the value of SpecUpdatedAtAnnotation.
func FormatSpecUpdatedAt(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}

// key returns "<namespace>/<name>", the way status names a HostedCluster.
func (hc *HostedCluster) key() string {
	return hc.Namespace + "/" + hc.Name
}

// TemplateMetadataAnnotation records on a Package the TemplateMetadataHash of the template
// metadata it was last applied with; a Package whose value differs gets the template's
// metadata again, at the revision it has.
const TemplateMetadataAnnotation = "convoy.dev/template-metadata"

// TemplateMetadataHash returns a short, stable hash of the labels and annotations of a
// HostedClusterPackage's template.
func TemplateMetadataHash(m convoyv1alpha1.PackageTemplateMetadata) string {
	data, err := json.Marshal(m) // map keys are sorted
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
