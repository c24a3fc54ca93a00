package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	cliobject "github.com/fluxcd/cli-utils/pkg/object"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
)

// prune deletes the objects of the previous inventory that the revision no longer holds, in
// reverse phase order, and sets the result's inventory: the applied objects, then the stale
// ones that are still there (an unreachable cluster, a failed or pending delete).
func (e *Engine) prune(ctx context.Context, t *Target, rev *Revision, res *Result) error {
	groups := groupByPhase(subtract(res.previous, res.applied))
	var err error
	for i := len(groups) - 1; i >= 0 && err == nil; i-- {
		c := t.clusterNamed(groups[i].cluster)
		if c.client == nil {
			continue // kept until the cluster can be reached
		}
		var dr deleteResult
		dr, err = e.deleteGroup(ctx, c, groups[i].entries, false)
		res.Pruned += len(dr.deleted)
		res.pruned = append(res.pruned, dr.deleted...)
		res.Left = append(res.Left, dr.left...)
		groups[i].entries = dr.remaining
	}
	res.Inventory = mergeInventories(res.applied, flatten(groups))
	logPruned(ctx, rev, res.pruned)
	return err
}

// logPruned logs a prune that deleted objects.
func logPruned(ctx context.Context, rev *Revision, pruned []convoyv1alpha1.InventoryEntry) {
	if len(pruned) > 0 {
		ctrl.LoggerFrom(ctx).Info("Pruned objects", "revision", rev.ID, "pruned", len(pruned),
			"objects", entryNames(pruned))
	}
}

// deletion is what happened to one inventory entry's object.
type deletion int

const (
	// deletionGone: the object does not exist (any more), or its kind no longer does.
	deletionGone deletion = iota
	// deletionReleased: the object is no longer this owner's, or is kept (convoy.dev/prune:
	// disabled, or a definition without convoy.dev/prune: enabled); it leaves the inventory
	// untouched.
	deletionReleased
	// deletionPending: the object is being deleted (finalizers) or could not be confirmed gone.
	deletionPending
)

// Left is an inventory entry that a prune or teardown dropped without deleting its object,
// and why: the user hears of every object convoy stops managing without deleting it.
type Left struct {
	// ID is the inventory entry's ID.
	ID string
	// Cluster is the entry's cluster.
	Cluster string
	// Why says why, e.g. "its kind no longer exists".
	Why string
}

// name names the entry's object, "Kind ns/name", for log lines.
func (l Left) name() string { return entryName(l.ID) }

// String returns "<id> in the <cluster> cluster: <why>".
func (l Left) String() string { return fmt.Sprintf("%s in the %s cluster: %s", l.ID, l.Cluster, l.Why) }

// Reasons an object is left in place or dropped from the inventory.
const (
	// leftKindGone: the API of the entry's kind or version no longer exists.
	leftKindGone = "its kind or version no longer exists on the API server (treated as gone)"
	// leftDefinition: a CRD or Namespace without the opt-in annotation.
	leftDefinition = "a " + "CustomResourceDefinition or Namespace is deleted only when annotated " +
		convoyv1alpha1.PruneAnnotation + ": " + PruneEnabled + " (left in place)"
)

// PruneEnabled is the value of convoy.dev/prune that lets a prune or teardown delete a
// CustomResourceDefinition or a Namespace, whose deletion takes every custom resource of the
// kind, or everything in the namespace, along.
const PruneEnabled = "enabled"

// deleteOutcome is what happened to one entry.
type deleteOutcome struct {
	state  deletion
	issued bool
	// left is set when the entry leaves the inventory without its object being deleted.
	left string
}

// deleteResult is the outcome of deleting a group.
type deleteResult struct {
	// remaining are the entries whose objects are still there.
	remaining []convoyv1alpha1.InventoryEntry
	// deleted are the entries whose delete requests succeeded.
	deleted []convoyv1alpha1.InventoryEntry
	// left are the entries dropped without a delete, with a reason to report.
	left []Left
}

