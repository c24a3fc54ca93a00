package engine

import (
	"context"
	"crypto/sha256"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
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
// the reads that follow meet and classify the fault.

// hostedListLimit bounds the items one list returns; objects past it are read one by one.
const hostedListLimit = 500

// seenAt is where an object was last seen without reading it: its resourceVersion and, when
// the source tells it (a list does, the watch of the management cluster does not), its UID.
type seenAt struct {
	resourceVersion string
	uid             types.UID
}

// listScope is what one list covers: a kind in a namespace ("" for a cluster-scoped kind).
type listScope struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// listHosted lists, metadata only, the owner's objects of the kinds and namespaces of the
// states that were judged available under rules, and returns where each of those states'
// objects was seen; nil when there is none or a list failed.
func (e *Engine) listHosted(ctx context.Context, c *cluster, states []desiredState, rules [sha256.Size]byte) map[objectKey]seenAt {
	wanted := map[objectKey]bool{}
	scopes := map[listScope]bool{}
	for i := range states {
		s := &states[i]
		if !e.applied.judged(c, *s, rules) {
			continue
		}
		wanted[keyOf(s.obj)] = true
		scopes[listScope{gvk: s.obj.GroupVersionKind(), namespace: s.namespace}] = true
	}
	if len(scopes) == 0 {
		return nil
	}
	selector := c.ownerSelector()
	seen := make(map[objectKey]seenAt, len(wanted))
	for scope := range scopes {
		if err := listOwned(ctx, c.client, scope, selector, wanted, seen); err != nil {
			return nil
		}
	}
	return seen
}

// listOwned lists the objects of scope that selector selects, metadata only, and notes in
// seen where those of wanted were seen: what it keeps is bounded by wanted, whatever the
// cluster answers.
func listOwned(ctx context.Context, cl client.Client, scope listScope, selector labels.Selector,
	wanted map[objectKey]bool, seen map[objectKey]seenAt) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(scope.gvk.GroupVersion().WithKind(scope.gvk.Kind + "List"))
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: selector}, client.Limit(hostedListLimit)}
	if scope.namespace != "" {
		opts = append(opts, client.InNamespace(scope.namespace))
	}
	if err := cl.List(ctx, list, opts...); err != nil {
		return err
	}
	for i := range list.Items {
		item := &list.Items[i]
		key := objectKey{gk: scope.gvk.GroupKind(), namespace: item.Namespace, name: item.Name}
		if wanted[key] {
			seen[key] = seenAt{resourceVersion: item.ResourceVersion, uid: item.UID}
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
	kind, err := labels.NewRequirement(convoyv1alpha1.OwnerKindLabel, selection.DoesNotExist, nil)
	if c.target.Kind != "" {
		kind, err = labels.NewRequirement(convoyv1alpha1.OwnerKindLabel, selection.Equals, []string{c.target.Kind})
	}
	if err != nil { // a kind that is no label value: the ledger still tells owners apart
		return selector
	}
	return selector.Add(*kind)
}
