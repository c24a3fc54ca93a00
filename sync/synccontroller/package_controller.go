package synccontroller

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/sources/helmrepo"
	"github.com/convoy-gitops/convoy/sync/engine"
	"github.com/convoy-gitops/convoy/sync/hosted"
)

// commitNotFoundInterval is how long a Package waits for a commit its GitSource does not have,
// when the store does not say when it looks again.
const commitNotFoundInterval = time.Minute

// Opener opens the tree of a commit of a GitSource; *sources.Store is one.
type Opener interface {
	Open(ctx context.Context, key sources.Key, commit string) (fs.FS, error)
}

// The Package controller reads its sources, Secrets (metadata, and kubeconfigs), namespaces
// and HyperShift objects; it applies objects of any kind to the namespaces of Packages.
//
// +kubebuilder:rbac:groups=convoy.dev,resources=packages,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=convoy.dev,resources=packages/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=convoy.dev,resources=packages/finalizers,verbs=update
// +kubebuilder:rbac:groups=convoy.dev,resources=gitsources,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets;namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=hypershift.openshift.io,resources=hostedclusters;hostedcontrolplanes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// Management phases hold only namespaced objects. These are the kinds add-ons commonly put in
// an HCP namespace; a Role a package applies may only grant what convoy holds (the API server
// refuses escalation). For other kinds, bind an extra ClusterRole to convoy's ServiceAccount.
//
// +kubebuilder:rbac:groups="",resources=configmaps;secrets;serviceaccounts;services;endpoints;persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies;ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors;podmonitors;prometheusrules,verbs=get;list;watch;create;update;patch;delete

// PackageReconciler applies a package directory of a GitSource, at spec.revision or at the
// source's current artifact, to its namespace and hosted cluster.
type PackageReconciler struct {
	Common
	// Store opens the commits of GitSources.
	Store Opener
	// Renders memoizes renders; nil makes a cache of the default size.
	Renders *manifests.Cache
	// Environment is the management cluster's environment packages are rendered for
	// (.environment); nil renders with an empty one.
	Environment *ClusterEnvironment
	// HostedEnvironments are the environments of hosted clusters, which packages installed in
	// a hosted cluster (the Cluster scope) are rendered for; nil renders them with an empty one.
	HostedEnvironments *HostedEnvironments
	// Charts fetches the Helm charts packages pull from chart repositories, under the
	// timeout of the Package's GitSource; nil refuses such packages.
	Charts *helmrepo.Fetcher

	// scopes remembers the scope each package directory defaults to.
	scopes scopeMemo
}

// PackageReconcilerOptions tune the Package controller.
type PackageReconcilerOptions struct {
	// MaxConcurrentReconciles is the number of Packages reconciled in parallel.
	MaxConcurrentReconciles int
	// RecorderName names the event source; default "convoy-package".
	RecorderName string
}

