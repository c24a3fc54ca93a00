package v1alpha1

// Summary condition types shared by every kind, compatible with kstatus.
const (
	// ReadyCondition is True when the object has reached its goal at its current generation.
	// Polarity: positive.
	ReadyCondition = "Ready"

	// ReconcilingCondition is True while work is under way. Polarity: abnormal-true; it is
	// removed once the object is Ready.
	ReconcilingCondition = "Reconciling"

	// StalledCondition is True when the object cannot proceed without a change by the user.
	// Polarity: abnormal-true.
	StalledCondition = "Stalled"
)

// Kind-specific condition types.
const (
	// FetchFailedCondition is True on a GitSource whose last poll failed. Polarity: abnormal-true.
	FetchFailedCondition = "FetchFailed"

	// AvailableCondition is True on a Package or ObjectDeployment when every phase of
	// status.revision passes its probes, and on a HostedClusterPackage when no more Packages are
	// unavailable than the strategy allows. Polarity: positive.
	AvailableCondition = "Available"

	// ProgressingCondition is True while a Package's desired revision differs from
	// status.revision or its phases are not all available yet, and on a HostedClusterPackage
	// while not every Package has progressed. Polarity: abnormal-true.
	ProgressingCondition = "Progressing"

	// PausedCondition is True on a Package or ObjectDeployment while spec.paused is set.
	// Polarity: abnormal-true, a hold someone chose rather than a failure.
	PausedCondition = "Paused"

	// HasPausedPackageCondition is True on a HostedClusterPackage when at least one of its
	// Packages is paused. Polarity: abnormal-true, a hold someone chose rather than a failure.
	HasPausedPackageCondition = "HasPausedPackage"

	// ShardsReadyCondition is True on a HostedClusterPackage when every shard (convoy.dev/shard)
	// holding one of its Packages has a live replica (a held leader election lease) and the shard
	// list in force is valid; it is absent when nothing is sharded. Polarity: positive.
	ShardsReadyCondition = "ShardsReady"
)

// Generic reasons.
const (
	// SucceededReason: the last reconcile reached the goal.
	SucceededReason = "Succeeded"

	// ProgressingReason: work is under way.
	ProgressingReason = "Progressing"

	// ProgressingWithRetryReason: the last attempt failed with a transient error and is retried.
	ProgressingWithRetryReason = "ProgressingWithRetry"

	// SuspendedReason: the object is suspended or paused by its spec.
	SuspendedReason = "Suspended"

	// InvalidSpecReason: the spec cannot be acted on (for example a missing Secret key).
	InvalidSpecReason = "InvalidSpec"

	// DependencyNotReadyReason: something this object needs (a GitSource artifact, a
	// hosted cluster, a HostedClusterPackage of spec.dependsOn on some HostedCluster) is not ready
	// yet.
	DependencyNotReadyReason = "DependencyNotReady"
)

// GitSource reasons.
const (
	// AuthenticationFailedReason: the Git server refused the credentials.
	AuthenticationFailedReason = "AuthenticationFailed"

	// RefNotFoundReason: the branch, tag, semver range or commit matches nothing on the remote.
	RefNotFoundReason = "RefNotFound"

	// URLInvalidReason: the URL cannot be parsed or uses an unsupported scheme.
	URLInvalidReason = "URLInvalid"

	// GitOperationFailedReason: a Git operation failed (network, server error, timeout).
	GitOperationFailedReason = "GitOperationFailed"

	// StorageLimitExceededReason: a tree exceeds the store's file count or size limits.
	StorageLimitExceededReason = "StorageLimitExceeded"

	// InsecureURLRefusedReason: credentials would be sent over plain http://, or the URL uses
	// file:// without the controller flag that allows it.
	InsecureURLRefusedReason = "InsecureURLRefused"
)

