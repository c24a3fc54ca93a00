package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/manifests/diff"
	"github.com/convoy-gitops/convoy/sync/engine"
	"github.com/convoy-gitops/convoy/sync/hosted"
	"github.com/convoy-gitops/convoy/sync/synccontroller"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// livePackage is a package with a management phase and a hosted-cluster phase.
const livePackage = "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: live}\n" +
	"spec:\n  phases: [{name: deploy}, {name: inside, class: hosted-cluster}]\n"

// liveConfigMap is a ConfigMap of phase with one data key.
func liveConfigMap(name, namespace, phase, key, value string) string {
	ns := ""
	if namespace != "" {
		ns = "  namespace: " + namespace + "\n"
	}
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" + ns +
		"  annotations: {convoy.dev/phase: " + phase + "}\ndata: {" + key + ": \"" + value + "\"}\n"
}

func TestLiveDiffDryRunsTheNewRevisionAndWritesNothing(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	ctx := context.Background()
	env, err := fleet.Start(ctx, fleet.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = env.Stop() }()
	hc, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "blue"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := hc.HCPNamespace

	srv, repo := gittest.NewServer(t)
	oldFiles := map[string]string{
		"live/manifest.yaml": livePackage,
		"live/settings.yaml": liveConfigMap("settings", "", "deploy", "a", "1"),
		"live/same.yaml":     liveConfigMap("same", "", "deploy", "k", "v"),
		"live/old.yaml":      liveConfigMap("old", "", "deploy", "gone", "soon"),
		"live/hosted.yaml":   liveConfigMap("hosted-settings", "default", "inside", "x", "1"),
	}
	first := gittest.Commit(t, repo, "first", oldFiles)
	_, err = repo.CommitFiles("main", "second", []gitserver.File{
		{Path: "live/settings.yaml", Content: liveConfigMap("settings", "", "deploy", "a", "2")},
		{Path: "live/hosted.yaml", Content: liveConfigMap("hosted-settings", "default", "inside", "x", "2")},
		{Path: "live/old.yaml", Delete: true},
	}...)
	g.Expect(err).NotTo(HaveOccurred())

	gs := &convoyv1alpha1.GitSource{}
	gs.Namespace, gs.Name = ns, "addons"
	gs.Spec.URL = srv.FileURL("repo")
	gs.Spec.Ref.Branch = "main"
	g.Expect(env.Client.Create(ctx, gs)).To(Succeed())
	pkg := &convoyv1alpha1.Package{}
	pkg.Namespace, pkg.Name = ns, "live"
	pkg.Spec.SourceRef.Name = "addons"
	pkg.Spec.Path = "live"
	pkg.Spec.Revision = first
	g.Expect(env.Client.Create(ctx, pkg)).To(Succeed())

	// The first commit is applied as the controller would, and the inventory recorded.
	cluster, err := hosted.Discover(ctx, env.Client, ns)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := synccontroller.PackageTemplateData(pkg, cluster, first)
	g.Expect(err).NotTo(HaveOccurred())
	fsys := fstest.MapFS{}
	for p, c := range oldFiles {
		fsys[p] = &fstest.MapFile{Data: []byte(c)}
	}
	rendered, err := manifests.Load(fsys, "live", data)
	g.Expect(err).NotTo(HaveOccurred())
	res, err := engine.NewEngine(engine.Options{}).Sync(ctx, &engine.Target{Namespace: ns, Name: "live",
		Management: env.Client, Hosted: hc.Client}, synccontroller.PackageRevision(first, rendered), nil)
	g.Expect(err).NotTo(HaveOccurred())
	pkg.Status.Inventory = res.Inventory
	g.Expect(env.Client.Status().Update(ctx, pkg)).To(Succeed())

	before := resourceVersions(ctx, g, env.Client, hc.Client, ns)
	kubeconfig := writeKubeconfig(t, env)
	out, stderr, err := runCLI("diff", "--package", ns+"/live", "--revision", "main", "--kubeconfig", kubeconfig, "-o", "json")
	g.Expect(err).To(MatchError(errDiffers), stderr)
	g.Expect(resourceVersions(ctx, g, env.Client, hc.Client, ns)).To(Equal(before), "nothing was written")

	var report diff.Report
	g.Expect(json.Unmarshal([]byte(out), &report)).To(Succeed())
	got := map[string]diff.ObjectDiff{}
	for _, ph := range report.Phases {
		for _, o := range ph.Objects {
			got[ph.Name+" "+string(o.Action)+" "+o.Ref()] = o
		}
	}
	g.Expect(got).To(HaveLen(3), "the unchanged object is not listed: %v", got)
	settings := got["deploy changed ConfigMap "+ns+"/settings"]
	g.Expect(settings.Diff).To(ContainSubstring("-  a: \"1\"\n+  a: \"2\"\n"))
	g.Expect(settings.Diff).NotTo(Or(ContainSubstring("managedFields"), ContainSubstring("resourceVersion"), ContainSubstring("uid:")))
	g.Expect(got["inside changed ConfigMap default/hosted-settings"].Diff).To(ContainSubstring("-  x: \"1\"\n+  x: \"2\"\n"))
	pruned := got["deploy removed ConfigMap "+ns+"/old"]
	g.Expect(pruned.Note).To(Equal("a prune would delete it"))
	g.Expect(pruned.Diff).To(ContainSubstring("-  gone: soon\n"))

	md, _, err := runCLI("diff", "--package", ns+"/live", "--revision", first, "--kubeconfig", kubeconfig, "-o", "markdown")
	g.Expect(err).NotTo(HaveOccurred(), "the applied revision shows no change: %s", md)
	g.Expect(resourceVersions(ctx, g, env.Client, hc.Client, ns)).To(Equal(before))

	// A HostedClusterPackage: one Package per partition, the late one never applied.
	green, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "green", Labels: map[string]string{"tier": "late"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.SetLabels(ctx, hc, map[string]string{"tier": "early"})).To(Succeed())
	hcpkg := &convoyv1alpha1.HostedClusterPackage{}
	hcpkg.Name = "live"
	hcpkg.Spec.Partition = &convoyv1alpha1.PartitionSpec{LabelKey: "tier"}
	hcpkg.Spec.Template.Spec = pkg.Spec.PackageTemplateSpec
	g.Expect(env.Client.Create(ctx, hcpkg)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pkg), pkg)).To(Succeed())
	pkg.Labels = map[string]string{convoyv1alpha1.HostedClusterPackageLabel: "live"}
	g.Expect(env.Client.Update(ctx, pkg)).To(Succeed())
	late := &convoyv1alpha1.Package{}
	late.Namespace, late.Name, late.Labels = green.HCPNamespace, "live", pkg.Labels
	late.Spec = pkg.Spec
	g.Expect(env.Client.Create(ctx, &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: green.HCPNamespace, Name: "addons"},
		Spec: gs.Spec})).To(Succeed())
	g.Expect(env.Client.Create(ctx, late)).To(Succeed())

	out, stderr, err = runCLI("diff", "--hosted-cluster-package", "live", "--revision", "main", "--kubeconfig", kubeconfig, "-o", "json")
	g.Expect(err).To(MatchError(errDiffers), stderr)
	var reports []diff.Report
	g.Expect(json.Unmarshal([]byte(out), &reports)).To(Succeed())
	g.Expect(reports).To(HaveLen(2), "one Package per partition")
	g.Expect(reports[0].From).To(ContainSubstring(ns + "/live"))
	g.Expect(reports[1].From).To(ContainSubstring(green.HCPNamespace + "/live"))
	added, changed, removed := reports[1].Counts()
	g.Expect([]int{added, changed, removed}).To(Equal([]int{3, 0, 0}), "the late Package applied nothing yet")
}

