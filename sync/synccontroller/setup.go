package synccontroller

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/convoy-gitops/convoy/internal/dialpolicy"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/sources/helmrepo"
	"github.com/convoy-gitops/convoy/sync/engine"
	"github.com/convoy-gitops/convoy/sync/hosted"
)

// SetupOptions are the command-line settings of the sync controllers.
type SetupOptions struct {
	// Concurrency is the number of Packages, and of ObjectDeployments, reconciled in parallel
	// (--concurrency, owned by the command).
	Concurrency int
	// ApplyConcurrency bounds the parallel reads and dry-runs of one phase (--apply-concurrency).
	ApplyConcurrency int
	// Hosted tunes the clients of hosted clusters (--hosted-qps, --hosted-burst,
	// --hosted-timeout, --hosted-connect-timeout, --hosted-idle-timeout,
	// --hosted-unreachable-backoff, --hosted-max-unreachable-backoff, --hosted-max-probes,
	// --hosted-max-response-bytes).
	Hosted hosted.Options
	// RenderCacheSize is the number of renders kept (--render-cache-size).
	RenderCacheSize int
	// RenderCacheBytes bounds the size of the renders kept (--render-cache-bytes).
	RenderCacheBytes int64
	// RenderBudget bounds each render of a package's templates (--render-cpu-limit,
	// --render-timeout, --render-memory-limit).
	RenderBudget manifests.RenderBudget
	// ProbeInterval is how often a Package whose probes do not pass yet is looked at again
	// (--probe-interval).
	ProbeInterval time.Duration
	// HealthCheckInterval is how often a settled Package or ObjectDeployment probes again the
	// objects no watch sees (those of a hosted cluster, kinds not watched yet), so that a
	// regression is noticed within it whatever spec.interval says; management objects are
	// probed again when their watch sees them change (--health-check-interval; zero means
	// DefaultHealthCheckInterval).
	HealthCheckInterval time.Duration
	// DefaultServiceAccount is the ServiceAccount management objects are applied as when a
	// Package names none (--default-service-account): "<namespace>/<name>", or a name in each
	// Package's namespace; empty means the controller's own rights.
	DefaultServiceAccount string
	// ChartNetwork says which addresses Helm chart repositories may be reached at
	// (--allow-link-local-addresses, owned by the command: the rollout checks share it).
	ChartNetwork dialpolicy.Policy
	// ChartAllowRedirectsToOtherHosts lets a chart repository redirect a fetch to another host
	// (--chart-allow-redirects-to-other-hosts).
	ChartAllowRedirectsToOtherHosts bool
	// Shard is the convoy.dev/shard value of the Packages and ObjectDeployments reconciled;
	// empty reconciles the unlabelled ones only (--shard, owned by the command, which also
	// calls ConfigureShardCache).
	Shard string
}

// DefaultHealthCheckInterval keeps the time to notice a regression in a hosted cluster under
// 30 s with the ±10% jitter of requeues. Each check costs one read per object the watch of the
// management cluster does not see: the render and the Git commit come from caches, and nothing
// unchanged is applied.
const DefaultHealthCheckInterval = 20 * time.Second

// BindFlags registers the flags of o on fs, with defaults.
func (o *SetupOptions) BindFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.ApplyConcurrency, "apply-concurrency", engine.DefaultConcurrency, "Parallel reads and dry-runs per phase of a Package.")
	fs.Float32Var(&o.Hosted.QPS, "hosted-qps", hosted.DefaultQPS, "Queries per second of the client of each hosted cluster.")
	fs.IntVar(&o.Hosted.Burst, "hosted-burst", hosted.DefaultBurst, "Burst of the client of each hosted cluster.")
	fs.DurationVar(&o.Hosted.Timeout, "hosted-timeout", hosted.DefaultTimeout, "Timeout of each request to a hosted cluster.")
	fs.DurationVar(&o.Hosted.ConnectTimeout, "hosted-connect-timeout", hosted.DefaultConnectTimeout, "Timeout of the TCP connect and TLS handshake to a hosted cluster.")
	fs.DurationVar(&o.Hosted.UnreachableBackoff, "hosted-unreachable-backoff", hosted.DefaultUnreachableBackoff, "How long requests to a hosted cluster fail at once after one got no answer; doubles with each failure in a row.")
	fs.DurationVar(&o.Hosted.MaxUnreachableBackoff, "hosted-max-unreachable-backoff", hosted.DefaultMaxUnreachableBackoff, "Cap of --hosted-unreachable-backoff.")
	fs.IntVar(&o.Hosted.MaxProbes, "hosted-max-probes", hosted.DefaultMaxProbes, "Requests that may try unreachable hosted clusters at once, across all of them.")
	fs.Int64Var(&o.Hosted.MaxResponseBytes, "hosted-max-response-bytes", hosted.DefaultMaxResponseBytes, "Longest answer read from a hosted cluster's API server, decompressed, each JSON value (each byte of an answer that is not JSON) counted 64 bytes more (what decoding it costs); a longer one fails the request. Zero or less means the default.")
	fs.DurationVar(&o.Hosted.IdleTimeout, "hosted-idle-timeout", hosted.DefaultIdleTimeout, "Drop the client of a hosted cluster unused this long.")
	fs.DurationVar(&o.ProbeInterval, "probe-interval", engine.DefaultProbeInterval, "Requeue delay of a Package whose phase is not available yet.")
	fs.DurationVar(&o.HealthCheckInterval, "health-check-interval", DefaultHealthCheckInterval,
		"Probe the hosted-cluster objects of a settled Package again this often, whatever its spec.interval; management objects are probed when their watch sees them change.")
	fs.IntVar(&o.RenderCacheSize, "render-cache-size", manifests.DefaultCacheSize, "Number of rendered packages kept in memory.")
	fs.StringVar(&o.DefaultServiceAccount, "default-service-account", "", "ServiceAccount that management objects are applied, pruned and torn down as when the Package names none: NAMESPACE/NAME for one ServiceAccount, NAME for that ServiceAccount of each Package's namespace; empty uses the controller's own rights.")
	k := &o.Hosted.Kubeconfig
	fs.BoolVar(&k.AllowExec, strings.TrimPrefix(hosted.InsecureKubeconfigExecFlag, "--"), false, "Honour exec and auth-provider credential plugins in kubeconfig Secrets (they run in the controller).")
	fs.BoolVar(&k.AllowInsecureTLS, strings.TrimPrefix(hosted.InsecureKubeconfigTLSFlag, "--"), false, "Honour insecure-skip-tls-verify in kubeconfig Secrets.")
	fs.BoolVar(&k.AllowFiles, strings.TrimPrefix(hosted.InsecureKubeconfigFilesFlag, "--"), false, "Honour tokenFile and certificate, key and CA file paths in kubeconfig Secrets (files of the controller).")
	fs.BoolVar(&k.AllowProxy, strings.TrimPrefix(hosted.InsecureKubeconfigProxyFlag, "--"), false, "Honour proxy-url in kubeconfig Secrets.")
	fs.Int64Var(&o.RenderCacheBytes, "render-cache-bytes", manifests.DefaultCacheBytes, "Bytes of package text (files and template output) of the rendered packages kept in memory.")
	fs.BoolVar(&o.ChartAllowRedirectsToOtherHosts, strings.TrimPrefix(helmrepo.AllowRedirectsToOtherHostsFlag, "--"), false,
		"Let a Helm chart repository a package names redirect a fetch to another scheme, host or port (charts served from GitHub releases need it); same-host redirects are always followed.")
	o.RenderBudget.BindFlags(fs)
}

