package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"sync"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// No watch sees the objects of a hosted cluster: a thousand hosted clusters must not mean a
// thousand watch caches (sync/hosted). A pass would then read each of them, every
// health-check interval, for as long as its owner lives. Instead, before reading, a pass lists
// the owner's objects of each kind and namespace, metadata only, selected by the ownership
// labels: one request per kind and namespace, whatever the number of objects. An object listed
// at the resourceVersion and UID at which this owner judged it available under the same
// probes is quiet, as a management object the watch saw unchanged is: nothing changed it
// since. The UID tells an object apart from one recreated in another cluster that answers for
// the same namespace, whose resourceVersions start over. The rest (changed, replaced, absent,
// past the list's bound) are read one by one, as before. A list that fails marks nothing quiet:
// the reads that follow meet and classify the fault. A list returns at most as many objects as
// the owner has in its scope, so that objects a tenant labels as ours cost no more than reading
// ours would. Quiet or not, a hosted object is looked at again at the next pass: no pass with
// hosted objects is ever repeated as settled.

// listScope is what one list covers: a kind in a namespace ("" for a cluster-scoped kind).
type listScope struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// listHosted lists, metadata only, the owner's objects of the kinds and namespaces of the
// states that were judged available under rules, and returns where each of those states'
// objects was seen; nil when there is none or a list failed. A scope of one such object is not
// listed: a read costs the same request.
func (e *Engine) listHosted(ctx context.Context, c *cluster, states []desiredState, rules [sha256.Size]byte) map[objectKey]seenAt {
	wanted := map[listScope]map[objectKey]bool{}
	for i := range states {
		s := &states[i]
		if !e.applied.judged(c, *s, rules) {
			continue
		}
		scope := listScope{gvk: s.obj.GroupVersionKind(), namespace: s.namespace}
		if wanted[scope] == nil {
			wanted[scope] = map[objectKey]bool{}
		}
		wanted[scope][objectKey{gk: scope.gvk.GroupKind(), namespace: s.obj.GetNamespace(), name: s.obj.GetName()}] = true
	}
	maps.DeleteFunc(wanted, func(_ listScope, keys map[objectKey]bool) bool { return len(keys) < 2 })
	if len(wanted) == 0 {
		return nil
	}
	seen := &listed{at: map[objectKey]seenAt{}}
	lists, listCtx := errgroup.WithContext(ctx)
	lists.SetLimit(max(e.opts.Concurrency, 1))
	selector := c.ownerSelector()
	for scope, keys := range wanted {
		lists.Go(func() error { return seen.list(listCtx, c.client, scope, selector, keys) })
	}
	if err := lists.Wait(); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Listing hosted objects failed: reading them one by one", "error", err.Error())
		return nil
	}
	return seen.at
}

// listed collects where the lists of a pass saw the objects they looked for.
type listed struct {
	mu sync.Mutex
	at map[objectKey]seenAt
}

// list lists the objects of scope that selector selects, metadata only, at most as many as
// wanted has: what it reads is bounded by the owner's own objects, as reading them one by one
// would be, whatever else carries the ownership labels (objects beyond the limit are then
// read). It notes where those of wanted were seen.
func (l *listed) list(ctx context.Context, cl client.Client, scope listScope, selector labels.Selector, wanted map[objectKey]bool) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(scope.gvk.GroupVersion().WithKind(scope.gvk.Kind + "List"))
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: selector}, client.Limit(int64(len(wanted)))}
	if scope.namespace != "" {
		opts = append(opts, client.InNamespace(scope.namespace))
	}
	if err := cl.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("listing %s in %q: %w", scope.gvk.Kind, scope.namespace, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range list.Items {
		item := &list.Items[i]
		key := objectKey{gk: scope.gvk.GroupKind(), namespace: item.Namespace, name: item.Name}
		if wanted[key] && item.UID != "" {
			l.at[key] = seenAt{resourceVersion: item.ResourceVersion, uid: item.UID, uidKnown: true}
		}
	}
	return nil
}

// ownerSelector selects the objects that carry this target's ownership labels (see owns).
func (c *cluster) ownerSelector() labels.Selector {
	selector := labels.SelectorFromSet(labels.Set{
		convoyv1alpha1.PackageNameLabel:      c.target.Name,
		convoyv1alpha1.PackageNamespaceLabel: c.target.Namespace,
	})
	var kind *labels.Requirement
	var err error
	if c.target.Kind == "" {
		kind, err = labels.NewRequirement(convoyv1alpha1.OwnerKindLabel, selection.DoesNotExist, nil)
	} else {
		kind, err = labels.NewRequirement(convoyv1alpha1.OwnerKindLabel, selection.Equals, []string{c.target.Kind})
	}
	if err != nil { // a kind that is no label value: the ledger still tells owners apart
		return selector
	}
	return selector.Add(*kind)
}
