package engine

import (
	"context"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/manifests/probe"
)

// observer is the client the SSA resource manager works through during one phase. It lets the
// engine read every object once and see everything the API server answers, so that ownership
// checks and probes cost no request of their own:
//
//   - prefetch reads the live objects before apply; the resource manager's own read of each
//     object is then served from what prefetch got (once; later reads go to the server);
//   - every real (not dry-run) apply response, and any fresher read (a CRD polled until it is
//     established), is kept as the object's live state.
type observer struct {
	client.Client
	// probes are the revision's probes: an object one selects is judged by its body.
	probes []probe.Rule

	mu      sync.Mutex
	pending map[objectKey]*unstructured.Unstructured // nil value: not found
	read    map[objectKey]bool                       // prefetched, found or not
	seen    map[objectKey]*unstructured.Unstructured
	applied map[objectKey]*unstructured.Unstructured // latest state: apply responses, fresher reads
	quiet   map[objectKey]bool                       // not read: unchanged since judged available (sync/engine/memory)
}

func newObserver(c client.Client, probes []probe.Rule) *observer {
	return &observer{
		Client:  c,
		probes:  probes,
		pending: map[objectKey]*unstructured.Unstructured{},
		read:    map[objectKey]bool{},
		seen:    map[objectKey]*unstructured.Unstructured{},
		applied: map[objectKey]*unstructured.Unstructured{},
		quiet:   map[objectKey]bool{},
	}
}

// prefetch reads objs concurrently; an object that does not exist is recorded as such.
func (o *observer) prefetch(ctx context.Context, objs []*unstructured.Unstructured, concurrency int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for _, obj := range objs {
		g.Go(func() error {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(obj.GroupVersionKind())
			err := o.Client.Get(ctx, client.ObjectKeyFromObject(obj), live)
			if apierrors.IsNotFound(err) {
				live, err = nil, nil
			}
			if err != nil {
				return err
			}
			o.mu.Lock()
			defer o.mu.Unlock()
			o.pending[keyOf(obj)] = live
			o.read[keyOf(obj)] = true
			if live != nil {
				o.seen[keyOf(obj)] = live
			}
			return nil
		})
	}
	return g.Wait()
}

// wasRead reports whether prefetch read obj.
func (o *observer) wasRead(obj *unstructured.Unstructured) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.read[keyOf(obj)]
}

// existing returns what prefetch read for obj, nil when it does not exist.
func (o *observer) existing(obj *unstructured.Unstructured) *unstructured.Unstructured {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[keyOf(obj)]
}

// live returns the latest state of obj the observer saw: the apply response when it was
// written, else what prefetch read.
func (o *observer) live(obj *unstructured.Unstructured) *unstructured.Unstructured {
	o.mu.Lock()
	defer o.mu.Unlock()
	if u, ok := o.applied[keyOf(obj)]; ok {
		return u
	}
	return o.seen[keyOf(obj)]
}

// reread replaces what prefetch read of an object with a fresher state the engine wrote
// outside the resource manager (a takeover), so that the resource manager's read sees it.
func (o *observer) reread(live *unstructured.Unstructured) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := keyOf(live)
	if _, ok := o.pending[k]; ok {
		o.pending[k] = live.DeepCopy()
	}
	o.seen[k] = live.DeepCopy()
}

// observe records a fresher live state of an object read outside the resource manager.
func (o *observer) observe(live *unstructured.Unstructured) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.applied[keyOf(live)] = live.DeepCopy()
}

// Get serves the first read of a prefetched object from memory.
func (o *observer) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return o.Client.Get(ctx, key, obj, opts...)
	}
	k := objectKey{gk: u.GroupVersionKind().GroupKind(), namespace: key.Namespace, name: key.Name}
	o.mu.Lock()
	live, found := o.pending[k]
	delete(o.pending, k)
	o.mu.Unlock()
	switch {
	case !found:
		return o.Client.Get(ctx, key, obj, opts...)
	case live == nil:
		return apierrors.NewNotFound(schema.GroupResource{Group: k.gk.Group, Resource: strings.ToLower(k.gk.Kind)}, key.Name)
	}
	live.DeepCopyInto(u)
	return nil
}

// Patch sends the patch and keeps the response of a real apply.
func (o *observer) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := o.Client.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || isDryRun(opts) {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.applied[keyOf(u)] = u.DeepCopy()
	return nil
}

// applyOwned applies obj, which the caller hands over, and returns the live state it keeps of
// the object: the metadata of the answer for an object judged by it (observer_answer.go), else
// the answer itself, which replaces obj without a copy. Either is kept without managedFields,
// which nothing that reads a live state here looks at (ownership is judged by labels,
// availability by kstatus or the probes, from the status and spec). The caller must not change
// obj afterwards.
//
// Note: an answer is mostly its managedFields for the small objects a package is made of;
// keeping them doubled the garbage of every apply, which the controller's CPU pays for in
// collections at a thousand Packages.
func (o *observer) applyOwned(ctx context.Context, obj *unstructured.Unstructured, opts ...client.PatchOption) (*unstructured.Unstructured, error) {
	live := obj
	var err error
	if judgedByMetadata(obj, o.probes) {
		live, err = o.applyForMetadata(ctx, obj, opts...)
	} else {
		err = o.Client.Patch(ctx, obj, client.Apply, opts...)
	}
	if err != nil {
		return nil, err
	}
	live.SetManagedFields(nil)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.applied[keyOf(live)] = live
	return live, nil
}

func isDryRun(opts []client.PatchOption) bool {
	po := &client.PatchOptions{}
	po.ApplyOptions(opts)
	return len(po.DryRun) > 0
}

// markQuiet notes that obj was not read: it is as it was when judged available.
func (o *observer) markQuiet(obj *unstructured.Unstructured) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.quiet[keyOf(obj)] = true
}

// isQuiet reports whether obj was skipped as quiet.
func (o *observer) isQuiet(obj *unstructured.Unstructured) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.quiet[keyOf(obj)]
}

// objectKey identifies an object in one cluster.
type objectKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

func keyOf(obj *unstructured.Unstructured) objectKey {
	return objectKey{gk: obj.GroupVersionKind().GroupKind(), namespace: obj.GetNamespace(), name: obj.GetName()}
}
