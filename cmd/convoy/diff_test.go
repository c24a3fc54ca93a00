package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/manifests/diff"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// changedPackages is a pull request against examples/packages/*: extra-component changes its
// metrics port and drops its configure phase's objects, metrics-forwarder changes a port,
// log-collector-pko is untouched and new-addon is new.
func changedPackages(t *testing.T, files map[string]string) []gitserver.File {
	t.Helper()
	edit := func(path, old, repl string) gitserver.File {
		t.Helper()
		content := files[path]
		NewWithT(t).Expect(content).To(ContainSubstring(old), path)
		return gitserver.File{Path: path, Content: strings.Replace(content, old, repl, 1)}
	}
	return []gitserver.File{
		edit("packages/extra-component/management/controller.yaml.gotmpl",
			"port: 8443\n    targetPort: 8443", "port: 9443\n    targetPort: 9443"),
		{Path: "packages/extra-component/hosted/configure.yaml.gotmpl", Delete: true},
		edit("packages/metrics-forwarder/patches/service-ports.yaml", "port: 9091", "port: 9092"),
		{Path: "packages/new-addon/manifest.yaml", Content: "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\n" +
			"metadata: {name: new-addon}\nspec:\n  phases: [{name: deploy}]\n"},
		{Path: "packages/new-addon/cm.yaml", Content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new-addon\n" +
			"  namespace: addons\n  annotations: {convoy.dev/phase: deploy}\ndata: {greeting: \"```hi```\"}\n"},
	}
}

// cloneWithChange commits examples/packages to main of a Git server, then the change, and
// returns a clone's work tree with main checked out, so that main~1 is the base.
func cloneWithChange(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	files, err := gitserver.ReadTree(examplePackages, "packages")
	g.Expect(err).NotTo(HaveOccurred())
	gittest.Commit(t, repo, "add the example packages", files)
	_, err = repo.CommitFiles("main", "change the packages", changedPackages(t, files)...)
	g.Expect(err).NotTo(HaveOccurred())
	clone := filepath.Join(t.TempDir(), "fleet")
	out, err := exec.Command("git", "clone", "--quiet", srv.FileURL("repo"), clone).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	return clone
}

// commitHashes matches abbreviated commit hashes, which change with the clock of the commits.
var commitHashes = regexp.MustCompile(`\b[0-9a-f]{12}\b`)

func TestDiffBetweenTwoCommitsGolden(t *testing.T) {
	clone := cloneWithChange(t)
	for _, pkg := range []string{"extra-component", "metrics-forwarder", "log-collector-pko", "new-addon"} {
		for _, format := range []string{"text", "markdown", "json"} {
			t.Run(pkg+"/"+format, func(t *testing.T) {
				g := NewWithT(t)
				out, _, err := runCLI("diff", filepath.Join(clone, "packages", pkg), "--from", "main~1", "--to", "main",
					"-o", format, "--hosted-cluster", "clusters/demo")
				if pkg == "log-collector-pko" {
					g.Expect(err).NotTo(HaveOccurred(), "an unchanged package exits 0")
				} else {
					g.Expect(err).To(MatchError(errDiffers), "a changed package exits 1")
				}
				ext := map[string]string{"text": "txt", "markdown": "md", "json": "json"}[format]
				expectGolden(t, "diff-"+pkg+"."+ext, []byte(commitHashes.ReplaceAllString(out, "<commit>")))
			})
		}
	}
}

func TestDiffListsExactlyTheChangedObjects(t *testing.T) {
	g := NewWithT(t)
	clone := cloneWithChange(t)
	out, _, err := runCLI("diff", filepath.Join(clone, "packages", "extra-component"), "--from", "main~1", "--to", "main", "-o", "json")
	g.Expect(err).To(MatchError(errDiffers))
	var report diff.Report
	g.Expect(json.Unmarshal([]byte(out), &report)).To(Succeed())
	var got []string
	for _, ph := range report.Phases {
		for _, o := range ph.Objects {
			got = append(got, ph.Name+" "+string(o.Action)+" "+o.Ref())
		}
	}
	g.Expect(got).To(Equal([]string{
		"deploy changed Service extra-component-metrics",
		"configure removed ConfigMap extra-component/extra-component-cluster-info",
		"configure removed ExtraComponentConfig.extra.convoy.dev extra-component/cluster",
	}))
	g.Expect(report.Phases[0].Objects[0].Diff).To(ContainSubstring("   - name: metrics\n-    port: 8443\n"))
}

func TestDiffWorkTreeAndDirectories(t *testing.T) {
	g := NewWithT(t)
	clone := cloneWithChange(t)
	dir := filepath.Join(clone, "packages", "metrics-forwarder")
	out, _, err := runCLI("diff", dir, "--from", "main")
	g.Expect(err).NotTo(HaveOccurred(), "the work tree is main")
	g.Expect(out).To(HavePrefix("no differences"))

	out, _, err = runCLI("diff", filepath.Join(examplePackages, "metrics-forwarder"), dir)
	g.Expect(err).To(MatchError(errDiffers))
	g.Expect(out).To(ContainSubstring("~ Service metrics-forwarder"))
	g.Expect(out).To(ContainSubstring("-    port: 9091\n"))
	g.Expect(out).To(ContainSubstring("+    port: 9092\n"))
}

func TestDiffRejectsBadInput(t *testing.T) {
	g := NewWithT(t)
	clone := cloneWithChange(t)
	_, _, err := runCLI("diff", filepath.Join(clone, "packages", "extra-component"), "--from", "no-such-branch")
	g.Expect(err).To(MatchError(ContainSubstring(`resolving "no-such-branch"`)))
	_, _, err = runCLI("diff", filepath.Join(clone, "packages", "extra-component"))
	g.Expect(err).To(MatchError(ContainSubstring("--from")))
	_, _, err = runCLI("diff", filepath.Join(clone, "packages", "extra-component"), "--from", "main", "-o", "html")
	g.Expect(err).To(MatchError(ContainSubstring(`--output "html"`)))
	_, _, err = runCLI("diff", t.TempDir(), "--from", "main")
	g.Expect(err).To(MatchError(ContainSubstring("not in a Git repository")))
}
