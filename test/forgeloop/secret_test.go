package forgeloop

import (
	"context"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// slowRetry is the controller's --commit-status-max-backoff in TestFixedTokenSecretIsUsedAtOnce:
// far longer than the test, so that a status landing proves the Secret's watch, not the retry.
const slowRetry = 10 * time.Minute

// TestFixedTokenSecretIsUsedAtOnce rolls out with a token Gitea refuses: the status is held as
// invalid (retried only every slowRetry) and Gitea holds none. Fixing the Secret's token makes
// the status land within seconds: the controller watches the Secrets' metadata and retries the
// states of the Secret that changed.
func TestFixedTokenSecretIsUsedAtOnce(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	l := startLoop(t, "--commit-status-max-backoff="+slowRetry.String())
	ns := env.NewNamespace(t)
	addFleet(ctx, t, ns)
	repo, commit := newRepository(ctx, t, "token-"+ns)
	createGitSource(ctx, t, ns, repo, srv.URL)
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tokenSecret}, secret)).To(Succeed())
	secret.Data = map[string][]byte{"token": []byte("not-a-gitea-token")}
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())
	hcpkg := createHostedClusterPackage(ctx, t, ns)
	expectRolledOut(ctx, t, hcpkg, commit)

	g.Eventually(func() (float64, error) {
		return l.ctrl.CounterSum(ctx, `convoy_commit_status_updates_total{outcome="invalid",provider="gitea"}`)
	}).WithTimeout(30 * time.Second).Should(BeNumerically(">", 0))
	time.Sleep(2 * time.Second) // the refused state is held, not retried
	st, err := srv.Statuses(repo, commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st).To(BeEmpty(), "Gitea refused the token")

	secret.Data = map[string][]byte{"token": []byte(srv.Token)}
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())
	fixed := time.Now()
	expectStatusWithin(t, repo, commit, hcpkg, gitea.StatusSuccess, 15*time.Second)
	t.Logf("the status landed %s after the Secret was fixed (the slow retry is %s)",
		time.Since(fixed).Round(time.Millisecond), slowRetry)
}
