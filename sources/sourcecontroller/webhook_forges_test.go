package sourcecontroller

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // GitHub's legacy X-Hub-Signature, sent beside the SHA-256 one.
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// forgeCall is a webhook call as one forge sends it: its documented payload (a file of
// testdata/webhooks, byte for byte as the documentation shows it) and the headers the forge
// sets, signed with a token.
type forgeCall struct {
	name    string
	payload string
	headers func(body []byte, token string) map[string]string
}

// forgePushes are the push events of the four forges.
var forgePushes = []forgeCall{{
	// https://github.com/octokit/webhooks/blob/main/payload-examples/api.github.com/push/payload.json
	// (GitHub's published example of the push event of
	// https://docs.github.com/en/webhooks/webhook-events-and-payloads#push).
	name: "GitHub push", payload: "github-push.json",
	headers: func(body []byte, token string) map[string]string {
		return map[string]string{GitHubEventHeader: "push", GitHubSignatureHeader: sha256Header(body, token),
			BitbucketServerSignatureHeader: sha1Header(body, token)}
	},
}, {
	// https://docs.gitlab.com/user/project/integrations/webhook_events/#push-events
	name: "GitLab Push Hook", payload: "gitlab-push-hook.json",
	headers: func(_ []byte, token string) map[string]string {
		return map[string]string{"X-Gitlab-Event": "Push Hook", GitLabTokenHeader: token}
	},
}, {
	// https://docs.gitea.com/usage/webhooks (the event information example; the signature as
	// its PHP example checks it: hash_hmac('sha256', $payload, $secret_key)).
	name: "Gitea push", payload: "gitea-push.json",
	headers: func(body []byte, token string) map[string]string {
		return map[string]string{GitHubEventHeader: "push", "X-Gogs-Event": "push", "X-Gitea-Event": "push",
			GiteaSignatureHeader: hex.EncodeToString(Sign(body, []byte(token)))}
	},
}, {
	// https://confluence.atlassian.com/bitbucketserver/event-payload-938025882.html (Push,
	// repo:refs_changed; the signature as its "Webhook secrets" section describes it).
	name: "Bitbucket Server repo:refs_changed", payload: "bitbucket-server-refs-changed.json",
	headers: func(body []byte, token string) map[string]string {
		return map[string]string{BitbucketServerEventHeader: "repo:refs_changed", BitbucketServerSignatureHeader: sha256Header(body, token)}
	},
}}

// forgePings are the test calls of the forges that have one: answered without a poll, signed
// or not.
var forgePings = []forgeCall{{
	// https://github.com/octokit/webhooks/blob/main/payload-examples/api.github.com/ping/payload.json
	name: "GitHub ping", payload: "github-ping.json",
	headers: func(body []byte, token string) map[string]string {
		return map[string]string{GitHubEventHeader: "ping", GitHubSignatureHeader: sha256Header(body, token)}
	},
}, {
	// Bitbucket Server's "Test connection": only the event key is relied on, never the body.
	name: "Bitbucket Server diagnostics:ping", payload: "",
	headers: func([]byte, string) map[string]string {
		return map[string]string{BitbucketServerEventHeader: "diagnostics:ping"}
	},
}}

func sha1Header(body []byte, token string) string {
	m := hmac.New(sha1.New, []byte(token))
	m.Write(body)
	return "sha1=" + hex.EncodeToString(m.Sum(nil))
}

// readPayload returns a documented payload of testdata/webhooks, or an empty JSON object.
func readPayload(t *testing.T, name string) []byte {
	t.Helper()
	if name == "" {
		return []byte("{}")
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "webhooks", name))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return raw
}

// TestWebhookFromEachForge sends each forge's documented push payload with the headers the
// forge sets: signed with the wrong token it gets one 401 and polls nothing (the requestedAt
// annotation stays as it was); signed with the right one it polls at once. Pings poll nothing.
func TestWebhookFromEachForge(t *testing.T) {
	env.Require(t)
	ns := newNamespace(t)
	srv, repo := gittest.NewServer(t)
	c1 := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	createSecret(t, ns, "hook", map[string][]byte{WebhookTokenKey: []byte("forge-token")})
	gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"), Ref: convoyv1alpha1.GitRef{Branch: "main"},
		Interval: &metav1.Duration{Duration: time.Hour}, WebhookSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "hook"}})
	waitReady(t, gs, c1)
	waitQuiet(t, srv)

	t.Run("wrong signatures get one 401 each and poll nothing", func(t *testing.T) {
		g := NewWithT(t)
		before := srv.Stats()
		for _, forge := range forgePushes {
			body := readPayload(t, forge.payload)
			code, answer := postHookAnswer(t, gs, body, forge.headers(body, "wrong-token"))
			g.Expect(code).To(Equal(http.StatusUnauthorized), forge.name)
			g.Expect(answer).To(Equal(unauthorizedBody+"\n"), forge.name)
			g.Expect(fetchSource(g, gs).Annotations).NotTo(HaveKey(convoyv1alpha1.RequestedAtAnnotation), forge.name)
		}
		g.Consistently(func() int64 { return srv.Stats().Sub(before).Advertisements }, "1s").Should(BeZero())
	})
	t.Run("pings are answered and poll nothing", func(t *testing.T) {
		g := NewWithT(t)
		before := srv.Stats()
		for _, ping := range forgePings {
			body := readPayload(t, ping.payload)
			g.Expect(postHook(t, gs, body, ping.headers(body, "forge-token"))).To(Equal(http.StatusOK), ping.name)
		}
		g.Consistently(func() int64 { return srv.Stats().Sub(before).Advertisements }, "1s").Should(BeZero())
		g.Expect(fetchSource(g, gs).Annotations).NotTo(HaveKey(convoyv1alpha1.RequestedAtAnnotation))
	})
	for i, forge := range forgePushes {
		t.Run(forge.name+" signed with the token polls at once", func(t *testing.T) {
			g := NewWithT(t)
			next := gittest.Commit(t, repo, forge.name, map[string]string{"f": string(rune('a' + i))})
			body := readPayload(t, forge.payload)
			g.Expect(postHook(t, gs, body, forge.headers(body, "forge-token"))).To(Equal(http.StatusAccepted))
			g.Eventually(func(g Gomega) {
				out := fetchSource(g, gs)
				g.Expect(out.Status.Artifact.Commit).To(Equal(next))
				g.Expect(out.Status.LastHandledReconcileAt).To(Equal(out.Annotations[convoyv1alpha1.RequestedAtAnnotation]))
			}, "2s").Should(Succeed())
			polled := fetchSource(g, gs).Annotations[convoyv1alpha1.RequestedAtAnnotation]
			g.Expect(postHook(t, gs, body, forge.headers(body, "wrong-token"))).To(Equal(http.StatusUnauthorized))
			g.Expect(fetchSource(g, gs).Annotations).To(HaveKeyWithValue(convoyv1alpha1.RequestedAtAnnotation, polled))
		})
	}
}

// waitQuiet waits until the GitSources of the Git server srv poll no more: the Secret's watch
// event may reach the controller after the first poll and ask for another.
func waitQuiet(t *testing.T, srv *gitserver.Server) {
	t.Helper()
	NewWithT(t).Eventually(func() int64 {
		quiet := srv.Stats()
		time.Sleep(500 * time.Millisecond)
		return srv.Stats().Sub(quiet).Advertisements
	}, "10s").Should(BeZero())
}
