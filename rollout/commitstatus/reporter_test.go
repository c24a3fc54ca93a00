package commitstatus_test

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/commitstatus"
	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
	"github.com/convoy-gitops/convoy/test/infrastructure/forge"
)

var gitea1 *forge.Forge

// TestMain starts one Gitea for the package's tests against a real forge, unless -short.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	var err error
	if gitea1, err = forge.Start(context.Background(), forge.Options{}); err != nil {
		panic(err)
	}
	code := m.Run()
	gitea1.Stop()
	os.Exit(code)
}

func requireGitea(t *testing.T) {
	t.Helper()
	if gitea1 == nil {
		t.Skip("needs Gitea (not under -short)")
	}
}

// setup creates a repository with a commit, the token Secret (in a fake reader: the Reporter
// only GETs it) and a Reporter through proxy, whose worker runs until the test ends.
func setup(t *testing.T, name, apiURL string) (*gitea.Repository, string, commitstatus.Target, *commitstatus.Reporter) {
	t.Helper()
	h := setupWith(t, name, apiURL, options{secretType: corev1.SecretTypeOpaque})
	return h.repo, h.commit, h.target, h.reporter
}

// options vary setupWith's Secret and Reporter.
type options struct {
	secretType corev1.SecretType
	// token replaces Gitea's token; noSecret creates no Secret.
	token      string
	noSecret   bool
	recorder   events.EventRecorder
	maxBackoff time.Duration
	// maxContexts is the Reporter's MaxContexts.
	maxContexts int
}

// harness is what setupWith made.
type harness struct {
	repo     *gitea.Repository
	commit   string
	target   commitstatus.Target
	reporter *commitstatus.Reporter
	secrets  client.Client
	secret   *corev1.Secret
}

// setupWith is setup with the options o.
func setupWith(t *testing.T, name, apiURL string, o options) harness {
	t.Helper()
	g := NewWithT(t)
	repo, err := gitea1.CreateRepo(name)
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := gitea1.Push(context.Background(), forge.PushInput{Repo: repo, Branch: "main", Message: "Change",
		Files: map[string]string{"pkg/a.yaml": "a: 1\n"}})
	g.Expect(err).NotTo(HaveOccurred())
	token := cmp.Or(o.token, gitea1.Token)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "forge"}, Type: o.secretType,
		Data: map[string][]byte{"token": []byte(token)}}
	builder := fake.NewClientBuilder()
	if !o.noSecret {
		builder = builder.WithObjects(secret.DeepCopy())
	}
	secrets := builder.Build()
	r := &commitstatus.Reporter{Secrets: secrets, AllowInsecureHTTP: true, Recorder: o.recorder,
		Interval: 50 * time.Millisecond, Timeout: time.Second, MaxBackoff: cmp.Or(o.maxBackoff, time.Second),
		MaxContexts: o.maxContexts}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = r.Start(ctx) }()
	target := commitstatus.Target{Source: "addons", Provider: "gitea", APIURL: apiURL, Repository: repo.FullName,
		Secret: types.NamespacedName{Namespace: "fleet", Name: "forge"}, TargetURL: "https://dash.example.com/{name}"}
	return harness{repo: repo, commit: commit, target: target, reporter: r, secrets: secrets, secret: secret}
}

// TestServiceAccountTokenSecretIsRefused points the token Secret at a (legacy) service
// account token Secret, whose "token" key would otherwise go to whatever apiURL says: the
// Reporter refuses it, naming the GitSource, the Secret and the rule, and Gitea gets nothing.
func TestServiceAccountTokenSecretIsRefused(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	recorder := events.NewFakeRecorder(10)
	h := setupWith(t, "satoken", gitea1.URL, options{secretType: corev1.SecretTypeServiceAccountToken, recorder: recorder})
	repo, commit, target, r := h.repo, h.commit, h.target, h.reporter
	hcp := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "addon"}}
	r.Report(hcp, commitstatus.NewStatus(target, "addon", commit, commitstatus.Success, "done"))
	var event string
	g.Eventually(recorder.Events).WithTimeout(5 * time.Second).Should(Receive(&event))
	g.Expect(event).To(ContainSubstring("GitSource fleet/addons: Secret fleet/forge of spec.commitStatus.secretRef " +
		"has type kubernetes.io/service-account-token; a commit status token must be in a Secret of type Opaque"))
	st, err := gitea1.Statuses(repo, commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st).To(BeEmpty())
}

