package rolloutcontroller

import (
	"context"
	"fmt"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sources"
)

// Field indexes of the manager's cache.
const (
	// ownerIndex indexes Packages by the name of the HostedClusterPackage controlling them.
	ownerIndex = ".metadata.controller.hostedclusterpackage"
	// templateSourceIndex indexes HostedClusterPackages by their template's GitSource.
	templateSourceIndex = ".spec.template.spec.sourceRef"
	// foreignNameIndex indexes by name the Packages that no HostedClusterPackage of that name
	// controls: those a HostedClusterPackage must not take over.
	foreignNameIndex = ".metadata.name.foreign"
	// approvalIndex indexes PartitionApprovals and ManualPromotions (and their legacy kinds,
	// RolloutApprovals and PromotionApprovals) by the HostedClusterPackage they name.
	approvalIndex = ".spec.hostedClusterPackage"
)

// HostedClusterPackageReconcilerOptions tune the controller.
type HostedClusterPackageReconcilerOptions struct {
	// MaxConcurrentReconciles is the number of HostedClusterPackages reconciled in parallel.
	MaxConcurrentReconciles int
}

// SetupIndexes registers the cache indexes of the controller. It must run before the manager
// starts, even when the controller itself starts later (the Package informer is shared).
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	return indexFields(ctx, mgr.GetFieldIndexer())
}

// indexFields registers the controller's indexes with idx.
func indexFields(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &convoyv1alpha1.Package{}, ownerIndex, indexOwner); err != nil {
		return fmt.Errorf("indexing Packages by owner: %w", err)
	}
	if err := idx.IndexField(ctx, &convoyv1alpha1.Package{}, foreignNameIndex, indexForeignName); err != nil {
		return fmt.Errorf("indexing Packages by name: %w", err)
	}
	if err := idx.IndexField(ctx, &convoyv1alpha1.HostedClusterPackage{}, templateSourceIndex, indexTemplateSource); err != nil {
		return fmt.Errorf("indexing HostedClusterPackages by source: %w", err)
	}
	if err := idx.IndexField(ctx, &convoyv1alpha1.HostedClusterPackage{}, dependsOnIndex, indexDependsOn); err != nil {
		return fmt.Errorf("indexing HostedClusterPackages by dependency: %w", err)
	}
	if err := idx.IndexField(ctx, &convoyv1alpha1.HostedClusterPackage{}, publishedKeyIndex, indexPublishedKey); err != nil {
		return fmt.Errorf("indexing HostedClusterPackages by promotion key: %w", err)
	}
	for _, kind := range approvalKinds() {
		if err := idx.IndexField(ctx, kind, approvalIndex, indexApproval); err != nil {
			return fmt.Errorf("indexing %T by HostedClusterPackage: %w", kind, err)
		}
	}
	return nil
}

