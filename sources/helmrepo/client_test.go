package helmrepo

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/internal/dialpolicy"
	"github.com/convoy-gitops/convoy/manifests"
)

// redirector is a server on loopback that redirects every request to target + its path, and
// counts the requests.
func redirector(t *testing.T, target func() string) (*httptest.Server, *atomic.Int32) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		requests.Add(1)
		http.Redirect(w, req, target()+req.URL.Path, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// TestRedirectsStayOnTheRepositorysHost redirects a repository on one local port to the real
// repository on another: refused, naming both and the flag, and the other port gets nothing;
// with AllowRedirectsToOtherHosts the chart is fetched.
func TestRedirectsStayOnTheRepositorysHost(t *testing.T) {
	g := NewWithT(t)
	r := newRepository(t)
	base := strings.TrimSuffix(r.url, "/charts")
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		elsewhere.Add(1)
		http.Redirect(w, req, base+req.URL.Path, http.StatusFound)
	}))
	t.Cleanup(other.Close)
	hop, hops := redirector(t, func() string { return other.URL })
	ref := manifests.ChartRef{Repository: hop.URL + "/charts", Name: "metrics-server", Version: r.version, Digest: r.digest}

	_, err := New(Options{}).FetchChart(ref)
	var redirect *RedirectError
	g.Expect(errors.As(err, &redirect)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("the chart repository at " + hop.URL + " redirected to " + other.URL +
		", another host: refused unless the controller runs with --chart-allow-redirects-to-other-hosts")))
	g.Expect(hops.Load()).To(BeEquivalentTo(1))
	g.Expect(elsewhere.Load()).To(BeZero(), "the redirect was followed")

	data, err := New(Options{AllowRedirectsToOtherHosts: true}).FetchChart(ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Digest(data)).To(Equal(r.digest))
	g.Expect(elsewhere.Load()).To(BeNumerically(">=", 2), "the index and the archive, through the other host")

}

// TestRedirectRuleComparesSchemeHostAndPort checks sameHostRedirects on its own: another port
// or scheme is another host; ten redirects are the most.
func TestRedirectRuleComparesSchemeHostAndPort(t *testing.T) {
	g := NewWithT(t)
	req := func(u string) *http.Request { return httptest.NewRequest(http.MethodGet, u, nil) }
	from := []*http.Request{req("https://charts.example/index.yaml")}
	g.Expect(sameHostRedirects(req("https://charts.example/other/index.yaml"), from)).To(Succeed())
	g.Expect(sameHostRedirects(req("https://CHARTS.example/x"), from)).To(Succeed())
	g.Expect(sameHostRedirects(req("https://charts.example:8443/x"), from)).To(MatchError(ContainSubstring("redirected to https://charts.example:8443")))
	g.Expect(sameHostRedirects(req("http://charts.example/x"), from)).To(MatchError(ContainSubstring("redirected to http://charts.example")))
	g.Expect(sameHostRedirects(req("https://objects.example/x"), from)).To(HaveOccurred())
	many := make([]*http.Request, maxRedirects)
	for i := range many {
		many[i] = from[0]
	}
	g.Expect(sameHostRedirects(req("https://charts.example/x"), many)).To(MatchError("stopped after 10 redirects"))
}

// TestMetadataRepositoriesAreRefused fetches from a repository at the metadata address, as a
// URL and behind the OCI scheme: refused by the dial policy, naming the rule, before any
// connection (the policy's own tests prove its dialer is never called).
func TestMetadataRepositoriesAreRefused(t *testing.T) {
	g := NewWithT(t)
	ref := manifests.ChartRef{Repository: "http://169.254.169.254/charts", Name: "x", Version: "1.0.0", Digest: "sha256:" + strings.Repeat("1", 64)}
	_, err := New(Options{}).FetchChart(ref)
	var refused *dialpolicy.RefusedError
	g.Expect(errors.As(err, &refused)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("refused unless the controller runs with --allow-link-local-addresses")))

	ref.Repository = "oci://169.254.169.254/charts"
	_, err = New(Options{}).FetchChart(ref)
	g.Expect(errors.As(err, &refused)).To(BeTrue(), "%v", err)
}

// TestRedirectsToMetadataAddressesAreRefused judges a redirect's literal host by the address
// policy, other hosts allowed or not: a request through a proxy never dials the host it names,
// so the dialer's rule alone would not see it. The rule is called directly: nothing is sent.
func TestRedirectsToMetadataAddressesAreRefused(t *testing.T) {
	via := []*http.Request{httptest.NewRequest(http.MethodGet, "http://charts.example/index.yaml", nil)}
	for _, other := range []bool{false, true} {
		t.Run(map[bool]string{false: "same host only", true: "other hosts allowed"}[other], func(t *testing.T) {
			g := NewWithT(t)
			rule := checkRedirect(Options{AllowRedirectsToOtherHosts: other})
			err := rule(httptest.NewRequest(http.MethodGet, "http://169.254.169.254/latest/meta-data/", nil), via)
			var refused *dialpolicy.RefusedError
			g.Expect(errors.As(err, &refused)).To(BeTrue(), "%v", err)
			g.Expect(rule(httptest.NewRequest(http.MethodGet, "http://charts.example/other/index.yaml", nil), via)).To(Succeed())
			allowed := checkRedirect(Options{AllowRedirectsToOtherHosts: true, Network: dialpolicy.Policy{AllowLinkLocal: true}})
			g.Expect(allowed(httptest.NewRequest(http.MethodGet, "http://169.254.169.254/x", nil), via)).To(Succeed())
		})
	}
}
