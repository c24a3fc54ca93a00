package synccontroller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
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
	// DefaultServiceAccount is the ServiceAccount, in each object's namespace, that management
	// objects are applied, pruned and torn down as when the object names none; empty means the
	// controller's own identity (--default-service-account).
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
	// hostedCluster is set by reconcileHostedCluster; nil when the namespace has none.
	hostedCluster *hosted.Cluster
	// desiredID is the revision the pass works towards, set as soon as it is known (before
	// rendering, for a Package).
	desiredID string
	// revision is set by the render step (Package) or the template step (ObjectDeployment).
	revision *engine.Revision
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

// statusFields points the status finalizer at the shared status.
func statusFields(st *convoyv1alpha1.SyncStatus) pass.StatusFields {
	return pass.StatusFields{ObservedGeneration: &st.ObservedGeneration, LastHandledReconcileAt: &st.LastHandledReconcileAt}
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

// ensureFinalizer adds convoy's finalizer. The pass goes on: the update event of a finalizer
// does not change the generation, so no other pass would follow.
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

// reconcileHostedCluster discovers the HostedCluster of the namespace into s.hostedCluster;
// a namespace without one is not an error here (reconcileTarget decides whether one is needed).
func (c *Common) reconcileHostedCluster(ctx context.Context, s *scope) error {
	hc, err := c.discoverer.Discover(ctx, s.obj.GetNamespace())
	if errors.Is(err, hosted.ErrNoHostedCluster) {
		return nil
	}
	if err != nil {
		return err
	}
	s.hostedCluster = hc
	return nil
}

// reconcileTarget sets s.target; a revision with hosted-cluster phases, or an inventory with
// hosted objects, gets a client of the hosted cluster. A missing hosted cluster stalls the
// pass; missing credentials make it wait.
func (c *Common) reconcileTarget(ctx context.Context, s *scope) error {
	mgmt, err := c.managementClient(s)
	if err != nil {
		return err
	}
	s.target = &engine.Target{Namespace: s.obj.GetNamespace(), Name: s.obj.GetName(), Kind: ownerKind(s.obj), Management: mgmt,
		Shard: c.Shard}
	if !s.revision.NeedsHostedCluster() && !hasHosted(s.status.Inventory) {
		return nil
	}
	if s.hostedCluster == nil {
		return pass.Stallf(convoyv1alpha1.HostedClusterNotFoundReason,
			"the revision has hosted-cluster phases but namespace %s belongs to no hosted cluster (no HostedControlPlane)",
			s.obj.GetNamespace())
	}
	cl, err := c.Hosted.Client(ctx, s.obj.GetNamespace(), s.kubeconfigRef)
	if err != nil {
		err = hostedClientError(err)
		recordTargetFailure(s, err)
		return err
	}
	s.target.Hosted = cl
	return nil
}

// managementClient returns the client management objects are applied, pruned and torn down
// with: one impersonating the ServiceAccount of the object (or the controller's default one),
// else the controller's own.
func (c *Common) managementClient(s *scope) (client.Client, error) {
	sa := serviceAccountFor(s.serviceAccount, c.DefaultServiceAccount)
	if sa == "" {
		return c.Direct, nil
	}
	return c.impersonating.clientFor(s.obj.GetNamespace(), sa)
}

// The engine impersonates the ServiceAccount a Package names (tenant lockdown).
//
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate

// serviceAccountClients hands out uncached clients of the management cluster that impersonate
// a ServiceAccount, one per ServiceAccount, made on first use and kept. Safe for concurrent
// use.
type serviceAccountClients struct {
	config *rest.Config
	opts   client.Options

	mu     sync.Mutex
	byUser map[string]client.Client
}

// newServiceAccountClients returns clients built on config (the controller's own identity)
// with opts' scheme and REST mapper.
func newServiceAccountClients(config *rest.Config, opts client.Options) *serviceAccountClients {
	return &serviceAccountClients{config: config, opts: client.Options{Scheme: opts.Scheme, Mapper: opts.Mapper},
		byUser: map[string]client.Client{}}
}

// clientFor returns a client acting as the ServiceAccount name of namespace.
func (s *serviceAccountClients) clientFor(namespace, name string) (client.Client, error) {
	user := serviceaccount.MakeUsername(namespace, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.byUser[user]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(s.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, s.opts)
	if err != nil {
		return nil, fmt.Errorf("building a client as %s: %w", user, err)
	}
	s.byUser[user] = c
	return c, nil
}

// serviceAccountFor returns the ServiceAccount the management side of an object is applied
// as: its own, else the controller's default; empty means the controller's own identity.
func serviceAccountFor(own, fallback string) string {
	if own != "" {
		return own
	}
	return fallback
}

// hostedClientError classifies an error of the hosted client cache: a kubeconfig the policy
// refuses stalls the object until its Secret changes (the Secret watch requeues it).
func hostedClientError(err error) error {
	if errors.Is(err, hosted.ErrKubeconfigRefused) {
		return pass.Stallf(convoyv1alpha1.KubeconfigRefusedReason, "cannot reach the hosted cluster: %w", err)
	}
	if errors.Is(err, hosted.ErrNoKubeconfig) {
		return pass.Waitf(convoyv1alpha1.HostedClusterUnreachableReason, engine.UnreachableInterval,
			"cannot reach the hosted cluster: %w", err)
	}
	return err
}

// recordTargetFailure marks the object not Available when its hosted cluster cannot be
// reached: what it applied there cannot be checked.
func recordTargetFailure(s *scope, err error) {
	pass.MarkFalse(s.obj, convoyv1alpha1.AvailableCondition, pass.ReasonOf(err), "%s", err.Error())
}

// reconcileApply runs the engine and records its result in the status.
func (c *Common) reconcileApply(ctx context.Context, s *scope) error {
	s.status.LastAttemptedRevision = s.revision.ID
	res, err := c.Engine.Sync(ctx, s.target, s.revision, s.status.Inventory)
	s.result = res
	recordResult(s, err)
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

// recordResult writes what the engine did into the status: phases, inventory, the revision
// once available, and the Available condition.
func recordResult(s *scope, err error) {
	res := s.result
	if res == nil {
		return
	}
	s.status.Phases = res.Phases
	s.status.Inventory = res.Inventory
	if res.Available {
		s.status.Revision = s.revision.ID
	}
	setAvailableCondition(s, err)
}

// setAvailableCondition sets Available from the last engine pass: True when every phase of the
// revision is available, False with the reason and message of what stopped the pass.
func setAvailableCondition(s *scope, err error) {
	if s.result != nil && s.result.Available {
		pass.MarkTrue(s.obj, convoyv1alpha1.AvailableCondition, convoyv1alpha1.RevisionAvailableReason,
			"All %d phases of revision %s are available", len(s.result.Phases), s.revision.ID)
		return
	}
	if err == nil {
		return
	}
	pass.MarkFalse(s.obj, convoyv1alpha1.AvailableCondition, pass.ReasonOf(err), "%s", err.Error())
}

// setProgressingCondition sets Progressing: False once the desired revision is the available
// status.revision, True with what is under way (or in the way) otherwise. An empty desired
// revision (not known yet) leaves it alone unless the pass failed.
func setProgressingCondition(s *scope, desired string, err error) {
	switch {
	case s.done:
		return
	case err == nil && desired != "" && desired == s.status.Revision:
		pass.MarkFalse(s.obj, convoyv1alpha1.ProgressingCondition, convoyv1alpha1.RevisionAvailableReason,
			"Revision %s is available", desired)
	case err != nil:
		pass.MarkTrue(s.obj, convoyv1alpha1.ProgressingCondition, pass.ReasonOf(err), "%s", progressMessage(desired, err))
	case desired != "":
		pass.MarkTrue(s.obj, convoyv1alpha1.ProgressingCondition, convoyv1alpha1.ProgressingReason,
			"Applying revision %s", desired)
	}
}

// progressMessage says what holds the desired revision back.
func progressMessage(desired string, err error) string {
	if desired == "" {
		return err.Error()
	}
	return fmt.Sprintf("Revision %s: %v", desired, err)
}

// maxLeftListed bounds the entries named in one event (an event note holds 1 KiB).
const maxLeftListed = 3

// leftNote lists the entries a prune dropped without deleting them.
func leftNote(left []engine.Left) string {
	if len(left) == 0 {
		return ""
	}
	return fmt.Sprintf(", %d dropped from the inventory without a delete: %s", len(left), describeLeft(left))
}

// describeLeft names the first entries of left and counts the others.
func describeLeft(left []engine.Left) string {
	parts := make([]string, 0, maxLeftListed+1)
	for i, l := range left {
		if i == maxLeftListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(left)-i))
			break
		}
		parts = append(parts, l.String())
	}
	return strings.Join(parts, "; ")
}

