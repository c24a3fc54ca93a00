package sourcecontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sources"
)

// secretRefIndex indexes GitSources by the Secrets they reference (credentials and webhook).
const secretRefIndex = ".spec.secretRefs"

// GitSourceReconcilerOptions tune the GitSource controller.
type GitSourceReconcilerOptions struct {
	// MaxConcurrentReconciles is the number of GitSources polled in parallel; default 4.
	MaxConcurrentReconciles int
	// RecorderName names the event source; default "convoy-gitsource".
	RecorderName string
}

// SetupWithManager registers the controller: it watches GitSources (spec changes and
// convoy.dev/requestedAt), and the metadata of referenced Secrets so that fixing a Secret
// un-stalls its sources. It also makes the store fetch missing commits on demand through the
// API, and removes repositories of GitSources deleted while convoy was not running.
func (r *GitSourceReconciler) SetupWithManager(mgr ctrl.Manager, opts GitSourceReconcilerOptions) error {
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 4
	}
	if opts.RecorderName == "" {
		opts.RecorderName = "convoy-gitsource"
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(opts.RecorderName)
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.notifier = pass.NewNotifier(r.Recorder)
	r.Store.SetResolver(r.resolveRemote)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &convoyv1alpha1.GitSource{}, secretRefIndex, indexSecretRefs); err != nil {
		return fmt.Errorf("indexing GitSources: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(r.pruneOrphans(mgr))); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&convoyv1alpha1.GitSource{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, sources.ReconcileRequestedPredicate()))).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.requestsForSecret)).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Named("gitsource").
		Complete(r)
}

// indexSecretRefs returns the names of the Secrets a GitSource references.
func indexSecretRefs(o client.Object) []string {
	gs, ok := o.(*convoyv1alpha1.GitSource)
	if !ok {
		return nil
	}
	var names []string
	if gs.Spec.SecretRef != nil {
		names = append(names, gs.Spec.SecretRef.Name)
	}
	if gs.Spec.WebhookSecretRef != nil {
		names = append(names, gs.Spec.WebhookSecretRef.Name)
	}
	return names
}

// requestsForSecret maps a Secret to the GitSources of its namespace that reference it.
func (r *GitSourceReconciler) requestsForSecret(ctx context.Context, o client.Object) []reconcile.Request {
	list := &convoyv1alpha1.GitSourceList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{secretRefIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing GitSources for a Secret", "secret", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, gs := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gs)})
	}
	return reqs
}

// resolveRemote finds the remote of a source through the API, for on-demand fetches.
func (r *GitSourceReconciler) resolveRemote(ctx context.Context, key sources.Key) (sources.Remote, error) {
	gs := &convoyv1alpha1.GitSource{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name}, gs); err != nil {
		return sources.Remote{}, fmt.Errorf("reading GitSource %s: %w", key, err)
	}
	return r.remoteOf(ctx, gs)
}

// pruneOrphans deletes, once the cache is synced, the repositories of GitSources that no
// longer exist. It runs on the leader only.
func (r *GitSourceReconciler) pruneOrphans(mgr ctrl.Manager) func(context.Context) error {
	return func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		list := &convoyv1alpha1.GitSourceList{}
		if err := r.Client.List(ctx, list); err != nil {
			return fmt.Errorf("listing GitSources: %w", err)
		}
		keep := map[sources.Key]bool{}
		for _, gs := range list.Items {
			keep[sources.KeyFor(gs.Namespace, gs.Name)] = true
		}
		if err := r.Store.Prune(func(k sources.Key) bool { return keep[k] }); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Pruning orphaned repositories")
		}
		return nil
	}
}
