package rolloutcontroller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/sources"
)

// TreeHasher returns the hash of the Git tree of a directory at a commit of a GitSource
// (sources.Store.TreeHash), and whether a commit descends from another (sources.Store.IsAncestor).
type TreeHasher interface {
	TreeHash(ctx context.Context, key sources.Key, commit, dir string) (string, error)
	IsAncestor(ctx context.Context, key sources.Key, ancestor, commit string) (bool, error)
}

// unchangedCommit returns the commit the update revision pins: commit, or the commit of the
// current update revision (status.updateRevision) when that revision has the same template and
// the package directory has the same tree at both commits. Package reads are confined to their
// directory, so such a commit would render the same objects: a commit that does not touch a
// package starts no rollout of it, and a management cluster of twenty add-ons in one
// repository updates only the Packages of the add-on that changed. Without r.Trees, or when a
// tree cannot be read, the answer is commit.
func (r *HostedClusterPackageReconciler) unchangedCommit(ctx context.Context, s *scope, key sources.Key, commit string) string {
	prev := r.updateRevisionCommit(ctx, s, key)
	if r.Trees == nil || prev == "" || prev == commit {
		return commit
	}
	same, _, err := newRevision(s.obj.Name, s.obj.Spec.Template.Spec, prev)
	if err != nil || same.Name != s.obj.Status.UpdateRevision {
		return commit // the template changed
	}
	dir := s.obj.Spec.Template.Spec.Path
	before, err := r.Trees.TreeHash(ctx, key, prev, dir)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Cannot compare the package directory's trees; following the new commit", "error", err.Error())
		return commit
	}
	after, err := r.Trees.TreeHash(ctx, key, commit, dir)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Cannot compare the package directory's trees; following the new commit", "error", err.Error())
		return commit
	}
	if before != after {
		return commit
	}
	if ok, err := r.Trees.IsAncestor(ctx, key, prev, commit); err != nil || !ok {
		return commit // dropped by a force-push, or not known to be history of the new commit
	}
	return prev
}

// updateRevisionCommit returns the commit of the ControllerRevision named by
// status.updateRevision, next to the GitSource key; "" when there is none.
func (r *HostedClusterPackageReconciler) updateRevisionCommit(ctx context.Context, s *scope, key sources.Key) string {
	name := s.obj.Status.UpdateRevision
	if name == "" {
		return ""
	}
	cr := &appsv1.ControllerRevision{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: name}, cr); err != nil {
		return ""
	}
	sr, err := decodeRevision(cr)
	if err != nil {
		return ""
	}
	return sr.rev.Commit
}
