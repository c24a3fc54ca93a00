package dashboard

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

// dependencyInput is a first install of webhook over the HostedClusters a and b, which depends
// on cert-manager: cert-manager's Package on a has progressed, on b it has not, so the planner
// holds webhook's Package on b.
func dependencyInput() rollout.Input {
	two := intstr.FromInt32(2)
	template := convoyv1alpha1.PackageTemplateSpec{SourceRef: convoyv1alpha1.SourceReference{Namespace: "fleet", Name: "addons"}, Path: "webhook"}
	h := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "webhook", UID: "uid-webhook"},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			Strategy: convoyv1alpha1.HostedClusterPackageStrategy{RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: &two}},
			Template: convoyv1alpha1.PackageTemplate{Spec: template}, DependsOn: []convoyv1alpha1.PackageDependency{{Name: "cert-manager"}}}}
	now := time.Now()
	certManager := map[string]*convoyv1alpha1.Package{}
	for _, hc := range []struct {
		name       string
		progressed bool
	}{{"a", true}, {"b", false}} {
		ns := convoyv1alpha1.HostedControlPlaneNamespace("clusters", hc.name)
		pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cert-manager", Generation: 1},
			Spec: convoyv1alpha1.PackageSpec{Revision: fixtureCommitA}}
		pkg.Status = packageStatus(1, fixtureCommitA, hc.progressed, now.Add(-time.Minute))
		certManager[ns] = pkg
	}
	return rollout.Input{HostedClusterPackage: h, Now: now,
		HostedClusters: []rollout.HostedCluster{{Namespace: "clusters", Name: "a", Available: true}, {Namespace: "clusters", Name: "b", Available: true}},
		UpdateRevision: rollout.Revision{Name: "webhook-1", Commit: fixtureCommitB, Number: 1, Template: template, CreatedAt: now.Add(-time.Hour)},
		Dependencies:   []rollout.Dependency{{Name: "cert-manager", Packages: certManager}}}
}

// TestRolloutGridShowsPackagesWaitingOnADependency plans the first install above: b's cell is
// in the dependency state, naming cert-manager, the HostedCluster and why, counted apart from
// the targets waiting for their turn, and the grid can be filtered to it.
func TestRolloutGridShowsPackagesWaitingOnADependency(t *testing.T) {
	g := NewWithT(t)
	in := dependencyInput()
	plan, err := rollout.Compute(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Waiting).To(ConsistOf(HaveField("HostedCluster", "clusters/b")), "the planner holds b")

	cells := classify(plan, in)
	g.Expect(cells).To(HaveLen(2))
	g.Expect(cells[0].Cell).To(And(HaveField("HostedCluster", "clusters/a"), HaveField("State", StateWaiting)))
	g.Expect(cells[1].Cell).To(And(HaveField("HostedCluster", "clusters/b"), HaveField("State", StateDependency),
		HaveField("Reason", convoyv1alpha1.DependencyNotReadyReason),
		HaveField("Message", And(ContainSubstring("waits for HostedClusterPackage cert-manager on HostedCluster clusters/b"),
			ContainSubstring("is not available")))))

	rows := gridRows(plan, cells, RolloutQuery{Limit: 10, State: StateDependency})
	g.Expect(rows).To(HaveLen(1))
	g.Expect(rows[0].Counts).To(Equal(map[string]int{StateWaiting: 1, StateDependency: 1}))
	g.Expect(rows[0].Cells).To(ConsistOf(HaveField("HostedCluster", "clusters/b")))
	_, err = rolloutQuery("", "", StateDependency)
	g.Expect(err).NotTo(HaveOccurred(), "the page may filter the grid to the dependency state")
}

// TestFleetItemCarriesWhatWaitsOnADependency gives the page the rollout's dependencies, the
// count of Packages that wait for one and the status's samples, and checks that the page's
// script draws them.
func TestFleetItemCarriesWhatWaitsOnADependency(t *testing.T) {
	g := NewWithT(t)
	h := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "webhook"}}
	h.Status.Dependencies = []string{"cert-manager"}
	h.Status.WaitingPackages = 1
	h.Status.Waiting = []convoyv1alpha1.DependencyWait{{HostedCluster: "clusters/b", Dependency: "cert-manager",
		Reason: convoyv1alpha1.DependencyNotReadyReason, Message: "Package clusters-b/webhook waits for HostedClusterPackage cert-manager"}}
	raw, err := json.Marshal(fleetItem(&fleetview.Snapshot{HostedClusterPackage: h}))
	g.Expect(err).NotTo(HaveOccurred())
	var page map[string]any
	g.Expect(json.Unmarshal(raw, &page)).To(Succeed())
	g.Expect(page).To(HaveKeyWithValue("dependsOn", ConsistOf("cert-manager")))
	g.Expect(page).To(HaveKeyWithValue("packages", HaveKeyWithValue("waiting", BeEquivalentTo(1))))
	g.Expect(page).To(HaveKeyWithValue("waiting", ConsistOf(And(HaveKeyWithValue("hostedCluster", "clusters/b"),
		HaveKeyWithValue("dependency", "cert-manager"), HaveKeyWithValue("reason", "DependencyNotReady")))))

	script, err := assets.ReadFile("assets/app.js")
	g.Expect(err).NotTo(HaveOccurred())
	js := string(script)
	g.Expect(js).To(ContainSubstring(`"dependency"`), "the legend and the grid know the state")
	g.Expect(js).To(ContainSubstring("waitingList(v)"), "the rollout page lists the waiting Packages")
	g.Expect(js).To(ContainSubstring("dependsOnRow(it)"), "the fleet page names each rollout's dependencies")
	g.Expect(js).To(ContainSubstring("waiting for dependencies"), "the fleet page counts them")
	css, err := assets.ReadFile("assets/app.css")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Contains(string(css), ".state-dependency")).To(BeTrue(), "the cells of the state have a colour")
}
