package synccontroller

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sources"
)

// blockingOpener blocks every Open until its context ends, and reports why it ended: a pass
// held in its render.
type blockingOpener struct {
	entered chan struct{}
	causes  chan error
}

func (o *blockingOpener) Open(ctx context.Context, _ sources.Key, _ string) (fs.FS, error) {
	select {
	case o.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	select {
	case o.causes <- context.Cause(ctx):
	default:
	}
	return nil, ctx.Err()
}

// startShardReplica starts the Package and ObjectDeployment controllers of shard, with its
// cache as `convoy controller --shard` has it, reading commits through store.
func startShardReplica(t *testing.T, shard string, store Opener) {
	t.Helper()
	g := NewWithT(t)
	cacheOpts := cache.Options{}
	ConfigureShardCache(&cacheOpts, shard)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Cache: cacheOpts,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Setup(mgr, store, SetupOptions{Concurrency: 1, Shard: shard, RenderBudget: testRenderBudget})).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		g.Expect(<-stopped).To(Succeed())
	})
}

// A Package moved to another shard while its replica's pass runs: the pass stops, applies
// nothing more and writes no status, since the replica it moved to may already apply a newer
// revision (the HostedClusterPackage updates a moved Package at its next pass).
func TestPassOfAPackageMovedToAnotherShardStops(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	newGitSource(t, ns)
	key := newPackage(t, ns, "moving", "addon", func(p *convoyv1alpha1.Package) {
		p.Labels = map[string]string{convoyv1alpha1.ShardLabel: "a"}
		p.Spec.Revision = strings.Repeat("a", 40)
	})
	opener := &blockingOpener{entered: make(chan struct{}, 1), causes: make(chan error, 1)}
	startShardReplica(t, "a", opener)
	g.Eventually(opener.entered).WithTimeout(30*time.Second).Should(Receive(), "shard a's pass reads the commit")

	pkg := getPackage(g, key)
	patch := client.MergeFrom(pkg.DeepCopy())
	pkg.Labels[convoyv1alpha1.ShardLabel] = "b"
	g.Expect(env.Client.Patch(ctx, pkg, patch)).To(Succeed())
	g.Eventually(opener.causes).WithTimeout(10 * time.Second).Should(Receive(MatchError(errLeftShard)))
	g.Consistently(func() []metav1.Condition { return getPackage(g, key).Status.Conditions }, 2*time.Second).
		Should(BeEmpty(), "shard a wrote no status for a Package that is shard b's")
}

// The registry cancels only the pass of the key that moved, and only while it runs.
func TestPassesInFlightCancelOnlyTheMovedPass(t *testing.T) {
	g := NewWithT(t)
	p := newPassesInFlight()
	a, b := types.NamespacedName{Namespace: "n", Name: "a"}, types.NamespacedName{Namespace: "n", Name: "b"}
	ctxA, doneA := p.start(context.Background(), a)
	ctxB, doneB := p.start(context.Background(), b)
	p.cancel(a)
	g.Expect(leftShard(ctxA)).To(BeTrue())
	g.Expect(ctxB.Err()).NotTo(HaveOccurred())
	doneA()
	doneB()
	g.Expect(leftShard(ctxB)).To(BeFalse(), "a pass that ended is cancelled with no cause of a move")
	p.cancel(b) // nothing runs: no effect
	var none *passesInFlight
	ctx, done := none.start(context.Background(), a)
	none.cancel(a)
	done()
	g.Expect(leftShard(ctx)).To(BeFalse(), "a reconciler built without its controller has no registry")
}
