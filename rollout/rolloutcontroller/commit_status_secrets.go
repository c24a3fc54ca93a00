package rolloutcontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convoy-gitops/convoy/rollout/commitstatus"
)

// watchTokenSecrets wakes reporter when a Secret is created or changes, so that a status
// refused for a bad or missing token is sent again at once rather than after the slow retry.
// It watches the Secrets' metadata only (the informer the GitSource controller's
// WatchesMetadata already runs in the same manager, so no second watch and no Secret data in
// memory); the Reporter itself matches the Secret against the GitSources' secretRef of the
// states it holds, and reads the token through its uncached reader.
func watchTokenSecrets(mgr ctrl.Manager, reporter *commitstatus.Reporter) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		secrets := &metav1.PartialObjectMetadata{}
		secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		informer, err := mgr.GetCache().GetInformer(ctx, secrets)
		if err != nil {
			return fmt.Errorf("watching the metadata of Secrets for commit status tokens: %w", err)
		}
		retry := func(obj any) {
			if m, ok := obj.(metav1.Object); ok {
				reporter.RetrySecret(types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()})
			}
		}
		handle, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: retry,
			UpdateFunc: func(old, obj any) {
				// Note: the informer's periodic resync replays every Secret unchanged.
				o, oldOK := old.(metav1.Object)
				n, newOK := obj.(metav1.Object)
				if !oldOK || !newOK || o.GetResourceVersion() != n.GetResourceVersion() {
					retry(obj)
				}
			},
		})
		if err != nil {
			return fmt.Errorf("watching the metadata of Secrets for commit status tokens: %w", err)
		}
		<-ctx.Done()
		return informer.RemoveEventHandler(handle)
	}))
}
