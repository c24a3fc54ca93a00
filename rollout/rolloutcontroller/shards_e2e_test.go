package rolloutcontroller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// shardTestNamespace holds the shards ConfigMap of the suite (testSharding) and the shard
// leases.
const shardTestNamespace = "convoy-shards-test"

// TestShardsConfigMapChangesAtRunTime: the HostedClusterPackage controller reads its shards from
// a ConfigMap it watches. Adding a shard moves no Package until the ConfigMap asks for a
// rebalance, which moves each to its hashed shard; a list that is not valid is reported on the
// HostedClusterPackage and in an event on the ConfigMap, and changes nothing; removing a shard
// moves its Packages to the shards left.
func TestShardsConfigMapChangesAtRunTime(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	name := "shards-" + fleet.NameSuffix()
	setShards(t, g, map[string]string{ShardsKey: "a"})
	addShardedClusters(t, g, name, 8)
	ns := env.NewNamespace(t)
	_, err := newSource(t, ns).Commit("main", "commit", gatePackage(1, true, false))
	g.Expect(err).NotTo(HaveOccurred())
	newHostedClusterPackage(t, name, ns, instant)
	g.Eventually(func(g Gomega) { g.Expect(shardsOf(g, name)).To(SatisfyAll(HaveLen(8), HaveEach("a"))) }).Should(Succeed())

	setShards(t, g, map[string]string{ShardsKey: "a,\nb"})
	g.Consistently(func(g Gomega) { g.Expect(shardsOf(g, name)).To(HaveEach("a")) }, 3*time.Second).Should(Succeed(),
		"adding a shard moves nothing unless asked")

	setShards(t, g, map[string]string{ShardsKey: "a,b", RebalanceKey: "true"})
	two := Sharding{Shards: []string{"a", "b"}}
	g.Eventually(func(g Gomega) {
		for cluster, shard := range shardsOf(g, name) {
			g.Expect(shard).To(Equal(two.shardFor(hcpNamespace(cluster), "")), cluster)
		}
	}).Should(Succeed())
	moved := shardsOf(g, name)
	g.Expect(moved).To(ContainElement("b"), "8 namespaces over two shards put some on b")

	setShards(t, g, map[string]string{ShardsKey: "a, b c"})
	expectShardsReady(g, name, metav1.ConditionFalse, convoyv1alpha1.InvalidShardListReason, SatisfyAll(
		HavePrefix(`ConfigMap convoy-shards-test/convoy-shards: key "shards": shard "b c": not a lowercase DNS label`),
		ContainSubstring("; the shards in force stay a,b. Shard a has no live replica")))
	g.Eventually(func(g Gomega) { g.Expect(configMapWarnings(g)).To(ContainElement(ContainSubstring(`shard "b c"`))) }).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(shardsOf(g, name)).To(Equal(moved)) }, 2*time.Second).Should(Succeed(),
		"a list that is refused changes nothing")

	setShards(t, g, map[string]string{ShardsKey: "a"})
	g.Eventually(func(g Gomega) { g.Expect(shardsOf(g, name)).To(HaveEach("a")) }).Should(Succeed(), "b's Packages move to a")
	g.Eventually(func(g Gomega) {
		g.Expect(conditionOf(getHCPkg(g, name), convoyv1alpha1.ShardsReadyCondition)).To(HaveField("Reason", convoyv1alpha1.ShardWithoutReplicaReason))
	}).Should(Succeed(), "the refused list is no longer reported once a valid one replaces it")

	setShards(t, g, map[string]string{})
	g.Eventually(func(g Gomega) { g.Expect(shardsOf(g, name)).To(SatisfyAll(HaveLen(8), HaveEach(""))) }).Should(Succeed(),
		"with no shard listed, the Packages move back to the unsharded replica: nobody else would reconcile them")
}

