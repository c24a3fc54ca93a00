package checks

import (
	"time"

	"github.com/convoy-gitops/convoy/internal/dialpolicy"
)

// Outcome is the verdict of one evaluation.
type Outcome string

const (
	// Success means the check passed this time.
	Success Outcome = "Success"
	// Failure means the check saw the signal it guards against.
	Failure Outcome = "Failure"
	// Inconclusive means the evaluation could not decide: the server was unreachable, timed
	// out, refused the query or answered beyond the bounds. It never counts as a pass.
	Inconclusive Outcome = "Inconclusive"
)

// Evaluation is the result of one evaluation of a check.
type Evaluation struct {
	// Outcome is Success, Failure or Inconclusive.
	Outcome Outcome
	// Value is what the check saw (the query's series and values, the alerts, the HTTP status),
	// at most MaxValueBytes.
	Value string
	// Message explains the outcome, at most MaxMessageBytes.
	Message string
}

// Credentials authenticate a check's requests: a bearer Token, or a Username and Password
// (basic), and an optional CA bundle trusted besides the system's roots.
type Credentials struct {
	// Token is sent as "Authorization: Bearer <token>".
	Token string
	// Username and Password are sent as basic authentication when Token is empty.
	Username string
	// Password goes with Username.
	Password string
	// CA is a PEM bundle of certificates trusted besides the system's roots.
	CA []byte
}

// Data is what the templates of a check see, and what an HTTP check posts.
type Data struct {
	// HostedClusterPackage is the rollout's name.
	HostedClusterPackage string
	// Partition is the partition's name.
	Partition string
	// Revision is the name of the ControllerRevision the partition was updated to.
	Revision string
	// Commit is the Git commit of that revision.
	Commit string
	// HostedClusters are the partition's targets.
	HostedClusters []HostedCluster
}

// HostedCluster is one target of the partition.
type HostedCluster struct {
	// Name is the HostedCluster's name.
	Name string
	// Namespace is the HostedCluster's namespace.
	Namespace string
	// HCPNamespace is the namespace of its hosted control plane.
	HCPNamespace string
	// Labels are the HostedCluster's labels.
	Labels map[string]string
}

// Input is what one evaluation needs besides the compiled check.
type Input struct {
	// Data is the partition the check looks at.
	Data Data
	// Since is the partition's start: an alert that started before it does not fail an
	// alerts check.
	Since time.Time
	// Credentials, when not nil, authenticate the requests. They go over https:// only,
	// unless AllowInsecureHTTP.
	Credentials *Credentials
	// AllowInsecureHTTP lets Credentials go over http:// (--check-allow-insecure-http).
	AllowInsecureHTTP bool
	// Network says which addresses the check may connect to; the zero Policy refuses
	// link-local and metadata addresses (--allow-link-local-addresses).
	Network dialpolicy.Policy
}
