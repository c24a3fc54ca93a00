package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// ciStep is one shell script of a pipeline that runs convoy, with its variables.
type ciStep struct {
	name   string
	script string
	env    map[string]string
}

// githubSteps reads the steps of the example workflow that run convoy.
func githubSteps(t *testing.T) []ciStep {
	t.Helper()
	var wf struct {
		Env  map[string]string `json:"env"`
		Jobs map[string]struct {
			Steps []struct {
				Name string            `json:"name"`
				Run  string            `json:"run"`
				Env  map[string]string `json:"env"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	readYAML(t, "../../examples/ci/github-actions.yaml", &wf)
	var steps []ciStep
	for _, s := range wf.Jobs["review"].Steps {
		if runsConvoy(s.Run) {
			steps = append(steps, ciStep{name: s.Name, script: s.Run, env: merge(wf.Env, s.Env)})
		}
	}
	return steps
}

// gitlabSteps reads the script entries of the example job that run convoy.
func gitlabSteps(t *testing.T) []ciStep {
	t.Helper()
	var jobs map[string]struct {
		Variables map[string]string `json:"variables"`
		Script    []string          `json:"script"`
	}
	readYAML(t, "../../examples/ci/gitlab-ci.yaml", &jobs)
	var steps []ciStep
	for i, s := range jobs["convoy-review"].Script {
		if runsConvoy(s) {
			steps = append(steps, ciStep{name: fmt.Sprintf("script[%d]", i), script: s, env: jobs["convoy-review"].Variables})
		}
	}
	return steps
}

// runsConvoy reports a script that calls convoy (not one that installs it).
func runsConvoy(script string) bool {
	return strings.Contains(script, "convoy ") && !strings.Contains(script, "go install")
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(yaml.Unmarshal(raw, v)).To(Succeed(), path)
}

func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// convoyOnPath puts a convoy command on a new PATH directory: this test binary running main.
func convoyOnPath(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	script := "#!/bin/sh\n" + runMainEnv + "=1 exec '" + self + "' \"$@\"\n"
	NewWithT(t).Expect(os.WriteFile(filepath.Join(dir, "convoy"), []byte(script), 0o755)).To(Succeed())
	return dir
}

// runStep runs a step's script as the CI runner would (bash -e -o pipefail) in dir.
func runStep(dir, bin string, s ciStep, vars map[string]string) (string, error) {
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", s.script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for k, v := range merge(s.env, vars) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ciRepository is a fleet repository with main, a branch "change" with a real change to the
// packages, and a branch "broken" whose extra-component does not load.
func ciRepository(t *testing.T) (*gitserver.Server, string) {
	t.Helper()
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	files, err := gitserver.ReadTree(examplePackages, "packages")
	g.Expect(err).NotTo(HaveOccurred())
	base := gittest.Commit(t, repo, "add the example packages", files)
	g.Expect(repo.ResetBranch("change", base)).To(Succeed())
	change, err := repo.CommitFiles("change", "change the packages", changedPackages(t, files)...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.ResetBranch("broken", base)).To(Succeed())
	_, err = repo.Commit("broken", "break a template", map[string]string{
		"packages/extra-component/management/broken.yaml.gotmpl": "{{ .config.missing.field }\n"})
	g.Expect(err).NotTo(HaveOccurred())
	return srv, change
}

// cloneBranch clones the repository with branch checked out, as a CI checkout does.
func cloneBranch(t *testing.T, srv *gitserver.Server, branch string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	out, err := exec.Command("git", "clone", "--quiet", "--branch", branch, srv.FileURL("repo"), dir).CombinedOutput()
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), string(out))
	return dir
}

// planFleet is a management cluster with three HostedClusters and the HostedClusterPackage
// extra-component, not rolled out yet; it returns its kubeconfig.
func planFleet(ctx context.Context, t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	env, err := fleet.Start(ctx, fleet.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	for _, name := range []string{"early-1", "normal-2", "late-3"} {
		_, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: name, WithoutAPIServer: true,
			Labels: map[string]string{"tier": strings.Split(name, "-")[0]}})
		g.Expect(err).NotTo(HaveOccurred())
	}
	hcpkg := &convoyv1alpha1.HostedClusterPackage{}
	hcpkg.Name = "extra-component"
	hcpkg.Spec.Partition = &convoyv1alpha1.PartitionSpec{LabelKey: "tier"}
	hcpkg.Spec.Template.Spec.SourceRef = convoyv1alpha1.SourceReference{Name: "fleet", Namespace: "convoy-system"}
	hcpkg.Spec.Template.Spec.Path = "packages/extra-component"
	g.Expect(env.Client.Create(ctx, hcpkg)).To(Succeed())
	return string(must(env.KubeConfig()))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestCIExamplesReviewAChangeAndFailOnAnInvalidPackage(t *testing.T) {
	fleet.RequireAPIServers(t)
	ctx := context.Background()
	srv, change := ciRepository(t)
	bin := convoyOnPath(t)
	kubeconfig := planFleet(ctx, t)
	pipelines := map[string]struct {
		steps []ciStep
		vars  map[string]string
	}{
		"GitHub Actions": {githubSteps(t), map[string]string{"GITHUB_BASE_REF": "main"}},
		"GitLab CI":      {gitlabSteps(t), map[string]string{"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}},
	}
	for name, p := range pipelines {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(p.steps).To(HaveLen(3), "validate, diff and plan")
			vars := merge(p.vars, map[string]string{"MANAGEMENT_KUBECONFIG": kubeconfig, "RUNNER_TEMP": t.TempDir(), "CI_BUILDS_DIR": t.TempDir()})

			dir := cloneBranch(t, srv, "change")
			for _, s := range p.steps {
				out, err := runStep(dir, bin, s, vars)
				g.Expect(err).NotTo(HaveOccurred(), "%s: %s", s.name, out)
			}
			review, err := os.ReadFile(filepath.Join(dir, "review.md"))
			g.Expect(err).NotTo(HaveOccurred())
			md := string(review)
			g.Expect(strings.Count(md, "### convoy diff")).To(Equal(4), "one diff per package")
			g.Expect(md).To(ContainSubstring("+    port: 9443"))
			g.Expect(md).To(ContainSubstring("No object changes."), "log-collector-pko did not change")
			g.Expect(md).To(ContainSubstring("### convoy plan: HostedClusterPackage `extra-component`"))
			g.Expect(md).To(ContainSubstring(change[:12]), "the plan is for the pull request's commit")
			g.Expect(md).To(ContainSubstring("| 1 | early | clusters/early-1 | create |"))
			shape := parseMarkdown(t, review)
			g.Expect(shape.details).NotTo(BeEmpty())

			broken := cloneBranch(t, srv, "broken")
			out, err := runStep(broken, bin, p.steps[0], vars)
			g.Expect(err).To(HaveOccurred(), "an invalid package fails the pipeline: %s", out)
			g.Expect(out).To(ContainSubstring("packages/extra-component/management/broken.yaml.gotmpl"))
		})
	}
}