// Setup registers the Package and ObjectDeployment controllers on mgr, sharing one engine,
// one hosted-cluster client cache and one cache of applied objects. store opens the commits
// of GitSources (sourcecontroller.Setup returns it).
func Setup(mgr ctrl.Manager, store Opener, o SetupOptions) error {
	if o.Hosted.Scheme == nil {
		o.Hosted.Scheme = mgr.GetScheme()
	}
	clients := hosted.NewClients(mgr.GetClient(), mgr.GetAPIReader(), o.Hosted)
	if err := mgr.Add(clients); err != nil {
		return err
	}
	if o.HealthCheckInterval <= 0 {
		o.HealthCheckInterval = DefaultHealthCheckInterval
	}
	common := Common{Hosted: clients, HealthCheckInterval: o.HealthCheckInterval, DefaultServiceAccount: o.DefaultServiceAccount,
		Shard: o.Shard}
	if err := common.setupShared(mgr); err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("creating the discovery client: %w", err)
	}
	pkg := &PackageReconciler{Common: common, Store: store, Renders: manifests.NewCacheWithOptions(manifests.CacheOptions{
		MaxEntries: o.RenderCacheSize, MaxBytes: o.RenderCacheBytes, Budget: o.RenderBudget}),
		Environment:        &ClusterEnvironment{Discovery: disc, Reader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper(), Resources: disc},
		HostedEnvironments: &HostedEnvironments{Clients: clients},
		Charts: helmrepo.New(helmrepo.Options{MaxChartSize: maxFileSize(store), Network: o.ChartNetwork,
			AllowRedirectsToOtherHosts: o.ChartAllowRedirectsToOtherHosts})}
	pkg.Engine = engineOf(engine.Options{Controller: "package", Concurrency: o.ApplyConcurrency, ProbeInterval: o.ProbeInterval},
		common.applied, true)
	pkg.Recorder = mgr.GetEventRecorder("convoy-package")
	if err := pkg.SetupWithManager(mgr, PackageReconcilerOptions{MaxConcurrentReconciles: o.Concurrency}); err != nil {
		return fmt.Errorf("setting up the Package controller: %w", err)
	}
	od := &ObjectDeploymentReconciler{Common: common}
	// No Events: an ObjectDeployment's revision has no render digests to repeat a pass by, and
	// its passes never say they are stale (engine.Result.Stale): a write by someone else
	// delivered while the engine applies the object waits for the next event or interval.
	od.Engine = engineOf(engine.Options{Controller: "objectdeployment", Concurrency: o.ApplyConcurrency, ProbeInterval: o.ProbeInterval},
		common.applied, false)
	od.Recorder = mgr.GetEventRecorder("convoy-objectdeployment")
	if err := od.SetupWithManager(mgr, ObjectDeploymentReconcilerOptions{MaxConcurrentReconciles: o.Concurrency}); err != nil {
		return fmt.Errorf("setting up the ObjectDeployment controller: %w", err)
	}
	return nil
}

// maxFileSize returns the largest file the store fetches from Git (--git-max-file-size), which
// also bounds a pulled chart; 0 (the fetcher's default) for a store without limits.
func maxFileSize(store Opener) int64 {
	if l, ok := store.(interface{ Limits() sources.Limits }); ok {
		return l.Limits().MaxFileSize
	}
	return 0
}
