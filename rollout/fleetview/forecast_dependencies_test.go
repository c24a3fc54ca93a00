package fleetview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// TestDependencyOrder orders a chain and a diamond level by level, cuts a cycle where it
// closes, and puts a missing dependency first.
func TestDependencyOrder(t *testing.T) {
	g := NewWithT(t)
	hcpkg := func(name string, needs ...string) *convoyv1alpha1.HostedClusterPackage {
		h := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, n := range needs {
			h.Spec.DependsOn = append(h.Spec.DependsOn, convoyv1alpha1.PackageDependency{Name: n})
		}
		return h
	}
	byName := map[string]*convoyv1alpha1.HostedClusterPackage{}
	for _, h := range []*convoyv1alpha1.HostedClusterPackage{hcpkg("crds"), hcpkg("certs", "crds"), hcpkg("webhook", "certs"),
		hcpkg("monitoring", "crds", "gone"), hcpkg("app", "certs", "monitoring"), hcpkg("x", "y"), hcpkg("y", "x")} {
		byName[h.Name] = h
	}
	g.Expect(dependencyOrder("app", byName)).To(Equal([][]string{{"crds", "gone"}, {"certs", "monitoring"}, {"app"}}))
	g.Expect(dependencyOrder("webhook", byName)).To(Equal([][]string{{"crds"}, {"certs"}, {"webhook"}}))
	g.Expect(dependencyOrder("x", byName)).To(Equal([][]string{{"y"}, {"x"}}))
}

// TestForecastWithDependencies: the forecast moves the clusters where the dependency is
// available, holds the others, names what they wait for and prints the order.
func TestForecastWithDependencies(t *testing.T) {
	g := NewWithT(t)
	f := dependencyForecast(g)
	g.Expect(f.Blocked).To(HavePrefix("2 Package(s) wait for their dependencies, which the forecast holds as they are now; " +
		"first: Package clusters-late-5/addon waits for HostedClusterPackage crds on HostedCluster clusters/late-5: it has no Package there yet"))
	var out bytes.Buffer
	g.Expect(f.WriteText(&out)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("Order on each HostedCluster (a level installs or moves once the levels before it are available):\n  1. crds\n  2. addon\n"))
	g.Expect(out.String()).To(ContainSubstring("DependencyNotReady\tPackage clusters-late-5/addon waits for HostedClusterPackage crds"))
	updated := 0
	for _, b := range f.Batches {
		for _, s := range b.Steps {
			g.Expect(s.HostedCluster).NotTo(HavePrefix("clusters/late"))
			updated++
		}
	}
	g.Expect(updated).To(Equal(4))
}

// TestForecastMarkdownShowsTheOrderAndTheWaits prints the same forecast as a pull request
// comment: the order as a numbered list and one table row per waiting Package, naming its
// cluster, partition and dependency.
func TestForecastMarkdownShowsTheOrderAndTheWaits(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	g.Expect(dependencyForecast(g).WriteMarkdown(&out)).To(Succeed())
	md := out.String()
	g.Expect(md).To(ContainSubstring("#### Order on each HostedCluster\n\nA level installs or moves once the levels before it are available.\n\n1. `crds`\n2. `addon`\n"))
	g.Expect(md).To(ContainSubstring("#### Waiting for dependencies\n"))
	g.Expect(md).To(ContainSubstring("| HostedCluster | Partition | Waits for | Reason | Message |\n"))
	g.Expect(md).To(ContainSubstring("| clusters/late-5 | late | crds | DependencyNotReady | Package clusters-late-5/addon waits for HostedClusterPackage crds " +
		"on HostedCluster clusters/late-5: it has no Package there yet |"))
	g.Expect(strings.Index(md, "#### Waiting")).To(BeNumerically("<", strings.Index(md, "**The rollout would stop:**")))
}

// dependencyForecast forecasts addon over the gated fleet, depending on crds, whose Package has
// progressed on the first four HostedClusters only.
func dependencyForecast(g Gomega) *Forecast {
	snap := gatedSnapshot(nil)
	dep := map[string]*convoyv1alpha1.Package{}
	rev := rollout.Revision{Name: "crds-1", Commit: strings.Repeat("c", 40), Template: snap.HostedClusterPackage.Spec.Template.Spec}
	for _, hc := range snap.HostedClusters[:4] {
		pkg := progressedPackage("crds", hc.Name, rev, gatedNow.Add(-time.Hour))
		dep[pkg.Namespace] = &pkg
	}
	snap.Dependencies = []rollout.Dependency{{Name: "crds", Packages: dep}}
	snap.Order = [][]string{{"crds"}, {"addon"}}

	f, err := NewForecast(snap, ForecastOptions{Now: gatedNow})
	g.Expect(err).NotTo(HaveOccurred())
	return f
}
