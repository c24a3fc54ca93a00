package commitstatus

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/convoy-gitops/convoy/internal/dialpolicy"
)

// dialTimeout bounds the connection to a forge: a blackholed host fails fast.
const dialTimeout = 3 * time.Second

// newTransport returns the default transport connecting only where r.Network allows, through
// r.Dial or a net.Dialer with a short timeout that checks each address again at the socket.
//
// Note: whoever may edit a GitSource chooses spec.commitStatus.apiURL, and the token Secret's
// only check is its type: an API URL at a cloud metadata address would have the controller's
// node ask for its own credentials and return the answer in an event.
func (r *Reporter) newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if r.Dial != nil {
		t.DialContext = r.Network.DialVia(r.Dial)
	} else {
		t.DialContext = r.Network.Dialer(&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second})
	}
	return t
}

// checkHost refuses base when its host is a refused address written literally: a request sent
// through a proxy is dialled to the proxy, so the dialer alone would not see it.
func (r *Reporter) checkHost(base *url.URL) error {
	if err := r.Network.CheckHost(base.Hostname()); err != nil {
		return &InvalidError{Err: fmt.Errorf("spec.commitStatus.apiURL %s: %w", base.Redacted(), err)}
	}
	return nil
}

// isRefusedAddress reports whether err is the address policy's refusal: nothing was sent, and
// retrying changes nothing until the GitSource or the controller's flags do, so it is invalid,
// not an unanswered host.
func isRefusedAddress(err error) bool {
	var refused *dialpolicy.RefusedError
	return errors.As(err, &refused)
}
