package v1alpha1

// Labels and annotations convoy reads or writes on objects.
const (
	// PhaseAnnotation names the phase of an object in a package directory. It is removed from
	// the applied object.
	PhaseAnnotation = "convoy.dev/phase"

	// PKOPhaseAnnotation is Package Operator's phase annotation, accepted as PhaseAnnotation.
	PKOPhaseAnnotation = "package-operator.run/phase"

	// PackageNameLabel carries the name of the Package that applied an object.
	PackageNameLabel = "convoy.dev/package-name"

	// PackageNamespaceLabel carries the namespace of the Package that applied an object.
	PackageNamespaceLabel = "convoy.dev/package-namespace"

	// OwnerKindLabel is "ObjectDeployment" on objects an ObjectDeployment applied; objects a
	// Package applied do not carry it. It keeps a Package and an ObjectDeployment of the same
	// name from taking each other's objects.
	OwnerKindLabel = "convoy.dev/owner-kind"

	// HostedClusterLabel is set on objects applied inside a hosted cluster; its value is the
	// HCP namespace of the HostedCluster, which names it uniquely and is always a valid label
	// value.
	HostedClusterLabel = "convoy.dev/hosted-cluster"

	// HostedClusterPackageLabel carries the name of the HostedClusterPackage that owns a Package.
	HostedClusterPackageLabel = "convoy.dev/hostedclusterpackage"

	// RevisionAnnotation carries the revision (a GitSource's artifact, a Package's or an
	// ObjectDeployment's applied revision) on the events convoy emits about an object.
	RevisionAnnotation = "convoy.dev/revision"

	// AdoptAnnotation set to "true" in a desired manifest lets convoy take over an existing
	// object that it did not create.
	AdoptAnnotation = "convoy.dev/adopt"

	// AdoptedFromLabel records on an object which tools convoy took it over from (spec.adopt),
	// joined by dots: should their marks come back, a tool is still applying the object. A
	// label, not an annotation: a Deployment's generation moves with its annotations.
	AdoptedFromLabel = "convoy.dev/adopted-from"

	// PruneAnnotation set to "disabled" keeps an object when it leaves the package.
	PruneAnnotation = "convoy.dev/prune"

	// ForceAnnotation set to "true" lets convoy delete and recreate an object whose update is
	// refused because of an immutable field.
	ForceAnnotation = "convoy.dev/force"

	// RequestedAtAnnotation asks for an immediate reconcile; its value is echoed in
	// status.lastHandledReconcileAt.
	RequestedAtAnnotation = "convoy.dev/requestedAt"

	// ShardLabel assigns a Package to one controller replica when Packages are sharded.
	ShardLabel = "convoy.dev/shard"

	// Finalizer lets convoy tear down what a Package or ObjectDeployment applied.
	Finalizer = "convoy.dev/finalizer"

	// CheckCredentialsAnnotation on a Secret outside the namespace of a HostedClusterPackage's
	// GitSource lets that rollout's checks read it: its value lists the HostedClusterPackages
	// allowed, by name and separated by commas, or is "*" for every one. A check reads no
	// other Secret of another namespace.
	CheckCredentialsAnnotation = "convoy.dev/check-credentials"
)

// Phase classes.
const (
	// ClassManagement (the empty class) places a phase in the Package's namespace on the
	// management cluster.
	ClassManagement = ""

	// ClassHostedCluster places a phase inside the hosted cluster of the Package's namespace.
	ClassHostedCluster = "hosted-cluster"
)

// Package Operator scopes a package is installed with (Package spec.scope).
const (
	// ScopeNamespaced installs a package as Package Operator's Package does: phases land where
	// their class says, management objects in the Package's namespace.
	ScopeNamespaced = "Namespaced"

	// ScopeCluster installs a package as Package Operator's ClusterPackage does, inside the
	// hosted cluster of the Package's namespace: every phase lands there and objects keep
	// their own namespaces.
	ScopeCluster = "Cluster"
)

// HyperShift names convoy relies on.
const (
	// HostedClusterAnnotation on a HostedControlPlane names its HostedCluster as
	// "<namespace>/<name>".
	HostedClusterAnnotation = "hypershift.openshift.io/cluster"

	// KubeconfigSecretName is the Secret in an HCP namespace with the hosted cluster's admin
	// kubeconfig, under KubeconfigSecretKey.
	KubeconfigSecretName = "service-network-admin-kubeconfig"

	// KubeconfigSecretKey is the key of the kubeconfig in KubeconfigSecretName.
	KubeconfigSecretKey = "kubeconfig"
)