// deleteGroup deletes the objects of entries that still carry the owner's labels and are not
// kept by an annotation. With confirm, an object is read again after its delete to tell
// whether it is gone or still terminating.
func (e *Engine) deleteGroup(ctx context.Context, c *cluster, entries []convoyv1alpha1.InventoryEntry, confirm bool) (deleteResult, error) {
	e.memory.Applied(c.memoryCluster([sha256.Size]byte{}), forgetting(entries))
	outs := make([]deleteOutcome, len(entries))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.opts.Concurrency)
	for i, entry := range entries {
		g.Go(func() error {
			var err error
			outs[i], err = c.deleteOne(gctx, entry, confirm)
			return err
		})
	}
	err := g.Wait()
	var res deleteResult
	for i, entry := range entries {
		if outs[i].issued {
			res.deleted = append(res.deleted, entry)
			appliedObjects.WithLabelValues(e.opts.Controller, c.name, "deleted").Inc()
		}
		if outs[i].left != "" {
			res.left = append(res.left, Left{ID: entry.ID, Cluster: entry.Cluster, Why: outs[i].left})
		}
		if err != nil || outs[i].state == deletionPending {
			res.remaining = append(res.remaining, entry)
		}
	}
	return res, c.classifyDelete(err)
}

// deleteOne deletes the object of one entry if it is still this owner's alone (reclaimed) and
// not kept. An entry whose kind or version the API server no longer serves is gone: its
// objects went with the CustomResourceDefinition, or are served under another version by an
// entry that the current revision applied.
func (c *cluster) deleteOne(ctx context.Context, entry convoyv1alpha1.InventoryEntry, confirm bool) (deleteOutcome, error) {
	obj, err := metadataFor(entry)
	if err != nil {
		return deleteOutcome{state: deletionGone}, nil // an entry that names nothing has nothing to delete
	}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		if isNoMatch(err) {
			return deleteOutcome{state: deletionGone, left: leftKindGone}, nil
		}
		return deleteOutcome{state: deletionGone}, client.IgnoreNotFound(err)
	}
	switch {
	case !c.owns(obj) || pruneDisabled(obj) || reclaimed(obj):
		return deleteOutcome{state: deletionReleased}, nil
	case isDefinitionKind(obj.GroupVersionKind().GroupKind()) && !pruneEnabled(obj):
		return deleteOutcome{state: deletionReleased, left: leftDefinition}, nil
	case obj.DeletionTimestamp != nil:
		return deleteOutcome{state: deletionPending}, nil
	}
	// Note: the preconditions hold the delete to the state judged above: an object replaced,
	// or taken back by its old owner (reclaimed) in between, is looked at again next pass.
	uid, rv := obj.UID, obj.ResourceVersion
	err = c.client.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case apierrors.IsNotFound(err):
		return deleteOutcome{state: deletionGone}, nil
	case apierrors.IsConflict(err):
		return deleteOutcome{state: deletionPending}, nil // changed meanwhile: look again next pass
	case err != nil:
		return deleteOutcome{state: deletionPending}, fmt.Errorf("deleting %s: %w", entry.ID, err)
	case !confirm:
		return deleteOutcome{state: deletionGone, issued: true}, nil
	}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); apierrors.IsNotFound(err) {
		return deleteOutcome{state: deletionGone, issued: true}, nil
	}
	return deleteOutcome{state: deletionPending, issued: true}, nil
}

// pruneDisabled reports convoy.dev/prune: disabled.
func pruneDisabled(obj client.Object) bool {
	return strings.EqualFold(obj.GetAnnotations()[convoyv1alpha1.PruneAnnotation], "disabled")
}

// pruneEnabled reports convoy.dev/prune: enabled.
func pruneEnabled(obj client.Object) bool {
	return strings.EqualFold(obj.GetAnnotations()[convoyv1alpha1.PruneAnnotation], PruneEnabled)
}