// SetupWithManager registers the controller; SetupIndexes must have run. It watches
// HostedClusterPackages (generation changes); the Packages they own (creation, deletion, and
// changes of spec, metadata or status); the Packages named like one that it does not own (a
// conflict appears or clears); HostedClusters (creation, deletion, and changes of
// labels, availability or deletion), for the HostedClusterPackages whose selector matches the
// old or the new labels; and GitSource artifact changes, for the HostedClusterPackages whose
// template uses that source; and approvals and manual promotions (of the four kinds of
// approvalKinds) coming and going, for the HostedClusterPackage they name. When sharding names a ConfigMap, it watches that ConfigMap's data;
// when it names a lease namespace, the shard replicas' leases coming and going
// (shardLeaseWatch); both for every HostedClusterPackage.
func (r *HostedClusterPackageReconciler) SetupWithManager(mgr ctrl.Manager, opts HostedClusterPackageReconcilerOptions) error {
	if r.expect == nil {
		r.expect = newExpectations()
	}
	if r.metrics == nil {
		r.metrics = newRolloutMetrics()
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if r.Sharding.ConfigMap.Name != "" {
		b = b.Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.requestsForAll),
			builder.WithPredicates(r.isShardsConfigMap()))
	}
	if r.Sharding.LeaseNamespace != "" {
		b = b.WatchesRawSource(newShardLeaseWatch(mgr.GetCache(), r.now, func(ctx context.Context, q queue) {
			for _, req := range r.requestsForAll(ctx, nil) {
				q.Add(req)
			}
		}).source())
	}
	return b.
		For(&convoyv1alpha1.HostedClusterPackage{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&convoyv1alpha1.Package{},
			batched(handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &convoyv1alpha1.HostedClusterPackage{}, handler.OnlyControllerOwner()),
				r.packageEventDelay),
			builder.WithPredicates(packageChanged())).
		Watches(&convoyv1alpha1.Package{}, batched(handler.EnqueueRequestsFromMapFunc(r.requestsForDependencyGraph),
			r.packageEventDelay), builder.WithPredicates(packageChanged())).
		Watches(&convoyv1alpha1.HostedClusterPackage{}, handler.EnqueueRequestsFromMapFunc(r.requestsForDependants),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&convoyv1alpha1.HostedClusterPackage{}, handler.EnqueueRequestsFromMapFunc(r.requestsForAll),
			builder.WithPredicates(packageNameChanged())).
		Watches(&convoyv1alpha1.Package{}, handler.EnqueueRequestsFromMapFunc(requestForForeignName)).
		Watches(&hyperv1.HostedCluster{}, r.hostedClusterHandler(), builder.WithPredicates(hostedClusterChanged())).
		Watches(&convoyv1alpha1.GitSource{}, handler.EnqueueRequestsFromMapFunc(sources.RequestsForFollowers(r.Client,
			func() client.ObjectList { return &convoyv1alpha1.HostedClusterPackageList{} }, templateSourceIndex)),
			builder.WithPredicates(sources.ArtifactOrPromotionChangedPredicate())).
		Watches(&convoyv1alpha1.PartitionApproval{}, handler.EnqueueRequestsFromMapFunc(requestForApproval)).
		Watches(&convoyv1alpha1.RolloutApproval{}, handler.EnqueueRequestsFromMapFunc(requestForApproval)).
		Watches(&convoyv1alpha1.ManualPromotion{}, handler.EnqueueRequestsFromMapFunc(requestForApproval)).
		Watches(&convoyv1alpha1.PromotionApproval{}, handler.EnqueueRequestsFromMapFunc(requestForApproval)).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Named("hostedclusterpackage").
		Complete(r)
}

// packageEventBatching is the least time between two passes of a HostedClusterPackage that
// Package events start, for each batchingFleet HostedClusters or Packages the last pass planned.
//
// Note: during a rollout at a thousand clusters, Packages change status many times a second;
// a pass per event would re-plan the whole fleet and patch the status each time. The first
// event after a quiet spell starts a pass at once; a rollout wave waits at most this long.
// A pass reads and plans the whole fleet, so the time between passes grows with it: at a fixed
// spacing a larger fleet, whose rollout lasts longer, would also pass more often, and its
// passes would cost the square of its size.
const packageEventBatching = 250 * time.Millisecond

// progressEventBatching replaces packageEventBatching after a pass whose plan said that only
// the Packages' progress remains (rollout.Plan.OnlyProgressRemains): every target is pinned, so
// a Package event can only change the status, fail a Package (a rollback then starts up to
// this much later) or complete the rollout.
const progressEventBatching = time.Second

// batchingFleet is the fleet for which the batching is packageEventBatching or
// progressEventBatching; a smaller fleet waits as long, a larger one longer, up to
// maxPackageEventBatching and maxProgressEventBatching.
const batchingFleet = 1000

// maxPackageEventBatching and maxProgressEventBatching bound the batching of the largest
// fleets: a freed budget slot waits at most 2 s for the pass that refills it, a failed Package
// at most 10 s for its rollback.
const (
	maxPackageEventBatching  = 2 * time.Second
	maxProgressEventBatching = 10 * time.Second
)

