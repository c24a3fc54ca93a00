package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/gittest"
)

// shardTestClusters is the size of the sharded fleet.
const shardTestClusters = 30

// shardTestNamespace holds the GitSource and the leader election leases.
const shardTestNamespace = "convoy-system"

// TestShardReplicasEachReconcileTheirOwnPackages runs three `convoy controller` processes on a
// real API server: the unsharded one (GitSource and HostedClusterPackage controllers, with the
// shards a,b named by the ConfigMap of --shards-configmap) and one replica per shard. A rollout
// over 30 HostedClusters completes, every Package's status is written by its own shard's replica
// only (managed fields), killing shard a's replica stops only shard a and is reported on the
// HostedClusterPackage once its lease expires (ShardsReady), and a replacement with an empty
// store resumes it.
func TestShardReplicasEachReconcileTheirOwnPackages(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := fleet.Start(ctx, fleet.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Stop() }()
	c := f.Client
	var inputs []fleet.HostedClusterInput
	for i := range shardTestClusters {
		inputs = append(inputs, fleet.HostedClusterInput{Name: fmt.Sprintf("hc-%02d", i),
			Labels: map[string]string{"shard-test": "true"}, WithoutAPIServer: true})
	}
	_, err = f.AddHostedClusters(ctx, inputs...)
	g.Expect(err).NotTo(HaveOccurred())
	srv, repo := gittest.NewServer(t)
	first := gittest.Commit(t, repo, "one", addonFiles("one"))
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardTestNamespace}})).To(Succeed())
	g.Expect(c.Create(ctx, shardTestSource(srv.HTTPURL("repo")))).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: shardTestNamespace, Name: "convoy-shards"},
		Data: map[string]string{"shards": "a,b"}})).To(Succeed())
	g.Expect(c.Create(ctx, shardTestHCPackage())).To(Succeed())

	var logMain, logA, logB, logA2 fleet.SyncBuffer
	leader := []string{"--leader-elect=true", "--leader-election-namespace=" + shardTestNamespace,
		"--leader-election-lease-duration=4s", "--v=1"}
	stopMain := startControllerProcess(t, f.Config, &logMain, append(leader, "--shards-configmap="+shardTestNamespace+"/convoy-shards")...)
	defer stopMain()
	stopB := startControllerProcess(t, f.Config, &logB, append(leader, "--shard=b")...)
	defer stopB()
	replicaA := startController(t, f.Config, &logA, append(leader, "--shard=a")...)
	defer killProcess(replicaA)

	shardOf := waitForRollout(ctx, t, c, first, nil)
	count := map[string]int{}
	for _, shard := range shardOf {
		count[shard]++
	}
	g.Expect(count).To(HaveLen(2), "both shards have Packages: %v", count)
	g.Expect(count["a"] + count["b"]).To(Equal(shardTestClusters))
	expectStatusWrittenByOwnShard(ctx, g, c, shardOf)
	expectAppliedObjectsLabelledWithTheirShard(ctx, g, c, shardOf)
	expectRolloutEventsOnTheHostedClusterPackageOnly(ctx, g, c)
	for _, lease := range []string{"convoy-controller.convoy.dev", "convoy-controller-a.convoy.dev", "convoy-controller-b.convoy.dev"} {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: shardTestNamespace, Name: lease}, &coordinationv1.Lease{})).To(Succeed(), lease)
	}

	expectShardsReady(ctx, g, c, metav1.ConditionTrue, Equal(fmt.Sprintf("Every shard holding packages has a live replica: a (%d), b (%d).", count["a"], count["b"])))

	killProcess(replicaA)
	expectShardsReady(ctx, g, c, metav1.ConditionFalse, MatchRegexp(`^Shard a has no live replica \(lease `+shardTestNamespace+
		`/convoy-controller-a.convoy.dev expired at [^)]+\): %d package\(s\) wait there\.$`, count["a"]))
	second := gittest.Commit(t, repo, "two", addonFiles("two"))
	waitForRollout(ctx, t, c, second, map[string]bool{"b": true})
	g.Consistently(func(g Gomega) {
		for key, rev := range packageRevisions(ctx, g, c) {
			if shardOf[key] == "a" {
				g.Expect(rev).To(Equal(first), "%s of the stopped shard a moved", key)
			}
		}
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		obj := &convoyv1alpha1.HostedClusterPackage{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: "addon"}, obj)).To(Succeed())
		g.Expect(obj.Status.UpdatedPackages).To(BeEquivalentTo(shardTestClusters), "the Packages of shard a have the new spec")
		g.Expect(obj.Status.AvailablePackages).To(BeEquivalentTo(count["b"]), "nobody reconciled shard a's: not available")
		g.Expect(obj.Status.ProgressedPackages).To(BeEquivalentTo(count["b"]), "nor progressed")
	}, time.Minute, 200*time.Millisecond).Should(Succeed())

	replacement := startController(t, f.Config, &logA2, append(leader, "--shard=a")...)
	defer killProcess(replacement)
	waitForRollout(ctx, t, c, second, nil)
	expectStatusWrittenByOwnShard(ctx, g, c, shardOf)
	expectShardsReady(ctx, g, c, metav1.ConditionTrue, HavePrefix("Every shard holding packages has a live replica"))
	g.Expect(logMain.String()).To(ContainSubstring("Starting the manager"), "the log was captured")
}

// expectShardsReady waits for the add-on's ShardsReady condition to have status and a message
// matching message.
func expectShardsReady(ctx context.Context, g Gomega, c client.Client, status metav1.ConditionStatus, message OmegaMatcher) {
	g.Eventually(func(g Gomega) {
		obj := &convoyv1alpha1.HostedClusterPackage{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: "addon"}, obj)).To(Succeed())
		cond := pass.Get(obj, convoyv1alpha1.ShardsReadyCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(status), cond.Message)
		g.Expect(cond.Message).To(message)
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
}