// TestShardWithoutLiveReplicaIsNamed: a HostedClusterPackage whose Packages sit on a shard
// whose replica holds no lease says so on ShardsReady, naming the shard and counting its
// Packages: before the lease exists, once it expires without a renewal, and not while it is
// held. Those Packages, reconciled by nobody, never count as progressed.
func TestShardWithoutLiveReplicaIsNamed(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	name := "lease-" + fleet.NameSuffix()
	logOnFailure(t, name)
	setShards(t, g, map[string]string{ShardsKey: "z"})
	addShardedClusters(t, g, name, 3)
	ns := env.NewNamespace(t)
	_, err := newSource(t, ns).Commit("main", "commit", gatePackage(1, true, false))
	g.Expect(err).NotTo(HaveOccurred())
	newHostedClusterPackage(t, name, ns, instant)
	g.Eventually(func(g Gomega) { g.Expect(shardsOf(g, name)).To(SatisfyAll(HaveLen(3), HaveEach("z"))) }).Should(Succeed())
	lease := "convoy-shards-test/convoy-controller-z.convoy.dev"
	expectShardsReady(g, name, metav1.ConditionFalse, convoyv1alpha1.ShardWithoutReplicaReason,
		Equal("Shard z has no live replica (lease "+lease+" absent): 3 package(s) wait there."))

	holdLease(t, g, "z", 5*time.Second)
	expectShardsReady(g, name, metav1.ConditionTrue, convoyv1alpha1.ShardsHaveReplicasReason,
		Equal("Every shard holding packages has a live replica: z (3)."))
	expectShardsReady(g, name, metav1.ConditionFalse, convoyv1alpha1.ShardWithoutReplicaReason,
		MatchRegexp(`^Shard z has no live replica \(lease `+lease+` expired at [0-9TZ:-]+\): 3 package\(s\) wait there\.$`))

	holdLease(t, g, "z", time.Minute)
	expectShardsReady(g, name, metav1.ConditionTrue, convoyv1alpha1.ShardsHaveReplicasReason,
		Equal("Every shard holding packages has a live replica: z (3)."))
	st := getHCPkg(g, name).Status
	g.Expect(st.ProgressedPackages).To(BeZero(), "no replica reconciled the Packages of shard z")
	g.Expect(st.Conditions).To(ContainElement(HaveField("Type", convoyv1alpha1.ProgressingCondition)))
	g.Expect(conditionOf(getHCPkg(g, name), convoyv1alpha1.ProgressingCondition)).To(HaveField("Status", metav1.ConditionTrue))

	// No shard in force (a ConfigMap deleted by mistake): a shard whose replica lives keeps its
	// Packages; once its lease is gone they move back to the unsharded replica.
	setShards(t, g, map[string]string{})
	g.Consistently(func(g Gomega) { g.Expect(shardsOf(g, name)).To(HaveEach("z")) }, 3*time.Second).Should(Succeed(),
		"a served shard keeps its Packages")
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: shardTestNamespace, Name: ShardLeaseName("z")}}
	g.Expect(env.Client.Delete(context.Background(), l)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(shardsOf(g, name)).To(SatisfyAll(HaveLen(3), HaveEach(""))) }).Should(Succeed(),
		"the Packages of a shard without a replica move back to the unsharded replica")

	// A label set by hand is another field manager's: leaving it out of the apply would not
	// remove it, and the Package would be relabelled at every pass.
	for _, pkg := range packagesOf(g, name) {
		patch := client.MergeFrom(pkg.DeepCopy())
		pkg.Labels[convoyv1alpha1.ShardLabel] = "y"
		g.Expect(env.Client.Patch(context.Background(), pkg, patch, client.FieldOwner("kubectl-label"))).To(Succeed())
		break
	}
	g.Eventually(func(g Gomega) { g.Expect(shardsOf(g, name)).To(HaveEach("")) }).Should(Succeed(),
		"a hand-set label of a shard without a replica is removed too")
}

