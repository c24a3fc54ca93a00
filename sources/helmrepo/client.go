package helmrepo

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// AllowRedirectsToOtherHostsFlag is the controller flag that lets chart repositories redirect
// to other hosts.
const AllowRedirectsToOtherHostsFlag = "--chart-allow-redirects-to-other-hosts"

// maxRedirects bounds the redirects of one request, as net/http's default policy does.
const maxRedirects = 10

// newClient returns the client of a Fetcher without one: net/http's default transport (its
// proxy from the environment, its timeouts) connecting only where o.Network allows, and
// redirects followed to the same host only unless o.AllowRedirectsToOtherHosts.
//
// Note: the repository is named in Git, by whoever may push the package; its answers may send
// the controller elsewhere. An OCI registry's client (go-containerregistry) follows its own
// redirects: registries serve blobs from storage hosts, and the blob is checked against its
// digest; it dials through the same transport, so the address policy holds there too.
func newClient(o Options) *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = o.Network.Dialer(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second})
	return &http.Client{Transport: transport, CheckRedirect: checkRedirect(o)}
}

// checkRedirect returns the redirect rule of o: a redirect's literal host is judged by the
// address policy first (through a proxy, which resolves and connects itself, the dialer sees
// the proxy's address only), then the same-host rule holds unless allowed.
func checkRedirect(o Options) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if err := o.Network.CheckHost(req.URL.Hostname()); err != nil {
			return err
		}
		if o.AllowRedirectsToOtherHosts {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			return nil
		}
		return sameHostRedirects(req, via)
	}
}

// sameHostRedirects follows a redirect only to the scheme, host and port of the request it
// redirects, so that a repository cannot send the fetch to another server (another port of
// the same address included: another service), nor from https:// to http://.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	from := via[len(via)-1].URL
	if req.URL.Scheme != from.Scheme || !strings.EqualFold(req.URL.Host, from.Host) {
		return &RedirectError{From: from.Scheme + "://" + from.Host, To: req.URL.Scheme + "://" + req.URL.Host}
	}
	return nil
}

// RedirectError is a redirect to another host that was not followed.
type RedirectError struct {
	// From and To are the origins (scheme://host:port) of the request and of the redirect.
	From, To string
}

// Error implements error.
func (e *RedirectError) Error() string {
	return fmt.Sprintf("the chart repository at %s redirected to %s, another host: refused unless the controller runs with %s",
		e.From, e.To, AllowRedirectsToOtherHostsFlag)
}