// addonFiles is a package of one ConfigMap holding version.
func addonFiles(version string) map[string]string {
	return map[string]string{
		"addon/manifest.yaml": "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: addon}\nspec:\n  phases: [{name: deploy}]\n",
		"addon/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: addon, annotations: {convoy.dev/phase: deploy}}\ndata: {version: " + version + "}\n",
	}
}

// shardTestSource is the GitSource of the add-on, readable from every namespace.
func shardTestSource(url string) *convoyv1alpha1.GitSource {
	return &convoyv1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: shardTestNamespace, Name: "addons"},
		Spec: convoyv1alpha1.GitSourceSpec{URL: url, Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval:   &metav1.Duration{Duration: time.Second},
			AccessFrom: &convoyv1alpha1.AccessFrom{NamespaceSelectors: []metav1.LabelSelector{{}}}},
	}
}

// shardTestHCPackage rolls the add-on out at once to the HostedClusters of the test.
func shardTestHCPackage() *convoyv1alpha1.HostedClusterPackage {
	return &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: "addon"},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"shard-test": "true"}},
			Strategy:              convoyv1alpha1.HostedClusterPackageStrategy{Instant: &convoyv1alpha1.InstantStrategy{}},
			Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Namespace: shardTestNamespace, Name: "addons"}, Path: "addon"}},
		},
	}
}

// waitForRollout waits until every Package of the add-on on the shards of only (all when nil)
// is available at commit, and returns the shard of each Package by "namespace/name".
func waitForRollout(ctx context.Context, t *testing.T, c client.Client, commit string, only map[string]bool) map[string]string {
	t.Helper()
	shardOf := map[string]string{}
	NewWithT(t).Eventually(func(g Gomega) {
		pkgs := &convoyv1alpha1.PackageList{}
		g.Expect(c.List(ctx, pkgs, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: "addon"})).To(Succeed())
		g.Expect(pkgs.Items).To(HaveLen(shardTestClusters))
		for _, p := range pkgs.Items {
			shard := p.Labels[convoyv1alpha1.ShardLabel]
			shardOf[p.Namespace+"/"+p.Name] = shard
			if only != nil && !only[shard] {
				continue
			}
			g.Expect(p.Status.Revision).To(Equal(commit), "Package %s/%s (shard %q)", p.Namespace, p.Name, shard)
			g.Expect(pass.IsTrue(&p, convoyv1alpha1.AvailableCondition)).To(BeTrue(), "Package %s/%s available", p.Namespace, p.Name)
		}
	}, 3*time.Minute, 500*time.Millisecond).Should(Succeed())
	return shardOf
}

// packageRevisions returns the status.revision of every Package of the add-on.
func packageRevisions(ctx context.Context, g Gomega, c client.Client) map[string]string {
	pkgs := &convoyv1alpha1.PackageList{}
	g.Expect(c.List(ctx, pkgs, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: "addon"})).To(Succeed())
	out := map[string]string{}
	for _, p := range pkgs.Items {
		out[p.Namespace+"/"+p.Name] = p.Status.Revision
	}
	return out
}

// expectStatusWrittenByOwnShard checks the managed fields of every Package: its status has
// been written by the status field manager of its own shard's replica, and by no other convoy
// replica.
func expectStatusWrittenByOwnShard(ctx context.Context, g Gomega, c client.Client, shardOf map[string]string) {
	pkgs := &convoyv1alpha1.PackageList{}
	g.Expect(c.List(ctx, pkgs, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: "addon"})).To(Succeed())
	for _, p := range pkgs.Items {
		own := pass.ShardStatusFieldOwner(shardOf[p.Namespace+"/"+p.Name])
		var writers []string
		for _, mf := range p.ManagedFields {
			if mf.Subresource == "status" {
				writers = append(writers, mf.Manager)
			}
		}
		g.Expect(writers).To(ConsistOf(own), "status writers of Package %s/%s", p.Namespace, p.Name)
	}
}

// killProcess kills cmd at once, as a crashed pod, and reaps it; it is safe to call twice.
func killProcess(cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// expectRolloutEventsOnTheHostedClusterPackageOnly checks that the rollout is recorded by the
// HostedClusterPackage's events, not by one Normal event per Package.
func expectRolloutEventsOnTheHostedClusterPackageOnly(ctx context.Context, g Gomega, c client.Client) {
	g.Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(c.List(ctx, list)).To(Succeed())
		hcpReasons := map[string]bool{}
		for _, e := range list.Items {
			switch e.Regarding.Kind {
			case "HostedClusterPackage":
				hcpReasons[e.Reason] = true
			case "Package":
				g.Expect(e.Type).NotTo(Equal(corev1.EventTypeNormal), "Package %s/%s: %s", e.Regarding.Namespace, e.Regarding.Name, e.Note)
			}
		}
		g.Expect(hcpReasons).To(HaveKey("RolloutCompleted"))
	}).Should(Succeed())
}

// expectAppliedObjectsLabelledWithTheirShard checks that the ConfigMap each Package applied
// carries its Package's shard, which each shard replica's watch of applied objects selects.
func expectAppliedObjectsLabelledWithTheirShard(ctx context.Context, g Gomega, c client.Client, shardOf map[string]string) {
	for key, shard := range shardOf {
		ns, _, _ := strings.Cut(key, "/")
		cm := &corev1.ConfigMap{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "addon"}, cm)).To(Succeed(), key)
		g.Expect(cm.Labels).To(HaveKeyWithValue(convoyv1alpha1.ShardLabel, shard), "the ConfigMap of %s", key)
	}
}
