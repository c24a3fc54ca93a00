package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// dependencyOf returns the Dependency named name whose Packages are dep's.
func dependencyOf(name string, dep *world) Dependency {
	return Dependency{Name: name, Selector: dep.hcpkg.Spec.HostedClusterSelector, Packages: dep.packages}
}

// computeWith plans w with the given dependencies.
func computeWith(g Gomega, w *world, deps ...Dependency) *Plan {
	in := w.input()
	in.Dependencies = deps
	plan, err := Compute(in)
	g.Expect(err).NotTo(HaveOccurred())
	return plan
}

// waitingClusters lists the HostedClusters of plan.Waiting as "<cluster> <dependency> <reason>".
func waitingClusters(plan *Plan) []string {
	var out []string
	for _, w := range plan.Waiting {
		out = append(out, w.HostedCluster+" "+w.Dependency+" "+w.Reason)
	}
	return out
}

// TestDependencyHoldsNewClusters: a new cluster gets the Package only once its dependency's
// Package progressed there; the others wait, take no slot and keep their partition from
// being done (rule 26 of package rollout).
func TestDependencyHoldsNewClusters(t *testing.T) {
	g := NewWithT(t)
	w := newWorld()
	w.hcpkg.Spec.Strategy = convoyv1alpha1.HostedClusterPackageStrategy{Instant: &convoyv1alpha1.InstantStrategy{}}
	w.fleet(1, "early")
	w.cluster("early-2", "early")
	w.current = nil
	dep := newWorld()
	dep.clusters = w.clusters
	dep.pkg("early-1", revision(7), t0.Add(-time.Hour))

	plan := computeWith(g, w, dependencyOf("cert-manager", dep))

	g.Expect(describe(plan)).To(ConsistOf("create early-1 rev2 NewTarget"))
	g.Expect(waitingClusters(plan)).To(ConsistOf("clusters/early-2 cert-manager DependencyNotReady"))
	g.Expect(plan.Waiting[0].Message).To(Equal("Package clusters-early-2/addon waits for HostedClusterPackage cert-manager " +
		"on HostedCluster clusters/early-2: it has no Package there yet"))
	g.Expect(plan.Counts.Waiting).To(BeEquivalentTo(1))
	g.Expect(plan.Partitions[0].Waiting).To(BeEquivalentTo(1))
	g.Expect(plan.Completed).To(BeFalse())
	g.Expect(plan.Failed).To(BeEmpty())
}

// TestDependencyUpgradeWaitsOnItsClusterOnly: while the dependency's Package is not available
// on one cluster (its upgrade broke there, or is under way), the dependant's Package there
// stays on its revision without a slot nor a failure, and every other cluster moves on.
func TestDependencyUpgradeWaitsOnItsClusterOnly(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal").progressedAll(revision(1))
	w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(1))
	dep := newWorld()
	dep.clusters = w.clusters
	dep.progressedAll(revision(5))
	setSpec(dep.packages[namespaceOf("early-1")], revision(6), t0.Add(-time.Hour))
	setCondition(dep.packages[namespaceOf("early-1")], convoyv1alpha1.AvailableCondition, metav1.ConditionFalse,
		t0.Add(-time.Hour), "webhook down")
	// The dependant's own Package on early-1 broke with its dependency, long ago.
	setCondition(w.packages[namespaceOf("early-1")], convoyv1alpha1.AvailableCondition, metav1.ConditionFalse,
		t0.Add(-time.Hour), "no issuer")

	plan := computeWith(g, w, dependencyOf("cert-manager", dep))

	g.Expect(describe(plan)).To(ConsistOf("update early-2 rev2 WithinBudget"))
	g.Expect(waitingClusters(plan)).To(ConsistOf("clusters/early-1 cert-manager DependencyNotReady"))
	g.Expect(plan.Waiting[0].Message).To(ContainSubstring("is not available at commit 06eeeeeeeeee: applying 06eeeeeeeeee"))
	g.Expect(plan.Failed).To(BeEmpty())
	g.Expect(states(plan)).To(Equal([]string{"early=Progressing", "normal=Pending", "late=Done"}))
}

