package rolloutcontroller

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// rolloutFleet is the state of the end-to-end test.
type rolloutFleet struct {
	t        *testing.T
	name, ns string
	repo     *gitserver.Repo
	clusters map[string]*fleet.HostedCluster
}

// TestRolloutAcrossTheFleet rolls commits out to six HostedClusters in early, normal and late
// with maxUnavailable 1, through real Git, Package and hosted API servers.
func TestRolloutAcrossTheFleet(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	f := &rolloutFleet{t: t, name: "fleet-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	c1 := f.commit(1, true, false)
	f.addClusters("e1:early", "e2:early", "n1:normal", "n2:normal", "l1:late", "l2:late")
	newHostedClusterPackage(t, f.name, f.ns)

	// The first rollout has no current revision: it creates Packages partition by partition.
	rev1 := f.expectComplete(g, c1, 6)
	f.expectCreatedWithTheirFinalizer(g)

	// A gated commit moves one Package at a time, in partition order.
	c2 := f.commit(2, true, true)
	f.expectStep(g, c2, 6, "e1")
	g.Expect(partitionStates(getHCPkg(g, f.name).Status)).To(Equal([]string{"early=Progressing", "normal=Pending", "late=Pending"}))

	// A HostedCluster added in late mid-rollout gets the old revision until late is reached.
	f.addClusters("l3:late")
	g.Eventually(func(g Gomega) {
		g.Expect(packagesOf(g, f.name)).To(HaveKeyWithValue("l3", HaveField("Spec.Revision", c1)))
	}).Should(Succeed())
	f.expectStep(g, c2, 7, "e1")
	f.open("e1", 2)
	f.expectStep(g, c2, 7, "e1", "e2")
	f.open("e2", 2)
	f.expectStep(g, c2, 7, "e1", "e2", "n1")
	g.Expect(partitionStates(getHCPkg(g, f.name).Status)).To(Equal([]string{"early=Done", "normal=Progressing", "late=Pending"}))
	g.Expect(packagesOf(g, f.name)["l3"].Spec.Revision).To(Equal(c1))

	// A HostedCluster deleted mid-rollout loses its Package; HyperShift's deletion is not held.
	g.Expect(env.BeginDeletion(context.Background(), f.clusters["n2"])).To(Succeed())
	g.Expect(env.FinishDeletion(context.Background(), f.clusters["n2"])).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(packagesOf(g, f.name)).NotTo(HaveKey("n2")) }).Should(Succeed())
	f.expectStep(g, c2, 6, "e1", "e2", "n1")
	f.open("n1", 2)
	f.expectStep(g, c2, 6, "e1", "e2", "n1", "l1")
	f.open("l1", 2)
	f.expectStep(g, c2, 6, "e1", "e2", "n1", "l1", "l2")
	f.open("l2", 2)
	f.expectStep(g, c2, 6, "e1", "e2", "n1", "l1", "l2", "l3")
	f.open("l3", 2)
	rev2 := f.expectComplete(g, c2, 6)
	g.Expect(rev2).NotTo(Equal(rev1))
	f.expectPartitionMetrics(g, map[string]float64{"early": 2, "normal": 1, "late": 3})

	t.Run("status is not rewritten when nothing changed", func(t *testing.T) { f.testIdle(t) })
	t.Run("a bad commit halts after one cluster and the next good commit recovers", func(t *testing.T) { f.testBadCommit(t) })
	t.Run("events and revisions", func(t *testing.T) { f.testEventsAndRevisions(t) })
}

// commit pushes the gate package of commit n and returns its hash.
func (f *rolloutFleet) commit(n int, healthy, gated bool) string {
	f.t.Helper()
	c, err := f.repo.Commit("main", "commit", gatePackage(n, healthy, gated))
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	return c
}

// addClusters starts hosted clusters given as "name:partition", selected by the test's
// HostedClusterPackage.
func (f *rolloutFleet) addClusters(specs ...string) {
	f.t.Helper()
	var inputs []fleet.HostedClusterInput
	for _, s := range specs {
		name, group, _ := strings.Cut(s, ":")
		inputs = append(inputs, fleet.HostedClusterInput{Name: name,
			Labels: map[string]string{riskKey: group, "test.convoy.dev/fleet": f.name}})
	}
	hcs, err := env.AddHostedClusters(context.Background(), inputs...)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	for _, hc := range hcs {
		f.clusters[hc.Name] = hc
		f.t.Cleanup(func() { _ = hc.StopAPIServer() })
	}
}

// open opens the gate of commit n in a cluster.
func (f *rolloutFleet) open(cluster string, n int) {
	openGate(NewWithT(f.t), f.clusters[cluster], n)
}

