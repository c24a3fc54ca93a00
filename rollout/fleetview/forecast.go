package fleetview

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// commitPattern is the form of a Package's spec.revision.
var commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ForecastOptions tune NewForecast.
type ForecastOptions struct {
	// Revision, when set, is the Git commit to forecast instead of the update revision.
	Revision string
	// Now is the clock of the first planning pass.
	Now time.Time
}

// Forecast is the order in which a revision would reach the HostedClusters if every Package it
// touches became available at once: what `convoy plan` prints.
type Forecast struct {
	// Name of the HostedClusterPackage.
	Name string `json:"name"`
	// Strategy is "instant" or "rollingUpgrade maxUnavailable=<n>".
	Strategy string `json:"strategy"`
	// MaxUnavailable is the budget of the first pass; 0 under the instant strategy.
	MaxUnavailable int `json:"maxUnavailable"`
	// Revision is the revision forecast.
	Revision RevisionRef `json:"revision"`
	// From is the revision every Package had after the last completed rollout; nil before one.
	From *RevisionRef `json:"from,omitempty"`
	// Batches are the successive sets of Packages changed together, in order.
	Batches []Batch `json:"batches,omitempty"`
	// AlreadyUpdated counts the targets on the revision before the first batch.
	AlreadyUpdated int32 `json:"alreadyUpdated"`
	// Ineligible are the targets the rollout skips, and why.
	Ineligible []Skipped `json:"ineligible,omitempty"`
	// Blocked says why the forecast stops before every eligible target is on the revision.
	Blocked string `json:"blocked,omitempty"`
	// Order lists, level by level, the HostedClusterPackages this one depends on, directly or
	// not, itself last: on each HostedCluster a level installs once the levels before it are
	// available. Empty without dependencies.
	Order [][]string `json:"order,omitempty"`
	// Waiting samples the HostedClusters where a Package waits for a dependency in the first
	// pass, and what it waits for; the forecast holds the dependencies as they are now.
	Waiting []rollout.WaitingTarget `json:"waiting,omitempty"`
	// Partitions say, in rollout order, when each partition could start, what holds it before
	// and when its checks pass; set only when a gate (a soak, an approval, a window, a check)
	// holds one or a partition has checks, so that a rollout without gates is forecast as
	// before.
	Partitions []PartitionForecast `json:"partitions,omitempty"`
	// Promotion says when the GitSource's newest commit can enter this management cluster's
	// sector; set only while it waits for the upstream sectors.
	Promotion *PromotionForecast `json:"promotion,omitempty"`

	// now is the clock of the first pass, for "in 3m".
	now time.Time
}

// Batch is one pass of the controller: the Packages it would create or update together.
type Batch struct {
	// Steps are the Packages changed, in rollout order.
	Steps []Step `json:"steps"`
}

// Skipped is a selected HostedCluster the rollout leaves alone for now.
type Skipped struct {
	// HostedCluster is "<namespace>/<name>".
	HostedCluster string `json:"hostedCluster"`
	// Partition of the HostedCluster.
	Partition string `json:"partition"`
	// Reason is the planner's reason, such as HostedClusterNotAvailable.
	Reason string `json:"reason"`
	// Message is for humans.
	Message string `json:"message,omitempty"`
}

// Step is one Package created or updated.
type Step struct {
	// HostedCluster is "<namespace>/<name>".
	HostedCluster string `json:"hostedCluster"`
	// Partition of the HostedCluster.
	Partition string `json:"partition"`
	// Action is "create" or "update".
	Action string `json:"action"`
	// Revision names the revision the Package gets: the forecast one, or the current one for a
	// new target whose partition the rollout has not reached.
	Revision string `json:"revision"`
	// Reason is the planner's reason for the change.
	Reason rollout.ChangeReason `json:"reason"`
}