// Reconcile tears down a deleted Package, or runs the steps finalizer → paused → source
// access → source → hosted cluster → render → target → apply; the deferred status finalizer summarizes the
// conditions and patches the status if it changed.
func (r *PackageReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	ctx, done := r.inFlight.start(ctx, req.NamespacedName)
	defer done()
	obj := &convoyv1alpha1.Package{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.inShard(obj) {
		return ctrl.Result{}, r.releaseStranded(ctx, obj) // another replica's (convoy.dev/shard)
	}
	s := &scope{obj: obj, status: &obj.Status, paused: obj.Spec.Paused, serviceAccount: obj.Spec.ServiceAccountName}
	if obj.Spec.Adopt != nil {
		s.adoptFrom = obj.Spec.Adopt.From
	}
	if obj.Spec.HostedCluster != nil {
		s.kubeconfigRef = obj.Spec.HostedCluster.KubeconfigSecretRef
	}
	fin := pass.NewStatusFinalizer(r.Client, obj, statusFields(&obj.Status), r.statusOptions())
	defer func() {
		if leftShard(ctx) {
			res, retErr = r.afterMove(req.NamespacedName, &convoyv1alpha1.Package{}), nil
			return
		}
		res, retErr = fin.Finalize(ctx, withoutRolloutNote(obj, s.summary(retErr, r.requeueInterval(s, obj.GetInterval()), s.desired())))
	}()
	if !obj.DeletionTimestamp.IsZero() {
		s.done = true
		return ctrl.Result{}, r.reconcileDelete(ctx, s)
	}
	return ctrl.Result{}, pass.RunSteps(ctx, s, r.ensureFinalizer, r.reconcilePaused, r.reconcileSourceAccess, r.reconcileSource,
		r.reconcileHostedCluster, r.reconcileRender, r.reconcileTarget, r.reconcilePackageApply)
}

// The access check reads the HostedClusterPackage that owns a Package.
//
// +kubebuilder:rbac:groups=convoy.dev,resources=hostedclusterpackages,verbs=get;list;watch

// reconcileSourceAccess stalls a Package that names a GitSource of another namespace without
// the right to: the GitSource's spec.accessFrom must select the Package's namespace, or the
// Package must be owned by a HostedClusterPackage that ships this very source. Packages of
// the GitSource's own namespace always may use it.
func (r *PackageReconciler) reconcileSourceAccess(ctx context.Context, s *scope) error {
	obj := s.obj.(*convoyv1alpha1.Package)
	ns, name := obj.SourceKey()
	if ns == obj.Namespace {
		return nil
	}
	if ok, err := r.ownedByRollout(ctx, obj); ok || err != nil {
		return err
	}
	gs := &convoyv1alpha1.GitSource{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, gs); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // reconcileSource or the render says the source is missing
		}
		return err
	}
	allowed, err := r.namespaceAllowed(ctx, gs.Spec.AccessFrom, obj.Namespace)
	if err != nil || allowed {
		return err
	}
	return pass.Stallf(convoyv1alpha1.CrossNamespaceRefRefusedReason,
		"GitSource %s/%s does not allow Packages of namespace %s: its spec.accessFrom.namespaceSelectors must select the namespace",
		ns, name, obj.Namespace)
}

// ownedByRollout reports a Package controlled by an existing HostedClusterPackage of the
// same name and UID (the rollout names its Packages after itself). Note: the owner is looked
// up, not trusted: forging the reference takes the UID of a cluster-scoped object, which only
// those who may read HostedClusterPackages know. The template's source is not compared, so
// that Packages still pinned to a revision of an earlier template keep working.
func (r *PackageReconciler) ownedByRollout(ctx context.Context, obj *convoyv1alpha1.Package) (bool, error) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "HostedClusterPackage" || ref.APIVersion != convoyv1alpha1.GroupVersion.String() ||
		ref.Name != obj.Name {
		return false, nil
	}
	owner := &metav1.PartialObjectMetadata{}
	owner.SetGroupVersionKind(convoyv1alpha1.GroupVersion.WithKind("HostedClusterPackage"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, owner); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return owner.UID == ref.UID, nil
}

// namespaceAllowed reports whether access selects the namespace.
func (r *PackageReconciler) namespaceAllowed(ctx context.Context, access *convoyv1alpha1.AccessFrom, namespace string) (bool, error) {
	if access == nil {
		return false, nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(namespaceGVK)
	if err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return false, err
	}
	for i := range access.NamespaceSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&access.NamespaceSelectors[i])
		if err != nil {
			return false, pass.Stallf(convoyv1alpha1.InvalidSpecReason, "spec.accessFrom.namespaceSelectors[%d] of the GitSource: %w", i, err)
		}
		if sel.Matches(labels.Set(ns.Labels)) {
			return true, nil
		}
	}
	return false, nil
}

