package takeover

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/cmd/convoy/importer"
	"github.com/convoy-gitops/convoy/test/bench"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/flux"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// Names of the story.
const (
	sourceName  = "addons"
	packagePath = "addon"
	tierKey     = "tier"
	// fluxName and fluxNamespace are kustomize-controller's labels on what it applies.
	fluxName      = "kustomize.toolkit.fluxcd.io/name"
	fluxNamespace = "kustomize.toolkit.fluxcd.io/namespace"
)

// tiers are the partitions, in rollout order, one HostedCluster each.
var tiers = []string{"early", "late"}

// soak is how long a partition holds the next once its Packages progressed: late's objects
// move that long after early's, less the second the soak may lose to the progressed
// condition's time, which the API keeps in whole seconds.
const soak = 3 * time.Second

// addonFiles is the add-on at one image.
func addonFiles(image string) map[string]string { return flux.AddonFiles(packagePath, image) }

// story is one run: the fleet, Flux, the Git repository and convoy.
type story struct {
	env    *fleet.Fleet
	flux   *flux.Flux
	repo   *gitserver.Repo
	url    string
	ns     string
	hcps   []string
	dir    string
	kcfg   string
	ctrl   *bench.Controller
	convoy string
	hcpkg  string
}

// TestTakeoverFromARunningFlux moves an add-on that a real Flux applies into two hosted
// control plane namespaces to a HostedClusterPackage, as the guide says: Flux suspended and its
// pruning off, then convoy takes over every object without re-creating it or changing its pod
// template, rolls out a later commit partition by partition, and stops with a reason when
// Flux is resumed by mistake, which deletes nothing; the guide's way back (Flux suspended, the
// label convoy.dev/adopted-from removed) hands the objects to convoy again.
func TestTakeoverFromARunningFlux(t *testing.T) {
	fleet.RequireAPIServers(t)
	s := startStory(t)
	first := gittest.Commit(t, s.repo, "Add the addon", addonFiles("addon:1.0"))
	s.startFlux(t)
	before := s.expectFluxApplied(t)
	t.Logf("Flux applied %s into %v", first[:8], s.hcps)

	s.setFlux(t, map[string]any{"suspend": true})
	s.setFlux(t, map[string]any{"prune": false})
	// Note: the Kustomizations' interval (2s) is what `convoy import` gives the Packages.
	s.startConvoy(t)
	s.createHostedClusterPackage(t)
	s.expectPartitionByPartition(t, "taken over", func(d *unstructured.Unstructured) bool { return d.GetLabels()[fluxName] == "" })
	s.expectImage(t, "addon:1.0", true)
	s.expectTakenOver(t, before)

	gittest.Commit(t, s.repo, "Move to 1.1", addonFiles("addon:1.1"))
	s.expectPartitionByPartition(t, "at addon:1.1", hasImage("addon:1.1"))
	s.expectImage(t, "addon:1.1", true)
	s.expectSameObjects(t, before)
	t.Log("convoy rolled out the next commit over the objects Flux applied")

	s.setFlux(t, map[string]any{"suspend": false})
	s.expectContested(t)
	s.expectSameObjects(t, before)
	s.expectImage(t, "addon:1.1", false)
	t.Log("Flux resumed by mistake: convoy stopped with TakeoverContested, nothing deleted or reverted")

	s.setFlux(t, map[string]any{"suspend": true})
	s.takeBack(t)
	s.expectSameObjects(t, before)
	s.expectImage(t, "addon:1.1", true)
	t.Log("the guide's way back: Flux suspended, the label removed, convoy took every object over again")
}

