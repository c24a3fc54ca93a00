package synccontroller

import (
	"context"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/convoy-gitops/convoy/internal/eventrec"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/sources/sourcecontroller"
	"github.com/convoy-gitops/convoy/sync/hosted"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// testRenderBudget stops runaway templates sooner than the default, so that the hostile
// package tests are quick; real packages render far within it.
var testRenderBudget = manifests.RenderBudget{CPU: 2 * time.Second, Timeout: time.Minute, Memory: 128 << 20}

// mgrClient is the manager's cached client; tests read through env.Client (uncached).
var mgrClient client.Client

// testMaxResponseBytes is what the controller reads of one answer of a hosted API server: less
// than the largest object an API server stores, so that a test can meet it.
const testMaxResponseBytes = 512 << 10

// startManager starts the GitSource, Package and ObjectDeployment controllers against the
// fleet; it returns a function that stops them.
func startManager(ctx context.Context) (func(), error) {
	// controller-runtime keeps the first logger it is given.
	if os.Getenv("CONVOY_TEST_LOG") != "" {
		log.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(1))))
	} else {
		log.SetLogger(logr.Discard())
	}
	cacheOpts := cache.Options{}
	ConfigureShardCache(&cacheOpts, "") // the unsharded replica's cache, as `convoy controller` has it
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
	}
	if mgr, err = eventrec.WrapManager(mgr); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "convoy-sync-test-")
	if err != nil {
		return nil, err
	}
	store, err := sourcecontroller.Setup(mgr, sourcecontroller.Options{StoragePath: dir, Limits: sources.DefaultLimits(), Concurrency: 2,
		URLPolicy: sources.URLPolicy{AllowFileURLs: true}})
	if err != nil {
		return nil, err
	}
	err = Setup(mgr, store, SetupOptions{Concurrency: 4, ProbeInterval: time.Second,
		Hosted: hosted.Options{Timeout: 5 * time.Second, ConnectTimeout: time.Second,
			UnreachableBackoff: time.Second, MaxUnreachableBackoff: 5 * time.Second, MaxResponseBytes: testMaxResponseBytes},
		RenderBudget: testRenderBudget})
	if err != nil {
		return nil, err
	}
	mgrClient = mgr.GetClient()
	return fleet.RunManager(ctx, mgr, dir), nil
}
