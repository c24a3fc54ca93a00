package rolloutcontroller

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// perfEnv enables TestPerfReconcile1000 (a number above 1 is the fleet's size instead of 1,000);
// the suite then starts no manager, so that only the reconciler under measurement writes.
const perfEnv = "CONVOY_ROLLOUT_PERF"

// countingTransport counts the requests sent to the API server, by verb.
type countingTransport struct {
	next   http.RoundTripper
	reads  atomic.Int64
	writes atomic.Int64
}

// RoundTrip counts and forwards one request.
func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		c.reads.Add(1)
	} else {
		c.writes.Add(1)
	}
	return c.next.RoundTrip(req)
}

// reset zeroes the counters.
func (c *countingTransport) reset() { c.reads.Store(0); c.writes.Store(0) }

// TestPerfReconcile1000 measures single passes of the controller over 1,000 HostedClusters, or
// the number perfEnv gives (without API servers; the Package is management-side and nothing
// reconciles it): the pass that creates the Packages, the pass that moves them all to a new
// revision (instant strategy), and ten idle passes.
func TestPerfReconcile1000(t *testing.T) {
	env.Require(t)
	if os.Getenv(perfEnv) == "" || env == nil {
		t.Skip("set " + perfEnv + "=1 to measure")
	}
	g := NewWithT(t)
	ctx := context.Background()
	n := 1000
	if size, err := strconv.Atoi(os.Getenv(perfEnv)); err == nil && size > 1 {
		n = size
	}
	ns := env.NewNamespace(t)
	setArtifact(g, ns, strings.Repeat("1", 40), true)
	addFleet(g, n)
	name := "perf-" + fleet.NameSuffix()
	newHostedClusterPackage(t, name, ns, func(h *convoyv1alpha1.HostedClusterPackage) {
		h.Spec.HostedClusterSelector = nil
		h.Spec.Strategy = convoyv1alpha1.HostedClusterPackageStrategy{Instant: &convoyv1alpha1.InstantStrategy{}}
	})
	r, counter := perfReconciler(t, g)
	pass := func(label string) {
		counter.reset()
		start := time.Now()
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
		g.Expect(err).NotTo(HaveOccurred())
		t.Logf("%s: %v, %d reads, %d writes", label, time.Since(start).Round(time.Millisecond), counter.reads.Load(), counter.writes.Load())
	}
	pass(fmt.Sprintf("create %d Packages", n))
	waitForCache(g, r, name, n)
	markAvailable(g, name, strings.Repeat("1", 40))
	setArtifact(g, ns, strings.Repeat("2", 40), false)
	waitForCache(g, r, name, n)
	time.Sleep(time.Second)
	pass(fmt.Sprintf("update %d Packages to a new revision", n))
	waitForCache(g, r, name, n)
	pass("pass after the update (status refresh)")
	for i := range 10 {
		pass(fmt.Sprintf("idle pass %d", i+1))
	}
}

// setArtifact gives the GitSource of ns an artifact at commit, creating the GitSource first.
func setArtifact(g *WithT, ns, commit string, create bool) {
	ctx := context.Background()
	gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sourceName},
		Spec: convoyv1alpha1.GitSourceSpec{URL: "https://example.com/addons.git", Ref: convoyv1alpha1.GitRef{Branch: "main"}}}
	if create {
		g.Expect(env.Client.Create(ctx, gs)).To(Succeed())
	} else {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gs), gs)).To(Succeed())
	}
	gs.Status.Artifact = &convoyv1alpha1.Artifact{Revision: "main@sha1:" + commit, Commit: commit, LastUpdateTime: metav1.Now()}
	g.Expect(env.Client.Status().Update(ctx, gs)).To(Succeed())
}

// addFleet creates n HostedClusters without API servers, in three partitions.
func addFleet(g *WithT, n int) {
	groups := []string{"early", "normal", "late"}
	inputs := make([]fleet.HostedClusterInput, n)
	for i := range inputs {
		inputs[i] = fleet.HostedClusterInput{Name: fmt.Sprintf("perf-%04d", i), WithoutAPIServer: true,
			Labels: map[string]string{riskKey: groups[i%3]}}
	}
	for start := 0; start < n; start += 100 {
		_, err := env.AddHostedClusters(context.Background(), inputs[start:start+100]...)
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// perfReconciler returns a reconciler reading through its own started cache, whose requests
// are counted.
func perfReconciler(t *testing.T, g *WithT) (*HostedClusterPackageReconciler, *countingTransport) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	counter := &countingTransport{}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	opts := cache.Options{Scheme: env.Scheme}
	ConfigureCache(&opts)
	c, err := cache.New(cfg, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(indexFields(ctx, c)).To(Succeed())
	go func() { _ = c.Start(ctx) }()
	cl, err := client.New(cfg, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: c}})
	g.Expect(err).NotTo(HaveOccurred())
	for _, list := range []client.ObjectList{&convoyv1alpha1.HostedClusterPackageList{}, &convoyv1alpha1.PackageList{},
		&convoyv1alpha1.GitSourceList{}, &hyperv1.HostedClusterList{}, &appsv1.ControllerRevisionList{}} {
		g.Eventually(func() error { return cl.List(ctx, list) }).Should(Succeed())
	}
	return &HostedClusterPackageReconciler{Client: cl, Informers: c, expect: newExpectations(), metrics: newRolloutMetrics()}, counter
}

// waitForCache waits until the reconciler's cache shows n Packages of the HostedClusterPackage
// and the pass's writes.
func waitForCache(g *WithT, r *HostedClusterPackageReconciler, name string, n int) {
	g.Eventually(func(g Gomega) {
		pkgs, err := r.listPackages(context.Background(), name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pkgs).To(HaveLen(n))
		g.Expect(r.expect.satisfied(name, ownedPackagesOf(pkgs).byKey)).To(BeTrue())
	}).Should(Succeed())
}

// markAvailable writes the status the Package controller would once commit is available.
func markAvailable(g *WithT, name, commit string) {
	ctx := context.Background()
	list := &convoyv1alpha1.PackageList{}
	g.Expect(env.Client.List(ctx, list, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: name})).To(Succeed())
	for i := range list.Items {
		p := &list.Items[i]
		p.Status.Revision = commit
		p.Status.ObservedGeneration = p.Generation
		p.Status.Conditions = []metav1.Condition{
			{Type: convoyv1alpha1.AvailableCondition, Status: metav1.ConditionTrue, Reason: "RevisionAvailable", ObservedGeneration: p.Generation, LastTransitionTime: metav1.Now()},
			{Type: convoyv1alpha1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: "RevisionAvailable", ObservedGeneration: p.Generation, LastTransitionTime: metav1.Now()},
		}
		g.Expect(env.Client.Status().Update(ctx, p)).To(Succeed())
	}
}
