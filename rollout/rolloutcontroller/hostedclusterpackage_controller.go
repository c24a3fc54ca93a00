package rolloutcontroller

import (
	"context"
	"fmt"
	"sync"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/commitstatus"
	"github.com/convoy-gitops/convoy/sources"
)

// FieldOwner is the server-side apply field manager of the Packages and ControllerRevisions the
// rollout writes. It must never change: fields recorded under it would be orphaned.
const FieldOwner = "convoy-rollout"

// DefaultApplyConcurrency bounds the Packages applied in parallel by one pass.
const DefaultApplyConcurrency = 8

// DefaultResyncInterval is how often a HostedClusterPackage is looked at when nothing happens
// and nothing waits on the clock.
const DefaultResyncInterval = 10 * time.Minute

// cacheLagRecheck is when a pass that found the cache behind its own writes looks again, should
// no Package event come first.
const cacheLagRecheck = time.Second

// The HostedClusterPackage controller reads HostedClusters, GitSources, approvals and its
// revisions, and writes Packages, ControllerRevisions, its status and events. Sharding, it reads
// the shards ConfigMap and the shard replicas' leases. Its checks read the Secrets their
// secretRef names, in any namespace, one GET at a time (never listed nor cached).
//
// +kubebuilder:rbac:groups=convoy.dev,resources=hostedclusterpackages,verbs=get;list;watch
// +kubebuilder:rbac:groups=convoy.dev,resources=hostedclusterpackages/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=convoy.dev,resources=hostedclusterpackages/finalizers,verbs=update
// +kubebuilder:rbac:groups=convoy.dev,resources=packages,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=convoy.dev,resources=gitsources,verbs=get;list;watch
// +kubebuilder:rbac:groups=convoy.dev,resources=partitionapprovals;rolloutapprovals,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=convoy.dev,resources=manualpromotions;promotionapprovals,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=hypershift.openshift.io,resources=hostedclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// HostedClusterPackageReconciler rolls the revisions of a HostedClusterPackage out to the
// Packages of its HostedClusters, as planned by rollout.Compute.
type HostedClusterPackageReconciler struct {
	// Client reads HostedClusterPackages, HostedClusters, Packages, GitSources and
	// ControllerRevisions from the manager's cache, and writes.
	Client client.Client
	// Informers, when set, is the cache behind Client: a pass reads the HostedClusters from
	// its informer's store, without the copy of every one that a List makes. Nil lists them
	// through Client.
	Informers cache.Informers
	// Recorder emits events; nil emits none.
	Recorder events.EventRecorder
	// ApplyConcurrency bounds the Packages applied in parallel; default DefaultApplyConcurrency.
	ApplyConcurrency int
	// ResyncInterval is the requeue delay when nothing waits on the clock; default
	// DefaultResyncInterval.
	ResyncInterval time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Sharding stamps convoy.dev/shard on the Packages applied, from its list or its
	// ConfigMap, and checks the leases of the shard replicas; zero stamps nothing.
	Sharding Sharding
	// Trees compares package directories across commits, so that a commit that leaves a
	// package's directory unchanged does not roll it out; nil rolls out every new commit.
	Trees TreeHasher
	// Secrets reads the Secrets the checks' secretRef names; default Client. Setup gives the
	// manager's API reader, so that Secrets are neither listed nor cached.
	Secrets client.Reader
	// CheckConcurrency bounds the checks of one HostedClusterPackage evaluated in parallel;
	// default DefaultCheckConcurrency.
	CheckConcurrency int
	// Checks say how the checks' requests travel: credentials over https:// only, no
	// link-local or metadata address, unless allowed.
	Checks CheckOptions
	// CommitStatus reports each pass's outcome on the commit rolled out, when the GitSource
	// has spec.commitStatus; nil reports nothing.
	CommitStatus *commitstatus.Reporter
	// Identity names this management cluster and its sector, for spec.promotion.
	Identity Identity
	// Bus reads what the sectors published (the GitSource store); nil holds every
	// HostedClusterPackage with upstream sectors.
	Bus PromotionBus
	// Publisher publishes this management cluster's rollouts for the sectors after it; nil
	// publishes nothing.
	Publisher *Publisher

	// compiled holds the compiled checks of each HostedClusterPackage's generation
	// (*compiledChecks by name).
	compiled sync.Map
	// runs holds the checks' evaluations under way, and those finished and not yet recorded.
	runs checkRuns
	// sameDirs remembers the answers of sameDir, which never change for two commits.
	sameDirs sameDirCache
	// shards is the sharding in force when it comes from Sharding.ConfigMap.
	shards  shardList
	expect  *expectations
	metrics *rolloutMetrics
	// memos holds the planner's Memo of each HostedClusterPackage (*rollout.Memo by name).
	memos sync.Map
	// passes holds when the last pass of each HostedClusterPackage started and what it planned
	// (passMark by name), for the batching of Package events.
	passes sync.Map
	// conflicts holds the HostedClusters a foreign Package blocks, by HostedClusterPackage name
	// (map[string]bool), so that each conflict is announced once.
	conflicts sync.Map
	// failures holds the failed Packages each HostedClusterPackage last saw, by its name
	// (map[string]bool of "<namespace>/<name>@<commit>"), so that each failure is logged once.
	failures sync.Map
	// rejected holds the ControllerRevisions this process rejected until the cache shows it.
	rejected rejections
	// announced holds the partitions' states each HostedClusterPackage's last pass wrote, by
	// its name (partitionNotes), so that a pass that starts from a cached status behind that
	// write announces no partition again.
	announced sync.Map
	// promoted holds what each HostedClusterPackage's last pass wrote of its promotion, by its
	// name (promotionNote), for the same reason.
	promoted sync.Map
	// ancestry remembers which commits contain which, for the minimums of spec.dependsOn.
	ancestry ancestryCache
	// heads holds the name and dependencies of the manifest at each commit, path and component
	// (manifests.ManifestHead), which never change.
	heads headCache
}

