package engine

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// TeardownOptions say which objects a teardown leaves in place.
type TeardownOptions struct {
	// AbandonHosted forgets the hosted-cluster objects without deleting them: the hosted
	// cluster is being deleted, or is gone, and takes them along.
	AbandonHosted bool
	// AbandonManagement forgets the management objects without deleting them: their namespace
	// is terminating and takes them along.
	AbandonManagement bool
}

func (o TeardownOptions) abandons(c *cluster) bool {
	if c.hosted() {
		return o.AbandonHosted
	}
	return o.AbandonManagement
}

// TeardownResult is what one Teardown pass did.
type TeardownResult struct {
	// Inventory is what is left of the inventory; nil when the teardown is done.
	Inventory []convoyv1alpha1.InventoryEntry
	// Left are the entries dropped without deleting their object, with the reason: kinds that
	// no longer exist, CustomResourceDefinitions and Namespaces without the opt-in.
	Left []Left

	// deleted are the entries whose objects this pass deleted.
	deleted []convoyv1alpha1.InventoryEntry
}

// Teardown deletes the objects of inv in reverse phase order, waiting for each phase to be
// gone before the next. It returns what is left of the inventory and, while objects are
// still going away, a Waiting error. Objects that are no longer the owner's, or are annotated
// convoy.dev/prune: disabled, are left in place; so are CustomResourceDefinitions and
// Namespaces not annotated convoy.dev/prune: enabled, and reported in the result's Left.
func (e *Engine) Teardown(ctx context.Context, t *Target, inv []convoyv1alpha1.InventoryEntry, opts TeardownOptions) (*TeardownResult, error) {
	res, err := e.teardown(ctx, t, inv, opts)
	logTornDown(ctx, res)
	return res, err
}

// logTornDown logs a teardown pass that deleted objects or left some in place.
func logTornDown(ctx context.Context, res *TeardownResult) {
	switch {
	case len(res.Left) > 0:
		left := make([]string, 0, min(len(res.Left), maxLogged))
		for _, l := range res.Left[:min(len(res.Left), maxLogged)] {
			left = append(left, l.name())
		}
		ctrl.LoggerFrom(ctx).Info("Tore down", "objects", len(res.deleted), "left", left)
	case len(res.deleted) > 0:
		ctrl.LoggerFrom(ctx).Info("Tore down", "objects", len(res.deleted))
	}
}

// teardown is one pass of Teardown.
func (e *Engine) teardown(ctx context.Context, t *Target, inv []convoyv1alpha1.InventoryEntry, opts TeardownOptions) (*TeardownResult, error) {
	res := &TeardownResult{}
	groups := groupByPhase(inv)
	for i := len(groups) - 1; i >= 0; i-- {
		c := t.clusterNamed(groups[i].cluster)
		if opts.abandons(c) {
			continue
		}
		if c.client == nil {
			res.Inventory = flatten(groups[:i+1])
			return res, hostedUnavailable(t)
		}
		dr, err := e.deleteGroup(ctx, c, groups[i].entries, true)
		groups[i].entries = dr.remaining
		res.Left = append(res.Left, dr.left...)
		res.deleted = append(res.deleted, dr.deleted...)
		if err != nil {
			res.Inventory = flatten(groups[:i+1])
			return res, err
		}
		if n := len(dr.remaining); n > 0 {
			res.Inventory = flatten(groups[:i+1])
			return res, pass.Waitf(convoyv1alpha1.ProgressingReason, e.opts.DeleteInterval,
				"waiting for %d %s of phase %q to be deleted", n, plural(n, "object", "objects"), groups[i].phase)
		}
	}
	return res, nil
}

// hostedUnavailable is the error of a target without the hosted cluster it needs.
func hostedUnavailable(t *Target) error {
	if t.HostedUnavailable != nil {
		return t.HostedUnavailable
	}
	return pass.Waitf(convoyv1alpha1.HostedClusterUnreachableReason, UnreachableInterval,
		"the hosted cluster of namespace %s cannot be reached", t.Namespace)
}
