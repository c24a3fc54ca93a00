package hosted

import (
	"fmt"
	"io"
	"net/http"
)

// DefaultMaxResponseBytes is the default of Options.MaxResponseBytes: about ten times the
// largest object a kube-apiserver stores (etcd's default request limit is 1.5 MiB), with room
// for the discovery document of a cluster with many CRDs, so that only a server that is not a
// kube-apiserver meets it.
const DefaultMaxResponseBytes = 16 << 20

// ResponseTooLargeError is returned when a hosted API server's answer is longer than
// Options.MaxResponseBytes. The rest of it is not read, and the answer counts as one for the
// cluster's circuit. What is bounded is the bytes read: decoded, an answer of adversarial JSON
// (many tiny arrays) takes up to about twenty times its size.
type ResponseTooLargeError struct {
	// Host is the API server.
	Host string
	// Method and Path are the request's.
	Method, Path string
	// Limit is Options.MaxResponseBytes.
	Limit int64
}

// Error implements error.
func (e *ResponseTooLargeError) Error() string {
	msg := fmt.Sprintf("%s answered %s %s with more than %d bytes (--hosted-max-response-bytes); the rest was not read",
		e.Host, e.Method, e.Path, e.Limit)
	if e.Method != http.MethodGet && e.Method != http.MethodHead {
		msg += "; the request itself may have taken effect"
	}
	return msg
}

// ResponseLimit returns the limit that was exceeded.
func (e *ResponseTooLargeError) ResponseLimit() int64 { return e.Limit }

// capped bounds the body of every answer of a hosted API server to limit bytes, as the
// transport hands it over: decompressed when it is gzip the transport asked for (client-go
// asks for no other encoding), so that a small compressed answer cannot grow past it. Hosted
// clients do not watch, so every body is one answer; a watch would be cut at limit in all.
type capped struct {
	host  string
	limit int64
	next  http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (c *capped) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body := &cappedBody{ReadCloser: resp.Body, left: c.limit,
		tooLarge: &ResponseTooLargeError{Host: c.host, Method: req.Method, Path: req.URL.Path, Limit: c.limit}}
	if resp.ContentLength > c.limit {
		body.left = -1 // announced too long: not a byte is read
	}
	resp.Body = body
	return resp, nil
}

// cappedBody returns tooLarge once more than its limit would be read.
type cappedBody struct {
	io.ReadCloser
	left     int64
	tooLarge *ResponseTooLargeError
}

// Read implements io.Reader.
func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.tooLarge
	}
	if int64(len(p))-1 > b.left {
		p = p[:b.left+1] // one byte past the limit tells a body of exactly the limit from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n - 1, b.tooLarge
	}
	return n, err
}