// passMark is what the batching of Package events knows of a HostedClusterPackage's last pass:
// when it started, whether its plan left only the Packages' progress to wait for, and how
// large a fleet it planned (the larger of its HostedClusters and its Packages). A pass under
// way carries the plan of the pass before it until it has its own.
type passMark struct {
	started      time.Time
	onlyProgress bool
	fleet        int
}

// batching is the least time between the pass marked and the next that a Package event starts.
func (m passMark) batching() time.Duration {
	least, most := packageEventBatching, maxPackageEventBatching
	if m.onlyProgress {
		least, most = progressEventBatching, maxProgressEventBatching
	}
	return min(max(least, least*time.Duration(m.fleet)/batchingFleet), most)
}

// batched makes h enqueue its requests no sooner than delay says.
func batched(h handler.EventHandler, delay func(reconcile.Request) time.Duration) handler.EventHandler {
	wrap := func(q queue) queue { return delayedQueue{queue: q, delay: delay} }
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { h.Create(ctx, e, wrap(q)) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) { h.Update(ctx, e, wrap(q)) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { h.Delete(ctx, e, wrap(q)) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) {
			h.Generic(ctx, e, wrap(q))
		},
	}
}

// queue is the work queue of the controller.
type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// delayedQueue turns the adds of an event handler into adds after delay.
type delayedQueue struct {
	queue
	delay func(reconcile.Request) time.Duration
}

func (q delayedQueue) Add(req reconcile.Request) {
	if d := q.delay(req); d > 0 {
		q.AddAfter(req, d)
		return
	}
	q.queue.Add(req)
}

// packageEventDelay is how long a Package event waits before it starts a pass of req: until
// the last pass's batching has passed since it started.
func (r *HostedClusterPackageReconciler) packageEventDelay(req reconcile.Request) time.Duration {
	last, ok := r.passes.Load(req.Name)
	if !ok {
		return 0
	}
	mark := last.(passMark)
	return time.Until(mark.started.Add(mark.batching()))
}

// indexOwner returns the HostedClusterPackage controlling a Package.
func indexOwner(o client.Object) []string {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != "HostedClusterPackage" || ref.APIVersion != convoyv1alpha1.GroupVersion.String() {
		return nil
	}
	return []string{ref.Name}
}

// indexForeignName returns the name of a Package unless a HostedClusterPackage of that name
// controls it.
func indexForeignName(o client.Object) []string {
	if owner := indexOwner(o); len(owner) == 1 && owner[0] == o.GetName() {
		return nil
	}
	return []string{o.GetName()}
}

// requestForForeignName maps a Package no HostedClusterPackage of its name controls to the
// HostedClusterPackage of that name, which reports it as a conflict; most such requests find
// no HostedClusterPackage and end at once.
func requestForForeignName(_ context.Context, o client.Object) []reconcile.Request {
	if indexForeignName(o) == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
}

// approvalKinds are the kinds by which people let a rollout through: PartitionApproval and
// ManualPromotion, and the legacy RolloutApproval and PromotionApproval.
func approvalKinds() []client.Object {
	return []client.Object{&convoyv1alpha1.PartitionApproval{}, &convoyv1alpha1.RolloutApproval{},
		&convoyv1alpha1.ManualPromotion{}, &convoyv1alpha1.PromotionApproval{}}
}

// indexApproval returns the HostedClusterPackage an approval or a manual promotion names.
func indexApproval(o client.Object) []string {
	var name string
	switch a := o.(type) {
	case *convoyv1alpha1.PartitionApproval:
		name = a.Spec.HostedClusterPackage
	case *convoyv1alpha1.RolloutApproval:
		name = a.Spec.HostedClusterPackage
	case *convoyv1alpha1.ManualPromotion:
		name = a.Spec.HostedClusterPackage
	case *convoyv1alpha1.PromotionApproval:
		name = a.Spec.HostedClusterPackage
	}
	if name == "" {
		return nil
	}
	return []string{name}
}

