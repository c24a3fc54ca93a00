package rollout

import (
	"time"

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

	// UpdateRevision is the revision being rolled out (status.updateRevision).
	UpdateRevision Revision

	// CurrentRevision is the revision every Package had when the last rollout completed
	// (status.currentRevision); nil until the first rollout completes.
	CurrentRevision *Revision

	// OlderRevisions are the other stored revisions; the planner only uses them to report which
	// revisions Packages still use.
	OlderRevisions []Revision

	// Now is the clock.
	Now time.Time
}

// HostedCluster is the part of a HyperShift HostedCluster the planner reads.
type HostedCluster struct {
	// Namespace of the HostedCluster.
	Namespace string

	// Name of the HostedCluster.
	Name string

	// Labels of the HostedCluster: the selector and the partition label key read them.
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

	// Template is the Package spec without its revision.
	Template convoyv1alpha1.PackageTemplateSpec
}

// FormatSpecUpdatedAt formats t as the value of SpecUpdatedAtAnnotation.
func FormatSpecUpdatedAt(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}

// key returns "<namespace>/<name>", the way status names a HostedCluster.
func (hc *HostedCluster) key() string {
	return hc.Namespace + "/" + hc.Name
}
