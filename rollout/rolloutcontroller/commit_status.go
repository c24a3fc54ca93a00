package rolloutcontroller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout/commitstatus"
	"github.com/convoy-gitops/convoy/rollout/promotion"
)

// reportCommitStatus hands the pass's outcome to the commit status Reporter, when the
// template's GitSource has spec.commitStatus: on the update revision's commit, failure when
// the pass stalled (a failed Package or check, a rejected revision), success when the rollout
// completed, else pending with the partitions and clusters done. It never waits: the
// Reporter sends beside the rollout.
func (r *HostedClusterPackageReconciler) reportCommitStatus(ctx context.Context, s *scope, err error) {
	if r.CommitStatus == nil || s.plan == nil || s.update.Commit == "" {
		return
	}
	key, keyErr := templateSource(s.obj)
	if keyErr != nil {
		return
	}
	gs := &convoyv1alpha1.GitSource{}
	if r.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, gs) != nil {
		return
	}
	target := commitstatus.TargetOf(gs)
	if target == nil {
		return
	}
	if s.keyOwner != "" {
		// Another HostedClusterPackage posts under this one's context.
		return
	}
	state, description := commitState(s, err)
	id := r.Identity
	if id.Sector != "" && publishes(s) {
		// The status is a bus too (spec.promotion.bus CommitStatuses downstream): it says what
		// the promotion record says, under the promotion key.
		state, description = recordState(commitRecord(s, err, r.now()), description)
		st := commitstatus.NewStatus(*target, s.obj.Name, s.update.Commit, state, description)
		r.CommitStatus.Report(s.obj, st.WithScope(id.Sector, id.ManagementCluster, promotionKey(s.obj)))
		return
	}
	st := commitstatus.NewStatus(*target, s.obj.Name, s.update.Commit, state, description)
	r.CommitStatus.Report(s.obj, st.WithScope(id.Sector, id.ManagementCluster, s.obj.Name))
}

// Descriptions of the promotion's final states on the commit status: a reader of the bus
// tells a rejected commit from a failed one by its description.
const (
	completedPrefix = "Completed: "
	failedPrefix    = "Failed: "
	rejectedPrefix  = "Rejected: "
)

// recordState is the commit status of a promotion record's commit, after the pass's own
// description (commitState's).
func recordState(c promotion.CommitRecord, description string) (commitstatus.State, string) {
	switch c.State {
	case promotion.Completed:
		return commitstatus.Success, completedPrefix + description
	case promotion.Failed:
		return commitstatus.Failure, failedPrefix + description
	case promotion.Rejected:
		return commitstatus.Failure, rejectedPrefix + description
	}
	return commitstatus.Pending, description
}

// observedRecord is the promotion record's entry that a commit status read from the forge
// says; false for a state that says nothing (another tool's, or none).
func observedRecord(commit string, o commitstatus.Observed) (promotion.CommitRecord, bool) {
	c := promotion.CommitRecord{Commit: commit, StartedAt: o.At, Since: o.At}
	switch {
	case o.State == commitstatus.Success && strings.HasPrefix(o.Description, completedPrefix):
		c.State = promotion.Completed
	case o.State == commitstatus.Failure && strings.HasPrefix(o.Description, rejectedPrefix):
		c.State = promotion.Rejected
	case o.State == commitstatus.Failure:
		c.State = promotion.Failed
	case o.State == commitstatus.Superseded:
		c.State = promotion.Superseded
	case o.State == commitstatus.Pending, o.State == commitstatus.Success:
		// Note: a success without "Completed: " was posted by a controller that did not
		// publish then: it proves nothing of the soak and checks.
		c.State = promotion.Progressing
	default:
		return c, false
	}
	return c, true
}

// commitState is the state and description of the pass's outcome.
func commitState(s *scope, err error) (commitstatus.State, string) {
	var stalled *pass.Stalling
	done, current := 0, ""
	for _, p := range s.plan.Partitions {
		switch {
		case p.State == convoyv1alpha1.PartitionDone:
			done++
		case current == "":
			current = p.Name
		}
	}
	if errors.As(err, &stalled) {
		// A fixed summary: the error's text (cluster names, apply errors) stays in the cluster.
		return commitstatus.Failure, fmt.Sprintf("Stalled (%s) in partition %s", stalled.Reason, current)
	}
	c := s.plan.Counts
	progress := commitstatus.Progress(done, len(s.plan.Partitions), int(c.Progressed), int(c.Total))
	if err == nil {
		return commitstatus.Success, progress
	}
	return commitstatus.Pending, progress
}
