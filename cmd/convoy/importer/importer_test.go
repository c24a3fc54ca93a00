package importer

import (
	"bytes"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// importFile imports a file of testdata/.
func importFile(g Gomega, name string) Result {
	f, err := os.Open("testdata/" + name)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	objs, err := Decode(f)
	g.Expect(err).NotTo(HaveOccurred())
	return Import(objs)
}

func TestImportFluxGroupsKustomizationsByPath(t *testing.T) {
	g := NewWithT(t)
	r := importFile(g, "flux.yaml")
	g.Expect(r.GitSources).To(HaveLen(1))
	gs := r.GitSources[0]
	g.Expect(gs.Namespace + "/" + gs.Name).To(Equal("flux-system/addons"))
	g.Expect(gs.Spec.URL).To(Equal("https://git.example.com/fleet/addons.git"))
	g.Expect(gs.Spec.Ref.Branch).To(Equal("main"))
	g.Expect(gs.Spec.Interval.Duration.String()).To(Equal("1m0s"))

	g.Expect(r.HostedClusterPackages).To(HaveLen(2))
	logging, metrics := r.HostedClusterPackages[0], r.HostedClusterPackages[1]
	g.Expect(metrics.Name).To(Equal("addons-metrics"))
	g.Expect(metrics.Spec.Template.Spec.Path).To(Equal("addons/metrics"))
	g.Expect(metrics.Spec.Template.Spec.SourceRef).To(Equal(convoyv1alpha1.SourceReference{Name: "addons", Namespace: "flux-system"}))
	g.Expect(metrics.Spec.Template.Spec.Adopt.From).To(ConsistOf(convoyv1alpha1.AdoptFromFlux))
	g.Expect(logging.Name).To(Equal("addons-logging"))

	g.Expect(r.Notes).To(ContainElements(
		ContainSubstring("GitRepository flux-system/addons: spec.ignore has no GitSource equivalent"),
		ContainSubstring(`HostedClusterPackage addons-metrics: replaces the Kustomizations of path "addons/metrics" of GitRepository flux-system/addons, applying into clusters-early-0, clusters-late-0`),
		ContainSubstring("Kustomization clusters-early-0/logging: spec.postBuild is not carried over"),
		ContainSubstring("Kustomization clusters-early-0/logging: spec.kubeConfig applies into a hosted cluster"),
		ContainSubstring("Kustomization flux-system/from-oci: its source kind OCIRepository is not Git"),
	))
}

func TestImportPKOHostedClusterPackageKeepsSelectorPartitionsAndStrategy(t *testing.T) {
	g := NewWithT(t)
	r := importFile(g, "pko.yaml")
	g.Expect(r.HostedClusterPackages).To(HaveLen(1))
	h := r.HostedClusterPackages[0]
	g.Expect(h.Name).To(Equal("log-collector"))
	g.Expect(h.Spec.HostedClusterSelector.MatchLabels).To(HaveKeyWithValue("addons.example.com/log-collector", "enabled"))
	g.Expect(h.Spec.Partition.LabelKey).To(Equal("risk-group"))
	g.Expect(h.Spec.Partition.Order.Static).To(Equal([]string{"canary", "early", "*"}))
	g.Expect(*h.Spec.Strategy.RollingUpgrade.MaxUnavailable).To(Equal(intstr.FromInt(2)))
	g.Expect(h.Spec.Template.Metadata.Labels).To(HaveKeyWithValue("team", "observability"))
	g.Expect(string(h.Spec.Template.Spec.Config.Raw)).To(MatchJSON(`{"logLevel":"Info"}`))
	g.Expect(h.Spec.Template.Spec.Path).To(Equal("TODO/log-collector-package"))
	g.Expect(h.Spec.Template.Spec.Adopt.From).To(ConsistOf(convoyv1alpha1.AdoptFromPackageOperator))
	g.Expect(r.Notes).To(ContainElement(ContainSubstring("its package image quay.io/example/log-collector-package:v1.4.2 is not read by convoy")))

	var out bytes.Buffer
	g.Expect(r.WriteYAML(&out)).To(Succeed())
	back := &convoyv1alpha1.HostedClusterPackage{}
	g.Expect(yaml.UnmarshalStrict(out.Bytes(), back)).To(Succeed())
	g.Expect(back.Kind).To(Equal("HostedClusterPackage"))
	g.Expect(back.Spec.Partition).To(Equal(h.Spec.Partition))
}

// TestImportNamesEachHostedClusterPackageApart: two sources with the same path (or paths that
// map to one name) make two HostedClusterPackages of two names, and the notes escape what the
// objects carry, so a note is one line that cannot drive a terminal.
func TestImportNamesEachHostedClusterPackageApart(t *testing.T) {
	g := NewWithT(t)
	kustomization := func(name, source, path string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: " + name +
			", namespace: clusters-a}\nspec: {path: \"" + path + "\", sourceRef: {kind: GitRepository, name: " + source +
			", namespace: flux-system}, targetNamespace: \"ns\\u001b[2J\\nnote: forged\"}\n"
	}
	objs, err := Decode(bytes.NewBufferString(kustomization("one", "left", "./deploy") + "---\n" +
		kustomization("two", "right", "./deploy") + "---\n" + kustomization("three", "left", "./a.b") + "---\n" +
		kustomization("four", "left", "./a/b")))
	g.Expect(err).NotTo(HaveOccurred())
	r := Import(objs)
	var names []string
	for _, h := range r.HostedClusterPackages {
		names = append(names, h.Name)
	}
	g.Expect(names).To(ConsistOf("deploy", "deploy-2", "a-b", "a-b-2"))
	for _, n := range r.Notes {
		g.Expect(n).NotTo(ContainSubstring("\n"))
		g.Expect(n).NotTo(ContainSubstring("\x1b"))
	}
}
