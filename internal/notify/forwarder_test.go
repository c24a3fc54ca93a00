package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = convoyv1alpha1.AddToScheme(s)
	return s
}

func TestForwarderRetriesAndPostsFluxEvents(t *testing.T) {
	g := NewWithT(t)
	var calls atomic.Int32
	got := make(chan eventv1.Event, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var e eventv1.Event
		g.Expect(json.Unmarshal(raw, &e)).To(Succeed())
		got <- e
	}))
	defer srv.Close()
	f, err := NewForwarder(Options{Address: srv.URL, Scheme: testScheme(), Backoff: 10 * time.Millisecond})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = f.Run(ctx) }()

	obj := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "extra", UID: "u1"}}
	f.enqueue("convoy-rollout", obj, map[string]string{convoyv1alpha1.RevisionAnnotation: "abc", "other.io/x": "y"},
		corev1.EventTypeWarning, "PackageFailed", "HostedCluster %s: %s", "clusters/a", "broken")
	var e eventv1.Event
	g.Eventually(got, 5*time.Second).Should(Receive(&e))
	g.Expect(calls.Load()).To(Equal(int32(3)), "two failures, then accepted")
	g.Expect(e.InvolvedObject).To(Equal(corev1.ObjectReference{APIVersion: "convoy.dev/v1alpha1", Kind: "HostedClusterPackage", Name: "extra", UID: "u1"}))
	g.Expect(e.Severity).To(Equal(eventv1.EventSeverityError))
	g.Expect(e.Reason).To(Equal("PackageFailed"))
	g.Expect(e.Message).To(Equal("HostedCluster clusters/a: broken"))
	g.Expect(e.Metadata).To(Equal(map[string]string{"revision": "abc"}), "convoy's annotations only, without their prefix")
	g.Expect(e.ReportingController).To(Equal("convoy-rollout"))
}

func TestNewForwarderRefusesABadAddress(t *testing.T) {
	g := NewWithT(t)
	for _, addr := range []string{"", "ftp://x", "notaurl", "http://"} {
		_, err := NewForwarder(Options{Address: addr, Scheme: testScheme()})
		g.Expect(err).To(MatchError(ContainSubstring("--events-addr")), addr)
	}
}