// expectStep waits until exactly the given clusters are on commit, the last one updating, with
// the status to match, and checks that no other cluster follows while the last one is gated.
func (f *rolloutFleet) expectStep(g *WithT, commit string, total int32, updated ...string) {
	f.t.Helper()
	n := int32(len(updated))
	g.Eventually(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, f.name), commit)).To(ConsistOf(updated))
		st := getHCPkg(g, f.name).Status
		expectCounts(g, st, counts{total: total, updated: n, available: total - 1, progressed: n - 1})
		g.Expect(st.Conditions).To(haveCondition(convoyv1alpha1.ReadyCondition, metav1.ConditionFalse,
			convoyv1alpha1.ProgressingReason, "Rolling out revision "+st.UpdateRevision+": "+
				itoa(n-1)+"/"+itoa(total)+" packages progressed."))
	}).Should(Succeed(), "updated: %v", updated)
	g.Consistently(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, f.name), commit)).To(ConsistOf(updated))
	}).WithTimeout(1500*time.Millisecond).WithPolling(250*time.Millisecond).Should(Succeed(), "maxUnavailable is 1")
}

// expectComplete waits until every Package progressed at commit and returns the revision.
func (f *rolloutFleet) expectComplete(g *WithT, commit string, total int32) string {
	f.t.Helper()
	var st convoyv1alpha1.HostedClusterPackageStatus
	g.Eventually(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, f.name), commit)).To(HaveLen(int(total)))
		obj := getHCPkg(g, f.name)
		st = obj.Status
		expectCounts(g, st, counts{total: total, updated: total, available: total, progressed: total})
		g.Expect(st.CurrentRevision).To(Equal(st.UpdateRevision))
		g.Expect(st.Failures).To(BeEmpty())
		g.Expect(st.ObservedGeneration).To(Equal(obj.Generation))
		g.Expect(st.Conditions).To(haveCondition(convoyv1alpha1.ReadyCondition, metav1.ConditionTrue,
			convoyv1alpha1.SucceededReason, "Revision "+st.UpdateRevision+" is rolled out: "+itoa(total)+"/"+itoa(total)+" packages progressed."))
	}).Should(Succeed())
	for _, p := range packagesOf(g, f.name) {
		g.Expect(p.Labels).To(HaveKeyWithValue(convoyv1alpha1.HostedClusterPackageLabel, f.name))
		g.Expect(p.Labels).To(HaveKeyWithValue("team", "addons"))
		g.Expect(p.Annotations).To(HaveKey(rollout.SpecUpdatedAtAnnotation))
		g.Expect(p.Name).To(Equal(f.name))
		g.Expect(metav1.GetControllerOf(p)).To(HaveField("Name", f.name))
	}
	return st.UpdateRevision
}

// expectCreatedWithTheirFinalizer checks that every Package of the fleet carries convoy's
// finalizer from the HostedClusterPackage's apply and that nothing else wrote the Package
// itself: its install cost the pin and a status patch, no finalizer write of the Package
// controller's.
func (f *rolloutFleet) expectCreatedWithTheirFinalizer(g *WithT) {
	f.t.Helper()
	for hc, p := range packagesOf(g, f.name) {
		g.Expect(p.Finalizers).To(ConsistOf(convoyv1alpha1.Finalizer), "Package of %s", hc)
		for _, m := range p.ManagedFields {
			if m.Subresource == "" {
				g.Expect(m.Manager).To(Equal(FieldOwner), "Package of %s: written by %s (%s)", hc, m.Manager, m.Operation)
				g.Expect(m.Operation).To(Equal(metav1.ManagedFieldsOperationApply))
				g.Expect(m.FieldsV1.GetRawString()).To(ContainSubstring(`"f:finalizers"`))
			}
		}
	}
}

// expectPartitionMetrics checks the progressed gauge of each partition.
func (f *rolloutFleet) expectPartitionMetrics(g *WithT, progressed map[string]float64) {
	for partition, n := range progressed {
		g.Expect(testutil.ToFloat64(packagesGauge.WithLabelValues(f.name, partition, stateProgressed))).To(Equal(n), partition)
	}
}

// testIdle triggers reconciles that change nothing and checks that the status is not written.
func (f *rolloutFleet) testIdle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	before := getHCPkg(g, f.name).ResourceVersion
	reconciles := reconcileCount(g)
	for i := range 5 {
		labels := map[string]string{riskKey: "early", "test.convoy.dev/fleet": f.name, "touch": itoa(int32(i))}
		g.Expect(env.SetLabels(ctx, f.clusters["e1"], labels)).To(Succeed())
		g.Eventually(func(g Gomega) float64 { return reconcileCount(g) }).Should(BeNumerically(">", reconciles),
			"the label change maps to a reconcile")
		reconciles = reconcileCount(g)
	}
	g.Consistently(func(g Gomega) {
		g.Expect(getHCPkg(g, f.name).ResourceVersion).To(Equal(before))
	}).WithTimeout(2 * time.Second).Should(Succeed())
}

