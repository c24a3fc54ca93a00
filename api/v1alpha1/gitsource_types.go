package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults for GitSource timing.
const (
	// DefaultGitSourceInterval is the poll period when spec.interval is unset.
	DefaultGitSourceInterval = time.Minute
	// DefaultGitSourceTimeout bounds one Git operation when spec.timeout is unset.
	DefaultGitSourceTimeout = 60 * time.Second
)

// GitSourceSpec says which repository to poll and which ref to follow.
type GitSourceSpec struct {
	// url of the repository: https://, http://, ssh://, git@host:path (scp-like) or file://.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^((https?|ssh|file)://.+|[A-Za-z0-9._-]+@[^:/]+:.+)$`
	URL string `json:"url"`

	// ref is the branch, tag, semver range or commit to follow; exactly one must be set.
	// +required
	Ref GitRef `json:"ref"`

	// interval between two polls of the remote, at least 1s; each poll is jittered by up to 10%.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="interval must be at least 1s"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// timeout of one Git operation (ls-remote or fetch), from 1s to 1h.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="timeout must be between 1s and 1h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// secretRef names a Secret in the GitSource's namespace holding credentials: username and
	// password, or bearerToken, for HTTP; identity (a private key) and known_hosts for SSH;
	// ca.crt to trust a private certificate authority.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// webhookSecretRef names a Secret whose key "token" authenticates webhook calls that ask
	// for an immediate poll (GitHub, GitLab, Gitea, Bitbucket Server or generic HMAC
	// signatures).
	// +optional
	WebhookSecretRef *LocalObjectReference `json:"webhookSecretRef,omitempty"`

	// suspend stops polling; the last artifact stays in status.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// accessFrom lets Packages of other namespaces use this GitSource. Without it, only
	// Packages of the GitSource's own namespace, and Packages a HostedClusterPackage owns
	// (cluster-scoped, so made by a cluster administrator), may use it.
	// +optional
	AccessFrom *AccessFrom `json:"accessFrom,omitempty"`

	// commitStatus reports each HostedClusterPackage's rollout of a commit of this repository
	// on that commit, in the forge that hosts it: one status context "convoy/<name>" per
	// HostedClusterPackage, pending while it progresses, success when it completes, failure
	// when it stalls or its revision is rejected. Without it, nothing is reported.
	// +optional
	CommitStatus *CommitStatus `json:"commitStatus,omitempty"`
}

// Forges whose commit status API convoy calls.
const (
	// CommitStatusGitHub: POST {apiURL}/repos/{owner}/{repo}/statuses/{sha}.
	CommitStatusGitHub = "github"
	// CommitStatusGitLab: POST {apiURL}/projects/{id}/statuses/{sha}.
	CommitStatusGitLab = "gitlab"
	// CommitStatusGitea: POST {apiURL}/api/v1/repos/{owner}/{repo}/statuses/{sha}.
	CommitStatusGitea = "gitea"
)

// CommitStatus says where and how the rollouts of a GitSource's commits are reported.
//
// Note: it belongs to the repository (the GitSource), not to each HostedClusterPackage: the
// forge, the repository and the token are properties of where the commits live, shared by
// every HostedClusterPackage that rolls them out, and the token Secret then lives beside the
// GitSource's other credentials rather than in a cluster-scoped object's reach.
// +kubebuilder:validation:XValidation:rule="self.provider == 'gitlab' || self.repository.matches('^[^/]+/[^/]+$')",message="repository must be owner/name for github and gitea"
// +kubebuilder:validation:XValidation:rule="self.provider != 'gitea' || has(self.apiURL)",message="apiURL is required for gitea"
type CommitStatus struct {
	// provider is the forge: github, gitlab or gitea.
	// +required
	// +kubebuilder:validation:Enum=github;gitlab;gitea
	Provider string `json:"provider"`

	// apiURL is the forge's base URL: for github its REST API (default https://api.github.com;
	// GitHub Enterprise: https://host/api/v3), for gitlab its API (default
	// https://gitlab.com/api/v4), for gitea the server's root URL (https://gitea.example.com).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	APIURL string `json:"apiURL,omitempty"`

	// repository is "owner/name" for github and gitea; for gitlab the project's path
	// ("group/subgroup/name") or numeric ID.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Repository string `json:"repository"`

	// secretRef names a Secret of type Opaque in the GitSource's namespace whose key "token"
	// is the API token (GitHub: a token with the statuses permission; GitLab: api scope; Gitea:
	// write:repository); a Secret of another type, a service account token's above all, is
	// refused. The token is never logged nor written to a status or event.
	// +required
	SecretRef LocalObjectReference `json:"secretRef"`

	// targetURL is the link of each status, for example a dashboard; "{name}" is replaced by
	// the HostedClusterPackage's name and "{commit}" by the commit. Empty sets no link.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	TargetURL string `json:"targetURL,omitempty"`
}

