package sources

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// The integration suite: one API server and one manager for the package, one namespace per
// test. `go test -short` runs the unit tests only.
var (
	// k8sClient is an uncached client.
	k8sClient client.Client
	// testStore is the store of the reconciler under test.
	testStore *Store
	// testReconciler is the reconciler under test.
	testReconciler *GitSourceReconciler
	// webhookURL is the base URL of the webhook receiver under test.
	webhookURL string
	// suiteLimits are the store limits of the suite.
	suiteLimits = Limits{MaxFiles: 1000, MaxFileSize: 64 << 10, MaxTotalBytes: 8 << 20}
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(runSuite(m))
}

// runSuite starts envtest and the manager, runs the tests and stops everything.
func runSuite(m *testing.M) int {
	ctrl.SetLogger(logr.Discard())
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: filepath.Join(root, "bin"),
		CRDDirectoryPaths:     []string{filepath.Join(root, "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := startManager(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	return m.Run()
}

// startManager registers the reconciler and the webhook receiver and starts the manager.
func startManager(ctx context.Context, cfg *rest.Config) error {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = convoyv1alpha1.AddToScheme(scheme)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	storageDir, err := os.MkdirTemp("", "convoy-sources-suite-*")
	if err != nil {
		return err
	}
	testStore, err = NewStore(storageDir, StoreOptions{Limits: suiteLimits})
	if err != nil {
		return err
	}
	testReconciler = &GitSourceReconciler{Client: mgr.GetClient(), Store: testStore}
	if err := testReconciler.SetupWithManager(mgr, GitSourceReconcilerOptions{}); err != nil {
		return fmt.Errorf("setting up reconciler: %w", err)
	}
	receiver := &WebhookReceiver{Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(), MaxBodyBytes: 1024}
	webhookURL = httptest.NewServer(receiver).URL
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	if k8sClient, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync")
	}
	return nil
}

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// requireEnv skips integration tests under -short.
func requireEnv(t *testing.T) {
	t.Helper()
	if k8sClient == nil {
		t.Skip("integration test: needs envtest (run without -short)")
	}
}

// newNamespace creates a namespace for one test and deletes it at the end.
func newNamespace(t *testing.T) string {
	t.Helper()
	requireEnv(t)
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gs-test-"}}
	g.Expect(k8sClient.Create(context.Background(), ns)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), ns) })
	return ns.Name
}
