package sourcecontroller

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/gittest"
)

// postHook calls the webhook of gs with the given headers and returns the status code.
func postHook(t *testing.T, gs *convoyv1alpha1.GitSource, body []byte, headers map[string]string) int {
	t.Helper()
	code, _ := postHookAnswer(t, gs, body, headers)
	return code
}

// postHookAnswer calls the webhook of gs and returns the status code and the body.
func postHookAnswer(t *testing.T, gs *convoyv1alpha1.GitSource, body []byte, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, webhookURL+WebhookPathPrefix+gs.Namespace+"/"+gs.Name, bytes.NewReader(body))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(answer)
}

func sha256Header(body []byte, token string) string {
	return "sha256=" + hex.EncodeToString(Sign(body, []byte(token)))
}

func TestWebhookTriggersPoll(t *testing.T) {
	env.Require(t)
	ns := newNamespace(t)
	srv, repo := gittest.NewServer(t)
	c1 := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	createSecret(t, ns, "hook", map[string][]byte{WebhookTokenKey: []byte("hook-token")})
	gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"), Ref: convoyv1alpha1.GitRef{Branch: "main"},
		Interval: &metav1.Duration{Duration: time.Hour}, WebhookSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "hook"}})
	waitReady(t, gs, c1)
	body := []byte(`{"ref":"refs/heads/main"}`)

	t.Run("invalid signature is refused and polls nothing", func(t *testing.T) {
		g := NewWithT(t)
		// The Secret's watch event may reach the controller after the first poll and ask for
		// another; wait until the source is quiet before counting.
		g.Eventually(func() int64 {
			quiet := srv.Stats()
			time.Sleep(500 * time.Millisecond)
			return srv.Stats().Sub(quiet).Advertisements
		}, "10s").Should(BeZero())
		before := srv.Stats()
		g.Expect(postHook(t, gs, body, map[string]string{GitHubSignatureHeader: sha256Header(body, "wrong")})).To(Equal(http.StatusUnauthorized))
		g.Expect(postHook(t, gs, body, map[string]string{GitLabTokenHeader: "wrong"})).To(Equal(http.StatusUnauthorized))
		g.Expect(postHook(t, gs, body, map[string]string{SignatureHeader: "sha256=zz"})).To(Equal(http.StatusUnauthorized))
		g.Expect(postHook(t, gs, body, nil)).To(Equal(http.StatusUnauthorized))
		g.Consistently(func() int64 { return srv.Stats().Sub(before).Advertisements }, "1s").Should(BeZero())
		g.Expect(fetchSource(g, gs).Annotations).NotTo(HaveKey(convoyv1alpha1.RequestedAtAnnotation))
	})
	t.Run("valid GitHub signature triggers a poll within a second", func(t *testing.T) {
		g := NewWithT(t)
		c2 := gittest.Commit(t, repo, "two", map[string]string{"f": "2"})
		g.Expect(postHook(t, gs, body, map[string]string{GitHubSignatureHeader: sha256Header(body, "hook-token")})).To(Equal(http.StatusAccepted))
		g.Eventually(func(g Gomega) {
			g.Expect(fetchSource(g, gs).Status.Artifact.Commit).To(Equal(c2))
		}, "1s").Should(Succeed())
		out := fetchSource(g, gs)
		g.Expect(out.Status.LastHandledReconcileAt).To(Equal(out.Annotations[convoyv1alpha1.RequestedAtAnnotation]))
	})
	t.Run("valid GitLab token and generic signature are accepted", func(t *testing.T) {
		g := NewWithT(t)
		gitlab, generic := []byte(`{"ref":"refs/heads/main","via":"gitlab"}`), []byte(`{"ref":"refs/heads/main","via":"generic"}`)
		g.Expect(postHook(t, gs, gitlab, map[string]string{GitLabTokenHeader: "hook-token"})).To(Equal(http.StatusAccepted))
		g.Expect(postHook(t, gs, generic, map[string]string{SignatureHeader: sha256Header(generic, "hook-token")})).To(Equal(http.StatusAccepted))
	})
	t.Run("a replayed call is answered without a patch", func(t *testing.T) {
		g := NewWithT(t)
		replayed := []byte(`{"ref":"refs/heads/main","after":"replayed"}`)
		headers := map[string]string{GitHubSignatureHeader: sha256Header(replayed, "hook-token"), "X-GitHub-Delivery": "d-1"}
		g.Expect(postHook(t, gs, replayed, headers)).To(Equal(http.StatusAccepted))
		first := fetchSource(g, gs)
		for i := range 5 {
			headers["X-GitHub-Delivery"] = fmt.Sprintf("d-%d", i+2) // unsigned: a replay may change it
			code, answer := postHookAnswer(t, gs, replayed, headers)
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(answer).To(Equal("replayed delivery: the poll was already requested\n"))
		}
		after := fetchSource(g, gs)
		g.Expect(after.Annotations[convoyv1alpha1.RequestedAtAnnotation]).To(Equal(first.Annotations[convoyv1alpha1.RequestedAtAnnotation]))
		g.Expect(managedTime(after, webhookFieldOwner)).To(Equal(managedTime(first, webhookFieldOwner)), "no patch by the receiver")
	})
	t.Run("body over the limit is refused", func(t *testing.T) {
		g := NewWithT(t)
		big := []byte(strings.Repeat("x", int(2*suiteWebhookMaxBody)))
		g.Expect(postHook(t, gs, big, map[string]string{GitHubSignatureHeader: sha256Header(big, "hook-token")})).To(Equal(http.StatusRequestEntityTooLarge))
	})
	t.Run("unknown source, source without webhook secret and bad signature get one answer", func(t *testing.T) {
		g := NewWithT(t)
		other := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"), Ref: convoyv1alpha1.GitRef{Branch: "main"}})
		missing := other.DeepCopy()
		missing.Name = "missing"
		badPath := other.DeepCopy()
		badPath.Name = "a/b"
		headers := map[string]string{GitLabTokenHeader: "hook-token"}
		wantCode, wantBody := postHookAnswer(t, gs, body, map[string]string{GitLabTokenHeader: "wrong"})
		g.Expect(wantCode).To(Equal(http.StatusUnauthorized))
		for _, target := range []*convoyv1alpha1.GitSource{other, missing, badPath} {
			code, answer := postHookAnswer(t, target, body, headers)
			g.Expect(code).To(Equal(wantCode), target.Name)
			g.Expect(answer).To(Equal(wantBody), target.Name)
		}
	})
	t.Run("refused calls read no Secret from the API server", func(t *testing.T) {
		g := NewWithT(t)
		fresh := []byte(`{"ref":"refs/heads/main","after":"reads"}`)
		g.Expect(postHook(t, gs, fresh, map[string]string{GitLabTokenHeader: "hook-token"})).To(Equal(http.StatusAccepted))
		before := webhookSecretReads.reads.Load()
		missing := gs.DeepCopy()
		missing.Name = "missing"
		for range 20 {
			g.Expect(postHook(t, gs, body, map[string]string{GitLabTokenHeader: "wrong"})).To(Equal(http.StatusUnauthorized))
			g.Expect(postHook(t, missing, body, map[string]string{GitLabTokenHeader: "wrong"})).To(Equal(http.StatusUnauthorized))
		}
		g.Expect(webhookSecretReads.reads.Load()).To(Equal(before), "the token is cached per resourceVersion")
	})
}

// managedTime returns the time of the last write of the field manager owner to gs.
func managedTime(gs *convoyv1alpha1.GitSource, owner string) string {
	for _, m := range gs.ManagedFields {
		if m.Manager == owner && m.Time != nil {
			return m.Time.UTC().Format(time.RFC3339Nano)
		}
	}
	return ""
}

func TestParseHookPath(t *testing.T) {
	cases := map[string]bool{
		"/hooks/ns/name": true, "/hooks/ns/": false, "/hooks//name": false, "/hooks/ns/name/x": false, "/other/ns/name": false,
	}
	for p, ok := range cases {
		t.Run(p, func(t *testing.T) {
			_, got := parseHookPath(p)
			NewWithT(t).Expect(got).To(Equal(ok))
		})
	}
}
