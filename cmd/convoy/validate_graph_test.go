package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// writePKOPackage writes a Package Operator package name depending on the packages needs.
func writePKOPackage(g Gomega, root, name string, needs ...string) string {
	dir := filepath.Join(root, name)
	g.Expect(os.MkdirAll(dir, 0o750)).To(Succeed())
	manifest := fmt.Sprintf("apiVersion: manifests.package-operator.run/v1alpha1\nkind: PackageManifest\nmetadata: {name: %s}\n"+
		"spec:\n  scopes: [Namespaced]\n  phases: [{name: deploy}]\n", name)
	if len(needs) > 0 {
		manifest += "  dependencies:\n"
		for _, n := range needs {
			manifest += fmt.Sprintf("  - image: {name: %s, package: %s.addons, range: '>=1'}\n", n, n)
		}
	}
	g.Expect(os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(manifest), 0o600)).To(Succeed())
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  annotations: {package-operator.run/phase: deploy}\n"
	g.Expect(os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte(cm), 0o600)).To(Succeed())
	return dir
}

// TestValidateChecksTheDependencyGraph: validate prints the order of the packages it is given,
// notes a dependency outside them, and refuses a cycle, naming it.
func TestValidateChecksTheDependencyGraph(t *testing.T) {
	t.Run("order", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		out, _, err := runCLI("validate", writePKOPackage(g, root, "app", "certs", "monitoring"),
			writePKOPackage(g, root, "certs", "crds"), writePKOPackage(g, root, "monitoring", "crds"),
			writePKOPackage(g, root, "crds"), writePKOPackage(g, root, "webhook", "certs", "cert-manager"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring("dependencies: webhook needs cert-manager, which none of these directories is: " +
			"a HostedClusterPackage must roll it out\n"))
		g.Expect(out).To(ContainSubstring("ok dependencies: installs in the order crds; certs, monitoring; app, webhook\n"))
	})
	t.Run("cycle", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		out, _, err := runCLI("validate", writePKOPackage(g, root, "a", "b"), writePKOPackage(g, root, "b", "a"))
		g.Expect(err).To(MatchError("the packages' spec.dependencies form a cycle"))
		g.Expect(out).To(ContainSubstring("dependencies: spec.dependencies form a cycle: a → b → a\n"))
	})
}

// writeHostedClusterPackages writes a file of HostedClusterPackages, each "name:dep,dep" (or a
// raw document when it holds a newline), and returns its path.
func writeHostedClusterPackages(g Gomega, dir, file string, specs ...string) string {
	var docs []string
	for _, s := range specs {
		if strings.Contains(s, "\n") {
			docs = append(docs, s)
			continue
		}
		name, deps, _ := strings.Cut(s, ":")
		doc := "apiVersion: convoy.dev/v1alpha1\nkind: HostedClusterPackage\nmetadata: {name: " + name + "}\n" +
			"spec:\n  template: {spec: {sourceRef: {name: addons, namespace: convoy-system}, path: packages/" + name + "}}\n"
		if deps != "" {
			doc += "  dependsOn:\n"
			for _, d := range strings.Split(deps, ",") {
				doc += "  - name: " + d + "\n"
			}
		}
		docs = append(docs, doc)
	}
	path := filepath.Join(dir, file)
	g.Expect(os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600)).To(Succeed())
	return path
}

