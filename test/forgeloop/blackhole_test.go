package forgeloop

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
	"github.com/convoy-gitops/convoy/test/infrastructure/forge"
)

// rolloutBound is how long one rollout of the change over six HostedClusters may take.
const rolloutBound = 60 * time.Second

// story is one namespace's repository, GitSource and HostedClusterPackage.
type story struct {
	ns    string
	repo  *gitea.Repository
	hcpkg string
	base  string
}

// newStory sets up a namespace whose GitSource reports to apiURL (nothing when empty) and
// whose first rollout completed.
func newStory(ctx context.Context, t *testing.T, l *loop, apiURL string) *story {
	t.Helper()
	g := NewWithT(t)
	s := &story{ns: env.NewNamespace(t)}
	addFleet(ctx, t, s.ns)
	s.repo, s.base = newRepository(ctx, t, "blackhole-"+s.ns)
	createGitSource(ctx, t, s.ns, s.repo, apiURL)
	_, err := srv.AddPushWebhook(s.repo, l.webhook+"/hooks/"+s.ns+"/"+gitSourceName, "webhook-"+s.ns, "main")
	g.Expect(err).NotTo(HaveOccurred())
	s.hcpkg = createHostedClusterPackage(ctx, t, s.ns)
	expectRolledOut(ctx, t, s.hcpkg, s.base)
	return s
}

// rollout pushes a change of the package to main and returns its commit and the time until
// every Package runs it and the HostedClusterPackage is Ready.
func (s *story) rollout(ctx context.Context, t *testing.T, value string) (string, time.Duration) {
	t.Helper()
	began := time.Now()
	commit, err := srv.Push(ctx, forge.PushInput{Repo: s.repo, Branch: "main", Message: "Set replicas to " + value,
		Files: addonFiles(value)})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	pushed := time.Since(began)
	expectArtifact(ctx, t, s.ns, commit, rolloutBound)
	fetched := time.Since(began)
	expectRolledOut(ctx, t, s.hcpkg, commit)
	took := time.Since(began)
	t.Logf("%s: pushed after %s, fetched after %s, rolled out after %s", s.ns, pushed.Round(time.Millisecond),
		fetched.Round(time.Millisecond), took.Round(time.Millisecond))
	return commit, took
}

// expectRolledOut waits until the six Packages of hcpkg are available at commit and the
// HostedClusterPackage is Ready.
func expectRolledOut(ctx context.Context, t *testing.T, hcpkg, commit string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		pkgs := &convoyv1alpha1.PackageList{}
		g.Expect(env.Client.List(ctx, pkgs, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: hcpkg})).To(Succeed())
		g.Expect(pkgs.Items).To(HaveLen(6))
		for _, p := range pkgs.Items {
			g.Expect(p.Status.Revision).To(Equal(commit), p.Namespace)
		}
		obj := &convoyv1alpha1.HostedClusterPackage{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: hcpkg}, obj)).To(Succeed())
		g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
		g.Expect(obj.Status.ProgressedPackages).To(Equal(int32(6)))
		g.Expect(obj.Status.CurrentRevision).To(Equal(obj.Status.UpdateRevision))
	}).WithTimeout(rolloutBound).WithPolling(50 * time.Millisecond).Should(Succeed())
}

// TestBlackholedForgeDoesNotSlowTheRollout times, in one run, rollouts of a GitSource whose
// forge blackholes and of one that reports nothing, interleaved after an uncounted warm-up
// pair, each split into its phases (push, fetch after the webhook, rollout); then lets the
// forge answer and waits for the status to catch up.
func TestBlackholedForgeDoesNotSlowTheRollout(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	l := startLoop(t)
	proxy, err := faultnet.NewProxy(strings.TrimPrefix(srv.URL, "http://"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proxy.Close)
	reporting := newStory(ctx, t, l, "http://"+proxy.Addr())
	expectStatus(t, reporting.repo, reporting.base, reporting.hcpkg, gitea.StatusSuccess, "3/3 partitions, 6/6 clusters")
	silent := newStory(ctx, t, l, "")

	proxy.SetMode(faultnet.Blackhole)
	// A warm-up pair, not counted: each repository's first push webhook and each GitSource's
	// first webhook-driven fetch, and the Reporter's first send into the blackhole, happen
	// here, so that pair 1 does not carry first-time costs that pairs 2 and 3 do not.
	silent.rollout(ctx, t, "2")
	reporting.rollout(ctx, t, "2")
	var with, without []time.Duration
	var last string
	for i, value := range []string{"3", "4", "5"} {
		// Alternate which goes first, so that neither always meets the other's tail.
		var dWith, dWithout time.Duration
		if i%2 == 0 {
			_, dWithout = silent.rollout(ctx, t, value)
			last, dWith = reporting.rollout(ctx, t, value)
		} else {
			last, dWith = reporting.rollout(ctx, t, value)
			_, dWithout = silent.rollout(ctx, t, value)
		}
		with, without = append(with, dWith), append(without, dWithout)
		t.Logf("pair %d: without status reporting %s, with a blackholed forge %s", i+1,
			dWithout.Round(time.Millisecond), dWith.Round(time.Millisecond))
	}
	st, err := srv.Statuses(reporting.repo, last)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st).To(BeEmpty(), "nothing reaches a blackholed forge")
	// Within noise: the median with a blackholed forge no more than 1.5 times plus 2 s the
	// median without (each rollout is a push, a webhook, a poll and six Packages).
	t.Logf("medians: without %s, with a blackholed forge %s", median(without).Round(time.Millisecond),
		median(with).Round(time.Millisecond))
	g.Expect(median(with)).To(BeNumerically("<", median(without)*3/2+2*time.Second))

	proxy.SetMode(faultnet.Forward)
	back := time.Now()
	expectStatus(t, reporting.repo, last, reporting.hcpkg, gitea.StatusSuccess, "3/3 partitions, 6/6 clusters")
	t.Logf("the status caught up %s after the forge came back", time.Since(back).Round(time.Millisecond))
}

func median(ds []time.Duration) time.Duration {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}
