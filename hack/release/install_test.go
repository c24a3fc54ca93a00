package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestInstallPinsTheImageDigest checks the install file of the suite: what kubectl apply -f
// needs, in an order it can apply, the image by digest, every object labelled with the version.
func TestInstallPinsTheImageDigest(t *testing.T) {
	g := NewWithT(t)
	g.Expect(installed).NotTo(BeEmpty())
	g.Expect(installed[0].GetKind()).To(Equal("Namespace"))
	kinds := map[string][]string{}
	for _, obj := range installed {
		kinds[obj.GetKind()] = append(kinds[obj.GetKind()], obj.GetName())
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/version", releaseTag), "%s %s", obj.GetKind(), obj.GetName())
	}
	g.Expect(kinds["CustomResourceDefinition"]).To(ConsistOf("gitsources.convoy.dev", "packages.convoy.dev",
		"objectdeployments.convoy.dev", "hostedclusterpackages.convoy.dev", "partitionapprovals.convoy.dev",
		"manualpromotions.convoy.dev", "rolloutapprovals.convoy.dev", "promotionapprovals.convoy.dev"))
	g.Expect(kinds["ClusterRole"]).To(ContainElements(serviceAccount, "convoy-metrics-reader", applierServiceAccount,
		"convoy-rollout-approver", "convoy-rollout-reader", "convoy-promoter"))
	g.Expect(kinds["ServiceAccount"]).To(ConsistOf(serviceAccount, applierServiceAccount))
	g.Expect(kinds["Deployment"]).To(ConsistOf(serviceAccount))
	for _, obj := range installed {
		if obj.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/convoy/convoy@" + installDigest))
		g.Expect(d.Spec.Selector.MatchLabels).NotTo(HaveKey("app.kubernetes.io/version"), "a selector must not change between releases")
	}
}

func TestReleaseRefusesWhatItCannotPin(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		args []string
		want string
	}{
		"no version": {[]string{"-layout", dir}, `-version "": want a semantic version with a leading v, such as v0.1.0`},
		"not semver": {[]string{"-version", "0.1", "-layout", dir}, `-version "0.1": want a semantic version`},
		"no layout":  {[]string{"-version", "v0.1.0", "-layout", filepath.Join(dir, "missing")}, "run make image first"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(run(c.args)).To(MatchError(ContainSubstring(c.want)))
		})
	}
	g := NewWithT(t)
	_, err := buildInstall(installInput{DeployDir: filepath.Join(dir, "missing"), Version: "v0.1.0",
		Repository: testRepository, Digest: "sha256:" + strings.Repeat("0", 64)})
	g.Expect(err).To(MatchError(ContainSubstring("does not exist")))
	_, err = buildInstall(installInput{DeployDir: deployDir, Version: "v0.1.0", Repository: testRepository, Digest: "latest"})
	g.Expect(err).To(MatchError(ContainSubstring(`image digest "latest": want sha256:`)))
	g.Expect(os.WriteFile(filepath.Join(dir, "index.json"), []byte(`{"schemaVersion":2,"manifests":[]}`), 0o600)).To(Succeed())
	_, err = layoutDigest(dir)
	g.Expect(err).To(MatchError(ContainSubstring("holds 0 manifests, want the one image index make image writes")))
}

// TestReleaseChecksThenRefreshesThePreviousCRDs runs the release as make release does: it
// refuses CRDs that drop a version the previous release served, and otherwise writes the
// install file and makes this release's CRDs the previous ones of the next.
func TestReleaseChecksThenRefreshesThePreviousCRDs(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	layoutDir := writeRandomLayout(g, dir)
	previous := filepath.Join(dir, "previous-crds")
	g.Expect(os.CopyFS(previous, os.DirFS(previousCRDs))).To(Succeed())
	args := []string{"-version", "v0.2.0", "-layout", layoutDir, "-image", testRepository, "-deploy", deployDir,
		"-out", filepath.Join(dir, "install.yaml"), "-previous-crds", previous}

	crd := filepath.Join(previous, "convoy.dev_packages.yaml")
	raw, err := os.ReadFile(crd)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(crd, []byte(strings.Replace(string(raw), "name: v1alpha1", "name: v1alpha0", 1)), 0o600)).To(Succeed())
	g.Expect(run(args)).To(MatchError(ContainSubstring("CRD packages.convoy.dev version v1alpha0: no longer served; clients of it would break")))
	g.Expect(filepath.Join(dir, "install.yaml")).NotTo(BeAnExistingFile())

	g.Expect(os.WriteFile(crd, raw, 0o600)).To(Succeed())
	g.Expect(run(args)).To(Succeed())
	g.Expect(filepath.Join(dir, "install.yaml")).To(BeAnExistingFile())
	g.Expect(os.ReadFile(filepath.Join(previous, "RELEASE"))).To(Equal([]byte("v0.2.0\n")))
	current, err := filepath.Glob(filepath.Join(deployDir, "crds", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range current {
		want, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.ReadFile(filepath.Join(previous, filepath.Base(f)))).To(Equal(want), filepath.Base(f))
	}
}