// resourceVersions maps every ConfigMap of the HCP namespace and of the hosted cluster's
// default namespace, the Package and the GitSource to their resourceVersions.
func resourceVersions(ctx context.Context, g Gomega, mgmt, hostedClient client.Client, ns string) map[string]string {
	rvs := map[string]string{}
	for _, c := range []struct {
		name   string
		client client.Client
		ns     string
	}{{"management", mgmt, ns}, {"hosted", hostedClient, "default"}} {
		list := &corev1.ConfigMapList{}
		g.Expect(c.client.List(ctx, list, client.InNamespace(c.ns))).To(Succeed())
		for _, cm := range list.Items {
			rvs[c.name+"/"+cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
		}
	}
	for _, obj := range []client.Object{&convoyv1alpha1.Package{}, &convoyv1alpha1.GitSource{}} {
		name := map[bool]string{true: "live", false: "addons"}[isPackage(obj)]
		g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
		rvs[name] = obj.GetResourceVersion()
	}
	return rvs
}

func isPackage(obj client.Object) bool { _, ok := obj.(*convoyv1alpha1.Package); return ok }

// writeKubeconfig writes the management cluster's kubeconfig to a file.
func writeKubeconfig(t *testing.T, env *fleet.Fleet) string {
	t.Helper()
	raw, err := env.KubeConfig()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	NewWithT(t).Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
	return path
}
