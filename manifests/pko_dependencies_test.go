package manifests

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// pkoDependencies is a package whose manifest is testManifest in Package Operator's format, with
// spec.dependencies deps.
func pkoDependencies(deps string) map[string]string {
	pko := strings.Replace(testManifest, "convoy.dev/v1alpha1", "manifests.package-operator.run/v1alpha1", 1)
	return map[string]string{"manifest.yaml": pko + "  scopes: [Namespaced]\n  dependencies:\n" + deps,
		"a.yaml": configMap("a", "one")}
}

// TestPKODependenciesMapToPackageNames: each image dependency maps to the package name before
// the repository, with a warning that says what convoy does not check; a malformed one is
// refused; ReadManifestHead reads them without rendering.
func TestPKODependenciesMapToPackageNames(t *testing.T) {
	t.Run("mapped", func(t *testing.T) {
		g := NewWithT(t)
		files := pkoDependencies("  - image: {name: base, package: cert-manager.addons, range: '>=1.0.0'}\n" +
			"  - image: {name: crds, package: widget-crds}\n")
		r, err := Load(pkgFS(files), ".", TemplateData{})
		g.Expect(err).NotTo(HaveOccurred())
		want := []Dependency{{Name: "base", Package: "cert-manager", Range: ">=1.0.0"}, {Name: "crds", Package: "widget-crds"}}
		g.Expect(r.Dependencies).To(Equal(want))
		g.Expect(r.Warnings).To(ContainElement(HaveField("Message", ContainSubstring(
			`the HostedClusterPackage rolling out package "cert-manager" is available there; the range ">=1.0.0" and the repository of "cert-manager.addons" are not checked`))))
		head, err := ReadManifestHead(pkgFS(files), ".", "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(head).To(Equal(ManifestHead{Name: "test", Dependencies: want}))
	})
	t.Run("malformed", func(t *testing.T) {
		checkErrorCase(t, errorCase{files: pkoDependencies("  - image: {name: base}\n"), file: "manifest.yaml",
			rule: RuleInvalidManifest, fragment: "spec.dependencies[0] needs image.name and image.package"})
	})
	t.Run("no manifest", func(t *testing.T) {
		g := NewWithT(t)
		_, err := ReadManifestHead(pkgFS(map[string]string{"-no-manifest": ""}), ".", "")
		g.Expect(err).To(MatchError(ContainSubstring("no manifest.yaml")))
	})
}
