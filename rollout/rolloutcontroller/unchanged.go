package rolloutcontroller

import (
	"context"
	"strings"
	"sync"

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
	same, _, legacy, err := newRevision(s.obj.Name, s.obj.Spec.Template.Spec, prev)
	if err != nil || (same.Name != s.obj.Status.UpdateRevision && legacy != s.obj.Status.UpdateRevision) {
		return commit // the template changed
	}
	if !r.sameDir(ctx, key, prev, commit, s.obj.Spec.Template.Spec.Path) {
		return commit
	}
	return prev
}

// sameDir reports whether dir has the same Git tree at prev and at commit, and prev is an
// ancestor of commit. Commits are immutable, so an answer is remembered (sameDirCache): a
// HostedClusterPackage whose add-on a commit left alone runs passes at that commit until its
// folder changes, and each would otherwise read both trees and walk the history again. An
// error is not remembered, and answers false: follow the new commit.
func (r *HostedClusterPackageReconciler) sameDir(ctx context.Context, key sources.Key, prev, commit, dir string) bool {
	id := strings.Join([]string{key.String(), prev, commit, dir}, "\x00")
	if same, ok := r.sameDirs.get(id); ok {
		return same
	}
	before, err := r.Trees.TreeHash(ctx, key, prev, dir)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Cannot compare the package directory's trees; following the new commit", "error", err.Error())
		return false
	}
	after, err := r.Trees.TreeHash(ctx, key, commit, dir)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Cannot compare the package directory's trees; following the new commit", "error", err.Error())
		return false
	}
	same := before == after
	if same {
		ok, err := r.Trees.IsAncestor(ctx, key, prev, commit)
		if err != nil {
			return false // not known to be history of the new commit
		}
		same = ok // a commit dropped by a force-push is not kept
	}
	r.sameDirs.put(id, same)
	return same
}

// maxSameDirs bounds the answers sameDirCache holds; past it, it starts again empty.
const maxSameDirs = 4096

// sameDirCache remembers sameDir's answers, at most maxSameDirs of them; safe for concurrent
// use.
type sameDirCache struct {
	mu      sync.Mutex
	answers map[string]bool
}

func (c *sameDirCache) get(id string) (bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	same, ok := c.answers[id]
	return same, ok
}

func (c *sameDirCache) put(id string, same bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answers == nil || len(c.answers) >= maxSameDirs {
		c.answers = map[string]bool{}
	}
	c.answers[id] = same
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
