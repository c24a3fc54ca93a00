package sources

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Flags of `convoy controller` that relax URLPolicy, named in refusals.
const (
	// AllowFileURLsFlag allows file:// remotes.
	AllowFileURLsFlag = "--allow-file-urls"
	// AllowInsecureHTTPFlag allows credentials over plain http://.
	AllowInsecureHTTPFlag = "--allow-insecure-http"
)

// URLPolicy says which remotes a GitSource may use beyond https://, ssh:// and scp-like SSH
// URLs. A file:// URL reads the controller's own disk, other GitSources' repositories in the
// store included; credentials over http:// travel in clear. The zero value refuses both.
type URLPolicy struct {
	// AllowFileURLs allows file:// remotes (--allow-file-urls; `convoy-dev` sets it).
	AllowFileURLs bool
	// AllowInsecureHTTP allows http:// remotes with credentials (--allow-insecure-http).
	// Anonymous http:// is always allowed.
	AllowInsecureHTTP bool
}

// InsecureURLError says that a remote is refused by the URLPolicy.
type InsecureURLError struct {
	// URL is the redacted URL.
	URL string
	// Rule says why it is refused.
	Rule string
	// Flag is the controller flag that would allow it.
	Flag string
}

// Error implements error.
func (e *InsecureURLError) Error() string {
	return fmt.Sprintf("URL %s is refused: %s (allowed only with the controller flag %s)", e.URL, e.Rule, e.Flag)
}

// Check returns an *InsecureURLError when p refuses r, or an error when its URL does not
// parse; nil otherwise.
func (p URLPolicy) Check(r Remote) error {
	ep, err := transport.NewEndpoint(r.URL)
	if err != nil {
		return fmt.Errorf("invalid URL %s: %s", RedactURL(r.URL), r.RedactString(err.Error()))
	}
	switch {
	case ep.Protocol == "file" && !p.AllowFileURLs:
		return &InsecureURLError{URL: RedactURL(r.URL), Flag: AllowFileURLsFlag,
			Rule: "file:// reads the controller's own disk"}
	case ep.Protocol == "http" && hasCredentials(r, ep) && !p.AllowInsecureHTTP:
		return &InsecureURLError{URL: RedactURL(r.URL), Flag: AllowInsecureHTTPFlag,
			Rule: "credentials would be sent in clear over http://; use https://"}
	}
	return nil
}

// hasCredentials reports credentials in r's Secret or in the user info of its URL.
func hasCredentials(r Remote, ep *transport.Endpoint) bool {
	if ep.User != "" || ep.Password != "" {
		return true
	}
	return r.Auth != nil && (r.Auth.Username != "" || r.Auth.Password != "" || r.Auth.BearerToken != "")
}