// TestValidateChecksTheDependsOnOfHostedClusterPackageFiles: given the files of a fleet
// repository, validate prints the order in which each HostedCluster gets the
// HostedClusterPackages (a chain of depth three and a diamond, across files, other kinds left
// alone), notes a dependency the files do not define, and fails on a cycle, an unknown field,
// a name defined twice and a file without any, naming the file and the object.
func TestValidateChecksTheDependsOnOfHostedClusterPackageFiles(t *testing.T) {
	gitSource := "apiVersion: convoy.dev/v1alpha1\nkind: GitSource\nmetadata: {name: addons, namespace: convoy-system}\n" +
		"spec: {url: 'https://git.example.com/addons.git', ref: {branch: main}}\n"
	t.Run("order", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		out, _, err := runCLI("validate",
			writeHostedClusterPackages(g, dir, "base.yaml", gitSource, "crds", "certs:crds", "monitoring:crds"),
			writeHostedClusterPackages(g, dir, "apps.yaml", "app:certs,monitoring", "webhook:app,cert-manager"))
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring("dependsOn: webhook depends on cert-manager, which none of these files defines: " +
			"it waits on every HostedCluster until cert-manager exists\n"))
		g.Expect(out).To(ContainSubstring("ok HostedClusterPackages: 5; each HostedCluster gets them in the order " +
			"crds; certs, monitoring; app; webhook\n"))
	})
	t.Run("examples", func(t *testing.T) {
		files, err := filepath.Glob("../../examples/hostedclusterpackage*.yaml")
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(files).NotTo(BeEmpty())
		for _, file := range files {
			out, _, err := runCLI("validate", file)
			NewWithT(t).Expect(err).NotTo(HaveOccurred(), "%s: %s", file, out)
			NewWithT(t).Expect(out).To(ContainSubstring("ok HostedClusterPackages: "), file)
		}
	})
	t.Run("cycle", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		out, _, err := runCLI("validate", writeHostedClusterPackages(g, dir, "a.yaml", "a:b", "b:c", "c:a", "d:a"))
		g.Expect(err).To(MatchError("1 problem(s) in the HostedClusterPackages of 1 file(s)"))
		g.Expect(out).To(ContainSubstring("dependsOn: spec.dependsOn forms a cycle: a → b → c → a; " +
			"the controller stalls each of its members (DependencyCycle)\n"))
		g.Expect(out).NotTo(ContainSubstring("ok "))
	})
	t.Run("bad objects", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		typo := "apiVersion: convoy.dev/v1alpha1\nkind: HostedClusterPackage\nmetadata: {name: typo}\n" +
			"spec:\n  template: {spec: {sourceRef: {name: addons, namespace: convoy-system}, path: packages/typo}}\n  dependOn: [{name: a}]\n"
		out, _, err := runCLI("validate",
			writeHostedClusterPackages(g, dir, "one.yaml", "a", typo),
			writeHostedClusterPackages(g, dir, "two.yaml", "a"),
			writeHostedClusterPackages(g, dir, "none.yaml", gitSource))
		g.Expect(err).To(MatchError("2 problem(s) in the HostedClusterPackages of 3 file(s)"))
		g.Expect(out).To(ContainSubstring(filepath.Join(dir, "one.yaml") + `: HostedClusterPackage "typo": ` +
			`strict decoding error: unknown field "spec.dependOn"`))
		g.Expect(out).To(ContainSubstring(filepath.Join(dir, "two.yaml") + `: HostedClusterPackage "a": defined again (first in ` +
			filepath.Join(dir, "one.yaml") + "): HostedClusterPackages are cluster-scoped, one per name\n"))
		g.Expect(out).To(ContainSubstring(filepath.Join(dir, "none.yaml") + ": no HostedClusterPackage (convoy.dev/v1alpha1) in the file: left alone\n"))
		g.Expect(out).NotTo(ContainSubstring("ok "))
	})
	t.Run("files of a pull request", func(t *testing.T) {
		g := NewWithT(t)
		outside := writeHostedClusterPackages(g, t.TempDir(), "secret.yaml", "a")
		dir := t.TempDir()
		link := filepath.Join(dir, "link.yaml")
		g.Expect(os.Symlink(outside, link)).To(Succeed())
		big := filepath.Join(dir, "big.yaml")
		g.Expect(os.WriteFile(big, []byte("# "+strings.Repeat("x", 4<<20)+"\n"), 0o600)).To(Succeed())
		out, _, err := runCLI("validate", link, big)
		g.Expect(err).To(MatchError("2 problem(s) in the HostedClusterPackages of 2 file(s)"))
		g.Expect(out).To(ContainSubstring("link.yaml: path escapes from parent"), "a link out of its folder is not followed")
		g.Expect(out).To(ContainSubstring(big + ": larger than 4194304 bytes, the limit of a package's file"))
	})
}
