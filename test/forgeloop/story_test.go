package forgeloop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/forge"
)

// Names of the story.
const (
	gitSourceName = "addons"
	packagePath   = "packages/addon"
	tokenSecret   = "forge-token"
	webhookSecret = "forge-webhook"
	// partitionKey labels the HostedClusters with their partition.
	partitionKey = "tier"
	// progressDeadline is short so that the broken commit fails within the test.
	progressDeadline = 15
)

// tiers are the partitions, in rollout order; each has two HostedClusters.
var tiers = []string{"early", "normal", "late"}

// addonFiles is the package at one value of its ConfigMap.
func addonFiles(value string) map[string]string {
	return map[string]string{
		packagePath + "/manifest.yaml": "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: addon}\nspec:\n  phases:\n  - {name: deploy}\n",
		packagePath + "/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: addon-config, annotations: {convoy.dev/phase: deploy}}\n" +
			"data: {replicas: \"" + value + "\"}\n",
	}
}

// TestFromPullRequestToFleet runs the pull-request loop of the guide against Gitea.
func TestFromPullRequestToFleet(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	began := time.Now()
	l := startLoop(t)
	ns := env.NewNamespace(t)
	addFleet(ctx, t, ns)
	repo, base := newRepository(ctx, t, "story-"+ns)
	createGitSource(ctx, t, ns, repo, srv.URL)
	_, err := srv.AddPushWebhook(repo, l.webhook+"/hooks/"+ns+"/"+gitSourceName, "webhook-"+ns, "main")
	g.Expect(err).NotTo(HaveOccurred())
	hcpkg := createHostedClusterPackage(ctx, t, ns)
	expectStatus(t, repo, base, hcpkg, gitea.StatusSuccess, "3/3 partitions, 6/6 clusters")
	t.Logf("first rollout reported on %s after %s", base[:8], time.Since(began).Round(time.Millisecond))

	head, err := srv.Push(ctx, forge.PushInput{Repo: repo, Branch: "raise", Message: "Raise replicas to 3", Files: addonFiles("3")})
	g.Expect(err).NotTo(HaveOccurred())
	pr, err := srv.OpenPullRequest(repo, "raise", "main", "Raise replicas to 3")
	g.Expect(err).NotTo(HaveOccurred())
	comment := reviewComment(t, l, repo, hcpkg, head)
	_, err = srv.Comment(repo, pr, comment)
	g.Expect(err).NotTo(HaveOccurred())
	comments, err := srv.Comments(repo, pr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(comments).To(ContainElement(HaveField("Body", ContainSubstring("addon-config"))))

	merged := time.Now()
	merge, err := srv.Merge(repo, pr)
	g.Expect(err).NotTo(HaveOccurred())
	expectArtifact(ctx, t, ns, merge, 10*time.Second) // the interval is an hour: only the webhook polls
	t.Logf("the push webhook brought %s to the GitSource in %s", merge[:8], time.Since(merged).Round(time.Millisecond))
	expectStatus(t, repo, merge, hcpkg, gitea.StatusSuccess, "3/3 partitions, 6/6 clusters")
	t.Logf("merge commit %s reported success %s after the merge", merge[:8], time.Since(merged).Round(time.Millisecond))
	history := statusHistory(t, repo, merge, hcpkg)
	t.Logf("statuses of the merge commit, oldest first: %v", history)
	g.Expect(history[0]).To(MatchRegexp(`^pending: [0-2]/3 partitions, [0-5]/6 clusters$`))
	g.Expect(history[len(history)-1]).To(Equal("success: 3/3 partitions, 6/6 clusters"))

	broken, err := srv.Push(ctx, forge.PushInput{Repo: repo, Branch: "main", Message: "Break the template",
		Files: map[string]string{packagePath + "/broken.yaml.gotmpl": "{{ .config.missing.field }\n"}})
	g.Expect(err).NotTo(HaveOccurred())
	expectStatus(t, repo, broken, hcpkg, gitea.StatusFailure, "")
	t.Logf("broken commit %s reported failure (%q); whole story %s", broken[:8],
		statusHistory(t, repo, broken, hcpkg), time.Since(began).Round(time.Millisecond))
	expectReported(ctx, t, l, hcpkg)
}

// expectReported checks the controller's side of the reports: the metric counts successful
// requests to Gitea, the HostedClusterPackage has CommitStatusReported events, and the token
// appears nowhere in the controller's log.
func expectReported(ctx context.Context, t *testing.T, l *loop, hcpkg string) {
	t.Helper()
	g := NewWithT(t)
	sent, err := l.ctrl.CounterSum(ctx, `convoy_commit_status_updates_total{outcome="success",provider="gitea"}`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sent).To(BeNumerically(">=", 3))
	events := &eventsv1.EventList{}
	g.Expect(env.Client.List(ctx, events)).To(Succeed())
	reported := 0
	for _, e := range events.Items {
		if e.Regarding.Name == hcpkg && e.Reason == "CommitStatusReported" {
			reported++
		}
	}
	g.Expect(reported).To(BeNumerically(">", 0))
	log, err := os.ReadFile(l.ctrl.LogPath())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(log)).To(ContainSubstring("Reported commit status"))
	g.Expect(string(log)).NotTo(ContainSubstring(srv.Token))
	t.Logf("%v successful status requests, %d CommitStatusReported events, no token in the log", sent, reported)
}