// sameSyncStatus implements pass.StatusOptions.SameStatus for Packages and ObjectDeployments:
// their statuses are identical, field by field. Times are equal only with the same *Location
// pointer, stricter than reflect.DeepEqual; a nil slice equals an empty one, since every slice
// of SyncStatus is omitempty and both encode alike. False only means "compare them as JSON",
// which decides. Every settled pass compares its status, and reflection took a fortieth of a settled
// fleet's CPU.
func sameSyncStatus(before, after client.Object) bool {
	b, a := syncStatusOf(before), syncStatusOf(after)
	if b == nil || a == nil {
		return false
	}
	return b.ObservedGeneration == a.ObservedGeneration && b.Revision == a.Revision &&
		b.LastAttemptedRevision == a.LastAttemptedRevision && b.LastHandledReconcileAt == a.LastHandledReconcileAt &&
		slices.Equal(b.Conditions, a.Conditions) && slices.Equal(b.Phases, a.Phases) && slices.Equal(b.Inventory, a.Inventory)
}

// syncStatusOf returns the status of a Package or an ObjectDeployment, nil for another kind.
func syncStatusOf(obj client.Object) *convoyv1alpha1.SyncStatus {
	switch o := obj.(type) {
	case *convoyv1alpha1.Package:
		return &o.Status
	case *convoyv1alpha1.ObjectDeployment:
		return &o.Status
	}
	return nil
}

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
