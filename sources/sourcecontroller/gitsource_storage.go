package sourcecontroller

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sources"
)

// The GitSource controller keeps in its store every commit that a Package or a
// ControllerRevision still refers to.
//
// +kubebuilder:rbac:groups=convoy.dev,resources=packages,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch

// reconcileStorage garbage-collects the source's repository when it has grown by enough
// packs, keeping every commit still referred to, and checks the repository against the
// store's size bound. A repository above the bound sets FetchFailed=True with reason
// StorageLimitExceeded and stops the pass before the artifact moves.
func (r *GitSourceReconciler) reconcileStorage(ctx context.Context, s *scope) error {
	res, err := r.Store.Collect(ctx, s.key, func() ([]string, error) { return r.commitsToKeep(ctx, s) }, false)
	if err != nil {
		return markFetchFailed(s.obj, sources.ClassifyGitError("storing "+s.poll.Revision.String(), err))
	}
	if res.Collected {
		ctrl.LoggerFrom(ctx).Info("Collected the repository", "pinned", res.Pinned, "droppedRefs", res.Dropped,
			"bytes", res.Bytes, "packs", res.Packs)
	}
	return nil
}

// commitsToKeep returns the commits that may still be opened: the polled one, the artifact,
// the revisions of the source's Packages and the commits of every ControllerRevision (those of
// other sources are not in this repository and are ignored).
func (r *GitSourceReconciler) commitsToKeep(ctx context.Context, s *scope) ([]string, error) {
	keep := []string{s.poll.Revision.Commit}
	if a := s.obj.Status.Artifact; a != nil {
		keep = append(keep, a.Commit)
	}
	pkgs := &convoyv1alpha1.PackageList{}
	if err := r.Client.List(ctx, pkgs); err != nil {
		return nil, fmt.Errorf("listing Packages: %w", err)
	}
	for _, p := range pkgs.Items {
		if ns, name := p.SourceKey(); sources.KeyFor(ns, name) == s.key {
			keep = append(keep, p.Spec.Revision, p.Status.Revision, p.Status.LastAttemptedRevision)
		}
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, revs); err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	for _, cr := range revs.Items {
		var d struct {
			Commit string `json:"commit"`
		}
		if json.Unmarshal(cr.Data.Raw, &d) == nil && d.Commit != "" {
			keep = append(keep, d.Commit)
		}
	}
	return keep, nil
}
