package rolloutcontroller

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// TestFleetSafetyOnABadDay installs a broken package on six HostedClusters without partitions
// and with maxUnavailable 1, fixes it, then makes the selector match nothing while paused, and
// unpauses: every change to a live cluster goes through the budget and the pause.
func TestFleetSafetyOnABadDay(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	f := &rolloutFleet{t: t, name: "safety-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	broken := f.commit(1, false, false)
	names := []string{"sa", "sb", "sc", "sd", "se", "sf"}
	f.addClusters(prefixed(f.name, names, "")...)
	deadline := int32(5)
	newHostedClusterPackage(t, f.name, f.ns, func(o *convoyv1alpha1.HostedClusterPackage) {
		o.Spec.Partition = nil
		o.Spec.Strategy.RollingUpgrade.ProgressDeadlineSeconds = &deadline
	})

	// The first install of a broken package reaches exactly one cluster, then stalls.
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, f.name).Status
		g.Expect(st.Conditions).To(haveConditionStatus(convoyv1alpha1.StalledCondition, metav1.ConditionTrue))
		g.Expect(st.FailedPackages).To(Equal(int32(1)))
	}).Should(Succeed())
	stalled := getHCPkg(g, f.name)
	g.Expect(readyMessage(stalled)).To(HavePrefix("Rollout of revision " + stalled.Status.UpdateRevision + " is blocked: 1 package(s) failed"))
	g.Consistently(func(g Gomega) { g.Expect(packagesOf(g, f.name)).To(HaveLen(1)) }, 3*time.Second).Should(Succeed())
	g.Expect(onCommit(packagesOf(g, f.name), broken)).To(HaveLen(1))

	// A fixed commit completes the install and clears Stalled.
	fixed := f.commit(2, true, false)
	f.expectComplete(g, fixed, 6)
	g.Expect(getHCPkg(g, f.name).Status.Conditions).NotTo(haveConditionStatus(convoyv1alpha1.StalledCondition, metav1.ConditionTrue))

	// A selector typo under spec.paused deletes nothing.
	patchHCPkg(g, f.name, `{"spec":{"paused":true,"hostedClusterSelector":{"matchLabels":{"test.convoy.dev/fleet":"typo"}}}}`)
	g.Eventually(func(g Gomega) {
		g.Expect(getHCPkg(g, f.name).Status.PendingDeletions).To(Equal(int32(6)))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, p := range packagesOf(g, f.name) {
			g.Expect(p.DeletionTimestamp).To(BeNil())
		}
		g.Expect(packagesOf(g, f.name)).To(HaveLen(6))
	}, 3*time.Second).Should(Succeed())

	// Unpaused, the Packages go one at a time, in rollout order, each torn down in its cluster.
	patchHCPkg(g, f.name, `{"spec":{"paused":false}}`)
	order := f.watchDeletions(g, names)
	g.Expect(order).To(Equal(prefixed(f.name, names, "")))
	for _, name := range names {
		hc := f.clusters[f.name+"-"+name]
		err := hc.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "gate-2"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the add-on is torn down in "+name)
	}
}

// watchDeletions polls the Packages until all are gone, fails if more than one is being
// deleted at a time, and returns the clusters in the order their Package started to go.
func (f *rolloutFleet) watchDeletions(g *WithT, names []string) []string {
	var order []string
	g.Eventually(func() int {
		pkgs := packagesOf(g, f.name)
		going := 0
		for _, name := range prefixed(f.name, names, "") {
			p, ok := pkgs[name]
			if !ok || p.DeletionTimestamp != nil {
				if !slices.Contains(order, name) {
					order = append(order, name)
				}
				going += int(one(ok))
			}
		}
		g.Expect(going).To(BeNumerically("<=", 1), "maxUnavailable 1 bounds the deletions in flight")
		return len(pkgs)
	}).WithPolling(50 * time.Millisecond).Should(BeZero())
	return order
}

// TestForeignPackageAndHibernatedClusterAreReported rolls out to three HostedClusters: one
// holds a Package of the same name that the HostedClusterPackage does not own, one is not
// Available. Neither changes, and status names both.
func TestForeignPackageAndHibernatedClusterAreReported(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	f := &rolloutFleet{t: t, name: "foreign-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	c1 := f.commit(1, true, false)
	f.addClusters(prefixed(f.name, []string{"fa", "fb", "fc"}, ":early")...)
	fa, fc := f.clusters[f.name+"-fa"], f.clusters[f.name+"-fc"]
	g.Expect(env.SetAvailable(context.Background(), fc, false)).To(Succeed())
	foreign := &convoyv1alpha1.Package{
		ObjectMeta: metav1.ObjectMeta{Namespace: fa.HCPNamespace, Name: f.name, Labels: map[string]string{"owner": "someone"}},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
			SourceRef: convoyv1alpha1.SourceReference{Namespace: f.ns, Name: sourceName}, Path: "elsewhere", Paused: true}},
	}
	g.Expect(env.Client.Create(context.Background(), foreign)).To(Succeed())
	before := foreign.DeepCopy()
	newHostedClusterPackage(t, f.name, f.ns)

	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, f.name).Status
		g.Expect(st.SkippedPackages).To(Equal(int32(2)))
		g.Expect(st.Skipped).To(ConsistOf(
			HaveField("Reason", "PackageConflict"), HaveField("Reason", "HostedClusterNotAvailable")))
		g.Expect(onCommit(packagesOf(g, f.name), c1)).To(Equal([]string{f.name + "-fb"}))
		g.Expect(st.Conditions).To(haveConditionStatus(convoyv1alpha1.ReadyCondition, metav1.ConditionTrue))
	}).Should(Succeed())
	ready := readyMessage(getHCPkg(g, f.name))
	g.Expect(ready).To(ContainSubstring("1/3 packages progressed. 2 skipped"), "Ready does not claim every cluster")

	after := &convoyv1alpha1.Package{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(foreign), after)).To(Succeed())
	g.Expect(after.Spec).To(Equal(before.Spec))
	g.Expect(after.OwnerReferences).To(BeEmpty())
	g.Expect(after.Labels).To(Equal(before.Labels))
	g.Expect(after.Generation).To(Equal(before.Generation))
}

// prefixed returns "<prefix>-<name><suffix>" for each name.
func prefixed(prefix string, names []string, suffix string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + "-" + n + suffix
	}
	return out
}

// patchHCPkg merge-patches a HostedClusterPackage.
func patchHCPkg(g *WithT, name, patch string) {
	obj := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: name}}
	g.Expect(env.Client.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", []byte(patch)))).To(Succeed())
}

// readyMessage returns the message of the Ready condition.
func readyMessage(obj *convoyv1alpha1.HostedClusterPackage) string {
	for _, c := range obj.Status.Conditions {
		if c.Type == convoyv1alpha1.ReadyCondition {
			return c.Message
		}
	}
	return ""
}

// haveConditionStatus matches a condition list holding type t with status s.
func haveConditionStatus(t string, s metav1.ConditionStatus) OmegaMatcher {
	return ContainElement(And(HaveField("Type", t), HaveField("Status", s)))
}

// one converts a bool to 1 or 0.
func one(b bool) int {
	if b {
		return 1
	}
	return 0
}
