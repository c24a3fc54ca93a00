package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

const examplePackages = "../../examples/packages"

// runCLI runs the convoy command tree with args and returns stdout, stderr and the error.
func runCLI(args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	err := root.Execute()
	return stdout.String(), stderr.String(), err
}

func TestRenderPrintsPhasesInManifestOrder(t *testing.T) {
	g := NewWithT(t)
	out, _, err := runCLI("render", filepath.Join(examplePackages, "extra-component"))
	g.Expect(err).NotTo(HaveOccurred())
	headers := regexp.MustCompile(`(?m)^# phase \d+/\d+: (\S+) \(class: (\S+),`).FindAllStringSubmatch(out, -1)
	var phases []string
	for _, h := range headers {
		phases = append(phases, h[1]+"@"+h[2])
	}
	g.Expect(phases).To(Equal([]string{"rbac@hosted-cluster", "deploy@management", "configure@hosted-cluster"}))
	g.Expect(out).NotTo(ContainSubstring("convoy.dev/phase"), "the phase annotation is removed")
}

func TestRenderFromAGitRepository(t *testing.T) {
	g := NewWithT(t)
	srv, err := gitserver.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	defer srv.Close()
	repo, err := srv.CreateRepo("addons")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = repo.Commit("main", "add a package", map[string]string{
		"packages/hello/manifest.yaml": "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: hello}\nspec:\n  phases: [{name: deploy}]\n",
		"packages/hello/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\n  annotations: {convoy.dev/phase: deploy}\ndata: {greeting: hi}\n",
	})
	g.Expect(err).NotTo(HaveOccurred())

	out, _, err := runCLI("render", "--url", srv.FileURL("addons"), "--ref", "main", "--path", "packages/hello")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("# phase 1/1: deploy (class: management, objects: 1)"))
	g.Expect(out).To(ContainSubstring("greeting: hi"))

	_, _, err = runCLI("render", "--url", srv.FileURL("addons"), "--ref", "no-such-branch", "--path", "packages/hello")
	g.Expect(err).To(MatchError(ContainSubstring("no-such-branch")))
}

func TestValidateAcceptsTheExamples(t *testing.T) {
	g := NewWithT(t)
	dirs, err := filepath.Glob(filepath.Join(examplePackages, "*", "manifest.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dirs).NotTo(BeEmpty())
	args := []string{"validate"}
	for _, m := range dirs {
		args = append(args, filepath.Dir(m))
	}
	out, _, err := runCLI(args...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(regexp.MustCompile(`(?m)^ok `).FindAllString(out, -1)).To(HaveLen(len(dirs)))
}

func TestValidateListsEveryProblemAsFileLineMessage(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write := func(name, content string) {
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)).To(Succeed())
	}
	write("manifest.yaml", "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: broken}\nspec:\n  phases: [{name: deploy}]\n")
	write("objects.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: no-phase}\n---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: wrong-phase\n  annotations: {convoy.dev/phase: nowhere}\n")

	out, _, err := runCLI("validate", dir)
	g.Expect(err).To(MatchError(ContainSubstring("1 of 1 package(s) invalid")))
	problems := regexp.MustCompile(`(?m)^\S*objects\.yaml:(\d+): .+$`).FindAllStringSubmatch(out, -1)
	g.Expect(problems).To(HaveLen(2), out)
	g.Expect(problems[0][0]).To(ContainSubstring("no-phase"))
	g.Expect(problems[1][0]).To(And(ContainSubstring("wrong-phase"), ContainSubstring("nowhere")))
	g.Expect(problems[1][1]).To(Equal("9"), "the line of the phase annotation in the second document")
}

// TestValidateAndRenderEnforceTheRenderBudget checks that the CLI stops a runaway template with
// the controller's budget flags, so that CI refuses what the controller would.
func TestValidateAndRenderEnforceTheRenderBudget(t *testing.T) {
	g := NewWithT(t)
	hostile := "../../manifests/testdata/hostile/"
	start := time.Now()
	out, _, err := runCLI("validate", "--render-cpu-limit", "1s", "--render-timeout", "1m", hostile+"nested-range")
	g.Expect(err).To(MatchError(ContainSubstring("1 of 1 package(s) invalid")))
	g.Expect(out).To(ContainSubstring("nested-range/configmap.yaml.gotmpl: limit: rendering was stopped: it used more than 1s of CPU time (render CPU limit, --render-cpu-limit)"))
	g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second))

	_, stderr, err := runCLI("render", "--render-memory-limit", "33554432", hostile+"string-doubling")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("string-doubling/configmap.yaml.gotmpl: limit: rendering was stopped: it needed more than 32 MiB of memory (render memory limit, --render-memory-limit)"))
}

// TestValidateRefusesASymlinkLeavingThePackage checks that a symlink out of the package
// directory but inside the repository is refused, with the controller's message.
func TestValidateRefusesASymlinkLeavingThePackage(t *testing.T) {
	g := NewWithT(t)
	repo := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(repo, "pkg"), 0o755)).To(Succeed())
	g.Expect(os.MkdirAll(filepath.Join(repo, "shared"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(repo, "pkg", "manifest.yaml"),
		[]byte("apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: p}\nspec:\n  phases: [{name: deploy}]\n"), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(repo, "shared", "objects.yaml"),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, annotations: {convoy.dev/phase: deploy}}\n"), 0o600)).To(Succeed())
	g.Expect(os.Symlink("../shared/objects.yaml", filepath.Join(repo, "pkg", "objects.yaml"))).To(Succeed())

	out, _, err := runCLI("validate", filepath.Join(repo, "pkg"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("pkg/objects.yaml: symlink-outside-package: symlink objects.yaml -> ../shared/objects.yaml leads outside the package directory"))
}
