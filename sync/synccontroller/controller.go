package synccontroller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sync/engine"
	"github.com/convoy-gitops/convoy/sync/hosted"
)

// Common holds the dependencies the Package and ObjectDeployment reconcilers share.
type Common struct {
	// Client reads through the manager's cache (metadata-only for Secrets, Namespaces and
	// HyperShift kinds) and writes finalizers and status.
	Client client.Client
	// Direct is an uncached client of the management cluster; the engine applies, reads and
	// deletes objects through it.
	Direct client.Client
	// Engine applies revisions.
	Engine *engine.Engine
	// Hosted hands out clients of hosted clusters.
	Hosted *hosted.Clients
	// Recorder emits events; nil emits none.
	Recorder events.EventRecorder
	// HealthCheckInterval caps the requeue delay of a settled object; zero leaves the object's
	// own interval.
	HealthCheckInterval time.Duration
	// DefaultServiceAccount is the ServiceAccount ("<namespace>/<name>", or a name in each
	// object's namespace) that management objects are applied, pruned and torn down as when the
	// object names none; empty means the controller's own identity (--default-service-account).
	DefaultServiceAccount string
	// Shard is the value of the convoy.dev/shard label of the objects this replica reconciles;
	// empty reconciles the unlabelled ones only (--shard).
	Shard string

	notifier      *pass.Notifier
	written       *pass.WrittenVersions
	discoverer    *hosted.Discoverer
	applied       *appliedWatches
	impersonating *serviceAccountClients
	// inFlight cancels the passes of objects leaving the shard (watchShardMoves); each
	// controller has its own.
	inFlight *passesInFlight
}

// requeueInterval is the delay before the next pass of a settled object whose own interval is
// interval. When every object of the revision is of a kind the watch of the management
// cluster has synced (engine.Result.Watched), a change to any of them makes a pass at once,
// and the timer only corrects drift, at interval. Otherwise (hosted-cluster objects, kinds not
// watched yet) it is at most HealthCheckInterval, so that probes run again that often. A pass
// during which the watch delivered a change it may not have seen (engine.Result.Stale) is
// followed by another after staleResultDelay.
func (c *Common) requeueInterval(s *scope, interval time.Duration) time.Duration {
	if s.result != nil && s.result.Stale {
		return min(interval, staleResultDelay)
	}
	if c.HealthCheckInterval > 0 && (s.result == nil || !s.result.Watched) {
		return min(interval, c.HealthCheckInterval)
	}
	return interval
}

// staleResultDelay is the delay before the pass that follows a stale one: the change it may
// have missed is seen within it, and a burst of changes costs one pass per delay.
const staleResultDelay = 2 * time.Second

// scope is what one reconcile pass reads and computes; each step documents what it fills in.
type scope struct {
	obj    pass.Object
	status *convoyv1alpha1.SyncStatus
	paused bool
	// kubeconfigRef overrides the hosted cluster's kubeconfig Secret; nil for the default.
	kubeconfigRef *convoyv1alpha1.SecretKeyReference
	// serviceAccount is the object's spec.serviceAccountName; empty for none.
	serviceAccount string
	// adoptFrom is a Package's spec.adopt.from: the tools whose objects it takes over.
	adoptFrom []convoyv1alpha1.AdoptOwner
	// chart is set by the Package's render step for a chart package, whose render depends on
	// the API versions its clusters serve.
	chart bool
	// hostedCluster is set by reconcileHostedCluster; nil when the namespace has none.
	hostedCluster *hosted.Cluster
	// desiredID is the revision the pass works towards, set as soon as it is known (before
	// rendering, for a Package).
	desiredID string
	// revision is set by the render step (Package) or the template step (ObjectDeployment).
	revision *engine.Revision
	// conditionMaps are the objects whose conditions the Package reports, set by the render
	// step.
	conditionMaps []conditionMap
	// target is set by reconcileTarget.
	target *engine.Target
	// result is set by reconcileApply.
	result *engine.Result
	// done is set by a step that ends the pass successfully (paused).
	done bool
	// reason and message are Ready's on success, event a change note; set by the last step.
	reason, message, event string
}

