package synccontroller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// settledRepeats reads convoy_sync_settled_repeats_total of the Package controller.
func settledRepeats(g Gomega) float64 { return settledRepeatsOf(g, "package") }

// settledRepeatsOf reads convoy_sync_settled_repeats_total of a controller.
func settledRepeatsOf(g Gomega, controller string) float64 {
	return kubetest.ControllerMetricSum(g, "convoy_sync_settled_repeats_total", controller)
}

// A settled Package's passes repeat its last settled one without reading its objects; every
// change the watch delivers (an edit, a deletion, a regression) still gets a pass in full.
func TestSettledPackageRepeatsItsPassAndStillSeesEveryChange(t *testing.T) {
	env.Require(t)
	requireMemory(t)
	g := NewWithT(t)
	ns := fleet.NewNamespaceIn(t, env.Client)
	repo := newGitSource(t, ns)
	c1, err := repo.Commit("main", "one", map[string]string{
		"pkg/manifest.yaml": manifest("outside"),
		"pkg/objects.yaml":  cmYAML("outside", "", "out", "1") + cmYAML("outside", "", "other", "1"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, "app", "pkg", func(p *convoyv1alpha1.Package) {
		p.Spec.Interval = &metav1.Duration{Duration: time.Second}
	})
	pkg := expectAvailableAt(g, key, c1)
	repeated := func(g Gomega) {
		start := settledRepeats(g)
		g.Eventually(settledRepeats).WithTimeout(15*time.Second).Should(BeNumerically(">=", start+2),
			"passes every second of a settled Package repeat the settled one")
	}
	repeated(g)
	g.Expect(getPackage(g, key).ResourceVersion).To(Equal(pkg.ResourceVersion), "a repeated pass writes no status")

	expectEditRepaired(g, ns, "out")
	repeated(g)
	expectDeletionRepaired(g, ns, "other")
	repeated(g)

	// An ownership label removed by hand: the object stays in the watch, which tells no owner
	// from its new labels; its old ones name the Package, which refuses to take it over.
	other := kubetest.Get(g, env.Client, kubetest.ConfigMap(ns, "other", nil))
	labels := other.GetLabels()
	delete(labels, convoyv1alpha1.PackageNamespaceLabel)
	other.SetLabels(labels)
	g.Expect(env.Client.Update(context.Background(), other)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getPackage(g, key).Status.Conditions).To(
			haveCondition(convoyv1alpha1.ReadyCondition, metav1.ConditionFalse, "refusing to take over"))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}