// instant rolls out to every target at once: nothing reconciles the Packages of a shard here,
// so a rolling upgrade would stop at the first.
func instant(h *convoyv1alpha1.HostedClusterPackage) {
	h.Spec.Strategy = convoyv1alpha1.HostedClusterPackageStrategy{Instant: &convoyv1alpha1.InstantStrategy{}}
}

// setShards writes the suite's shards ConfigMap, creating its namespace; the test's cleanup
// deletes it, which shards nothing again.
func setShards(t *testing.T, g *WithT, data map[string]string) {
	t.Helper()
	ctx := context.Background()
	err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardTestNamespace}})
	g.Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testSharding.ConfigMap.Namespace, Name: testSharding.ConfigMap.Name}}
	err = env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	if apierrors.IsNotFound(err) {
		cm.Data = data
		g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cm) })
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	cm.Data = data
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
}

// addShardedClusters adds n HostedClusters without API servers selected by the
// HostedClusterPackage name.
func addShardedClusters(t *testing.T, g *WithT, name string, n int) {
	t.Helper()
	inputs := make([]fleet.HostedClusterInput, n)
	for i := range inputs {
		inputs[i] = fleet.HostedClusterInput{Name: fmt.Sprintf("%s-%d", name, i), WithoutAPIServer: true,
			Labels: map[string]string{"test.convoy.dev/fleet": name}}
	}
	_, err := env.AddHostedClusters(context.Background(), inputs...)
	g.Expect(err).NotTo(HaveOccurred())
}

// shardsOf returns the convoy.dev/shard label of each Package of a HostedClusterPackage, by
// HostedCluster name.
func shardsOf(g Gomega, name string) map[string]string {
	out := map[string]string{}
	for cluster, pkg := range packagesOf(g, name) {
		out[cluster] = pkg.Labels[convoyv1alpha1.ShardLabel]
	}
	return out
}

// hcpNamespace returns the HCP namespace of a test HostedCluster.
func hcpNamespace(cluster string) string {
	return simfleet.DefaultHostedClusterNamespace + "-" + cluster
}

// expectShardsReady waits for ShardsReady with status, reason and a message matching message.
func expectShardsReady(g *WithT, name string, status metav1.ConditionStatus, reason string, message OmegaMatcher) {
	g.Eventually(func(g Gomega) {
		c := conditionOf(getHCPkg(g, name), convoyv1alpha1.ShardsReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(status), c.Message)
		g.Expect(c.Reason).To(Equal(reason))
		g.Expect(c.Message).To(message)
	}).Should(Succeed())
}

// conditionOf returns the condition t of obj, nil when it has none.
func conditionOf(obj *convoyv1alpha1.HostedClusterPackage, t string) *metav1.Condition {
	for i := range obj.Status.Conditions {
		if obj.Status.Conditions[i].Type == t {
			return &obj.Status.Conditions[i]
		}
	}
	return nil
}

// holdLease writes the lease of shard's replicas as held now, for d.
func holdLease(t *testing.T, g *WithT, shard string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: shardTestNamespace, Name: ShardLeaseName(shard)}}
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(l), l)
	create := apierrors.IsNotFound(err)
	if !create {
		g.Expect(err).NotTo(HaveOccurred())
	}
	l.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To("replica-" + shard),
		LeaseDurationSeconds: ptr.To(int32(d / time.Second)), RenewTime: &metav1.MicroTime{Time: time.Now()}}
	if create {
		g.Expect(env.Client.Create(ctx, l)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), l) })
		return
	}
	g.Expect(env.Client.Update(ctx, l)).To(Succeed())
}

// configMapWarnings returns the notes of the Warning events about the shards ConfigMap.
func configMapWarnings(g Gomega) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(shardTestNamespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "ConfigMap" && e.Regarding.Name == testSharding.ConfigMap.Name && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Note)
		}
	}
	return out
}
