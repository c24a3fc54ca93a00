package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// pkoCorpus holds the Package Operator packages of the manifests package's tests.
const pkoCorpus = "../../manifests/testdata/pko"

// copyDir copies a package directory into a temporary one, fixtures included.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestValidateRunsTestCasesAgainstTheirFixtures(t *testing.T) {
	g := NewWithT(t)
	out, _, err := runCLI("validate", filepath.Join(pkoCorpus, "valid/context"), filepath.Join(pkoCorpus, "valid/multi-component"))
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(`test case "openshift-hosted" matches`))
	g.Expect(out).To(ContainSubstring(`components/console: test case "default" matches`))

	out, _, err = runCLI("validate", filepath.Join(pkoCorpus, "invalid/fixture-mismatch"))
	g.Expect(err).To(MatchError(ContainSubstring("1 of 1 package(s) invalid")))
	g.Expect(out).To(MatchRegexp(`fixture-mismatch/\.test-fixtures/default/a\.yaml:4: test-fixture: .*render has " name: rendered"`))
}

func TestValidateWritesMissingFixturesAndRefreshesThemOnRequest(t *testing.T) {
	g := NewWithT(t)
	dir := copyDir(t, filepath.Join(pkoCorpus, "valid/conditional"))
	fixtures := filepath.Join(dir, ".test-fixtures")
	want, err := os.ReadFile(filepath.Join(fixtures, "kubernetes", "objects.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.RemoveAll(fixtures)).To(Succeed())

	out, _, err := runCLI("validate", dir)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(`test case "kubernetes": wrote`))
	got, err := os.ReadFile(filepath.Join(fixtures, "kubernetes", "objects.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal(string(want)))
	g.Expect(filepath.Join(fixtures, "kubernetes", "optional")).NotTo(BeADirectory(), "the path filter leaves optional/ out")

	stale := filepath.Join(fixtures, "kubernetes", "stale.yaml")
	g.Expect(os.WriteFile(stale, []byte("old: true\n"), 0o644)).To(Succeed())
	out, _, err = runCLI("validate", dir)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("stale.yaml: test-fixture"))
	out, _, err = runCLI("validate", "--update-fixtures", dir)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(stale).NotTo(BeAnExistingFile())
}

func TestRenderATestCaseOrAComponent(t *testing.T) {
	g := NewWithT(t)
	out, _, err := runCLI("render", filepath.Join(pkoCorpus, "valid/context"), "--test-case", "openshift-hosted")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("openShift: 4.17.3"))

	_, _, err = runCLI("render", filepath.Join(pkoCorpus, "valid/context"), "--test-case", "nope")
	g.Expect(err).To(MatchError(ContainSubstring(`no test.template case "nope"`)))

	out, _, err = runCLI("render", filepath.Join(pkoCorpus, "valid/multi-component"), "--component", "agent", "--package-name", "x")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("name: x-agent"))
}

func TestRenderForAGivenEnvironment(t *testing.T) {
	g := NewWithT(t)
	envFile := filepath.Join(t.TempDir(), "env.yaml")
	g.Expect(os.WriteFile(envFile, []byte("kubernetes: {version: v1.29.0}\nopenShift: {version: 4.16.2}\n"), 0o600)).To(Succeed())
	out, _, err := runCLI("render", filepath.Join(pkoCorpus, "valid/conditional"), "--environment", envFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(And(ContainSubstring("platform: openshift"), ContainSubstring("name: openshift-only")))

	g.Expect(os.WriteFile(envFile, []byte("kubernets: {}\n"), 0o600)).To(Succeed())
	_, _, err = runCLI("render", filepath.Join(pkoCorpus, "valid/conditional"), "--environment", envFile)
	g.Expect(err).To(MatchError(ContainSubstring(`unknown field "kubernets"`)))
}

func TestValidateReportsEachDistinctProblemOnce(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	manifest := "apiVersion: manifests.package-operator.run/v1alpha1\nkind: PackageManifest\nmetadata: {name: twice}\n" +
		"spec:\n  scopes: [Cluster]\n  phases: [{name: deploy}]\n" +
		"test:\n  template:\n  - name: one\n    context: {}\n  - name: two\n    context: {}\n"
	g.Expect(os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(manifest), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), 0o644)).To(Succeed())

	out, _, err := runCLI("validate", dir)
	g.Expect(err).To(HaveOccurred())
	g.Expect(strings.Count(out, "missing-phase")).To(Equal(1), out)
	g.Expect(out).NotTo(ContainSubstring("scope"), "the scope is no validation error")
}

func TestRenderAPackageWithTheClusterScope(t *testing.T) {
	g := NewWithT(t)
	stub := "../../manifests/testdata/pko-public/test-stub"
	out, _, err := runCLI("render", stub, "--package-name", "stub", "--scope", "Cluster", "--config", writeConfig(t, "testStubImage: quay.io/stub:v1"))
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("kind: Namespace"))
	g.Expect(out).To(ContainSubstring("namespace: stub"))

	out, _, err = runCLI("render", stub, "--package-name", "stub", "--config", writeConfig(t, "testStubImage: quay.io/stub:v1"))
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).NotTo(ContainSubstring("kind: Namespace"), "Namespaced by default")

	_, _, err = runCLI("render", "../../manifests/testdata/pko-public/managed-upgrade-operator", "--scope", "Namespaced")
	g.Expect(err).To(HaveOccurred())
	_, _, err = runCLI("render", stub, "--scope", "Everywhere")
	g.Expect(err).To(MatchError(ContainSubstring(`--scope "Everywhere"`)))
}

// writeConfig writes a --config file.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestValidateGivesPackageOperatorsVerdictOnPublishedPackages runs convoy validate on the
// corpus of real packages projects publish: Package Operator finds each valid, and the
// committed fixtures of their test cases match.
func TestValidateGivesPackageOperatorsVerdictOnPublishedPackages(t *testing.T) {
	g := NewWithT(t)
	dirs, err := filepath.Glob("../../manifests/testdata/pko-public/*")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(dirs)).To(BeNumerically(">=", 4))
	out, _, err := runCLI(append([]string{"validate"}, dirs...)...)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(`managed-upgrade-operator: test case "config-with-proxy" matches`))
	g.Expect(out).To(ContainSubstring(`ocm-agent-operator: test case "config-with-proxy" matches`))
	g.Expect(out).To(ContainSubstring(`test-stub: test case "cluster-scope" matches`))
	g.Expect(out).To(ContainSubstring("ok ../../manifests/testdata/pko-public/osd-metrics-exporter"))
}