// requestForApproval maps an approval or a manual promotion to the HostedClusterPackage it names.
func requestForApproval(_ context.Context, o client.Object) []reconcile.Request {
	names := indexApproval(o)
	if len(names) == 0 {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: names[0]}}}
}

// indexTemplateSource returns "<namespace>/<name>" of the template's GitSource.
func indexTemplateSource(o client.Object) []string {
	h, ok := o.(*convoyv1alpha1.HostedClusterPackage)
	if !ok {
		return nil
	}
	ref := h.Spec.Template.Spec.SourceRef
	return []string{sources.KeyFor(ref.Namespace, ref.Name).String()}
}

// hostedClusterHandler enqueues the HostedClusterPackages whose selector matches a
// HostedCluster's labels, before or after an update.
func (r *HostedClusterPackageReconciler) hostedClusterHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, q queue, objs ...client.Object) {
		for _, req := range r.requestsForLabels(ctx, objs...) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { enqueue(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) { enqueue(ctx, q, e.ObjectOld, e.ObjectNew) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { enqueue(ctx, q, e.Object) },
	}
}

// requestsForLabels returns the HostedClusterPackages whose selector matches the labels of any
// of objs.
func (r *HostedClusterPackageReconciler) requestsForLabels(ctx context.Context, objs ...client.Object) []reconcile.Request {
	list := &convoyv1alpha1.HostedClusterPackageList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing HostedClusterPackages")
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if selectsAny(list.Items[i].Spec.HostedClusterSelector, objs) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// selectsAny reports whether selector matches the labels of any of objs; an invalid selector
// matches nothing (the HostedClusterPackage is stalled until its spec changes).
func selectsAny(selector *metav1.LabelSelector, objs []client.Object) bool {
	sel := labels.Everything()
	if selector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(selector); err != nil {
			return false
		}
	}
	for _, o := range objs {
		if sel.Matches(labels.Set(o.GetLabels())) {
			return true
		}
	}
	return false
}

// hostedClusterChanged passes HostedCluster creations, deletions, and updates of what the
// planner reads: labels, the Available condition and the deletion timestamp.
func hostedClusterChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return !equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
				(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) ||
				availability(o) != availability(n)
		},
	}
}

// availability returns the status and message of a HostedCluster's Available condition.
func availability(o client.Object) string {
	hc, ok := o.(*hyperv1.HostedCluster)
	if !ok {
		return ""
	}
	c := apimeta.FindStatusCondition(hc.Status.Conditions, string(hyperv1.HostedClusterAvailable))
	if c == nil {
		return ""
	}
	return string(c.Status) + "\x00" + c.Message
}

// packageChanged passes Package creations, deletions, and updates of what the planner reads:
// generation, deletion, annotations, the convoy.dev/shard label (a shard set by hand is moved
// back at once, not at the next pass something else starts), status.revision and conditions.
// The request for a pass
// (convoy.dev/requestedAt) is the Package controller's business: the planner hears of the
// pass's outcome, if anything changed, from the status.
func packageChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*convoyv1alpha1.Package)
			n, ok2 := e.ObjectNew.(*convoyv1alpha1.Package)
			if !ok1 || !ok2 {
				return true
			}
			return o.Generation != n.Generation ||
				(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
				o.Labels[convoyv1alpha1.ShardLabel] != n.Labels[convoyv1alpha1.ShardLabel] ||
				o.Status.Revision != n.Status.Revision ||
				!equality.Semantic.DeepEqual(o.Status.Conditions, n.Status.Conditions) ||
				!annotationsEqualButRequest(o.Annotations, n.Annotations)
		},
	}
}

// annotationsEqualButRequest reports whether a and b are equal but for the request for a pass.
// It runs on every Package update, so it compares in place instead of copying.
func annotationsEqualButRequest(a, b map[string]string) bool {
	return containsButRequest(a, b) && containsButRequest(b, a)
}

// containsButRequest reports whether every annotation of a but the request for a pass is in b
// with the same value.
func containsButRequest(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; k != convoyv1alpha1.RequestedAtAnnotation && (!ok || w != v) {
			return false
		}
	}
	return true
}
