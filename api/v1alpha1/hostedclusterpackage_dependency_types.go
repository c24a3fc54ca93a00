package v1alpha1

// The dependencies between HostedClusterPackages: on each HostedCluster, a Package waits for
// the Packages it needs.

// MaxWaitingSamples bounds status.waiting.
const MaxWaitingSamples = 10

// Reasons of the dependencies between HostedClusterPackages.
const (
	// DependencyCycleReason: spec.dependsOn, followed through the HostedClusterPackages it
	// names, comes back to this one; nothing is applied until the cycle is broken.
	DependencyCycleReason = "DependencyCycle"
	// DependantsRemainReason: a Package waits to be deleted until the Packages of the
	// HostedClusterPackages that depend on it are gone from its HostedCluster.
	DependantsRemainReason = "DependantsRemain"
)

// PackageDependency names a HostedClusterPackage whose Package must be available on a
// HostedCluster before this one's Package installs there or moves to a new revision.
//
// HostedClusterPackages are cluster-scoped, so a dependency has a name and no namespace; both
// Packages live in the same HCP namespace of each HostedCluster.
// +kubebuilder:validation:XValidation:rule="!(has(self.minCommit) && has(self.minRevision))",message="minCommit and minRevision are mutually exclusive"
type PackageDependency struct {
	// name of the HostedClusterPackage depended on. One that does not exist holds every
	// HostedCluster until it does.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// minCommit: the dependency's Package must have applied this commit or one that contains
	// it (Git ancestry). Both HostedClusterPackages must roll out from the same repository.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{40}$`
	MinCommit string `json:"minCommit,omitempty"`

	// minRevision names a ControllerRevision of the dependency (its status.updateRevision
	// or currentRevision at some time): the dependency's Package must have applied that
	// revision's commit or one that contains it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	MinRevision string `json:"minRevision,omitempty"`
}

// DependencyWait is one HostedCluster where a Package waits: for a dependency to be available
// before it installs or moves (DependencyNotReady), or for its dependants to be gone before it
// is deleted (DependantsRemain).
type DependencyWait struct {
	// hostedCluster is "<namespace>/<name>".
	// +required
	HostedCluster string `json:"hostedCluster"`
	// partition is the name of its partition; empty for a deletion.
	// +optional
	Partition string `json:"partition,omitempty"`
	// dependency names the HostedClusterPackage waited for.
	// +required
	Dependency string `json:"dependency"`
	// reason is DependencyNotReady or DependantsRemain.
	// +required
	Reason string `json:"reason"`
	// message says what the Package waits for.
	// +optional
	Message string `json:"message,omitempty"`
}