// AccessFrom grants namespaces the use of a GitSource.
type AccessFrom struct {
	// namespaceSelectors: a Package of a namespace whose labels match at least one of these
	// selectors may use the GitSource. An empty selector ({}) matches every namespace.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors"`
}

// GitRef selects a commit of the repository. Exactly one field is set.
// +kubebuilder:validation:XValidation:rule="[has(self.branch), has(self.tag), has(self.semver), has(self.commit)].filter(x, x).size() == 1",message="exactly one of branch, tag, semver or commit must be set"
type GitRef struct {
	// branch to follow, e.g. "main".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Branch string `json:"branch,omitempty"`

	// tag to follow, e.g. "v1.2.0"; a tag that moves is followed.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Tag string `json:"tag,omitempty"`

	// semver is a range over the repository's tags, e.g. ">=1.2.0 <2.0.0"; the highest matching
	// tag wins.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	SemVer string `json:"semver,omitempty"`

	// commit is a full 40-character SHA-1 to pin.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{40}$`
	Commit string `json:"commit,omitempty"`
}

// GitSourceStatus is what the controller last observed of the remote.
type GitSourceStatus struct {
	// observedGeneration is the generation last reconciled successfully or found stalled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Reconciling, Stalled, FetchFailed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// artifact is the last commit fetched successfully; it stays when a later poll fails.
	// +optional
	Artifact *Artifact `json:"artifact,omitempty"`

	// lastHandledReconcileAt echoes the convoy.dev/requestedAt annotation last handled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`

	// promotion is what the last poll read of the repository's promotion refs, on which
	// management clusters publish their rollouts for the sectors after them.
	// +optional
	Promotion *PromotionRefsStatus `json:"promotion,omitempty"`
}

// Artifact is a fetched commit.
type Artifact struct {
	// revision is "<ref>@sha1:<commit>", e.g. "main@sha1:0123...".
	// +required
	Revision string `json:"revision"`

	// commit is the 40-character SHA-1 of the commit.
	// +required
	Commit string `json:"commit"`

	// lastUpdateTime is when the artifact last changed.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
}

// GitSource polls a Git repository and makes every fetched commit readable to Packages.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gs,categories=convoy
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.artifact.revision`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec GitSourceSpec `json:"spec"`

	// status is the observed state.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status GitSourceStatus `json:"status,omitempty"`
}

// GitSourceList is a list of GitSources.
//
// +kubebuilder:object:root=true
type GitSourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitSource `json:"items"`
}

// GetInterval returns the poll period.
func (s *GitSource) GetInterval() time.Duration {
	return durationOr(s.Spec.Interval, DefaultGitSourceInterval)
}

// GetTimeout returns the timeout of one Git operation.
func (s *GitSource) GetTimeout() time.Duration {
	return durationOr(s.Spec.Timeout, DefaultGitSourceTimeout)
}

// GetConditions returns the status conditions.
func (s *GitSource) GetConditions() []metav1.Condition { return s.Status.Conditions }

// SetConditions replaces the status conditions.
func (s *GitSource) SetConditions(c []metav1.Condition) { s.Status.Conditions = c }

func init() {
	knownTypes = append(knownTypes, &GitSource{}, &GitSourceList{})
}
