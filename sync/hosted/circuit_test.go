package hosted

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// kubeconfigFor writes a Secret in a new namespace with blue's credentials and server host
// (scheme://host:port) and returns a reference to it.
func kubeconfigFor(t *testing.T, host string) (string, *convoyv1alpha1.SecretKeyReference) {
	t.Helper()
	g := NewWithT(t)
	cfg := rest.CopyConfig(blue.Config)
	cfg.Host = host
	kc, err := simfleet.KubeConfigFor(cfg, "test")
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
		ConnectTimeout: 6 * time.Second, UnreachableBackoff: 500 * time.Millisecond})
	c, err := clients.Client(context.Background(), ns, ref)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = timedList(c)
	g.Expect(err).NotTo(HaveOccurred())

	proxy.SetMode(faultnet.Blackhole)
	// Note: the switch closes the open connection; the wait lets the client see it, so that
	// the next request dials (else it fails at once on the closed connection).
	time.Sleep(500 * time.Millisecond)
	took, err := timedList(c)
	var ue *UnreachableError
	g.Expect(errors.As(err, &ue)).To(BeTrue(), "%v", err)
	g.Expect(ue.Connecting).To(BeTrue(), "%v", err)
	g.Expect(took).To(BeNumerically("<", 5*time.Second),
		"the request waits for the pending TLS handshake for the patience (at most half the 6s connect timeout), not for the 20s request timeout")
	took, err = timedList(c)
	g.Expect(errors.As(err, &ue)).To(BeTrue(), "%v", err)
	g.Expect(took).To(BeNumerically("<", 100*time.Millisecond), "fails at once while the handshake is pending")
	g.Eventually(func() string { _, err := timedList(c); return fmt.Sprint(err) }).WithTimeout(15*time.Second).
		Should(ContainSubstring("is not answering ("), "the handshake timed out: the circuit is open")

	proxy.SetMode(faultnet.Forward)
	g.Eventually(func() error { _, err := timedList(c); return err }).WithTimeout(20*time.Second).
		WithPolling(200*time.Millisecond).Should(Succeed(), "the background probe closed the circuit")
	_, err = timedList(c)
	g.Expect(err).NotTo(HaveOccurred(), "closed again")
}

func TestCircuitsProbeInTheBackgroundAndShareTheProbeSlots(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	probes := make(chan struct{}, 1)
	answers := make(chan error)
	newCircuit := func() *circuit {
		return &circuit{host: "http://h", probes: probes, base: time.Second, cap: time.Minute, timeout: time.Minute,
			now: func() time.Time { return now },
			next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				g.Expect(r.URL.Path).To(Equal("/version"))
				if err := <-answers; err != nil {
					return nil, err
				}
				return &http.Response{StatusCode: http.StatusForbidden, Body: http.NoBody}, nil
			})}
	}
	a, b := newCircuit(), newCircuit()
	_ = a.record(errors.New("refused"))
	_ = b.record(errors.New("refused"))
	_, err := a.admit()
	g.Expect(err).To(MatchError(ContainSubstring("next try after")), "open")

	now = now.Add(2 * time.Second)
	_, err = a.admit()
	g.Expect(err).To(MatchError(ContainSubstring("a probe is trying it again in the background")),
		"half-open: the request fails at once, a probe tries the cluster without holding the caller")
	_, err = a.admit()
	g.Expect(err).To(MatchError(ContainSubstring("in the background")), "one probe at a time")
	var ue *UnreachableError
	g.Expect(errors.As(err, &ue)).To(BeTrue())
	g.Expect(ue.RetryAt).To(Equal(now.Add(time.Second)), "look again after a base backoff while the probe runs")
	_, err = b.admit()
	g.Expect(errors.As(err, &ue)).To(BeTrue())
	g.Expect(ue.Deferred).To(BeTrue(), "every probe slot is taken")
	g.Expect(ue.RetryAfter()).To(BeNumerically(">=", time.Second))

	answers <- errors.New("still refused")
	g.Eventually(func() int { return len(probes) }).Should(BeZero(), "the probe gave its slot back")
	a.mu.Lock()
	g.Expect(a.failures).To(Equal(2))
	g.Expect(a.retryAt).To(Equal(now.Add(2*time.Second)), "the backoff doubled")
	a.mu.Unlock()

	_, err = b.admit()
	g.Expect(err).To(MatchError(ContainSubstring("in the background")), "the slot is free again: b is probed")
	answers <- nil
	g.Eventually(func() error { _, err := b.admit(); return err }).Should(Succeed(), "any answer, a 403 too, closes the circuit")
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

func TestSlowHandshakeLeavesRequestsInFlightOnAConnection(t *testing.T) {
	g := NewWithT(t)
	sent, release := make(chan struct{}), make(chan struct{})
	c := &circuit{host: "h", probes: make(chan struct{}, 1), base: time.Second, cap: time.Minute, now: time.Now,
		next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			httptrace.ContextClientTrace(r.Context()).GotConn(httptrace.GotConnInfo{Reused: true})
			close(sent)
			select {
			case <-release:
				return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}"))}, nil
			case <-r.Context().Done():
				return nil, context.Cause(r.Context())
			}
		})}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://h/", nil)
	g.Expect(err).NotTo(HaveOccurred())
	result := make(chan error, 1)
	go func() {
		resp, err := c.RoundTrip(req)
		if err == nil {
			err = resp.Body.Close()
		}
		result <- err
	}()
	<-sent
	c.handshakeSlow() // another connection's handshake is pending for too long
	close(release)
	g.Expect(<-result).To(Succeed(), "a request already sent on a connection is not given up")
	c.handshakeEnded(true, errors.New("handshake timed out"))
	g.Expect(c.failures).To(Equal(1), "the slow handshake's failure counts once")
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