// NewForecast replays the planner on a copy of snap: each pass applies the plan's changes and
// lets every Package it changed, and every Package already updating, become available, until the
// rollout completes or stops. Failed Packages stay failed, and so do failed checks; every other
// check passes at its first evaluation after its duration. A pass that changes nothing because a
// gate holds the rollout moves the clock to the end of the soak, of the checks' durations or the
// opening of the window, or gives the approval the gate asks for, and notes the wait in
// Partitions.
func NewForecast(snap *Snapshot, opts ForecastOptions) (*Forecast, error) {
	h := snap.HostedClusterPackage
	in, err := forecastInput(snap, opts)
	if err != nil {
		return nil, err
	}
	f := &Forecast{Name: h.Name, Strategy: strategyText(h.Spec.Strategy),
		Revision: RevisionRef{Name: in.UpdateRevision.Name, Commit: in.UpdateRevision.Commit}, now: opts.Now,
		Promotion: promotionForecast(h, opts.Now)}
	if len(snap.Order) > 1 {
		f.Order = snap.Order
	}
	switch {
	case in.CurrentRevision != nil:
		f.From = &RevisionRef{Name: in.CurrentRevision.Name, Commit: in.CurrentRevision.Commit}
	case h.Status.CurrentRevision != "" && h.Status.CurrentRevision == in.UpdateRevision.Name:
		f.From = &f.Revision
	}
	sim := &simulation{in: in, tick: minReadyOf(h) + time.Second, gates: newGateLog(h, in.UpdateRevision)}
	return f, sim.run(f)
}

// forecastInput builds the planner's input for the forecast revision.
func forecastInput(snap *Snapshot, opts ForecastOptions) (rollout.Input, error) {
	h := snap.HostedClusterPackage
	in := rollout.Input{HostedClusterPackage: h.DeepCopy(), HostedClusters: snap.HostedClusters, Now: opts.Now,
		Approvals: append([]rollout.Approval(nil), snap.Approvals...), CheckResults: rollout.CheckResultsOf(h.Status.Partitions),
		Dependencies: snap.Dependencies, Dependants: snap.Dependants}
	for _, p := range snap.Packages {
		in.Packages = append(in.Packages, *p.DeepCopy())
	}
	update, err := snap.forecastRevision(opts.Revision)
	if err != nil {
		return in, err
	}
	in.UpdateRevision = update
	for name, rev := range snap.Revisions {
		switch name {
		case update.Name:
		case h.Status.CurrentRevision:
			cur := rev
			in.CurrentRevision = &cur
		default:
			in.OlderRevisions = append(in.OlderRevisions, rev)
		}
	}
	return in, nil
}

// forecastRevision picks the revision to forecast: the commit asked for with the template of the
// spec, else the stored update revision, else the template with the GitSource's commit. A
// revision not stored as a ControllerRevision has no name.
func (s *Snapshot) forecastRevision(commit string) (rollout.Revision, error) {
	h := s.HostedClusterPackage
	template := h.Spec.Template.Spec
	if commit != "" {
		if !commitPattern.MatchString(commit) {
			return rollout.Revision{}, fmt.Errorf("--revision must be a full 40-character commit, got %q", commit)
		}
		return rollout.Revision{Commit: commit, Template: template}, nil
	}
	if rev, ok := s.Revisions[h.Status.UpdateRevision]; ok {
		return rev, nil
	}
	if s.SourceCommit == "" {
		return rollout.Revision{}, errors.New("no stored update revision and no GitSource artifact to compute one from: pass --revision")
	}
	return rollout.Revision{Commit: s.SourceCommit, Template: template}, nil
}

// minReadyOf returns the rolling upgrade's minReadySeconds.
func minReadyOf(h *convoyv1alpha1.HostedClusterPackage) time.Duration {
	if ru := h.Spec.Strategy.RollingUpgrade; ru != nil {
		return time.Duration(ru.MinReadySeconds) * time.Second
	}
	return 0
}