// TestDependencyMissingOrNotSelecting: a dependency that does not exist holds every cluster; one
// whose selector does not select a cluster holds that cluster; neither deletes anything.
func TestDependencyMissingOrNotSelecting(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		g := NewWithT(t)
		w := newWorld().fleet(1, "early", "late")
		w.current = nil
		plan := computeWith(g, w, Dependency{Name: "cert-manager", Missing: true})
		g.Expect(describe(plan)).To(BeEmpty())
		g.Expect(waitingClusters(plan)).To(HaveLen(2))
		g.Expect(plan.Waiting[0].Message).To(HaveSuffix("no HostedClusterPackage cert-manager exists"))
	})
	t.Run("not selecting", func(t *testing.T) {
		g := NewWithT(t)
		w := newWorld().fleet(1, "early")
		w.current = nil
		dep := newWorld()
		dep.hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "dev"}}
		plan := computeWith(g, w, dependencyOf("cert-manager", dep))
		g.Expect(describe(plan)).To(BeEmpty())
		g.Expect(plan.Waiting[0].Message).To(HaveSuffix("its hostedClusterSelector does not select the HostedCluster"))
	})
}

// TestDependencyMinimum: a dependency's Package that applied a commit the controller says does
// not meet the minimum holds the cluster, naming both.
func TestDependencyMinimum(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(1, "early")
	w.current = nil
	dep := newWorld()
	dep.clusters = w.clusters
	dep.progressedAll(revision(5))
	d := dependencyOf("cert-manager", dep)
	d.Minimum = "a commit that contains 09eeeeeeeeee"
	d.MeetsMinimum = map[string]bool{revision(5).Commit: false}

	plan := computeWith(g, w, d)
	g.Expect(describe(plan)).To(BeEmpty())
	g.Expect(plan.Waiting[0].Message).To(HaveSuffix("runs commit 05eeeeeeeeee, not a commit that contains 09eeeeeeeeee"))

	d.MeetsMinimum[revision(5).Commit] = true
	g.Expect(describe(computeWith(g, w, d))).To(ConsistOf("create early-1 rev2 NewTarget"))
}

// TestDependencyTeardownInReverse: the Package of a deselected or deleted HostedCluster stays
// while a dependant still has a Package in its namespace, and goes once none has.
func TestDependencyTeardownInReverse(t *testing.T) {
	for _, deleted := range []bool{false, true} {
		t.Run(map[bool]string{false: "deselected", true: "deleted"}[deleted], func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld().fleet(1, "early").progressedAll(revision(2))
			w.current = &w.update
			w.hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}
			if deleted {
				w.remove("early-1")
			} else {
				w.find("early-1").Labels["tier"] = "dev"
			}
			in := w.input()
			in.Dependants = map[string][]string{namespaceOf("early-1"): {"webhook"}}
			plan, err := Compute(in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(describe(plan)).To(BeEmpty())
			g.Expect(plan.Waiting).To(HaveLen(1))
			g.Expect(plan.Waiting[0].Reason).To(Equal(DependantsRemainReason))
			g.Expect(plan.Waiting[0].Message).To(Equal("Package clusters-early-1/addon is deleted once the Packages of webhook are gone from its namespace"))

			in.Dependants = nil
			plan, err = Compute(in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(describe(plan)).To(HaveLen(1))
		})
	}
}

// TestDependencyReadyMovesAsUsual: once every dependency's Package progressed on every
// cluster, the plan is the one without dependencies.
func TestDependencyReadyMovesAsUsual(t *testing.T) {
	g := NewWithT(t)
	w := newWorld().fleet(2, "early", "normal").progressedAll(revision(1))
	dep := newWorld()
	dep.clusters = w.clusters
	dep.progressedAll(revision(5))
	with := computeWith(g, w, dependencyOf("cert-manager", dep))
	without := compute(g, w)
	g.Expect(describe(with)).To(Equal(describe(without)))
	g.Expect(with.Waiting).To(BeEmpty())
}
