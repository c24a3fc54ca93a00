package main

import (
	"fmt"
	"os"
	"path/filepath"
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
