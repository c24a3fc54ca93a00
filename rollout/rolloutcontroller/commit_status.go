package rolloutcontroller

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout/commitstatus"
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
	state, description := commitState(s, err)
	st := commitstatus.NewStatus(*target, s.obj.Name, s.update.Commit, state, description)
	r.CommitStatus.Report(s.obj, st.WithScope(r.Identity.Sector, r.Identity.ManagementCluster))
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
