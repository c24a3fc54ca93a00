package commitstatus_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/commitstatus"
)

const redirectToken = "s3cr3t-forge-token"

// TestRedirectIsAFailedSend answers every provider's POST with a redirect to another host (a
// local server: Gitea cannot be made to redirect a status POST). The token must never reach
// that host, by any header, and the send fails naming the Location's host, not the token.
func TestRedirectIsAFailedSend(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, provider := range []string{"github", "gitlab", "gitea"} {
			t.Run(provider+"/"+http.StatusText(code), func(t *testing.T) {
				testRedirect(t, provider, code)
			})
		}
	}
}

func testRedirect(t *testing.T, provider string, code int) {
	g := NewWithT(t)
	var reached atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(elsewhere.Close)
	forge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, elsewhere.URL+"/steal?token="+redirectToken, code)
	}))
	t.Cleanup(forge.Close)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "forge"},
		Data: map[string][]byte{"token": []byte(redirectToken)}}
	recorder := events.NewFakeRecorder(10)
	r := &commitstatus.Reporter{Secrets: fake.NewClientBuilder().WithObjects(secret).Build(), AllowInsecureHTTP: true,
		Recorder: recorder, Interval: 10 * time.Millisecond, Timeout: time.Second, MaxBackoff: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = r.Start(ctx) }()
	target := commitstatus.Target{Provider: provider, APIURL: forge.URL, Repository: "o/r",
		Secret: types.NamespacedName{Namespace: "fleet", Name: "forge"}}
	hcp := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "addon"}}
	r.Report(hcp, commitstatus.NewStatus(target, "addon", "abc", commitstatus.Success, "done"))
	var event string
	g.Eventually(recorder.Events).WithTimeout(5 * time.Second).Should(Receive(&event))
	g.Expect(event).To(ContainSubstring(commitstatus.FailedReason))
	g.Expect(event).To(ContainSubstring("redirected to host %q", strings.TrimPrefix(elsewhere.URL, "http://")))
	g.Expect(event).NotTo(ContainSubstring(redirectToken))
	g.Consistently(reached.Load).WithTimeout(300 * time.Millisecond).Should(BeZero())
}
