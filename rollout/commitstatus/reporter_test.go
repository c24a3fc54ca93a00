package commitstatus_test

import (
	"context"
	"flag"
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
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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
	return setupSecret(t, name, apiURL, corev1.SecretTypeOpaque, nil)
}

// setupSecret is setup with a token Secret of secretType and events sent to recorder.
func setupSecret(t *testing.T, name, apiURL string, secretType corev1.SecretType, recorder events.EventRecorder) (
	*gitea.Repository, string, commitstatus.Target, *commitstatus.Reporter) {
	t.Helper()
	g := NewWithT(t)
	repo, err := gitea1.CreateRepo(name)
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := gitea1.Push(context.Background(), forge.PushInput{Repo: repo, Branch: "main", Message: "Change",
		Files: map[string]string{"pkg/a.yaml": "a: 1\n"}})
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "forge"}, Type: secretType,
		Data: map[string][]byte{"token": []byte(gitea1.Token)}}
	r := &commitstatus.Reporter{Secrets: fake.NewClientBuilder().WithObjects(secret).Build(), AllowInsecureHTTP: true,
		Recorder: recorder, Interval: 50 * time.Millisecond, Timeout: time.Second, MaxBackoff: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = r.Start(ctx) }()
	target := commitstatus.Target{Source: "addons", Provider: "gitea", APIURL: apiURL, Repository: repo.FullName,
		Secret: types.NamespacedName{Namespace: "fleet", Name: "forge"}, TargetURL: "https://dash.example.com/{name}"}
	return repo, commit, target, r
}

// TestServiceAccountTokenSecretIsRefused points the token Secret at a (legacy) service
// account token Secret, whose "token" key would otherwise go to whatever apiURL says: the
// Reporter refuses it, naming the GitSource, the Secret and the rule, and Gitea gets nothing.
func TestServiceAccountTokenSecretIsRefused(t *testing.T) {
	requireGitea(t)
	g := NewWithT(t)
	recorder := events.NewFakeRecorder(10)
	repo, commit, target, r := setupSecret(t, "satoken", gitea1.URL, corev1.SecretTypeServiceAccountToken, recorder)
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
