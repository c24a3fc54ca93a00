package engine

import (
	"context"
	"strings"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// deletion is what happened to one inventory entry's object.
type deletion int

const (
	// deletionGone: the object does not exist (any more).
	deletionGone deletion = iota
	// deletionReleased: the object is no longer this owner's or is kept by
	// convoy.dev/prune: disabled; it leaves the inventory untouched.
	deletionReleased
	// deletionPending: the object is being deleted (finalizers) or could not be confirmed gone.
	deletionPending
)

// deleteResult is the outcome of deleting a group.
type deleteResult struct {
	// remaining are the entries whose objects are still there.
	remaining []convoyv1alpha1.InventoryEntry
	// deleted counts the delete requests that succeeded.
	deleted int
}

// deleteGroup deletes the objects of entries that still carry the owner's labels and are not
// annotated convoy.dev/prune: disabled. With confirm, an object is read again after its delete
// to tell whether it is gone or still terminating.
func (e *Engine) deleteGroup(ctx context.Context, c *cluster, entries []convoyv1alpha1.InventoryEntry, confirm bool) (deleteResult, error) {
	e.forgetAll(c, entries)
	states := make([]deletion, len(entries))
	issued := make([]bool, len(entries))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.opts.Concurrency)
	for i, entry := range entries {
		g.Go(func() error {
			var err error
			states[i], issued[i], err = c.deleteOne(gctx, entry, confirm)
			return err
		})
	}
	err := g.Wait()
	var res deleteResult
	for i, entry := range entries {
		if issued[i] {
			res.deleted++
			appliedObjects.WithLabelValues(e.opts.Controller, c.name, "deleted").Inc()
		}
		if err != nil || states[i] == deletionPending {
			res.remaining = append(res.remaining, entry)
		}
	}
	return res, c.classify(err)
}

// forgetAll drops the ledger's entries of objects about to be deleted or released.
func (e *Engine) forgetAll(c *cluster, entries []convoyv1alpha1.InventoryEntry) {
	for _, entry := range entries {
		if obj, err := metadataFor(entry); err == nil {
			e.applied.forget(c, objectKey{gk: obj.GroupVersionKind().GroupKind(), namespace: obj.GetNamespace(), name: obj.GetName()})
		}
	}
}

// deleteOne deletes the object of one entry if it is still this owner's. It reports the
// object's state and whether a delete request was sent.
func (c *cluster) deleteOne(ctx context.Context, entry convoyv1alpha1.InventoryEntry, confirm bool) (deletion, bool, error) {
	obj, err := metadataFor(entry)
	if err != nil {
		return deletionGone, false, nil // an entry that names nothing has nothing to delete
	}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return deletionGone, false, client.IgnoreNotFound(err)
	}
	switch {
	case !c.owns(obj) || pruneDisabled(obj):
		return deletionReleased, false, nil
	case obj.DeletionTimestamp != nil:
		return deletionPending, false, nil
	}
	uid := obj.UID
	err = c.client.Delete(ctx, obj, client.Preconditions{UID: &uid},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case apierrors.IsNotFound(err):
		return deletionGone, false, nil
	case apierrors.IsConflict(err):
		return deletionPending, false, nil // replaced meanwhile: look again next pass
	case err != nil:
		return deletionPending, false, err
	case !confirm:
		return deletionGone, true, nil
	}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); apierrors.IsNotFound(err) {
		return deletionGone, true, nil
	}
	return deletionPending, true, nil
}

// pruneDisabled reports convoy.dev/prune: disabled.
func pruneDisabled(obj client.Object) bool {
	return strings.EqualFold(obj.GetAnnotations()[convoyv1alpha1.PruneAnnotation], "disabled")
}