// scope is what one pass reads and computes; each step documents what it fills in.
type scope struct {
	obj *convoyv1alpha1.HostedClusterPackage
	// before is the status at the start of the pass, for events and metrics.
	before *convoyv1alpha1.HostedClusterPackageStatus
	now    time.Time
	// started is when the pass started, by the machine's clock (passMark).
	started time.Time
	// sharding, shardProblem: set by reconcileShards; shardProblem says why the shards
	// ConfigMap's data was refused.
	sharding     Sharding
	shardProblem string
	// orphanedShards are the shards holding some of the Packages whose replica holds no lease
	// (set by markShardsReady; empty when leases are not checked).
	orphanedShards map[string]bool
	// packages are the Packages the HostedClusterPackage owns.
	packages ownedPackages
	// update, updateData, updateLegacy (the update revision's name in the releases before): set
	// by reconcileSource.
	update       rollout.Revision
	updateData   []byte
	updateLegacy string
	// promotion, promotionGate, promotionWake: set by reconcileSource under spec.promotion
	// (reconcilePromotion): the status, the planner's Promotion gate, and when an upstream
	// soak ends or a held bus is looked at again.
	promotion     *convoyv1alpha1.PromotionStatus
	promotionGate rollout.PromotionGate
	promotionWake time.Time
	// keyOwner: set by noteStatusContextOwner under a sector; another HostedClusterPackage's
	// name when that one publishes under the name this one would.
	keyOwner string
	// revisions, updateObj: set by reconcileRevisions.
	revisions []storedRevision
	updateObj *appsv1.ControllerRevision
	// in: set by reconcileInput; reconcileChecks adds the results of the checks it evaluated.
	in rollout.Input
	// plan: set by reconcilePlan.
	plan *rollout.Plan
}

