package sourcecontroller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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
	pkgs, err := r.packageCommits(ctx, s.key)
	if err != nil {
		return nil, err
	}
	keep = append(keep, pkgs...)
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

// packageCommits returns the commits of key's repository that the Packages in the cache refer
// to: spec.revision, status.revision and status.lastAttemptedRevision.
func (r *GitSourceReconciler) packageCommits(ctx context.Context, key sources.Key) ([]string, error) {
	pkgs := &convoyv1alpha1.PackageList{}
	if err := r.Client.List(ctx, pkgs); err != nil {
		return nil, fmt.Errorf("listing Packages: %w", err)
	}
	var keep []string
	for _, p := range pkgs.Items {
		if ns, name := p.SourceKey(); sources.KeyFor(ns, name) == key {
			keep = append(keep, p.Spec.Revision, p.Status.Revision, p.Status.LastAttemptedRevision)
		}
	}
	return keep, nil
}

// collectEvery is how often a shard replica garbage-collects its store.
const collectEvery = time.Minute

// collectFetchOnly garbage-collects the repositories of a shard replica's store every
// interval: a shard replica polls nothing, so no GitSource pass collects its store, and its
// on-demand fetches would add packs for ever. It keeps the artifact of each GitSource and the
// commits the shard's Packages (its cache holds only those) refer to. A repository above the
// store's bound is logged: the replica cannot set the GitSource's conditions, which the
// polling replica owns, and that one has the same bound.
func (r *GitSourceReconciler) collectFetchOnly(mgr ctrl.Manager, every time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
				r.collectAll(ctx)
			}
		}
	}
}

// collectAll collects the repository of every GitSource in the cache that needs it.
func (r *GitSourceReconciler) collectAll(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("store")
	list := &convoyv1alpha1.GitSourceList{}
	if err := r.Client.List(ctx, list); err != nil {
		log.Error(err, "Listing GitSources to collect the store")
		return
	}
	for i := range list.Items {
		gs := &list.Items[i]
		key := sources.KeyFor(gs.Namespace, gs.Name)
		keep := func() ([]string, error) {
			commits, err := r.packageCommits(ctx, key)
			if a := gs.Status.Artifact; a != nil {
				commits = append(commits, a.Commit)
			}
			return commits, err
		}
		res, err := r.Store.Collect(ctx, key, keep, false)
		if err != nil {
			log.Error(err, "Collecting the repository", "gitSource", key.String())
			continue
		}
		if res.Collected {
			log.Info("Collected the repository", "gitSource", key.String(), "pinned", res.Pinned, "bytes", res.Bytes, "packs", res.Packs)
		}
	}
}
