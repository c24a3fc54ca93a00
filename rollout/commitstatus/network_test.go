package commitstatus

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/convoy-gitops/convoy/internal/dialpolicy"
)

// guardedDial is the dialer under the Reporter's policy in these tests: it records every
// address, fails the test when given one the policy should have refused, and connects to
// loopback only, so no test sends traffic beyond this machine.
type guardedDial struct {
	t      *testing.T
	policy dialpolicy.Policy
	mu     sync.Mutex
	called []string
}

func (d *guardedDial) dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.called = append(d.called, address)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil || d.policy.Check("", ap.Addr()) != nil {
		d.t.Errorf("the dialer was called for %q, which the policy refuses", address)
		return nil, errors.New("refused by the test")
	}
	if !ap.Addr().IsLoopback() {
		return nil, errors.New("the test's dialer connects to loopback only")
	}
	return (&net.Dialer{}).DialContext(ctx, network, address)
}

// resolveTo answers every name with addr, as a DNS server would.
func resolveTo(addr string) func(context.Context, string) ([]netip.Addr, error) {
	return func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr(addr)}, nil
	}
}

// postThrough sends a status to apiURL of provider through a Reporter whose transport it
// builds itself, under policy, over d.
func postThrough(d *guardedDial, provider, apiURL string) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "forge"},
		Data: map[string][]byte{"token": []byte("tok")}}
	r := &Reporter{Secrets: fake.NewClientBuilder().WithObjects(secret).Build(), AllowInsecureHTTP: true,
		Network: d.policy, Dial: d.dial}
	r.init()
	target := Target{Provider: provider, APIURL: apiURL, Repository: "o/r", Secret: types.NamespacedName{Namespace: "fleet", Name: "forge"}}
	return r.post(context.Background(), NewStatus(target, "addon", "abc", Success, "done"))
}

// TestAPIURLsAtMetadataAddressesAreRefused sends a status of each provider to the metadata
// address, written literally and behind a name: refused as invalid (not retried as an
// unanswered host), naming the address and the flag, and the dialer is never called.
func TestAPIURLsAtMetadataAddressesAreRefused(t *testing.T) {
	for _, provider := range []string{"github", "gitlab", "gitea"} {
		for name, apiURL := range map[string]string{"literal": "http://169.254.169.254/api", "resolved": "https://forge.example/api"} {
			t.Run(provider+" "+name, func(t *testing.T) {
				g := NewWithT(t)
				d := &guardedDial{t: t, policy: dialpolicy.Policy{Lookup: resolveTo("169.254.169.254")}}
				err := postThrough(d, provider, apiURL)
				var invalid *InvalidError
				g.Expect(errors.As(err, &invalid)).To(BeTrue(), "%v", err)
				g.Expect(err).To(MatchError(ContainSubstring("169.254.169.254")))
				g.Expect(err).To(MatchError(ContainSubstring("refused unless the controller runs with --allow-link-local-addresses")))
				g.Expect(err.Error()).NotTo(ContainSubstring("tok"))
				g.Expect(d.called).To(BeEmpty())
			})
		}
	}
}

// TestAPIURLsDialThroughThePolicy resolves the API URL's name to a loopback forge: the status
// is sent through the policy's dialer. With --allow-link-local-addresses a name resolving to
// the metadata address reaches the dialer, which the test's dialer does not connect.
func TestAPIURLsDialThroughThePolicy(t *testing.T) {
	forge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(forge.Close)
	port := forge.URL[strings.LastIndex(forge.URL, ":")+1:]
	for _, provider := range []string{"github", "gitlab", "gitea"} {
		t.Run(provider, func(t *testing.T) {
			g := NewWithT(t)
			d := &guardedDial{t: t, policy: dialpolicy.Policy{Lookup: resolveTo("127.0.0.1")}}
			g.Expect(postThrough(d, provider, "http://forge.example:"+port+"/api")).To(Succeed())
			g.Expect(d.called).To(Equal([]string{"127.0.0.1:" + port}))

			d = &guardedDial{t: t, policy: dialpolicy.Policy{AllowLinkLocal: true, Lookup: resolveTo("169.254.169.254")}}
			err := postThrough(d, provider, "https://forge.example/api")
			g.Expect(err).To(MatchError(ContainSubstring("connects to loopback only")))
			g.Expect(d.called).To(Equal([]string{"169.254.169.254:443"}))
		})
	}
}

// TestReadsOfMetadataAddressesAreRefused: reading statuses for promotion is under the same
// policy as sending them, written literally or behind a name; the dialer is never called.
func TestReadsOfMetadataAddressesAreRefused(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "forge"},
		Data: map[string][]byte{"token": []byte("tok")}}
	for _, provider := range []string{"github", "gitlab", "gitea"} {
		for name, apiURL := range map[string]string{"literal": "http://169.254.169.254/api", "resolved": "https://forge.example/api"} {
			t.Run(provider+" "+name, func(t *testing.T) {
				g := NewWithT(t)
				d := &guardedDial{t: t, policy: dialpolicy.Policy{Lookup: resolveTo("169.254.169.254")}}
				r := &Reporter{Secrets: fake.NewClientBuilder().WithObjects(secret.DeepCopy()).Build(), AllowInsecureHTTP: true,
					Network: d.policy, Dial: d.dial}
				target := Target{Provider: provider, APIURL: apiURL, Repository: "o/r",
					Secret: types.NamespacedName{Namespace: "fleet", Name: "forge"}}
				_, err := r.Read(context.Background(), target, strings.Repeat("a", 40))
				g.Expect(err).To(MatchError(ContainSubstring("169.254.169.254")))
				g.Expect(err.Error()).NotTo(ContainSubstring("tok"))
				g.Expect(d.called).To(BeEmpty())
			})
		}
	}
}