// TestCoalescesToTheLatestState reports a burst of progress faster than the rate limit:
// Gitea receives fewer statuses than were reported, and the last one it holds is the latest.
func TestCoalescesToTheLatestState(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	repo, commit, target, r := setup(t, "coalesce", gitea1.URL)
	const reports = 100
	for i := range reports {
		r.Report(nil, commitstatus.NewStatus(target, "addon", commit, commitstatus.Pending, commitstatus.Progress(0, 3, i, reports)))
	}
	r.Report(nil, commitstatus.NewStatus(target, "addon", commit, commitstatus.Success, commitstatus.Progress(3, 3, reports, reports)))
	g.Eventually(func(g Gomega) {
		st, err := gitea1.Statuses(repo, commit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st).NotTo(BeEmpty())
		last := newest(st)
		g.Expect(last.State).To(Equal(gitea.StatusSuccess))
		g.Expect(last.Context).To(Equal("convoy/addon"))
		g.Expect(last.Description).To(Equal("3/3 partitions, 100/100 clusters"))
		g.Expect(last.TargetURL).To(Equal("https://dash.example.com/addon"))
		t.Logf("%d reports reached Gitea as %d statuses", reports+1, len(st))
		g.Expect(len(st)).To(BeNumerically("<", reports/4))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

// TestBlackholedForgeNeverBlocksAndCatchesUp reports through a proxy that blackholes: Report
// returns at once, nothing reaches Gitea; once the proxy forwards again, the latest state
// does.
func TestBlackholedForgeNeverBlocksAndCatchesUp(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	proxy, err := faultnet.NewProxy(strings.TrimPrefix(gitea1.URL, "http://"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proxy.Close)
	proxy.SetMode(faultnet.Blackhole)
	repo, commit, target, r := setup(t, "blackhole", "http://"+proxy.Addr())
	began := time.Now()
	for i := range 1000 {
		r.Report(nil, commitstatus.NewStatus(target, "addon", commit, commitstatus.Pending, commitstatus.Progress(1, 3, i, 1000)))
	}
	elapsed := time.Since(began)
	t.Logf("1000 reports to a blackholed forge took %s", elapsed)
	g.Expect(elapsed).To(BeNumerically("<", 100*time.Millisecond))
	time.Sleep(3 * time.Second)
	st, err := gitea1.Statuses(repo, commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st).To(BeEmpty())
	r.Report(nil, commitstatus.NewStatus(target, "addon", commit, commitstatus.Success, commitstatus.Progress(3, 3, 1000, 1000)))
	proxy.SetMode(faultnet.Forward)
	g.Eventually(func(g Gomega) {
		st, err := gitea1.Statuses(repo, commit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st).NotTo(BeEmpty())
		g.Expect(newest(st).State).To(Equal(gitea.StatusSuccess))
	}).WithTimeout(15 * time.Second).Should(Succeed())
}

// newest returns the status Gitea created last (it lists them in no fixed order).
func newest(st []*gitea.Status) *gitea.Status {
	last := st[0]
	for _, s := range st {
		if s.ID > last.ID {
			last = s
		}
	}
	return last
}

// TestMissingSecretIsRetried reports the final state while its Secret does not exist yet (a
// Secret read that fails, as one API server hiccup would): the state is retried with backoff,
// not held as invalid, and reaches Gitea once the Secret is there.
func TestMissingSecretIsRetried(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	h := setupWith(t, "nosecret", gitea1.URL, options{noSecret: true, maxBackoff: time.Minute})
	h.reporter.Report(nil, commitstatus.NewStatus(h.target, "addon", h.commit, commitstatus.Success, "done"))
	time.Sleep(1500 * time.Millisecond)
	g.Expect(h.secrets.Create(context.Background(), h.secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		st, err := gitea1.Statuses(h.repo, h.commit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st).NotTo(BeEmpty())
		g.Expect(newest(st).State).To(Equal(gitea.StatusSuccess))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestRefusedTokenIsRetriedSlowly sends with a token Gitea does not know: its 401 is invalid,
// sent again only after MaxBackoff, not every backoff; a GitSource that points at another
// Secret is tried at once.
func TestRefusedTokenIsRetriedSlowly(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	h := setupWith(t, "badtoken", gitea1.URL, options{token: "not-a-token", maxBackoff: time.Minute})
	before := updatesOf(g, "invalid")
	h.reporter.Report(nil, commitstatus.NewStatus(h.target, "addon", h.commit, commitstatus.Success, "done"))
	g.Eventually(func() float64 { return updatesOf(g, "invalid") }).WithTimeout(5 * time.Second).Should(Equal(before + 1))
	g.Consistently(func() float64 { return updatesOf(g, "invalid") }).WithTimeout(4 * time.Second).Should(Equal(before + 1))
	good := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "forge-good"},
		Data: map[string][]byte{"token": []byte(gitea1.Token)}}
	g.Expect(h.secrets.Create(context.Background(), good)).To(Succeed())
	h.target.Secret.Name = good.Name
	h.reporter.Report(nil, commitstatus.NewStatus(h.target, "addon", h.commit, commitstatus.Success, "done"))
	g.Eventually(func(g Gomega) {
		st, err := gitea1.Statuses(h.repo, h.commit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st).NotTo(BeEmpty())
	}).WithTimeout(5 * time.Second).Should(Succeed())
}

// updatesOf reads convoy_commit_status_updates_total{provider="gitea",outcome} from the registry.
func updatesOf(g Gomega, outcome string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "convoy_commit_status_updates_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["provider"] == "gitea" && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestRetargetingReplacesTheEntry points one HostedClusterPackage's GitSource at ten
// repositories in turn with room for one context: each change replaces the package's entry
// instead of adding one, so the last repository gets its status and nothing is dropped.
func TestRetargetingReplacesTheEntry(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	h := setupWith(t, "retarget", gitea1.URL, options{maxContexts: 1})
	hcp := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "addon"}}
	before := updatesOf(g, "dropped")
	for i := range 10 {
		target := h.target
		target.Repository = fmt.Sprintf("%s-%d", h.target.Repository, i)
		h.reporter.Report(hcp, commitstatus.NewStatus(target, "addon", h.commit, commitstatus.Pending, "moving"))
	}
	h.reporter.Report(hcp, commitstatus.NewStatus(h.target, "addon", h.commit, commitstatus.Success, "done"))
	g.Eventually(func(g Gomega) {
		st, err := gitea1.Statuses(h.repo, h.commit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st).NotTo(BeEmpty())
		g.Expect(newest(st).State).To(Equal(gitea.StatusSuccess))
	}).WithTimeout(5 * time.Second).Should(Succeed())
	g.Expect(updatesOf(g, "dropped")).To(Equal(before))
}

// TestBlackholedHostDoesNotStarveOthers reports five contexts to a host that blackholes, then
// one to Gitea: hosts take turns, so Gitea's status arrives after at most one timeout, and
// the blackholed host, backed off as a whole, costs one attempt per backoff period rather
// than one per context.
func TestBlackholedHostDoesNotStarveOthers(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	proxy, err := faultnet.NewProxy(strings.TrimPrefix(gitea1.URL, "http://"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proxy.Close)
	proxy.SetMode(faultnet.Blackhole)
	h := setupWith(t, "fairness", gitea1.URL, options{maxBackoff: time.Minute})
	dead := h.target
	dead.APIURL = "http://" + proxy.Addr()
	before := updatesOf(g, "error")
	began := time.Now()
	for i := range 5 {
		hcp := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dead-%d", i)}}
		h.reporter.Report(hcp, commitstatus.NewStatus(dead, hcp.Name, h.commit, commitstatus.Pending, "moving"))
	}
	hcp := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "alive"}}
	h.reporter.Report(hcp, commitstatus.NewStatus(h.target, "alive", h.commit, commitstatus.Success, "done"))
	g.Eventually(func(g Gomega) {
		st, err := gitea1.Statuses(h.repo, h.commit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st).NotTo(BeEmpty())
	}).WithTimeout(2500 * time.Millisecond).WithPolling(50 * time.Millisecond).Should(Succeed())
	t.Logf("Gitea's status arrived after %s beside a blackholed host", time.Since(began))
	time.Sleep(time.Until(began.Add(4500 * time.Millisecond)))
	g.Expect(updatesOf(g, "error") - before).To(BeNumerically("<=", 2))
}

// TestLeftCommitGetsItsLastStatus moves one HostedClusterPackage across three commits: the
// first, left while pending, ends as Gitea's "warning" naming the commit that superseded it;
// the second, left right after its success was reported, ends as success (its final state is
// still sent); the third stays pending. Each is read back from Gitea.
func TestLeftCommitGetsItsLastStatus(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	h := setupWith(t, "superseded", gitea1.URL, options{})
	second, err := gitea1.Push(context.Background(), forge.PushInput{Repo: h.repo, Branch: "main", Message: "Second",
		Files: map[string]string{"pkg/a.yaml": "a: 2\n"}})
	g.Expect(err).NotTo(HaveOccurred())
	third, err := gitea1.Push(context.Background(), forge.PushInput{Repo: h.repo, Branch: "main", Message: "Third",
		Files: map[string]string{"pkg/a.yaml": "a: 3\n"}})
	g.Expect(err).NotTo(HaveOccurred())
	hcp := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "addon"}}
	r := h.reporter
	r.Report(hcp, commitstatus.NewStatus(h.target, "addon", h.commit, commitstatus.Pending, commitstatus.Progress(1, 3, 2, 6)))
	expectNewest(g, h.repo, h.commit, gitea.StatusPending, "1/3 partitions, 2/6 clusters")
	r.Report(hcp, commitstatus.NewStatus(h.target, "addon", second, commitstatus.Pending, commitstatus.Progress(0, 3, 0, 6)))
	r.Report(hcp, commitstatus.NewStatus(h.target, "addon", second, commitstatus.Success, commitstatus.Progress(3, 3, 6, 6)))
	r.Report(hcp, commitstatus.NewStatus(h.target, "addon", third, commitstatus.Pending, commitstatus.Progress(0, 3, 0, 6)))
	expectNewest(g, h.repo, h.commit, gitea.StatusWarning, "Superseded by "+second[:7]+" at 1/3 partitions, 2/6 clusters")
	expectNewest(g, h.repo, second, gitea.StatusSuccess, "3/3 partitions, 6/6 clusters")
	expectNewest(g, h.repo, third, gitea.StatusPending, "0/3 partitions, 0/6 clusters")
}

// expectNewest waits until the newest status Gitea holds on commit has state and description.
func expectNewest(g Gomega, repo *gitea.Repository, commit string, state gitea.StatusState, description string) {
	g.Eventually(func(g Gomega) {
		st, err := gitea1.Statuses(repo, commit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st).NotTo(BeEmpty())
		g.Expect(newest(st).State).To(Equal(state))
		g.Expect(newest(st).Description).To(Equal(description))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}