// Package and ObjectDeployment reasons.
const (
	// RevisionAvailableReason: every phase of the desired revision is applied and available.
	RevisionAvailableReason = "RevisionAvailable"

	// CommitNotFoundReason: the revision to apply is neither in the store nor on the remote of
	// the GitSource; the store looks again with a growing backoff.
	CommitNotFoundReason = "CommitNotFound"

	// RenderFailedReason: the package directory could not be loaded or rendered.
	RenderFailedReason = "RenderFailed"

	// ApplyFailedReason: the API server refused an object.
	ApplyFailedReason = "ApplyFailed"

	// DeleteFailedReason: the API server refused to delete an object of a prune or teardown
	// (Forbidden); retried with backoff.
	DeleteFailedReason = "DeleteFailed"

	// EmptyRevisionReason: the revision renders no objects; convoy refuses to apply it, since
	// applying it would prune everything.
	EmptyRevisionReason = "EmptyRevision"

	// CollisionReason: an object exists and belongs to someone else.
	CollisionReason = "Collision"

	// TakeoverContestedReason: an object convoy took over from another tool (spec.adopt)
	// carries that tool's marks again, so the tool still applies it; convoy stops instead of
	// writing over it in turn.
	TakeoverContestedReason = "TakeoverContested"

	// ForbiddenTargetReason: an object would land outside the Package's namespace or is
	// cluster-scoped in a management phase.
	ForbiddenTargetReason = "ForbiddenTarget"

	// ProbeFailedReason: a phase is applied but its probes do not pass yet.
	ProbeFailedReason = "ProbeFailed"

	// HostedClusterUnreachableReason: the hosted cluster's API server cannot be reached.
	HostedClusterUnreachableReason = "HostedClusterUnreachable"

	// HostedResponseTooLargeReason: the hosted cluster's API server answered with more than the
	// controller reads of one answer (--hosted-max-response-bytes).
	HostedResponseTooLargeReason = "HostedResponseTooLarge"

	// HostedClusterNotFoundReason: a phase needs a hosted cluster and the namespace has none.
	HostedClusterNotFoundReason = "HostedClusterNotFound"

	// KubeconfigRefusedReason: the hosted cluster's kubeconfig Secret asks for something the
	// controller refuses (exec, auth-provider, file references, proxy-url,
	// insecure-skip-tls-verify) without the controller flag that allows it.
	KubeconfigRefusedReason = "KubeconfigRefused"

	// ConstraintsNotMetReason: the package's spec.constraints do not hold in the environment of
	// the cluster it would be installed in; nothing is applied there.
	ConstraintsNotMetReason = "ConstraintsNotMet"

	// ScopeUnsupportedReason: the Package asks for a scope its package does not declare in
	// spec.scopes.
	ScopeUnsupportedReason = "ScopeUnsupported"

	// CrossNamespaceRefRefusedReason: the Package names a GitSource of another namespace that
	// does not grant access to the Package's namespace.
	CrossNamespaceRefRefusedReason = "CrossNamespaceRefRefused"

	// PausedReason: spec.paused is set.
	PausedReason = "Paused"

	// NotPausedReason: spec.paused is not set.
	NotPausedReason = "NotPaused"
)

// HostedClusterPackage reasons; the messages that go with them are part of the API.
const (
	// EnoughPackagesAvailableReason: unavailable Packages are within the budget.
	EnoughPackagesAvailableReason = "EnoughPackagesAvailable"

	// NotEnoughPackagesAvailableReason: more Packages are unavailable than the budget allows.
	NotEnoughPackagesAvailableReason = "NotEnoughPackagesAvailable"

	// AllPackagesProgressedReason: every Package is updated, available and not progressing.
	AllPackagesProgressedReason = "AllPackagesProgressed"

	// NotAllPackagesProgressedReason: at least one Package has not progressed.
	NotAllPackagesProgressedReason = "NotAllPackagesProgressed"

	// AtLeastOnePackagePausedReason: at least one Package is paused.
	AtLeastOnePackagePausedReason = "AtLeastOnePackagePaused"

	// NoPackagePausedReason: no Package is paused.
	NoPackagePausedReason = "NoPackagePaused"

	// RolloutBlockedReason: a Package failed its progress deadline and holds the budget.
	RolloutBlockedReason = "RolloutBlocked"

	// GatedReason: a gate holds the rollout (status.gate: a soak, checks, an approval, a
	// window); the Ready message names it.
	GatedReason = "Gated"

	// CheckFailedReason: a check of a partition failed: more evaluations failed than its
	// failureLimit tolerates.
	CheckFailedReason = "CheckFailed"

	// CheckInconclusiveReason: a check of a partition was inconclusive more times in a row
	// than its inconclusiveLimit tolerates; it holds the rollout until it is conclusive.
	CheckInconclusiveReason = "CheckInconclusive"

	// RolloutRejectedReason: the failure policy rolled the rollout back and rejected its update
	// revision (status.rejectedRevision); a new commit or template change starts another.
	RolloutRejectedReason = "RolloutRejected"

	// AwaitingPromotionReason: under spec.promotion, no commit has come through the upstream
	// sectors yet, or their bus cannot be read before the first one did.
	AwaitingPromotionReason = "AwaitingPromotion"

	// ShardsHaveReplicasReason: every shard holding a Package has a live replica.
	ShardsHaveReplicasReason = "ShardsHaveReplicas"

	// ShardWithoutReplicaReason: a shard holding Packages has no live replica: its lease is
	// absent, released or expired, and its Packages are not reconciled.
	ShardWithoutReplicaReason = "ShardWithoutReplica"

	// InvalidShardListReason: the shards ConfigMap names no valid list; the last valid one
	// stays in force.
	InvalidShardListReason = "InvalidShardList"
)
