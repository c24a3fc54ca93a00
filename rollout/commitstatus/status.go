package commitstatus

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// State is a commit status's state, in convoy's words; each provider maps it to its own.
type State string

// The states of a rollout on its commit.
const (
	// Pending: the rollout progresses (or waits on a gate).
	Pending State = "pending"
	// Success: the rollout completed.
	Success State = "success"
	// Failure: the rollout stalled or its revision was rejected.
	Failure State = "failure"
	// Superseded: the HostedClusterPackage moved to a newer commit before this commit's
	// rollout ended; each provider maps it to its nearest documented final state.
	Superseded State = "superseded"
)

// Outcomes of a send, the outcome label of convoy_commit_status_updates_total.
const (
	OutcomeSuccess = "success"
	OutcomeError   = "error"
	OutcomeInvalid = "invalid"
	OutcomeDropped = "dropped"
)

// maxDescription is the longest description sent: GitHub's limit is 140 characters.
const maxDescription = 140

// Target is where statuses go: a GitSource's spec.commitStatus, with its Secret's namespace.
type Target struct {
	// Source is the GitSource's name (in the Secret's namespace), for messages.
	Source     string
	Provider   string
	APIURL     string
	Repository string
	// Secret is the token Secret (key "token").
	Secret types.NamespacedName
	// TargetURL is the link template ("{name}", "{commit}").
	TargetURL string
}

// TargetOf returns the Target of a GitSource's spec.commitStatus, nil when it has none.
func TargetOf(gs *convoyv1alpha1.GitSource) *Target {
	cs := gs.Spec.CommitStatus
	if cs == nil {
		return nil
	}
	return &Target{Source: gs.Name, Provider: cs.Provider, APIURL: cs.APIURL, Repository: cs.Repository,
		Secret: types.NamespacedName{Namespace: gs.Namespace, Name: cs.SecretRef.Name}, TargetURL: cs.TargetURL}
}

// Status is one state wanted on a commit for one context.
type Status struct {
	Target Target
	Commit string
	// Name is the HostedClusterPackage's name.
	Name    string
	Context string
	State   State
	// Description is the one line the forge shows, cut to 140 characters.
	Description string
}

// NewStatus returns the status of the HostedClusterPackage name on commit, with the link of
// target's template.
func NewStatus(target Target, name, commit string, state State, description string) Status {
	return Status{Target: target, Commit: commit, Name: name, Context: ContextName(name), State: state,
		Description: cutDescription(description)}
}

// ContextName is the status context of the HostedClusterPackage name.
func ContextName(name string) string { return "convoy/" + name }

// ScopedContextName is the status context of the HostedClusterPackage name on one management
// cluster of a sector: "convoy/<sector>/<management cluster>/<name>".
func ScopedContextName(sector, managementCluster, name string) string {
	return "convoy/" + sector + "/" + managementCluster + "/" + name
}

// WithScope returns s with the context of key (the HostedClusterPackage's name, or its
// promotion key) on the management cluster managementCluster of sector (ScopedContextName), so
// that the management clusters sharing a repository do not overwrite each other's statuses;
// empty names leave s as it is.
func (s Status) WithScope(sector, managementCluster, key string) Status {
	if sector != "" && managementCluster != "" {
		s.Context = ScopedContextName(sector, managementCluster, key)
	}
	return s
}

// Progress is the description of a rollout in progress: "2/3 partitions, 412/1000 clusters".
func Progress(partitionsDone, partitions, progressed, total int) string {
	return fmt.Sprintf("%d/%d partitions, %d/%d clusters", partitionsDone, partitions, progressed, total)
}

// shortCommit is how many characters of a commit a superseded status names.
const shortCommit = 7

// supersededBy returns the final status of s's commit when the rollout moved to commit next
// before it ended: "Superseded by <short next> at <s's progress>".
func (s Status) supersededBy(next string) Status {
	s.State = Superseded
	s.Description = cutDescription("Superseded by " + next[:min(len(next), shortCommit)] + " at " + s.Description)
	return s
}

// final reports whether s is a state the rollout of its commit ends with.
func (s Status) final() bool { return s.State != Pending }

// link returns the status's link: the template with its placeholders replaced.
func (s Status) link(name string) string {
	return strings.NewReplacer("{name}", name, "{commit}", s.Commit).Replace(s.Target.TargetURL)
}

// name is the HostedClusterPackage's name.
func (s Status) name() string { return s.Name }

func cutDescription(s string) string {
	r := []rune(s)
	if len(r) <= maxDescription {
		return s
	}
	return string(r[:maxDescription-1]) + "…"
}

var updates = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "convoy_commit_status_updates_total",
	Help: "Commit status requests sent to forges (provider github, gitlab or gitea), by outcome: success, error (retried), invalid (configuration or Secret), dropped (too many contexts).",
}, []string{"provider", "outcome"})

func init() {
	metrics.Registry.MustRegister(updates)
}
