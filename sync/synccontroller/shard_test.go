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
	"github.com/convoy-gitops/convoy/test/fleet"
)

// A Package of a shard that has no replica (a removed shard, a mistyped label) must not hold up
// the deletion of its namespace: the unsharded replica releases it there, and only there.
func TestStrandedShardPackageDoesNotHoldUpItsNamespace(t *testing.T) {
	env.Require(t)
	expectStrandedReleased(t, &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Name: "addon"},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
			SourceRef: convoyv1alpha1.SourceReference{Name: gitSourceName}, Path: "addon"}}})
}

// An ObjectDeployment of a shard that has no replica is released alike: the unsharded replica
// sees every ObjectDeployment, not only the unlabelled ones, so that it can.
func TestStrandedShardObjectDeploymentDoesNotHoldUpItsNamespace(t *testing.T) {
	env.Require(t)
	expectStrandedReleased(t, objectDeployment(NewWithT(t), "", "unused", "v"))
}

// expectStrandedReleased creates obj on shard "gone", which has no replica, with convoy's
// finalizer, in a namespace of its own, and deletes it: the unsharded replica leaves it to its
// shard while the namespace lives, and releases it once the namespace terminates.
func expectStrandedReleased(t *testing.T, obj client.Object) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "stranded-shard-" + fleet.NameSuffix()}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	obj.SetNamespace(ns.Name)
	obj.SetLabels(map[string]string{convoyv1alpha1.ShardLabel: "gone"})
	obj.SetFinalizers([]string{convoyv1alpha1.Finalizer})
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Expect(env.Client.Delete(ctx, obj)).To(Succeed())
	g.Consistently(func() []string {
		g.Expect(env.Client.Get(ctx, key, obj)).To(Succeed())
		return obj.GetFinalizers()
	}, 2*time.Second).Should(ContainElement(convoyv1alpha1.Finalizer), "outside a terminating namespace the object is its shard's")

	g.Expect(env.Client.Delete(ctx, ns)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, key, obj)) }).
		WithTimeout(30 * time.Second).Should(BeTrue())
}

// Templates see a Package's labels but its shard: a shard move must render the same objects.
func TestTemplatesDoNotSeeTheShardLabel(t *testing.T) {
	g := NewWithT(t)
	pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Name: "addon", Namespace: "ns",
		Labels: map[string]string{convoyv1alpha1.ShardLabel: "a", "team": "x"}}}
	data, err := PackageTemplateData(pkg, nil, "c0ffee")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data.Package.Labels).To(Equal(map[string]string{"team": "x"}))
	g.Expect(pkg.Labels).To(HaveKeyWithValue(convoyv1alpha1.ShardLabel, "a"), "the Package itself is left alone")

	moved := pkg.DeepCopy()
	moved.Labels[convoyv1alpha1.ShardLabel] = "b"
	other, err := PackageTemplateData(moved, nil, "c0ffee")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other).To(Equal(data))
}

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
