package rolloutcontroller

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/convoy-gitops/convoy/internal/eventrec"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/sources/sourcecontroller"
	"github.com/convoy-gitops/convoy/sync/hosted"
	"github.com/convoy-gitops/convoy/sync/synccontroller"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// env is the simulated management cluster with the GitSource, Package and
// HostedClusterPackage controllers running; nil under -short.
var env *fleet.Fleet

func TestMain(m *testing.M) {
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	if os.Getenv(perfEnv) != "" {
		log.SetLogger(logr.Discard())
		fleet.Main(m, &env, fleet.Options{}, nil) // measured passes only: no manager
	}
	// The logger is set before the fleet starts: controller-runtime takes the first logger it is
	// given, and gives itself one that drops everything when something logs through it before
	// one is set and its process is 30 seconds old, which a slow start of the API servers is.
	loggers := []logr.Logger{textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&controllerLog)))}
	if os.Getenv("CONVOY_TEST_LOG") != "" {
		loggers = append(loggers, textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(1))))
	}
	log.SetLogger(logr.New(teeSink(loggers)))
	fleet.Main(m, &env, fleet.Options{}, startManager)
}

// testSharding reads the shards from a ConfigMap that only the sharding tests create: absent, it
// shards nothing, so that the other tests are not sharded. Nothing in the suite reconciles a
// Package on a shard: every shard is one without a replica unless a test holds its lease.
var testSharding = Sharding{ConfigMap: types.NamespacedName{Namespace: shardTestNamespace, Name: "convoy-shards"},
	LeaseNamespace: shardTestNamespace}

// testIdentity is the management cluster the suite's controller runs as, for the promotion
// tests; no other test publishes (none has spec.promotion).
var testIdentity = Identity{ManagementCluster: "mc-eu-1", Sector: "eu"}

// startManager runs the GitSource, Package and HostedClusterPackage controllers against f.
func startManager(ctx context.Context, f *fleet.Fleet) (func(), error) {
	cacheOpts := cache.Options{}
	ConfigureCache(&cacheOpts)
	testSharding.ConfigureCache(&cacheOpts)
	mgr, err := ctrl.NewManager(f.Config, ctrl.Options{
		Scheme: f.Scheme, Cache: cacheOpts,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
	}
	if mgr, err = eventrec.WrapManager(mgr); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "convoy-rollout-test-")
	if err != nil {
		return nil, err
	}
	store, err := sourcecontroller.Setup(mgr, sourcecontroller.Options{StoragePath: dir, Limits: sources.DefaultLimits(), Concurrency: 2,
		URLPolicy: sources.URLPolicy{AllowFileURLs: true}})
	if err != nil {
		return nil, err
	}
	err = synccontroller.Setup(mgr, store, synccontroller.SetupOptions{Concurrency: 4, ProbeInterval: time.Second,
		HealthCheckInterval: 2 * time.Second,
		Hosted:              hosted.Options{Timeout: 5 * time.Second}})
	if err != nil {
		return nil, err
	}
	publisher := &Publisher{Identity: testIdentity, Remotes: store, Interval: 100 * time.Millisecond}
	if err := Setup(mgr, SetupOptions{Concurrency: 2, Trees: store, Sharding: testSharding, Identity: testIdentity, Bus: store,
		Publisher: publisher}); err != nil {
		return nil, err
	}
	return fleet.RunManager(ctx, mgr, dir), nil
}