// addFleet adds two HostedClusters per partition, without hosted API servers: the package
// lives in the HCP namespaces.
func addFleet(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	for _, tier := range tiers {
		for i := range 2 {
			_, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Namespace: ns, Name: fmt.Sprintf("%s-%d", tier, i),
				Labels: map[string]string{partitionKey: tier, "story": ns}, WithoutAPIServer: true})
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
}

// newRepository creates a repository on Gitea holding the package at replicas 1.
func newRepository(ctx context.Context, t *testing.T, name string) (*gitea.Repository, string) {
	t.Helper()
	g := NewWithT(t)
	repo, err := srv.CreateRepo(name)
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := srv.Push(ctx, forge.PushInput{Repo: repo, Branch: "main", Message: "Add the addon", Files: addonFiles("1")})
	g.Expect(err).NotTo(HaveOccurred())
	return repo, commit
}

// createGitSource creates the Secrets and the GitSource: commit statuses to apiURL, an hour
// between polls, the webhook secret.
func createGitSource(ctx context.Context, t *testing.T, ns string, repo *gitea.Repository, apiURL string) {
	t.Helper()
	g := NewWithT(t)
	for name, value := range map[string]string{tokenSecret: srv.Token, webhookSecret: "webhook-" + ns} {
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			StringData: map[string]string{"token": value}})).To(Succeed())
	}
	gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gitSourceName},
		Spec: convoyv1alpha1.GitSourceSpec{URL: repo.CloneURL, Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval:         &metav1.Duration{Duration: time.Hour},
			WebhookSecretRef: &convoyv1alpha1.LocalObjectReference{Name: webhookSecret}}}
	if apiURL != "" {
		gs.Spec.CommitStatus = &convoyv1alpha1.CommitStatus{Provider: convoyv1alpha1.CommitStatusGitea, APIURL: apiURL,
			Repository: repo.FullName, SecretRef: convoyv1alpha1.LocalObjectReference{Name: tokenSecret},
			TargetURL: "http://dashboard.example.com/rollouts/{name}"}
	}
	g.Expect(env.Client.Create(ctx, gs)).To(Succeed())
}

// createHostedClusterPackage rolls packages/addon out over the story's HostedClusters, one at
// a time, partition by partition.
func createHostedClusterPackage(ctx context.Context, t *testing.T, ns string) string {
	t.Helper()
	g := NewWithT(t)
	hcpkg := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon-" + ns}}
	hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"story": ns}}
	hcpkg.Spec.Partition = &convoyv1alpha1.PartitionSpec{LabelKey: partitionKey,
		Order: convoyv1alpha1.PartitionOrder{Static: tiers}}
	hcpkg.Spec.Strategy.RollingUpgrade = &convoyv1alpha1.RollingUpgradeStrategy{
		MaxUnavailable: ptr.To(intstr.FromInt32(1)), ProgressDeadlineSeconds: ptr.To(int32(progressDeadline))}
	hcpkg.Spec.Template.Spec.SourceRef = convoyv1alpha1.SourceReference{Name: gitSourceName, Namespace: ns}
	hcpkg.Spec.Template.Spec.Path = packagePath
	g.Expect(env.Client.Create(ctx, hcpkg)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), hcpkg) })
	return hcpkg.Name
}