// entryKey identifies an entry across clusters.
func entryKey(e convoyv1alpha1.InventoryEntry) string { return e.Cluster + "/" + e.ID }

// metadataFor returns a metadata-only object naming the entry's object.
func metadataFor(e convoyv1alpha1.InventoryEntry) (*metav1.PartialObjectMetadata, error) {
	m, err := cliobject.ParseObjMetadata(e.ID)
	if err != nil {
		return nil, fmt.Errorf("inventory entry %q: %w", e.ID, err)
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: m.GroupKind.Group, Version: e.Version, Kind: m.GroupKind.Kind})
	obj.SetNamespace(m.Namespace)
	obj.SetName(m.Name)
	return obj, nil
}

// mergeInventories returns first, then the entries of second not in first.
func mergeInventories(first, second []convoyv1alpha1.InventoryEntry) []convoyv1alpha1.InventoryEntry {
	out := make([]convoyv1alpha1.InventoryEntry, 0, len(first)+len(second))
	out = append(out, first...)
	return append(out, subtract(second, first)...)
}

// subtract returns the entries of from not in minus, in order.
func subtract(from, minus []convoyv1alpha1.InventoryEntry) []convoyv1alpha1.InventoryEntry {
	drop := make(map[string]bool, len(minus))
	for _, e := range minus {
		drop[entryKey(e)] = true
	}
	var out []convoyv1alpha1.InventoryEntry
	for _, e := range from {
		if !drop[entryKey(e)] {
			out = append(out, e)
		}
	}
	return out
}

// group is a run of inventory entries of one phase in one cluster.
type group struct {
	phase, cluster string
	entries        []convoyv1alpha1.InventoryEntry
}

// groupByPhase splits inv into consecutive runs of the same phase and cluster, in order.
func groupByPhase(inv []convoyv1alpha1.InventoryEntry) []group {
	var out []group
	for _, e := range inv {
		if n := len(out); n > 0 && out[n-1].phase == e.Phase && out[n-1].cluster == e.Cluster {
			out[n-1].entries = append(out[n-1].entries, e)
			continue
		}
		out = append(out, group{phase: e.Phase, cluster: e.Cluster, entries: []convoyv1alpha1.InventoryEntry{e}})
	}
	return out
}

// flatten joins groups back into an inventory.
func flatten(groups []group) []convoyv1alpha1.InventoryEntry {
	var out []convoyv1alpha1.InventoryEntry
	for _, g := range groups {
		out = append(out, g.entries...)
	}
	return out
}

// maxLogged bounds the objects one log line names.
const maxLogged = 10

// entryNames names the objects of the first maxLogged entries of inv, "Kind ns/name" or "Kind
// name", for log lines.
func entryNames(inv []convoyv1alpha1.InventoryEntry) []string {
	names := make([]string, 0, min(len(inv), maxLogged))
	for _, e := range inv[:min(len(inv), maxLogged)] {
		names = append(names, entryName(e.ID))
	}
	return names
}

// entryName names the object of an inventory entry's ID, "Kind ns/name" or "Kind name"; an ID
// that names no object is returned as it is.
func entryName(id string) string {
	m, err := cliobject.ParseObjMetadata(id)
	switch {
	case err != nil:
		return id
	case m.Namespace == "":
		return m.GroupKind.Kind + " " + m.Name
	}
	return m.GroupKind.Kind + " " + m.Namespace + "/" + m.Name
}

// forgetting is what the memory is told of the objects of entries about to be deleted or
// released: to forget them. An entry that names nothing has no object.
func forgetting(entries []convoyv1alpha1.InventoryEntry) []memory.Write {
	writes := make([]memory.Write, 0, len(entries))
	for _, entry := range entries {
		if obj, err := metadataFor(entry); err == nil {
			writes = append(writes, memory.Write{Forget: true, Desired: memory.Desired{
				GVK: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}})
		}
	}
	return writes
}
