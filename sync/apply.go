package sync

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/reconcile"
)

// ownerGroup is the prefix of the ownership labels, as fluxcd/pkg/ssa names it.
const ownerGroup = "convoy.dev"

// establishPoll is how often a pass re-reads CRDs it waits for.
const establishPoll = 250 * time.Millisecond

// phaseOutcome is what applying one phase did.
type phaseOutcome struct {
	// objects are the prepared objects, in phase order (definitions first).
	objects []*unstructured.Unstructured
	// observer holds their live state.
	observer *observer
	changes  Changes
}

// applyPhase applies the objects of ph to c: CustomResourceDefinitions and Namespaces first,
// then, once the CRDs are established, the rest.
func (e *Engine) applyPhase(ctx context.Context, c *cluster, ph *Phase) (*phaseOutcome, error) {
	out := &phaseOutcome{observer: newObserver(c.client)}
	defs, rest := splitStages(ph.Objects)
	if len(defs) > 0 {
		if err := e.applyStage(ctx, c, ph, defs, out); err != nil {
			return out, err
		}
		if err := e.waitEstablished(ctx, c, defs, out.observer); err != nil {
			return out, err
		}
	}
	return out, e.applyStage(ctx, c, ph, rest, out)
}

// applyStage prepares, reads, checks ownership of and applies objs.
func (e *Engine) applyStage(ctx context.Context, c *cluster, ph *Phase, objs []*unstructured.Unstructured, out *phaseOutcome) error {
	if len(objs) == 0 {
		return nil
	}
	if err := c.prepare(ph, objs); err != nil {
		return err
	}
	if err := out.observer.prefetch(ctx, objs, e.opts.Concurrency); err != nil {
		return c.classify(err)
	}
	if err := c.checkOwnership(ph, objs, out.observer); err != nil {
		return err
	}
	out.objects = append(out.objects, objs...)
	absent, present := out.observer.partition(objs)
	if err := e.create(ctx, c, absent, out); err != nil {
		return err
	}
	rm := ssa.NewResourceManager(out.observer, nil, ssa.Owner{Field: FieldManager, Group: ownerGroup})
	rm.SetConcurrency(e.opts.Concurrency)
	cs, err := rm.ApplyAll(ctx, present, e.applyOptions())
	if err != nil {
		return c.classify(err)
	}
	out.changes.add(cs, e.opts.Controller, c.name)
	return nil
}

// create applies objects that the prefetch found absent, in fluxcd/pkg/ssa's kind order.
//
// Note: the resource manager would dry-run them first, only to find that they are new; an
// apply that creates is one request instead of two. The cost is that an invalid new object is
// refused after the valid ones before it were created, instead of before anything is written.
func (e *Engine) create(ctx context.Context, c *cluster, objs []*unstructured.Unstructured, out *phaseOutcome) error {
	sort.Sort(ssa.SortableUnstructureds(objs))
	for _, obj := range objs {
		applied := obj.DeepCopy()
		ssautils.RemoveCABundleFromCRD(applied)
		err := out.observer.Patch(ctx, applied, client.Apply, client.ForceOwnership, client.FieldOwner(FieldManager))
		if err != nil {
			return c.classify(fmt.Errorf("%s apply failed: %w", describe(obj), err))
		}
		out.changes.Created++
		appliedObjects.WithLabelValues(e.opts.Controller, c.name, ssa.CreatedAction.String()).Inc()
	}
	return nil
}

// applyOptions: never force-recreate, except objects annotated convoy.dev/force: "true".
func (e *Engine) applyOptions() ssa.ApplyOptions {
	opts := ssa.DefaultApplyOptions()
	opts.ForceSelector = map[string]string{convoyv1alpha1.ForceAnnotation: "true"}
	opts.WaitInterval = establishPoll
	return opts
}

// add counts the entries of a change set.
func (c *Changes) add(cs *ssa.ChangeSet, controller, cluster string) {
	for _, e := range cs.Entries {
		switch e.Action {
		case ssa.CreatedAction:
			c.Created++
		case ssa.ConfiguredAction:
			c.Configured++
		default:
			c.Unchanged++
		}
		appliedObjects.WithLabelValues(controller, cluster, e.Action.String()).Inc()
	}
}

// waitEstablished waits, for at most EstablishTimeout, until the CRDs among defs are
// established; past that it returns a Waiting error.
func (e *Engine) waitEstablished(ctx context.Context, c *cluster, defs []*unstructured.Unstructured, obs *observer) error {
	for _, d := range defs {
		if d.GetKind() != "CustomResourceDefinition" || established(obs.live(d)) {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, establishPoll, e.opts.EstablishTimeout, true,
			func(ctx context.Context) (bool, error) {
				live := &unstructured.Unstructured{}
				live.SetGroupVersionKind(d.GroupVersionKind())
				if err := c.client.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
					return false, err
				}
				obs.observe(live)
				return established(live), nil
			})
		switch {
		case wait.Interrupted(err):
			return reconcile.Waitf(convoyv1alpha1.DependencyNotReadyReason, e.opts.ProbeInterval,
				"CustomResourceDefinition %s is not established yet", d.GetName())
		case err != nil:
			return c.classify(err)
		}
	}
	return nil
}

// established reports a CRD with Established=True.
func established(crd *unstructured.Unstructured) bool {
	if crd == nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, raw := range conds {
		if c, ok := raw.(map[string]any); ok && c["type"] == "Established" && c["status"] == "True" {
			return true
		}
	}
	return false
}