// reviewComment runs the CI example's review commands in a clone of the pull request's
// branch, as docs/guides/pull-requests.md shows them, and returns the comment to post.
func reviewComment(t *testing.T, l *loop, repo *gitea.Repository, hcpkg, head string) string {
	t.Helper()
	g := NewWithT(t)
	dir := filepath.Join(t.TempDir(), "fleet")
	out, err := exec.Command("git", "clone", "--quiet", "--no-single-branch", "--branch", "raise", repo.CloneURL, dir).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	diff := exec.Command(l.convoy, "diff", packagePath, "--from", "origin/main", "--to", "HEAD", "-o", "markdown")
	diff.Dir = dir
	diffOut, err := diff.Output()
	g.Expect(diff.ProcessState.ExitCode()).To(Equal(1), "convoy diff exits 1 when something differs: %v", err)
	g.Expect(string(diffOut)).To(ContainSubstring("addon-config"))
	kubeconfig := filepath.Join(filepath.Dir(l.ctrl.LogPath()), "kubeconfig")
	plan := exec.Command(l.convoy, "plan", hcpkg, "--kubeconfig", kubeconfig, "--revision", head, "-o", "markdown")
	planOut, err := plan.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(planOut))
	g.Expect(string(planOut)).To(ContainSubstring("early"))
	return "## convoy diff\n\n" + string(diffOut) + "\n## convoy plan\n\n" + string(planOut)
}

// expectArtifact waits until the GitSource's artifact is commit.
func expectArtifact(ctx context.Context, t *testing.T, ns, commit string, within time.Duration) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		gs := &convoyv1alpha1.GitSource{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: gitSourceName}, gs)).To(Succeed())
		g.Expect(gs.Status.Artifact).NotTo(BeNil())
		g.Expect(gs.Status.Artifact.Commit).To(Equal(commit))
	}).WithTimeout(within).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// expectStatus waits until the latest status of context convoy/<hcpkg> on commit, read from
// Gitea, has state (and description, when not empty).
func expectStatus(t *testing.T, repo *gitea.Repository, commit, hcpkg string, state gitea.StatusState, description string) {
	t.Helper()
	expectStatusMatching(t, repo, commit, hcpkg, state, description, 90*time.Second)
}

// expectStatusWithin waits up to within until the latest status of convoy/<hcpkg> on commit
// has state.
func expectStatusWithin(t *testing.T, repo *gitea.Repository, commit, hcpkg string, state gitea.StatusState, within time.Duration) {
	t.Helper()
	expectStatusMatching(t, repo, commit, hcpkg, state, "", within)
}

func expectStatusMatching(t *testing.T, repo *gitea.Repository, commit, hcpkg string, state gitea.StatusState,
	description string, within time.Duration) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		latest := latestStatus(g, repo, commit, hcpkg)
		g.Expect(latest).NotTo(BeNil())
		g.Expect(latest.State).To(Equal(state), latest.Description)
		if description != "" {
			g.Expect(latest.Description).To(Equal(description))
		}
		g.Expect(latest.TargetURL).To(Equal("http://dashboard.example.com/rollouts/" + hcpkg))
	}).WithTimeout(within).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// latestStatus returns the newest status of context convoy/<hcpkg> on commit, or nil.
func latestStatus(g Gomega, repo *gitea.Repository, commit, hcpkg string) *gitea.Status {
	statuses, err := srv.Statuses(repo, commit)
	g.Expect(err).NotTo(HaveOccurred())
	var latest *gitea.Status
	for _, s := range statuses {
		if s.Context == "convoy/"+hcpkg && (latest == nil || s.ID > latest.ID) {
			latest = s
		}
	}
	return latest
}

// statusHistory returns "state: description" of every status of convoy/<hcpkg> on commit,
// oldest first.
func statusHistory(t *testing.T, repo *gitea.Repository, commit, hcpkg string) []string {
	t.Helper()
	statuses, err := srv.Statuses(repo, commit)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	sort.Slice(statuses, func(i, j int) bool { return statuses[i].ID < statuses[j].ID })
	var out []string
	for _, s := range statuses {
		if s.Context == "convoy/"+hcpkg {
			out = append(out, string(s.State)+": "+s.Description)
		}
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }
