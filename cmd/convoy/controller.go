package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/eventrec"
	"github.com/convoy-gitops/convoy/internal/restmapper"
	"github.com/convoy-gitops/convoy/internal/statusmetrics"
	"github.com/convoy-gitops/convoy/rollout/rolloutcontroller"
	"github.com/convoy-gitops/convoy/sources/sourcecontroller"
	"github.com/convoy-gitops/convoy/sync/synccontroller"
)

// Leader election keeps a Lease in the controller's namespace. The metrics endpoint
// authenticates callers with TokenReviews and authorizes them with SubjectAccessReviews.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// leaderElectionID names the lease replicas of the controller compete for.
const leaderElectionID = "convoy-controller.convoy.dev"

// controllerOptions are the flags of `convoy controller`.
type controllerOptions struct {
	kubeconfig              string
	metricsAddr             string
	metricsSecure           bool
	probeAddr               string
	pprofAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaseDuration           time.Duration
	verbosity               int
	qps                     float32
	burst                   int
	eventsAddr              string
	sources                 sourcecontroller.Options
	sync                    synccontroller.SetupOptions
	rollout                 rolloutcontroller.SetupOptions
	commitStatus            commitStatusOptions
	network                 networkOptions
	promotion               promotionOptions
	shards                  shardOptions

	// skipNameValidation lets one process run the controllers more than once (convoy-dev's
	// tests), which controller-runtime otherwise refuses.
	skipNameValidation bool
}

func newControllerCmd() *cobra.Command {
	opts := controllerOptions{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the GitSource, Package, ObjectDeployment and HostedClusterPackage controllers",
		Long: "controller runs convoy's controllers in one manager, with leader election, Prometheus " +
			"metrics, health probes and the Git webhook receiver.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(opts.verbosity))))
			cfg, err := restConfig(opts.kubeconfig)
			if err != nil {
				return err
			}
			cfg.QPS, cfg.Burst = opts.qps, opts.burst
			return runController(ctx, cfg, opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "Kubeconfig of the management cluster (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	fs.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8443", "Address of the Prometheus metrics endpoint; 0 disables it.")
	fs.BoolVar(&opts.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS to callers authenticated and authorized (get on /metrics) by the API server; false serves plain, open HTTP.")
	fs.StringVar(&opts.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&opts.pprofAddr, "pprof-bind-address", "", "Address of the /debug/pprof endpoints; empty disables them.")
	fs.BoolVar(&opts.leaderElect, "leader-elect", true, "Elect a leader so that only one replica reconciles.")
	fs.StringVar(&opts.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election lease (default: the pod's namespace).")
	fs.DurationVar(&opts.leaseDuration, "leader-election-lease-duration", 15*time.Second, "How long a standby replica waits before taking over.")
	fs.IntVar(&opts.sync.Concurrency, "concurrency", 4, "Number of Packages, and of ObjectDeployments, reconciled in parallel.")
	fs.IntVar(&opts.verbosity, "v", 0, "Log verbosity.")
	fs.Float32Var(&opts.qps, "kube-api-qps", -1, "Queries per second to the management API server; negative leaves the limit to its priority and fairness.")
	fs.IntVar(&opts.burst, "kube-api-burst", 300, "Burst of requests to the management API server when --kube-api-qps is positive.")
	fs.IntVar(&opts.rollout.Concurrency, "rollout-concurrency", 2, "Number of HostedClusterPackages reconciled in parallel.")
	fs.IntVar(&opts.rollout.ApplyConcurrency, "rollout-apply-concurrency", rolloutcontroller.DefaultApplyConcurrency, "Packages one HostedClusterPackage pass applies in parallel.")
	fs.DurationVar(&opts.rollout.CRDPollInterval, "rollout-crd-poll-interval", rolloutcontroller.DefaultCRDPollInterval, "How often to check whether the HostedCluster CRD got installed, when it is not.")
	fs.StringVar(&opts.eventsAddr, "events-addr", "", "URL to POST events to in Flux's event format, e.g. a notification-controller; empty posts none.")
	opts.commitStatus.bindFlags(fs)
	opts.network.bindFlags(fs)
	opts.promotion.bindFlags(fs)
	opts.sources.BindFlags(fs)
	opts.sync.BindFlags(fs)
	opts.shards.bindFlags(fs)
	return cmd
}

// restConfig loads the management cluster's config from path, or from the usual places.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		return ctrl.GetConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// newControllerScheme returns the kinds the controllers read as typed objects. HyperShift's
// HostedCluster is registered for the rollout, which reads its Available condition; the sync
// controllers read HyperShift's kinds as metadata only.
func newControllerScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(convoyv1alpha1.AddToScheme(s))
	utilruntime.Must(hyperv1.AddToScheme(s))
	return s
}

// metricsOptions serves metrics on addr; when secure, over HTTPS (a self-signed certificate)
// and only to callers whose token the API server authenticates and who may get /metrics, as
// the kubebuilder scaffold does.
func metricsOptions(addr string, secure bool) metricsserver.Options {
	if !secure {
		return metricsserver.Options{BindAddress: addr}
	}
	return metricsserver.Options{BindAddress: addr, SecureServing: true,
		FilterProvider: filters.WithAuthenticationAndAuthorization}
}

// runController builds the manager on cfg, wires the controllers and runs until ctx is done.
// A shard replica (--shard) runs the Package and ObjectDeployment controllers only.
func runController(ctx context.Context, cfg *rest.Config, opts controllerOptions) error {
	if err := opts.shards.validate(); err != nil {
		return err
	}
	opts.shards.setLeaseNamespace(opts.leaderElect, opts.leaderElectionNamespace)
	if soft, err := applyMemoryLimit("/sys/fs/cgroup"); err != nil {
		ctrl.Log.WithName("controller").Error(err, "Leaving the Go runtime without a memory limit")
	} else if soft > 0 {
		ctrl.Log.WithName("controller").Info("Set the Go runtime's soft memory limit from the container's", "bytes", soft)
	}
	lease := opts.leaseDuration
	renew := lease * 2 / 3
	// Nothing reads the managed fields of cached objects; they are a large part of each.
	cacheOpts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	rolloutcontroller.ConfigureCache(&cacheOpts)
	synccontroller.ConfigureCompactCache(&cacheOpts)
	opts.shards.configureCache(&cacheOpts)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                   cacheOpts,
		Scheme:                  newControllerScheme(),
		MapperProvider:          memoizedMapper,
		Metrics:                 metricsOptions(opts.metricsAddr, opts.metricsSecure),
		HealthProbeBindAddress:  opts.probeAddr,
		PprofBindAddress:        opts.pprofAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        opts.shards.leaseName(),
		LeaderElectionNamespace: opts.leaderElectionNamespace,
		LeaseDuration:           &lease,
		RenewDeadline:           &renew,
		Controller:              config.Controller{SkipNameValidation: &opts.skipNameValidation},
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := registerBuildInfo(metrics.Registry); err != nil {
		return err
	}
	if mgr, err = eventrec.WrapManager(mgr); err != nil {
		return err
	}
	if mgr, err = forwardEvents(mgr, opts.eventsAddr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := statusmetrics.Setup(mgr); err != nil {
		return err
	}
	if err := setupControllers(mgr, opts); err != nil {
		return err
	}
	ctrl.Log.WithName("controller").Info("Starting the manager", "leaderElection", opts.leaderElect, "shard", opts.shards.shard)
	return mgr.Start(ctx)
}

// memoizedMapper is the manager's REST mapper: controller-runtime's dynamic mapper, its
// answers kept for a few seconds (restmapper.Memoize), as every apply of a package asks it
// again.
func memoizedMapper(cfg *rest.Config, httpClient *http.Client) (apimeta.RESTMapper, error) {
	next, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return restmapper.Memoize(next), nil
}

// setupControllers registers the controllers of the replica on mgr: on a shard replica, the
// Package and ObjectDeployment controllers with a store that fetches on demand; on the
// unsharded one, also the GitSource and HostedClusterPackage controllers.
func setupControllers(mgr ctrl.Manager, opts controllerOptions) error {
	opts.network.apply(&opts)
	opts.sync.Shard = opts.shards.shard
	if opts.shards.shard != "" {
		store, err := sourcecontroller.SetupFetchOnly(mgr, opts.sources)
		if err != nil {
			return err
		}
		return synccontroller.Setup(mgr, store, opts.sync)
	}
	store, err := sourcecontroller.Setup(mgr, opts.sources)
	if err != nil {
		return err
	}
	if err := synccontroller.Setup(mgr, store, opts.sync); err != nil {
		return err
	}
	// The HostedClusterPackage controller starts with the manager when HyperShift is installed,
	// else later in the same process, as soon as the HostedCluster CRD appears (no restart).
	opts.rollout.Sharding = opts.shards.rollout
	opts.rollout.Trees = store
	opts.rollout.CommitStatus = opts.commitStatus.reporter()
	opts.rollout.Identity = opts.promotion.identity
	opts.rollout.Bus = store
	opts.rollout.Publisher = opts.promotion.publisher(store)
	if err := rolloutcontroller.Setup(mgr, opts.rollout); err != nil {
		return fmt.Errorf("setting up the HostedClusterPackage controller: %w", err)
	}
	return nil
}