// Reconcile runs the steps shards → source → revisions → input → dependencies → checks → plan → reject →
// status → apply → history on a HostedClusterPackage whose cache reflects the previous pass's
// writes; the deferred status finalizer writes the summary conditions and patches only a
// change.
// A deleted HostedClusterPackage needs nothing: the garbage collector deletes its Packages,
// whose finalizers tear down, and its ControllerRevisions.
func (r *HostedClusterPackageReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	started := time.Now()
	r.markPassStarted(req.Name, started)
	obj := &convoyv1alpha1.HostedClusterPackage{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	// Measured only for a HostedClusterPackage that exists: the requests of foreign Packages
	// name whatever their authors chose, and would each leave a series behind.
	defer measurePassCPU(obj.Name)()
	listed, err := r.listPackages(ctx, obj.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	packages := ownedPackagesOf(listed)
	if !r.expect.satisfied(obj.Name, packages.byKey) {
		return ctrl.Result{RequeueAfter: cacheLagRecheck}, nil
	}
	s := &scope{obj: obj, before: obj.Status.DeepCopy(), now: r.now(), started: started, packages: packages}
	fin := pass.NewStatusFinalizer(r.Client, obj,
		pass.StatusFields{ObservedGeneration: &obj.Status.ObservedGeneration}, pass.StatusOptions{})
	defer func() {
		res, retErr = fin.Finalize(ctx, r.summarize(ctx, s, retErr))
	}()
	return ctrl.Result{}, pass.RunSteps(ctx, s, r.reconcileShards, r.reconcileSource, r.reconcileRevisions, r.reconcileInput,
		r.reconcileDependencies, r.reconcileChecks, r.reconcilePlan, r.reconcileReject, r.reconcileStatus, r.reconcileApply, r.reconcileHistory)
}

// reconcileSource resolves the update revision from the template and its GitSource's artifact
// into s.update and s.updateData (under spec.promotion with upstream sectors, from the newest
// commit they let through: reconcilePromotion); an artifact that leaves the package directory as it was keeps
// the update revision's commit (unchangedCommit). A template whose source has no namespace stalls (the
// HostedClusterPackage is cluster-scoped); a source without an artifact makes the pass wait.
func (r *HostedClusterPackageReconciler) reconcileSource(ctx context.Context, s *scope) error {
	key, err := templateSource(s.obj)
	if err != nil {
		return err
	}
	artifact, err := sources.GetArtifact(ctx, r.Client, key)
	if err != nil {
		return err
	}
	commit := artifact.Commit
	if p := s.obj.Spec.Promotion; p != nil && len(p.After) > 0 {
		if commit, err = r.reconcilePromotion(ctx, s, key, commit); err != nil {
			return err
		}
	}
	commit = r.unchangedCommit(ctx, s, key, commit)
	s.update, s.updateData, s.updateLegacy, err = newRevision(s.obj.Name, s.obj.Spec.Template.Spec, commit)
	if err != nil {
		return pass.Stallf(convoyv1alpha1.InvalidSpecReason, "spec.template.spec: %w", err)
	}
	return nil
}

// reconcileRevisions reads the ControllerRevisions into s.revisions and creates the update
// revision's next to the GitSource, or renumbers it when an older revision returns
// (s.updateObj).
func (r *HostedClusterPackageReconciler) reconcileRevisions(ctx context.Context, s *scope) error {
	var err error
	if s.revisions, err = r.listRevisions(ctx, s.obj); err != nil {
		return err
	}
	r.rejected.apply(s.revisions)
	key, _ := templateSource(s.obj)
	return r.ensureRevision(ctx, s, key.Namespace, s.updateData)
}

// reconcileInput reads the HostedClusters, the foreign Packages and the approvals into
// s.in, the planner's input.
func (r *HostedClusterPackageReconciler) reconcileInput(ctx context.Context, s *scope) error {
	hcs, err := r.listHostedClusters(ctx)
	if err != nil {
		return err
	}
	foreign, err := r.listForeignPackages(ctx, s.obj)
	if err != nil {
		return err
	}
	s.in = planInput(s, hcs, foreign)
	s.in.Memo = r.memoOf(s.obj.Name)
	s.in.ShardFor = s.shardFor
	s.in.Promotion = s.promotionGate
	s.in.Approvals, err = r.listApprovals(ctx, s.obj.Name)
	return err
}

// reconcilePlan computes s.plan from s.in. A spec the planner refuses (an invalid selector,
// budget or window) stalls with InvalidSpec.
func (r *HostedClusterPackageReconciler) reconcilePlan(_ context.Context, s *scope) error {
	var err error
	if s.plan, err = rollout.Compute(s.in); err != nil {
		return pass.Stallf(convoyv1alpha1.InvalidSpecReason, "%w", err)
	}
	r.passes.Store(s.obj.Name, passMark{started: s.started, onlyProgress: s.plan.OnlyProgressRemains,
		fleet: max(len(s.in.HostedClusters), len(s.in.Packages))})
	return nil
}

// memoOf returns the planner's Memo of the HostedClusterPackage name, which its passes share.
func (r *HostedClusterPackageReconciler) memoOf(name string) *rollout.Memo {
	m, _ := r.memos.LoadOrStore(name, &rollout.Memo{})
	return m.(*rollout.Memo)
}

// markPassStarted marks the pass of name that starts at started, with what the last pass
// planned: Package events during the pass then wait as long as they did before it. Marked as
// unplanned, every pass of a large fleet, which lasts longer than packageEventBatching, would
// let the events it sees start the next at once.
func (r *HostedClusterPackageReconciler) markPassStarted(name string, started time.Time) {
	last, _ := r.passes.Load(name)
	mark, _ := last.(passMark)
	mark.started = started
	r.passes.Store(name, mark)
}

// shardFor is the planner's ShardFor: the sharding's choice, except that with no shard in force
// a Package stays on its shard while that shard's replica holds its lease. It moves back to
// the unsharded replica once the shard has no live replica (sharding turned off, the shard
// replicas gone), since nobody else would reconcile it; not before, as a shards ConfigMap
// deleted by mistake, or a flag dropped at a restart, must not move a fleet that is served.
func (s *scope) shardFor(namespace, current string) string {
	if len(s.sharding.Shards) == 0 && current != "" && !s.orphanedShards[current] {
		return current
	}
	return s.sharding.shardFor(namespace, current)
}

// planInput is what the planner reads in s, with the results of the checks in status. The
// current revision is status.currentRevision, which is the update revision itself once its
// rollout completed.
func planInput(s *scope, hcs []rollout.HostedCluster, foreign []rollout.ForeignPackage) rollout.Input {
	in := rollout.Input{HostedClusterPackage: s.obj, HostedClusters: hcs, ForeignPackages: foreign, Packages: s.packages.listed,
		UpdateRevision: s.update, Now: s.now, CheckResults: rollout.CheckResultsOf(s.obj.Status.Partitions)}
	if s.obj.Status.CurrentRevision == s.update.Name {
		in.CurrentRevision = &in.UpdateRevision
	}
	for _, sr := range s.revisions {
		switch {
		case sr.obj.Name == s.update.Name || sr.rev.Name == "":
		case sr.obj.Name == s.obj.Status.CurrentRevision:
			in.CurrentRevision = &sr.rev
		default:
			in.OlderRevisions = append(in.OlderRevisions, sr.rev)
		}
	}
	return in
}

// reconcileApply creates, updates and deletes Packages as planned.
func (r *HostedClusterPackageReconciler) reconcileApply(ctx context.Context, s *scope) error {
	if err := r.applyChanges(ctx, s); err != nil {
		return err
	}
	return r.deletePackages(ctx, s)
}

// reconcileHistory deletes the ControllerRevisions beyond revisionHistoryLimit that are
// neither the update nor the current revision nor used by a Package, and the approvals
// of the revisions it deletes: they could let nothing through any more.
func (r *HostedClusterPackageReconciler) reconcileHistory(ctx context.Context, s *scope) error {
	keep := map[string]bool{s.update.Name: true}
	if !s.plan.Completed {
		keep[s.obj.Status.CurrentRevision] = true // else the update revision becomes the current one
	}
	for _, name := range s.plan.RevisionsInUse {
		keep[name] = true
	}
	pruned := map[string]bool{}
	for _, cr := range revisionsToPrune(s.revisions, s.obj.GetRevisionHistoryLimit(), keep) {
		err := r.Client.Delete(ctx, cr, client.Preconditions{UID: &cr.UID})
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("pruning ControllerRevision %s/%s: %w", cr.Namespace, cr.Name, err)
		}
		pruned[cr.Name] = true
	}
	return r.pruneApprovals(ctx, s.in.Approvals, pruned)
}

// templateSource returns the GitSource of the template, which must name its namespace.
func templateSource(obj *convoyv1alpha1.HostedClusterPackage) (sources.Key, error) {
	ref := obj.Spec.Template.Spec.SourceRef
	if ref.Namespace == "" {
		return sources.Key{}, pass.Stallf(convoyv1alpha1.InvalidSpecReason,
			"spec.template.spec.sourceRef.namespace is required: a HostedClusterPackage has no namespace to default it to")
	}
	return sources.KeyFor(ref.Namespace, ref.Name), nil
}

// listPackages returns the Packages the HostedClusterPackage named hcpkg owns, from the cache.
func (r *HostedClusterPackageReconciler) listPackages(ctx context.Context, hcpkg string) ([]convoyv1alpha1.Package, error) {
	list := &convoyv1alpha1.PackageList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{ownerIndex: hcpkg}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Packages: %w", err)
	}
	return list.Items, nil
}

