package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The gates of a rollout: the policies of its partitions, its windows, its failure policy
// and the gate that holds it, in status.

// PartitionPolicy holds the gates of one partition.
// +kubebuilder:validation:XValidation:rule="!(has(self.skipChecks) && self.skipChecks && has(self.checks) && size(self.checks) > 0)",message="checks and skipChecks are mutually exclusive"
type PartitionPolicy struct {
	// name of the partition: a label value, "*" or "unknown".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// soakSeconds this partition holds the next one after its last Package progressed;
	// overrides strategy.rollingUpgrade.soakSeconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SoakSeconds *int32 `json:"soakSeconds,omitempty"`

	// requireApproval: the partition starts only once a RolloutApproval names it and the update
	// revision.
	// +optional
	RequireApproval bool `json:"requireApproval,omitempty"`

	// canary: the partition tolerates no failed Package, whatever failurePolicy.maxFailures says.
	// +optional
	Canary bool `json:"canary,omitempty"`

	// checks of this partition, replacing spec.checks when not empty.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Checks []RolloutCheck `json:"checks,omitempty"`

	// skipChecks: the partition runs no check, neither spec.checks nor its own.
	// +optional
	SkipChecks bool `json:"skipChecks,omitempty"`
}

// RolloutWindow is a recurring span of time: it opens at each time the cron schedule names and
// stays open for duration.
type RolloutWindow struct {
	// kind: Allow (updates may start while it is open) or Deny (a freeze: nothing starts while it
	// is open).
	// +required
	// +kubebuilder:validation:Enum=Allow;Deny
	Kind string `json:"kind"`

	// schedule is a standard five-field cron expression ("0 22 * * 1-5"), or a descriptor
	// such as "@daily", in timeZone.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`

	// duration the window stays open after each time of the schedule ("4h", "30m").
	// +required
	Duration metav1.Duration `json:"duration"`

	// timeZone is an IANA time zone name ("Europe/Berlin"); the default is UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
}

// Window kinds.
const (
	// WindowAllow: updates may start while the window is open.
	WindowAllow = "Allow"
	// WindowDeny: nothing starts while the window is open (a freeze).
	WindowDeny = "Deny"
)

// FailurePolicy says how many failed Packages a rollout tolerates and what happens once it
// stops.
type FailurePolicy struct {
	// maxFailures is the number, or percentage of eligible targets (rounded down), of failed
	// Packages the rollout tolerates: a partition whose other targets are done counts as done
	// while the rollout's failures stay within it. 0, the default, tolerates none: a failed
	// Package holds its partition's barrier. A partition marked canary tolerates none.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="maxFailures must be a non-negative integer or a percentage from 0% to 100%"
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`

	// action once the rollout stops on failures beyond maxFailures: Stop (the default) leaves
	// every Package where it is; Rollback moves Packages back to the current revision and
	// rejects the update revision.
	// +optional
	// +kubebuilder:validation:Enum=Stop;Rollback
	Action string `json:"action,omitempty"`

	// rollbackScope says which Packages a Rollback moves back: Failed (the default), the
	// Packages that failed; or Updated, every Package on the update revision.
	// +optional
	// +kubebuilder:validation:Enum=Failed;Updated
	RollbackScope string `json:"rollbackScope,omitempty"`
}

// Failure policy actions and rollback scopes.
const (
	// FailureActionStop leaves every Package where it is once the rollout stops.
	FailureActionStop = "Stop"
	// FailureActionRollback moves Packages back to the current revision once the rollout stops.
	FailureActionRollback = "Rollback"
	// RollbackFailed moves back only the Packages that failed.
	RollbackFailed = "Failed"
	// RollbackUpdated moves back every Package on the update revision.
	RollbackUpdated = "Updated"
)

// RolloutGate is what holds a rollout.
type RolloutGate struct {
	// type: Soak, Check, Approval, Window, Failures or Promotion.
	// +required
	// +kubebuilder:validation:Enum=Soak;Check;Approval;Window;Failures;Promotion
	Type string `json:"type"`
	// partition the gate holds: the one that waits to start, or for Failures the one whose
	// failures (or failed check) stopped the rollout, or for a Check gate that holds the
	// completion the last one whose checks run.
	// +optional
	Partition string `json:"partition,omitempty"`
	// until is when the gate opens by itself (a soak's end, a window's opening); empty when only
	// a person or a new revision opens it.
	// +optional
	Until *metav1.Time `json:"until,omitempty"`
	// message is for humans: what to do, or what to wait for.
	// +optional
	Message string `json:"message,omitempty"`
}

// Gate types.
const (
	// GateSoak: a partition soaks before the next one starts.
	GateSoak = "Soak"
	// GateCheck: a partition's checks run, or are inconclusive, and hold the next partition.
	GateCheck = "Check"
	// GateApproval: a partition waits for a RolloutApproval of the update revision.
	GateApproval = "Approval"
	// GateWindow: no allowed window is open, or a deny window is.
	GateWindow = "Window"
	// GateFailures: failures beyond failurePolicy.maxFailures, or a failed check, stopped the
	// rollout.
	GateFailures = "Failures"
	// GatePromotion: the upstream sectors have not let a commit through, withdrew the one
	// rolling out, or their bus cannot be read.
	GatePromotion = "Promotion"
)
