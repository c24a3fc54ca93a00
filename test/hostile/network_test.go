package hostile

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sources/sourcecontroller"
)

// replays is how many times the replay case sends a delivery again.
const replays = 20

// freeAddress returns a free address of 127.0.0.1 for a server the controller starts.
func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	addr := ln.Addr().String()
	NewWithT(t).Expect(ln.Close()).To(Succeed())
	return addr
}

// startChartServers starts the chart repository that redirects to another port of this
// machine, and that other port.
func (r *run) startChartServers(t *testing.T) {
	t.Helper()
	r.chartElsewhere = newCountingServer(t, false, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) })
	r.chartHop = newCountingServer(t, false, func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, r.chartElsewhere.URL+req.URL.Path, http.StatusFound)
	})
}

// commitRedirectedChart commits a package that pulls a chart from the redirecting repository.
func commitRedirectedChart(g Gomega, r *run, tn *tenant) {
	manifest := "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: tenant}\nspec:\n" +
		"  chart:\n    repository: " + r.chartHop.URL + "/charts\n    name: hostile\n    version: \"1.0.0\"\n" +
		"    digest: sha256:" + strings.Repeat("1", 64) + "\n"
	_, err := tn.repo.Commit("main", "hostile chart", map[string]string{packagePath + "/manifest.yaml": manifest})
	g.Expect(err).NotTo(HaveOccurred())
}

// runReplayCase gives a tenant's GitSource a webhook Secret, posts one signed push, then
// replays it: the first call asks for a poll (202), each replay is answered 200 and patches
// nothing (the GitSource's requestedAt annotation and the receiver's write stay as they were),
// even with another delivery id, which no forge signs; a new body is heard again.
func (r *run) runReplayCase(t *testing.T) answer {
	t.Helper()
	g := NewWithT(t)
	tn := r.newTenant(t, hostileCase{})
	start := time.Now()
	g.Expect(r.c.Create(r.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "hook"},
		StringData: map[string]string{sourcecontroller.WebhookTokenKey: planted}})).To(Succeed())
	patchGitSource(g, r, tn, func(gs *convoyv1alpha1.GitSource) {
		gs.Spec.WebhookSecretRef = &convoyv1alpha1.LocalObjectReference{Name: "hook"}
	})
	body := []byte(`{"ref":"refs/heads/main","after":"` + tn.good + `"}`)
	g.Eventually(func() int { return r.postHook(g, tn, body, "first") }).WithTimeout(answerBound).
		Should(Equal(http.StatusAccepted), "the receiver sees the webhook Secret")
	first := r.gitSourceOf(g, tn)
	for i := range replays {
		code := r.postHook(g, tn, body, fmt.Sprintf("replay-%d", i))
		g.Expect(code).To(Equal(http.StatusOK), "replay %d", i)
	}
	g.Consistently(func(g Gomega) {
		now := r.gitSourceOf(g, tn)
		g.Expect(now.Annotations[convoyv1alpha1.RequestedAtAnnotation]).To(Equal(first.Annotations[convoyv1alpha1.RequestedAtAnnotation]))
		g.Expect(webhookWrite(now)).To(Equal(webhookWrite(first)), "the receiver patched the GitSource")
	}).WithTimeout(2 * time.Second).Should(Succeed())
	took := time.Since(start)
	fresh := []byte(`{"ref":"refs/heads/main","after":"another push"}`)
	g.Expect(r.postHook(g, tn, fresh, "fresh")).To(Equal(http.StatusAccepted), "a new delivery is heard")
	g.Eventually(func(g Gomega) {
		g.Expect(r.gitSourceOf(g, tn).Annotations).NotTo(HaveKeyWithValue(convoyv1alpha1.RequestedAtAnnotation,
			first.Annotations[convoyv1alpha1.RequestedAtAnnotation]))
	}).WithTimeout(answerBound).Should(Succeed())
	return answer{name: fmt.Sprintf("signed webhook delivery replayed %d times", replays), condition: "`200` without a patch",
		message: "replayed delivery: the poll was already requested (one patch of the GitSource in all)", took: took,
		peakRSS: r.expectControllerAlive(g)}
}

// postHook posts body to the tenant's GitSource webhook, signed with the planted token as
// GitHub signs it, with delivery as its X-GitHub-Delivery, and returns the status code.
func (r *run) postHook(g Gomega, tn *tenant, body []byte, delivery string) int {
	req, err := http.NewRequest(http.MethodPost, "http://"+r.webhookAddr+sourcecontroller.WebhookPathPrefix+tn.ns+"/"+gitSourceName,
		bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set(sourcecontroller.GitHubSignatureHeader, "sha256="+hex.EncodeToString(sourcecontroller.Sign(body, []byte(planted))))
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	return resp.StatusCode
}

// gitSourceOf reads the tenant's GitSource.
func (r *run) gitSourceOf(g Gomega, tn *tenant) *convoyv1alpha1.GitSource {
	gs := &convoyv1alpha1.GitSource{}
	g.Expect(r.c.Get(r.ctx, client.ObjectKey{Namespace: tn.ns, Name: gitSourceName}, gs)).To(Succeed())
	return gs
}

// webhookWrite returns the time of the webhook receiver's last write to gs.
func webhookWrite(gs *convoyv1alpha1.GitSource) string {
	for _, m := range gs.ManagedFields {
		if m.Manager == "convoy-webhook" && m.Time != nil {
			return m.Time.UTC().Format(time.RFC3339Nano)
		}
	}
	return ""
}