// startStory starts the fleet with Flux's CRDs, two HostedClusters without API servers (the
// add-on lives in their HCP namespaces) and a Git server.
func startStory(t *testing.T) *story {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	env, err := fleet.Start(ctx, fleet.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	s := &story{env: env, dir: t.TempDir()}
	g.Expect(flux.InstallCRDs(ctx, env.Client)).To(Succeed())
	s.ns = env.NewNamespace(t)
	for _, tier := range tiers {
		hc, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Namespace: s.ns, Name: tier,
			Labels: map[string]string{tierKey: tier}, WithoutAPIServer: true})
		g.Expect(err).NotTo(HaveOccurred())
		s.hcps = append(s.hcps, hc.HCPNamespace)
	}
	srv, repo := gittest.NewServer(t)
	s.repo, s.url = repo, srv.HTTPURL("repo")
	kubeconfig, err := simfleet.KubeConfigFor(env.Config, "management")
	g.Expect(err).NotTo(HaveOccurred())
	s.kcfg = filepath.Join(s.dir, "kubeconfig")
	g.Expect(os.WriteFile(s.kcfg, kubeconfig, 0o600)).To(Succeed())
	return s
}

// startFlux starts Flux's controllers with a GitRepository of the repository and a
// Kustomization per HCP namespace, as a fleet on Flux has them.
func (s *story) startFlux(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	f, err := flux.Start(ctx, flux.Options{Kubeconfig: s.kcfg})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(f.Stop)
	s.flux = f
	repo := flux.Object("source.toolkit.fluxcd.io/v1", "GitRepository", s.ns, sourceName, map[string]any{
		"url": s.url, "interval": "2s", "ref": map[string]any{"branch": "main"}})
	g.Expect(s.env.Client.Create(ctx, repo)).To(Succeed())
	for _, hcp := range s.hcps {
		ks := flux.Object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", s.ns, "addon-"+hcp, map[string]any{
			"interval": "2s", "path": "./" + packagePath, "prune": true, "targetNamespace": hcp,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": sourceName}})
		g.Expect(s.env.Client.Create(ctx, ks)).To(Succeed())
	}
}

// setFlux merges fields into the spec of every Kustomization of the story.
func (s *story) setFlux(t *testing.T, fields map[string]any) {
	t.Helper()
	g := NewWithT(t)
	for _, hcp := range s.hcps {
		ks := flux.Object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", s.ns, "addon-"+hcp, nil)
		patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":%s}`, mustJSON(g, fields))))
		g.Expect(s.env.Client.Patch(context.Background(), ks, patch)).To(Succeed())
	}
}

// startConvoy runs `convoy controller` as a process ($CONVOY_TEST_CONVOY or a build).
func (s *story) startConvoy(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	convoy, err := fleet.ConvoyBinary(s.dir)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := bench.StartController(context.Background(), bench.ControllerInput{Binary: convoy, Kubeconfig: s.kcfg,
		Dir: s.dir, Concurrency: 4})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Stop() })
	s.ctrl, s.convoy = c, convoy
}

// createHostedClusterPackage writes the convoy objects of the move with `convoy import` from
// the cluster: a GitSource of the GitRepository and a HostedClusterPackage for the
// Kustomizations of the add-on's path, taking over from Flux. As import's notes ask, the test
// adds what Flux's objects do not say: the HostedClusters to select and their partitions.
func (s *story) createHostedClusterPackage(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	out, err := exec.Command(s.convoy, "import", "--kubeconfig", s.kcfg).Output()
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := importer.Decode(bytes.NewReader(out))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(2), string(out))
	gs := &convoyv1alpha1.GitSource{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, gs)).To(Succeed())
	g.Expect(gs.Spec.URL).To(Equal(s.url))
	g.Expect(s.env.Client.Create(ctx, gs)).To(Succeed())
	hcpkg := &convoyv1alpha1.HostedClusterPackage{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(objs[1].Object, hcpkg)).To(Succeed())
	g.Expect(hcpkg.Spec.Template.Spec.Path).To(Equal(packagePath))
	g.Expect(hcpkg.Spec.Template.Spec.Adopt.From).To(ConsistOf(convoyv1alpha1.AdoptFromFlux))
	hcpkg.Spec.Partition = &convoyv1alpha1.PartitionSpec{LabelKey: tierKey, Order: convoyv1alpha1.PartitionOrder{Static: tiers}}
	hcpkg.Spec.Strategy.RollingUpgrade = &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		SoakSeconds: int32(soak / time.Second)}
	hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: tierKey, Operator: metav1.LabelSelectorOpExists}}}
	g.Expect(s.env.Client.Create(ctx, hcpkg)).To(Succeed())
	s.hcpkg = hcpkg.Name
}