// Finished reports whether a step ended the pass successfully (paused), for pass.RunSteps.
func (s *scope) Finished() bool { return s.done }

// desired returns the revision the pass works towards, once known.
func (s *scope) desired() string {
	if s.revision == nil {
		return s.desiredID
	}
	return s.revision.ID
}

// summary sets Progressing and hands the pass to the status finalizer.
func (s *scope) summary(err error, interval time.Duration, desired string) pass.Summary {
	setProgressingCondition(s, desired, err)
	sum := pass.Summary{Err: err, Interval: pass.Jitter(interval), Reason: s.reason,
		Message: s.message, Event: s.event}
	if s.revision != nil {
		sum.EventAnnotations = map[string]string{convoyv1alpha1.RevisionAnnotation: s.revision.ID}
	}
	return sum
}

// ensureFinalizer adds convoy's finalizer where it is missing: a HostedClusterPackage creates its
// Packages with it, so only a Package made by hand (and an ObjectDeployment) costs this write.
// The pass goes on: the update event of a finalizer does not change the generation, so no other
// pass would follow.
func (c *Common) ensureFinalizer(ctx context.Context, s *scope) error {
	if controllerutil.ContainsFinalizer(s.obj, convoyv1alpha1.Finalizer) {
		return nil
	}
	return c.patchFinalizers(ctx, s.obj, controllerutil.AddFinalizer)
}

// reconcilePaused ends a paused pass: no apply and no prune, status kept.
func (c *Common) reconcilePaused(_ context.Context, s *scope) error {
	if !s.paused {
		pass.MarkFalse(s.obj, convoyv1alpha1.PausedCondition, convoyv1alpha1.NotPausedReason, "Reconciliation is not paused")
		return nil
	}
	pass.MarkTrue(s.obj, convoyv1alpha1.PausedCondition, convoyv1alpha1.PausedReason, "Reconciliation is paused: nothing is applied or pruned")
	s.done, s.reason, s.message = true, convoyv1alpha1.PausedReason, "Reconciliation is paused"
	return nil
}

// reconcileApply runs the engine and records its result in the status.
func (c *Common) reconcileApply(ctx context.Context, s *scope) error {
	s.status.LastAttemptedRevision = s.revision.ID
	res, err := c.Engine.Sync(ctx, s.target, s.revision, s.status.Inventory)
	s.result = res
	recordResult(s, err)
	mapConditions(ctx, s)
	c.applied.ensure(ctx, res.Inventory)
	if err != nil {
		return err
	}
	s.reason, s.message = convoyv1alpha1.RevisionAvailableReason, fmt.Sprintf("Revision %s is available", s.revision.ID)
	if res.Changes.Written() || res.Pruned > 0 || len(res.Left) > 0 {
		s.event = fmt.Sprintf("Applied revision %s: %s, %d pruned%s", s.revision.ID, res.Changes, res.Pruned, leftNote(res.Left))
	}
	return nil
}

// patchFinalizers adds or removes convoy's finalizer with convoy's status field owner,
// guarded by the resourceVersion so that other finalizers are never lost. The pass's status
// patch relies on that lock too: it locks itself to the version this write answers
// (pass.StatusFinalizer), which is sound only because nobody else wrote in between.
func (c *Common) patchFinalizers(ctx context.Context, obj pass.Object, change func(client.Object, string) bool) error {
	base, _ := obj.DeepCopyObject().(client.Object)
	if !change(obj, convoyv1alpha1.Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	err := c.Client.Patch(ctx, obj, patch, client.FieldOwner(pass.ShardStatusFieldOwner(c.Shard)))
	if err = client.IgnoreNotFound(err); err != nil {
		return fmt.Errorf("updating finalizers: %w", err)
	}
	return nil
}

// emit sends a Normal event outside the status finalizer (teardown notes).
func (c *Common) emit(obj client.Object, reason, format string, args ...any) {
	if c.Recorder != nil {
		c.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, pass.EventAction, format, args...)
	}
}