// reconcileSource sets s.desiredID: spec.revision, else the commit of the GitSource's
// artifact. A source without an artifact makes the pass wait (the GitSource watch requeues).
func (r *PackageReconciler) reconcileSource(ctx context.Context, s *scope) error {
	obj := s.obj.(*convoyv1alpha1.Package)
	if obj.Spec.Revision != "" {
		s.desiredID = obj.Spec.Revision
		return nil
	}
	artifact, err := sources.GetArtifact(ctx, r.Client, sourceKey(obj))
	if err != nil {
		return err
	}
	s.desiredID = artifact.Commit
	return nil
}

// sourceKey names the GitSource of a Package.
func sourceKey(obj *convoyv1alpha1.Package) sources.Key {
	ns, name := obj.SourceKey()
	return sources.KeyFor(ns, name)
}

// reconcileRender loads the package directory at s.desiredID through the render cache into
// s.revision, for the environment of the cluster the package is installed in (for a chart
// package, with the API versions of the cluster each of its phases lands in: chartCapabilities),
// and checks the package's constraints against it. Invalid content stalls; a commit the source does not have
// makes the pass wait.
func (r *PackageReconciler) reconcileRender(ctx context.Context, s *scope) error {
	obj := s.obj.(*convoyv1alpha1.Package)
	data, err := templateData(obj, s)
	if err != nil {
		return err
	}
	where, err := r.installPlacement(ctx, s)
	if err != nil {
		return err
	}
	data.Scope = where.scope
	if data.Environment, err = r.renderEnvironment(ctx, s, where.inHosted()); err != nil {
		return err
	}
	s.chart = where.chart
	if err := r.chartCapabilities(ctx, s, where, &data); err != nil {
		return err
	}
	rendered, err := r.render(ctx, s, data)
	if err != nil {
		s.status.LastAttemptedRevision = s.desiredID
		return packageRenderError(err)
	}
	s.status.Warnings = statusWarnings(rendered.Warnings)
	if err := checkConstraints(rendered, data.Environment); err != nil {
		s.status.LastAttemptedRevision = s.desiredID
		return err
	}
	s.revision = revisionOf(s.desiredID, rendered)
	s.conditionMaps = conditionMapsOf(rendered)
	return nil
}

// render loads the package for data through the render cache.
func (r *PackageReconciler) render(ctx context.Context, s *scope, data manifests.TemplateData) (*manifests.Rendered, error) {
	obj := s.obj.(*convoyv1alpha1.Package)
	key := sourceKey(obj)
	// The render cache runs one load for every pass waiting on the same key: it must not end
	// with this pass when this pass is cancelled (its Package moved to another shard). The store
	// bounds an on-demand fetch by its own timeout.
	shared := context.WithoutCancel(ctx)
	data.Charts = r.chartFetcher(shared, obj)
	return r.Renders.Load(manifests.Key{Source: key.String(), Commit: s.desiredID, Dir: obj.Spec.Path}, data,
		func() (fs.FS, error) { return r.open(shared, key, s.desiredID) })
}

// chartFetcher returns the fetcher of pulled charts for obj, or nil when the reconciler has
// none. It fetches under the timeout of the Package's GitSource, read (from the cache) only
// when a chart is fetched: the passes of packages without one read nothing more.
func (r *PackageReconciler) chartFetcher(ctx context.Context, obj *convoyv1alpha1.Package) manifests.ChartFetcher {
	if r.Charts == nil {
		return nil
	}
	ns, name := obj.SourceKey()
	return sourceTimedCharts{ctx: ctx, r: r, source: client.ObjectKey{Namespace: ns, Name: name}}
}

// sourceTimedCharts fetches pulled charts under the timeout of a GitSource (its default when
// the GitSource cannot be read).
type sourceTimedCharts struct {
	ctx    context.Context
	r      *PackageReconciler
	source client.ObjectKey
}

