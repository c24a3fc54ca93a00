package hosted

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/devfleet"
	"github.com/convoy-gitops/convoy/internal/faultnet"
)

// kubeconfigFor writes a Secret in a new namespace with blue's credentials and server host
// (scheme://host:port) and returns a reference to it.
func kubeconfigFor(t *testing.T, host string) (string, *convoyv1alpha1.SecretKeyReference) {
	t.Helper()
	g := NewWithT(t)
	cfg := rest.CopyConfig(blue.Config)
	cfg.Host = host
	kc, err := devfleet.KubeConfigFor(cfg, "test")
	g.Expect(err).NotTo(HaveOccurred())
	ns := env.NewNamespace(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kc"}, Data: map[string][]byte{"kubeconfig": kc}}
	g.Expect(env.Client.Create(context.Background(), secret)).To(Succeed())
	return ns, &convoyv1alpha1.SecretKeyReference{Name: "kc", Key: "kubeconfig"}
}

// timedList lists namespaces and returns the error and how long it took.
func timedList(c client.Client) (time.Duration, error) {
	start := time.Now()
	err := c.List(context.Background(), &corev1.NamespaceList{})
	return time.Since(start), err
}

func TestClientOfAServerThatStallsAfterTheHeadersTimesOut(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	srv := faultnet.NewStallingServer("application/json")
	defer srv.Close()
	ns, ref := kubeconfigFor(t, srv.URL)
	clients := NewClients(env.Client, env.Client, Options{Scheme: env.Scheme, Timeout: time.Second, UnreachableBackoff: time.Hour})
	c, err := clients.Client(context.Background(), ns, ref)
	g.Expect(err).NotTo(HaveOccurred())

	took, err := timedList(c)
	g.Expect(err).To(HaveOccurred())
	g.Expect(took).To(BeNumerically("<", 3*time.Second), "bounded by the 1s request timeout")
	g.Expect(srv.Requests()).To(BeNumerically(">=", 1))

	requests := srv.Requests()
	took, err = timedList(c)
	var ue *UnreachableError
	g.Expect(errors.As(err, &ue)).To(BeTrue(), "the circuit is open: %v", err)
	g.Expect(took).To(BeNumerically("<", 100*time.Millisecond), "fails at once")
	g.Expect(srv.Requests()).To(Equal(requests), "no request sent")
	g.Expect(ue.Error()).To(ContainSubstring("is not answering (1 failures in a row"))
}

func TestClientOfABlackholedClusterFailsFastAndRecovers(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	proxy, err := faultnet.NewProxy(hostPort(t, blue.Config.Host))
	g.Expect(err).NotTo(HaveOccurred())
	defer proxy.Close()
	ns, ref := kubeconfigFor(t, "https://"+proxy.Addr())
	clients := NewClients(env.Client, env.Client, Options{Scheme: env.Scheme, Timeout: 20 * time.Second,
		ConnectTimeout: 500 * time.Millisecond, UnreachableBackoff: 500 * time.Millisecond})
	c, err := clients.Client(context.Background(), ns, ref)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = timedList(c)
	g.Expect(err).NotTo(HaveOccurred())

	proxy.SetMode(faultnet.Blackhole)
	took, err := timedList(c)
	g.Expect(err).To(HaveOccurred())
	g.Expect(took).To(BeNumerically("<", 5*time.Second), "the TLS handshake is bounded by the connect timeout, not the 20s request timeout")
	took, err = timedList(c)
	var ue *UnreachableError
	g.Expect(errors.As(err, &ue)).To(BeTrue(), "%v", err)
	g.Expect(took).To(BeNumerically("<", 100*time.Millisecond))

	proxy.SetMode(faultnet.Forward)
	g.Eventually(func() error { _, err := timedList(c); return err }).WithTimeout(10*time.Second).
		WithPolling(200*time.Millisecond).Should(Succeed(), "the half-open circuit lets a request try again")
	_, err = timedList(c)
	g.Expect(err).NotTo(HaveOccurred(), "closed again")
}

func TestCircuitsShareTheProbeSlots(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	probes := make(chan struct{}, 1)
	newCircuit := func() *circuit {
		return &circuit{host: "h", probes: probes, base: time.Second, cap: time.Minute, now: func() time.Time { return now }}
	}
	a, b := newCircuit(), newCircuit()
	_ = a.record(errors.New("refused"))
	_ = b.record(errors.New("refused"))
	_, err := a.admit()
	g.Expect(err).To(MatchError(ContainSubstring("next try after")), "open")

	now = now.Add(2 * time.Second)
	doneA, err := a.admit()
	g.Expect(err).NotTo(HaveOccurred(), "half-open: one try")
	_, err = a.admit()
	g.Expect(err).To(HaveOccurred(), "one try at a time")
	_, err = b.admit()
	var ue *UnreachableError
	g.Expect(errors.As(err, &ue)).To(BeTrue())
	g.Expect(ue.Deferred).To(BeTrue(), "every probe slot is taken")
	g.Expect(ue.RetryAfter()).To(BeNumerically(">=", time.Second))

	g.Expect(doneA(errors.New("still refused"))).To(MatchError(ContainSubstring("is not answering (2 failures in a row, last: still refused)")))
	g.Expect(a.failures).To(Equal(2))
	g.Expect(a.retryAt).To(Equal(now.Add(2*time.Second)), "the backoff doubled")
	doneB, err := b.admit()
	g.Expect(err).NotTo(HaveOccurred(), "the slot is free again")
	g.Expect(doneB(nil)).To(Succeed())
	g.Expect(b.failures).To(BeZero(), "an answer closes the circuit")
	_, err = b.admit()
	g.Expect(err).NotTo(HaveOccurred())
}

func TestCircuitIgnoresRequestsTheCallerCancelled(t *testing.T) {
	g := NewWithT(t)
	c := &circuit{host: "h", probes: make(chan struct{}, 1), base: time.Second, cap: time.Minute, now: time.Now,
		next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		})}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://h/", nil)
	g.Expect(err).NotTo(HaveOccurred())
	cancel()
	_, err = c.RoundTrip(req)
	g.Expect(err).To(HaveOccurred())
	g.Expect(c.failures).To(BeZero())
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// hostPort returns the host:port of a URL.
func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := http.NewRequest(http.MethodGet, raw, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return u.URL.Host
}