// ownedPackages are the Packages a HostedClusterPackage owns, as listed from the cache (the
// planner's input shares the list), and by namespace and name, pointing into the list (the
// apply, the shards and the expectations look them up). Both are read only: the list's
// elements share their maps and slices with the cache.
type ownedPackages struct {
	listed []convoyv1alpha1.Package
	byKey  map[types.NamespacedName]*convoyv1alpha1.Package
}

// ownedPackagesOf indexes listed.
func ownedPackagesOf(listed []convoyv1alpha1.Package) ownedPackages {
	byKey := make(map[types.NamespacedName]*convoyv1alpha1.Package, len(listed))
	for i := range listed {
		byKey[client.ObjectKeyFromObject(&listed[i])] = &listed[i]
	}
	return ownedPackages{listed: listed, byKey: byKey}
}

// listForeignPackages returns the Packages named like the HostedClusterPackage that it does
// not control, from the cache.
func (r *HostedClusterPackageReconciler) listForeignPackages(ctx context.Context, obj *convoyv1alpha1.HostedClusterPackage) ([]rollout.ForeignPackage, error) {
	list := &convoyv1alpha1.PackageList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{foreignNameIndex: obj.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Packages named %s: %w", obj.Name, err)
	}
	out := make([]rollout.ForeignPackage, 0, len(list.Items))
	for i := range list.Items {
		pkg := &list.Items[i]
		f := rollout.ForeignPackage{Namespace: pkg.Namespace, Name: pkg.Name}
		if ref := metav1.GetControllerOf(pkg); ref != nil {
			f.Owner = ref.Kind + " " + ref.Name
		}
		out = append(out, f)
	}
	return out, nil
}