// FetchChart fetches ref under the GitSource's timeout.
func (c sourceTimedCharts) FetchChart(ref manifests.ChartRef) ([]byte, error) {
	var timeout time.Duration
	gs := &convoyv1alpha1.GitSource{}
	if err := c.r.Client.Get(c.ctx, c.source, gs); err == nil {
		timeout = gs.GetTimeout()
	}
	return c.r.Charts.WithTimeout(timeout).FetchChart(ref)
}

// templateData returns what the package is rendered for.
func templateData(obj *convoyv1alpha1.Package, s *scope) (manifests.TemplateData, error) {
	return PackageTemplateData(obj, s.hostedCluster, s.desiredID)
}

// PackageTemplateData returns what a Package is rendered for at commit, in the namespace of
// the HostedCluster hc (nil for none): what the controller renders, and what `convoy diff
// --package` renders to preview it. A spec.config that is no JSON object stalls. Templates do
// not see the convoy.dev/shard label: which replica reconciles a Package must not change what
// it applies, or a shard move would change every moved cluster at once, outside the rollout.
func PackageTemplateData(obj *convoyv1alpha1.Package, hc *hosted.Cluster, commit string) (manifests.TemplateData, error) {
	labels := obj.Labels
	if _, ok := labels[convoyv1alpha1.ShardLabel]; ok {
		labels = maps.Clone(labels)
		delete(labels, convoyv1alpha1.ShardLabel)
	}
	data := manifests.TemplateData{
		Package: manifests.PackageRef{Name: obj.Name, Namespace: obj.Namespace,
			Labels: labels, Annotations: obj.Annotations},
		Revision:  commit,
		Component: obj.Spec.Component,
		Scope:     obj.Spec.Scope,
	}
	if obj.Spec.Config != nil && len(obj.Spec.Config.Raw) > 0 {
		if err := json.Unmarshal(obj.Spec.Config.Raw, &data.Config); err != nil {
			return data, pass.Stallf(convoyv1alpha1.InvalidSpecReason, "spec.config is not a JSON object: %w", err)
		}
	}
	if hc != nil {
		data.HostedCluster = &manifests.HostedClusterRef{Name: hc.Name, Namespace: hc.Namespace,
			Labels: hc.Labels, Annotations: hc.Annotations}
	}
	return data, nil
}

// open opens commit of the GitSource key and classifies the error: a commit that neither the
// store nor the remote has makes the pass wait until the store looks again; a failed or timed
// out fetch is a Git error, retried with backoff.
func (r *PackageReconciler) open(ctx context.Context, key sources.Key, commit string) (fs.FS, error) {
	fsys, err := r.Store.Open(ctx, key, commit)
	if err == nil {
		return fsys, nil
	}
	var nf *sources.CommitNotFoundError
	if errors.As(err, &nf) {
		after := commitNotFoundInterval
		if !nf.RetryAt.IsZero() {
			after = max(time.Until(nf.RetryAt), time.Second)
		}
		return nil, pass.Waitf(convoyv1alpha1.CommitNotFoundReason, after, "%w", err)
	}
	return nil, sources.ClassifyGitError("fetching commit "+commit+" of GitSource "+key.String(), err)
}

// PackageRevision turns the render of commit into the revision the engine applies.
func PackageRevision(commit string, r *manifests.Rendered) *engine.Revision {
	return revisionOf(commit, r)
}

// withoutRolloutNote drops the Normal event that records each revision a Package applied when
// the Package belongs to a HostedClusterPackage: its HostedClusterPackage records the rollout
// once per partition (started, completed) instead of once per Package, which at 10,000
// Packages is 10,000 events per commit. Warnings, and the event of a Package that recovers,
// are kept: they are about one Package.
func withoutRolloutNote(obj *convoyv1alpha1.Package, sum pass.Summary) pass.Summary {
	if _, ok := obj.Labels[convoyv1alpha1.HostedClusterPackageLabel]; ok {
		sum.Event = ""
	}
	return sum
}
