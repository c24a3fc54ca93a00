package rolloutcontroller

import (
	"context"
	"fmt"
	"slices"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/commitstatus"
	"github.com/convoy-gitops/convoy/rollout/promotion"
)

// statusLookback is how many commits from the GitSource's head back the CommitStatuses bus
// reads (one request each, shared by the HostedClusterPackages of the repository for the
// Reporter's ReadTTL). A commit further back counts as one no upstream management cluster has
// reported: it is never promoted through the forge, only waited for.
const statusLookback = promotion.MaxCommits

// statusReadBudget bounds the reads of one pass on the CommitStatuses bus, all commits
// together; past it promotion holds, and the next pass reads what this one did not (the
// Reporter keeps each commit's read).
const statusReadBudget = 20 * time.Second

// statusRecords returns, for each management cluster of the upstream sectors, the record its
// commit statuses make: for each commit read (the newest statusLookback of in.History, and
// in.Current), the latest status of its context "convoy/<sector>/<management cluster>/<key>".
// A forge that cannot be read is an error: promotion holds.
func (r *HostedClusterPackageReconciler) statusRecords(ctx context.Context, gs *convoyv1alpha1.GitSource,
	in promotion.Input) (map[string]promotion.Record, error) {
	if r.CommitStatus == nil {
		return nil, fmt.Errorf("this controller reads no commit statuses")
	}
	// One budget for the whole read: a slow forge holds this pass's worker that long at most.
	ctx, cancel := context.WithTimeout(ctx, statusReadBudget)
	defer cancel()
	target := commitstatus.TargetOf(gs)
	commits := slices.Clone(in.History[:min(len(in.History), statusLookback)])
	if in.Current != "" && !slices.Contains(commits, in.Current) {
		commits = append(commits, in.Current)
	}
	contexts := map[string]promotion.Record{}
	for _, u := range in.After {
		members, _ := in.Sectors.Members(u.Sector)
		for _, mc := range members {
			rec := promotion.Record{Version: promotion.RecordVersion, ManagementCluster: mc, Sector: u.Sector, Key: in.Key}
			contexts[commitstatus.ScopedContextName(u.Sector, mc, in.Key)] = rec
		}
	}
	for _, commit := range commits {
		observed, err := r.CommitStatus.Read(ctx, *target, commit)
		if err != nil {
			return nil, fmt.Errorf("reading the commit statuses of %s: %w", shortCommit(commit), err)
		}
		for _, o := range observed {
			rec, ok := contexts[o.Context]
			if !ok {
				continue
			}
			if c, ok := observedRecord(commit, o); ok {
				rec.Commits = append(rec.Commits, c)
				contexts[o.Context] = rec
			}
		}
	}
	out := map[string]promotion.Record{}
	for _, rec := range contexts {
		if len(rec.Commits) > 0 {
			out[rec.ManagementCluster] = rec
		}
	}
	return out, nil
}

// statusRecheck is how soon a HostedClusterPackage on the CommitStatuses bus reads the forge
// again: when the Reporter's reads expire (--commit-status-read-interval).
func (r *HostedClusterPackageReconciler) statusRecheck() time.Duration {
	if r.CommitStatus == nil {
		return promotionRecheck
	}
	return r.CommitStatus.ReadInterval()
}

// earliest returns the earlier of a and b, a zero time counting as none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
