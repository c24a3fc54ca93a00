package rolloutcontroller

import (
	"context"
	"fmt"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/commitstatus"
)

// DefaultCRDPollInterval is how often a manager started without HyperShift checks whether the
// HostedCluster CRD appeared.
const DefaultCRDPollInterval = 30 * time.Second

// SetupOptions configure the HostedClusterPackage controller.
type SetupOptions struct {
	// Concurrency is the number of HostedClusterPackages reconciled in parallel; default 1.
	Concurrency int
	// ApplyConcurrency bounds the Packages one pass applies in parallel.
	ApplyConcurrency int
	// CRDPollInterval: see DefaultCRDPollInterval.
	CRDPollInterval time.Duration
	// Sharding spreads the Packages over shard replicas (--shards, --rebalance-shards).
	Sharding Sharding
	// Trees compares package directories across commits (the GitSource store); nil rolls out
	// every new commit of the source.
	Trees TreeHasher
	// CommitStatus sets commit statuses on the forges of GitSources with spec.commitStatus;
	// Setup fills in its Secrets reader and Recorder and runs it on the leader. Nil reports
	// nothing.
	CommitStatus *commitstatus.Reporter
	// Identity names this management cluster and its sector (spec.promotion).
	Identity Identity
	// Bus reads what the sectors published (the GitSource store); nil holds every
	// HostedClusterPackage with upstream sectors.
	Bus PromotionBus
	// Publisher publishes this management cluster's rollouts; Setup runs it on the leader.
	// Nil publishes nothing.
	Publisher *Publisher
	// Checks say how the checks' requests travel (--check-allow-insecure-http,
	// --allow-link-local-addresses).
	Checks CheckOptions
}

// ConfigureCache restricts the manager's cache of ControllerRevisions to the rollout's own, so
// that the revisions of every DaemonSet and StatefulSet are not held in memory, and keeps of
// each HostedCluster only what the planner reads. Call it on the cache options before creating
// the manager.
func ConfigureCache(o *cache.Options) {
	req, err := labels.NewRequirement(convoyv1alpha1.HostedClusterPackageLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant label key
	}
	if o.ByObject == nil {
		o.ByObject = map[client.Object]cache.ByObject{}
	}
	o.ByObject[&appsv1.ControllerRevision{}] = cache.ByObject{Label: labels.NewSelector().Add(*req)}
	// A transform of all objects, not of HostedClusters by object: that would need the
	// HostedCluster CRD installed before the cache is made.
	next := o.DefaultTransform
	o.DefaultTransform = func(obj any) (any, error) {
		trimHostedCluster(obj)
		if next == nil {
			return obj, nil
		}
		return next(obj)
	}
}

// trimHostedCluster keeps of a typed HostedCluster its metadata and its conditions: the planner
// reads labels, deletion and the Available condition. A HostedCluster's spec and status are
// large (platform, networking, versions) and a fleet has a thousand. Other objects are left
// alone.
func trimHostedCluster(obj any) {
	if hc, ok := obj.(*hyperv1.HostedCluster); ok {
		hc.Spec = hyperv1.HostedClusterSpec{}
		hc.Status = hyperv1.HostedClusterStatus{Conditions: hc.Status.Conditions}
	}
}

// Setup registers the HostedClusterPackage controller on mgr, whose scheme must know
// HyperShift's HostedCluster. When the HostedCluster CRD is not installed, the controller
// starts without a restart as soon as it is: a runnable (leader only) polls the API server's
// discovery every CRDPollInterval.
func Setup(mgr ctrl.Manager, o SetupOptions) error {
	if !mgr.GetScheme().Recognizes(hyperv1.GroupVersion.WithKind("HostedCluster")) {
		return fmt.Errorf("the manager's scheme does not know %s HostedCluster", hyperv1.GroupVersion)
	}
	if err := o.Sharding.Validate(); err != nil {
		return err
	}
	if err := o.Identity.Validate(); err != nil {
		return err
	}
	if err := SetupIndexes(context.Background(), mgr); err != nil {
		return err
	}
	r := &HostedClusterPackageReconciler{Client: mgr.GetClient(), Informers: mgr.GetCache(), ApplyConcurrency: o.ApplyConcurrency,
		Recorder: mgr.GetEventRecorder("convoy-rollout"), Sharding: o.Sharding, Trees: o.Trees,
		Secrets: mgr.GetAPIReader(), CommitStatus: o.CommitStatus, Identity: o.Identity, Bus: o.Bus, Publisher: o.Publisher,
		Checks: o.Checks}
	if o.Publisher != nil && o.Identity != (Identity{}) {
		o.Publisher.Recorder = r.Recorder
		if err := mgr.Add(o.Publisher); err != nil {
			return err
		}
	}
	if o.CommitStatus != nil {
		o.CommitStatus.Secrets = mgr.GetAPIReader()
		o.CommitStatus.Recorder = mgr.GetEventRecorder("convoy-commit-status")
		if err := mgr.Add(o.CommitStatus); err != nil {
			return err
		}
		if err := watchTokenSecrets(mgr, o.CommitStatus); err != nil {
			return err
		}
	}
	opts := HostedClusterPackageReconcilerOptions{MaxConcurrentReconciles: max(o.Concurrency, 1)}
	if hostedClustersServed(mgr) {
		return r.SetupWithManager(mgr, opts)
	}
	interval := o.CRDPollInterval
	if interval <= 0 {
		interval = DefaultCRDPollInterval
	}
	ctrl.Log.WithName("rollout").Info("HostedCluster CRD not installed; the HostedClusterPackage controller starts when it is")
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return startWhenServed(ctx, mgr, interval, func() error { return r.SetupWithManager(mgr, opts) })
	}))
}

// startWhenServed calls start once HostedClusters are served, then returns; it returns nil
// when ctx ends first.
func startWhenServed(ctx context.Context, mgr ctrl.Manager, interval time.Duration, start func() error) error {
	err := wait.PollUntilContextCancel(ctx, interval, false, func(context.Context) (bool, error) {
		return hostedClustersServed(mgr), nil
	})
	if err != nil {
		return nil // the manager is stopping
	}
	ctrl.Log.WithName("rollout").Info("HostedCluster CRD installed; starting the HostedClusterPackage controller")
	return start()
}

// hostedClustersServed reports whether the API server serves HostedClusters. The manager's
// REST mapper rediscovers a group it does not know, so the check sees a CRD installed later.
func hostedClustersServed(mgr ctrl.Manager) bool {
	gvk := hyperv1.GroupVersion.WithKind("HostedCluster")
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}