// reconcileCount returns how many passes the controller ran, from controller-runtime's
// controller_runtime_reconcile_total.
func reconcileCount(g Gomega) float64 {
	return kubetest.ControllerMetricSum(g, "controller_runtime_reconcile_total", "hostedclusterpackage")
}

// itoa formats a count.
func itoa(n int32) string { return strconv.Itoa(int(n)) }

// testBadCommit pushes a commit whose probe never passes, then a fix.
func (f *rolloutFleet) testBadCommit(t *testing.T) {
	g := NewWithT(t)
	f.setProgressDeadline(g, 8)

	c3 := f.commit(3, false, false)
	g.Eventually(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, f.name), c3)).To(Equal([]string{"e1"}))
		st := getHCPkg(g, f.name).Status
		expectCounts(g, st, counts{total: 6, updated: 1, available: 5, progressed: 0, failed: 1})
		g.Expect(st.Failures).To(HaveExactElements(And(
			HaveField("HostedCluster", "clusters/e1"),
			HaveField("Reason", rollout.ProgressDeadlineExceededReason),
			HaveField("Message", ContainSubstring("has not progressed at revision "+c3[:12])))))
		g.Expect(partitionStates(st)).To(Equal([]string{"early=Blocked", "normal=Pending", "late=Pending"}))
		g.Expect(st.Conditions).To(haveCondition(convoyv1alpha1.ReadyCondition, metav1.ConditionFalse,
			convoyv1alpha1.RolloutBlockedReason, "Rollout of revision "+st.UpdateRevision+
				" is blocked: 1 package(s) failed, first clusters/e1: "+st.Failures[0].Message))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, f.name), c3)).To(Equal([]string{"e1"}))
	}).WithTimeout(3*time.Second).Should(Succeed(), "the rollout halts after one cluster")
	g.Expect(testutil.ToFloat64(packagesGauge.WithLabelValues(f.name, "early", stateFailed))).To(Equal(1.0))

	// The fix is gated so that the order is observable: the failed cluster first, then the rest.
	f.setProgressDeadline(g, 600)
	c4 := f.commit(4, true, true)
	order := []string{"e1", "e2", "n1", "l1", "l2", "l3"}
	for i, cluster := range order {
		f.expectStep(g, c4, 6, order[:i+1]...)
		f.open(cluster, 4)
	}
	f.expectComplete(g, c4, 6)
}

// setProgressDeadline sets the rollout's progressDeadlineSeconds.
func (f *rolloutFleet) setProgressDeadline(g *WithT, seconds int32) {
	obj := getHCPkg(g, f.name)
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Spec.Strategy.RollingUpgrade.ProgressDeadlineSeconds = &seconds
	g.Expect(env.Client.Patch(context.Background(), obj, patch)).To(Succeed())
}

// testEventsAndRevisions checks the rollout's events and its ControllerRevisions.
func (f *rolloutFleet) testEventsAndRevisions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(env.Client.List(ctx, list)).To(Succeed())
		reasons := map[string]bool{}
		for _, e := range list.Items {
			if e.Regarding.Kind == "HostedClusterPackage" && e.Regarding.Name == f.name {
				reasons[e.Reason] = true
			}
		}
		g.Expect(reasons).To(HaveKey(RevisionCreatedReason))
		g.Expect(reasons).To(HaveKey(PartitionStartedReason))
		g.Expect(reasons).To(HaveKey(PartitionCompletedReason))
		g.Expect(reasons).To(HaveKey(PackageFailedReason))
		g.Expect(reasons).To(HaveKey(RolloutCompletedReason))
	}).Should(Succeed())

	obj := getHCPkg(g, f.name)
	list := &appsv1.ControllerRevisionList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(4), "one revision per commit")
	name := regexp.MustCompile("^" + f.name + "-[0-9a-f]{16}$")
	for _, cr := range list.Items {
		g.Expect(cr.Name).To(MatchRegexp(name.String()))
		g.Expect(cr.Labels).To(HaveKeyWithValue(convoyv1alpha1.HostedClusterPackageLabel, f.name))
		g.Expect(metav1.IsControlledBy(&cr, obj)).To(BeTrue())
	}
	g.Expect(list.Items).To(ContainElement(HaveField("Name", obj.Status.CurrentRevision)))
}
