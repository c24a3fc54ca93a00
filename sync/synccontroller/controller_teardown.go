package synccontroller

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sync/engine"
	"github.com/convoy-gitops/convoy/sync/hosted"
)

// reconcileDelete tears down what the object applied and removes the finalizer. A paused
// object is not torn down. Objects are abandoned, with an event, where the teardown would
// wait for what is going away anyway: management objects of a terminating namespace, hosted
// objects of a hosted cluster that is being deleted or is gone, so that convoy's finalizer
// never holds up HyperShift's deletion of a hosted cluster or of its namespace.
func (c *Common) reconcileDelete(ctx context.Context, s *scope) error {
	if !controllerutil.ContainsFinalizer(s.obj, convoyv1alpha1.Finalizer) {
		return nil
	}
	if s.paused {
		c.emit(s.obj, AbandonedReason, "Deleted while paused: %d objects left in place", len(s.status.Inventory))
		return c.patchFinalizers(ctx, s.obj, controllerutil.RemoveFinalizer)
	}
	t, opts, err := c.teardownTarget(ctx, s)
	if err != nil {
		return err
	}
	res, err := c.Engine.Teardown(ctx, t, s.status.Inventory, opts)
	s.status.Inventory = res.Inventory
	if len(res.Left) > 0 {
		c.emit(s.obj, LeftInPlaceReason, "Teardown dropped %d inventory entries without a delete: %s", len(res.Left), describeLeft(res.Left))
	}
	if err != nil {
		return err
	}
	return c.patchFinalizers(ctx, s.obj, controllerutil.RemoveFinalizer)
}

// teardownTarget returns the target of a teardown and what it abandons.
func (c *Common) teardownTarget(ctx context.Context, s *scope) (*engine.Target, engine.TeardownOptions, error) {
	ns := s.obj.GetNamespace()
	var opts engine.TeardownOptions
	mgmt, err := c.managementClient(s)
	if err != nil {
		return nil, opts, err
	}
	t := &engine.Target{Namespace: ns, Name: s.obj.GetName(), Kind: ownerKind(s.obj), Management: mgmt}
	terminating, err := c.namespaceTerminating(ctx, ns)
	if err != nil {
		return nil, opts, err
	}
	if terminating {
		c.emit(s.obj, AbandonedReason, "Namespace %s is terminating: leaving its objects and the hosted cluster's to it", ns)
		return t, engine.TeardownOptions{AbandonHosted: true, AbandonManagement: true}, nil
	}
	if !hasHosted(s.status.Inventory) {
		return t, opts, nil
	}
	hc, err := c.discoverer.Discover(ctx, ns)
	switch {
	case errors.Is(err, hosted.ErrNoHostedCluster) || (err == nil && hc.Deleting):
		c.emit(s.obj, AbandonedReason, "The hosted cluster of namespace %s is being deleted or is gone: leaving its objects to it", ns)
		opts.AbandonHosted = true
	case err != nil:
		return nil, opts, err
	default:
		t.Hosted, err = c.Hosted.Client(ctx, ns, s.kubeconfigRef)
		t.HostedUnavailable = hostedClientError(err)
	}
	return t, opts, nil
}

// hasHosted reports inventory entries in the hosted cluster.
func hasHosted(inv []convoyv1alpha1.InventoryEntry) bool {
	for _, e := range inv {
		if e.Cluster == convoyv1alpha1.InventoryClusterHosted {
			return true
		}
	}
	return false
}

// namespaceTerminating reports a namespace being deleted (or gone).
func (c *Common) namespaceTerminating(ctx context.Context, name string) (bool, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(namespaceGVK)
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return client.IgnoreNotFound(err) == nil, client.IgnoreNotFound(err)
	}
	return ns.DeletionTimestamp != nil, nil
}

// AbandonedReason is the reason of the event of a teardown that leaves objects to a cluster or
// namespace that is going away.
const AbandonedReason = "Abandoned"

// LeftInPlaceReason is the reason of the event of an inventory entry that a prune or teardown
// dropped without deleting its object: a kind that no longer exists, or a
// CustomResourceDefinition or Namespace without the opt-in annotation.
const LeftInPlaceReason = "LeftInPlace"
