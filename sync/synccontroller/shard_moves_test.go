package synccontroller

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sources"
)

// gatedOpener holds every Open until release is closed, then opens fsys: a pass held in its
// render.
type gatedOpener struct {
	entered chan struct{}
	release chan struct{}
	fsys    fs.FS
}

func (o *gatedOpener) Open(context.Context, sources.Key, string) (fs.FS, error) {
	select {
	case o.entered <- struct{}{}:
	default:
	}
	<-o.release
	return o.fsys, nil
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
	opener := &gatedOpener{entered: make(chan struct{}, 1), release: make(chan struct{}), fsys: fstest.MapFS{
		"addon/manifest.yaml": {Data: []byte(manifest("deploy"))},
		"addon/objects.yaml":  {Data: []byte(cmYAML("deploy", "", "applied-by-shard-a", "1"))},
	}}
	startShardReplica(t, "a", opener)
	g.Eventually(opener.entered).WithTimeout(30*time.Second).Should(Receive(), "shard a's pass reads the commit")

	pkg := getPackage(g, key)
	patch := client.MergeFrom(pkg.DeepCopy())
	pkg.Labels[convoyv1alpha1.ShardLabel] = "b"
	g.Expect(env.Client.Patch(ctx, pkg, patch)).To(Succeed())
	time.Sleep(2 * time.Second) // for shard a's informer to see the move (milliseconds)
	close(opener.release)

	cm := &corev1.ConfigMap{}
	g.Consistently(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "applied-by-shard-a"}, cm))
	}, 3*time.Second).Should(BeTrue(), "shard a applies nothing after the move")
	g.Expect(getPackage(g, key).Status.Conditions).To(BeEmpty(), "shard a wrote no status for a Package that is shard b's")
}

// A pass cancelled by a move runs again when its object is in the replica's shard after all:
// a label that went back, or an object created again under the same name.
func TestPassCancelledByAMoveRunsAgainWhenTheObjectIsBack(t *testing.T) {
	g := NewWithT(t)
	pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "p",
		Labels: map[string]string{convoyv1alpha1.ShardLabel: "a"}}}
	scheme := runtime.NewScheme()
	g.Expect(convoyv1alpha1.AddToScheme(scheme)).To(Succeed())
	c := Common{Shard: "a", Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(pkg).Build()}
	key := client.ObjectKeyFromObject(pkg)
	g.Expect(c.afterMove(key, &convoyv1alpha1.Package{})).To(Equal(ctrl.Result{RequeueAfter: afterMoveRecheck}))
	c.Shard = "b"
	g.Expect(c.afterMove(key, &convoyv1alpha1.Package{})).To(BeZero(), "another shard's: nothing more")
	g.Expect(c.afterMove(types.NamespacedName{Namespace: "n", Name: "gone"}, &convoyv1alpha1.Package{})).To(BeZero())
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
