package checks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// addressRule is the rule an address or URL breaks, as a SpecError states it.
const addressRule = "must be an absolute http or https URL without user information (credentials come from the secretRef)"

// parseAddress parses an address or URL of a check.
func parseAddress(field, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, specError(field, addressRule, errors.New("does not parse"))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, specError(field, addressRule, fmt.Errorf("has the scheme %q", u.Scheme))
	case u.Host == "":
		return nil, specError(field, addressRule, errors.New("has no host"))
	case u.User != nil:
		return nil, specError(field, addressRule, errors.New("holds user information"))
	case strings.Contains(raw, "{{"):
		return nil, specError(field, addressRule, errors.New("is not a template; only queries and matchers are"))
	}
	return u, nil
}

// endpoint returns base with path appended to its own path and the query q.
func endpoint(base *url.URL, path string, q url.Values) *url.URL {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = q.Encode()
	u.Fragment = ""
	return &u
}

// newClient returns an HTTP client for one evaluation: TLS verified against the system's roots
// plus the credentials' CA, connections only where in.Network allows, no redirect followed, no
// connection kept.
func newClient(in Input) (*http.Client, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	creds := in.Credentials
	if creds != nil && len(creds.CA) > 0 && !roots.AppendCertsFromPEM(creds.CA) {
		return nil, errors.New("the CA of the credentials (ca.crt) holds no PEM certificate")
	}
	transport := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            in.Network.Dialer(&net.Dialer{Timeout: 10 * time.Second}),
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    10 * time.Second,
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, nil
}

// authorize sets the credentials' Authorization header on req.
func authorize(req *http.Request, creds *Credentials) {
	switch {
	case creds == nil:
	case creds.Token != "":
		req.Header.Set("Authorization", "Bearer "+creds.Token)
	case creds.Username != "" || creds.Password != "":
		req.SetBasicAuth(creds.Username, creds.Password)
	}
}

// InsecureHTTPFlag is the controller flag that lets a check send its credentials over http://.
const InsecureHTTPFlag = "--check-allow-insecure-http"

// errInsecureCredentials refuses credentials over http:// (see Input.AllowInsecureHTTP).
var errInsecureCredentials = errors.New("refused: the check's secretRef credentials would go in clear over http://; use https:// (allowed only with the controller flag " + InsecureHTTPFlag + ")")

// do sends req with in's credentials through a client of its own and returns the answer; the
// caller closes its body. It sends nothing when the credentials would go over http:// and
// in.AllowInsecureHTTP is false, or when the URL's host is an address in.Network refuses (a
// proxy resolves names itself; the dialer judges them otherwise). A transport error is
// described without the request's URL user information and without the credentials.
func do(ctx context.Context, req *http.Request, in Input) (*http.Response, error) {
	if in.Credentials != nil && req.URL.Scheme != "https" && !in.AllowInsecureHTTP {
		return nil, errInsecureCredentials
	}
	if err := in.Network.CheckHost(req.URL.Hostname()); err != nil {
		return nil, err
	}
	client, err := newClient(in)
	if err != nil {
		return nil, err
	}
	defer client.CloseIdleConnections()
	authorize(req, in.Credentials)
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return nil, transportError(ctx, err)
	}
	return resp, nil
}

// transportError describes a failed request without url.Error's copy of the URL.
func transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		return errors.New("no answer before the timeout")
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return err
}

// getJSON GETs u asking for JSON with in's credentials, within requestTimeout, and returns
// the answer's status and its body, read up to max bytes.
func getJSON(ctx context.Context, u *url.URL, in Input, max int64) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := do(ctx, req, in)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := readBounded(resp.Body, max, in.Credentials)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

// readBounded reads at most max bytes of r, scrubbed of the credentials (so that a sample cut
// in the middle of an echoed credential cannot show a part of it); more is an error.
func readBounded(r io.Reader, max int64, creds *Credentials) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", transportError(context.Background(), err))
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("the answer exceeds %d bytes", max)
	}
	return scrubBytes(b, creds), nil
}
