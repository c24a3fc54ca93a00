package sourcecontroller

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/convoy-gitops/convoy/internal/eventrec"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// The integration suite: one API server and one manager for the package, one namespace per
// test.
var (
	// env is the management cluster of the suite (no hosted clusters).
	env *fleet.Fleet
	// k8sClient is an uncached client.
	k8sClient client.Client
	// testStore is the store of the reconciler under test.
	testStore *sources.Store
	// testReconciler is the reconciler under test.
	testReconciler *GitSourceReconciler
	// webhookURL is the base URL of the webhook receiver under test.
	webhookURL string
	// webhookSecretReads counts the Secrets the webhook receiver reads through the API.
	webhookSecretReads = &countingReader{}
	// suiteWebhookMaxBody is the body limit of the suite's webhook receiver: above the forges'
	// documented push payloads (GitHub's is 7 KiB), far below the default.
	suiteWebhookMaxBody int64 = 16 << 10
	// suiteLimits are the store limits of the suite.
	suiteLimits = sources.Limits{MaxFiles: 1000, MaxFileSize: 64 << 10, MaxTotalBytes: 8 << 20}
)

func TestMain(m *testing.M) {
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	fleet.Main(m, &env, fleet.Options{WithoutHyperShift: true}, startManager)
}

// startManager registers the reconciler and the webhook receiver and starts the manager.
func startManager(ctx context.Context, f *fleet.Fleet) (func(), error) {
	ctrl.SetLogger(logr.Discard())
	mgr, err := ctrl.NewManager(f.Config, ctrl.Options{
		Scheme:                 f.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if mgr, err = eventrec.WrapManager(mgr); err != nil {
		return nil, err
	}
	storageDir, err := os.MkdirTemp("", "convoy-sources-suite-*")
	if err != nil {
		return nil, err
	}
	if testStore, err = sources.NewStore(storageDir, sources.StoreOptions{Limits: suiteLimits, PackGrace: time.Second}); err != nil {
		return nil, err
	}
	// Note: the test Git server speaks plain HTTP with basic auth.
	testReconciler = &GitSourceReconciler{Client: mgr.GetClient(), Store: testStore,
		URLPolicy: sources.URLPolicy{AllowInsecureHTTP: true}}
	if err := testReconciler.SetupWithManager(mgr, GitSourceReconcilerOptions{}); err != nil {
		return nil, fmt.Errorf("setting up reconciler: %w", err)
	}
	webhookSecretReads.Reader = mgr.GetAPIReader()
	receiver := httptest.NewServer(&WebhookReceiver{Client: mgr.GetClient(), SecretReader: webhookSecretReads, MaxBodyBytes: suiteWebhookMaxBody})
	webhookURL, k8sClient = receiver.URL, f.Client
	stop := fleet.RunManager(ctx, mgr, storageDir)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		stop()
		return nil, fmt.Errorf("cache did not sync")
	}
	return func() { receiver.Close(); stop() }, nil
}

// newNamespace creates a namespace for one test and deletes it at the end.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := env.NewNamespace(t)
	t.Cleanup(func() {
		_ = k8sClient.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	return ns
}

// countingReader counts the reads it passes to Reader.
type countingReader struct {
	client.Reader
	reads atomic.Int64
}

// Get implements client.Reader.
func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}