// listHostedClusters returns every HostedCluster, as the planner reads them, from the cache.
func (r *HostedClusterPackageReconciler) listHostedClusters(ctx context.Context) ([]rollout.HostedCluster, error) {
	cached, err := r.cachedHostedClusters(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing HostedClusters: %w", err)
	}
	out := make([]rollout.HostedCluster, 0, len(cached))
	for _, hc := range cached {
		available := apimeta.FindStatusCondition(hc.Status.Conditions, string(hyperv1.HostedClusterAvailable))
		t := rollout.HostedCluster{Namespace: hc.Namespace, Name: hc.Name, Labels: hc.Labels,
			Deleting: hc.DeletionTimestamp != nil, AvailableMessage: "the HostedCluster has no Available condition"}
		if available != nil {
			t.Available = available.Status == "True"
			t.AvailableMessage = available.Message
		}
		out = append(out, t)
	}
	return out, nil
}

// now reads the clock.
func (r *HostedClusterPackageReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// forget drops what the controller remembers of a deleted HostedClusterPackage.
func (r *HostedClusterPackageReconciler) forget(name string) {
	r.expect.forget(name)
	r.metrics.forget(name)
	r.passes.Delete(name)
	r.memos.Delete(name)
	r.conflicts.Delete(name)
	r.failures.Delete(name)
	r.announced.Delete(name)
	r.promoted.Delete(name)
	r.compiled.Delete(name)
	r.rejected.forget(name)
	if r.CommitStatus != nil {
		r.CommitStatus.Forget(name)
	}
	r.Publisher.Forget(name)
	r.runs.forget(name)
}
