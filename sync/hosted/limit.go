package hosted

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// DefaultMaxResponseBytes is the default of Options.MaxResponseBytes: about ten times the
// largest object a kube-apiserver stores (etcd's default request limit is 1.5 MiB), with room
// for the discovery document of a cluster with many CRDs, so that only a server that is not a
// kube-apiserver meets it.
const DefaultMaxResponseBytes = 16 << 20

// jsonValueCost is what an answer is charged, beyond its bytes, for each value, key or element
// of its JSON: about what decoding one into the maps, slices and interfaces of an
// unstructured object costs (an empty array decodes to about 60 bytes). Without it a body of
// tiny arrays decodes to twenty times its size under the limit.
const jsonValueCost = 64

// ResponseTooLargeError is returned when a hosted API server's answer weighs more than
// Options.MaxResponseBytes: its bytes, plus jsonValueCost for each value of a JSON answer (for
// each byte of any other), so that what the answer takes decoded is a small multiple of the
// limit: about four times at worst once decoded (an element of a typed list decodes to up to
// 288 bytes and is charged 66), ten while decoding grows the list. The rest of it is not read,
// and the answer counts as one for the cluster's circuit.
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
	msg := fmt.Sprintf("%s answered %s %s with more than %d bytes, counting %d for each JSON value (--hosted-max-response-bytes); the rest was not read",
		e.Host, e.Method, e.Path, e.Limit, jsonValueCost)
	if e.Method != http.MethodGet && e.Method != http.MethodHead {
		msg += "; the request itself may have taken effect"
	}
	return msg
}

// ResponseLimit returns the limit that was exceeded.
func (e *ResponseTooLargeError) ResponseLimit() int64 { return e.Limit }

// capped bounds the body of every answer of a hosted API server to limit bytes, JSON values
// charged (jsonValueCost), as the transport hands it over: decompressed when it is gzip the
// transport asked for (client-go asks for no other encoding), so that a small compressed
// answer cannot grow past it. Hosted clients do not watch, so every body is one answer; a
// watch would be cut at limit in all.
type capped struct {
	host  string
	limit int64
	next  http.RoundTripper
}

// RoundTrip implements http.RoundTripper. It asks for JSON only, whatever the client
// prefers (the metadata client asks for protobuf first), since what a JSON answer costs decoded
// can be charged as it is read; an answer in any other form is charged as if each of its bytes
// were a value.
func (c *capped) RoundTrip(req *http.Request) (*http.Response, error) {
	if accept := req.Header.Get("Accept"); accept != "" {
		if only := jsonOnly(accept); only != accept {
			req = req.Clone(req.Context()) // a RoundTripper must not change its caller's request
			req.Header.Set("Accept", only)
		}
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body := &cappedBody{ReadCloser: resp.Body, left: c.limit, perValue: isJSON(resp.Header.Get("Content-Type")),
		tooLarge: &ResponseTooLargeError{Host: c.host, Method: req.Method, Path: req.URL.Path, Limit: c.limit}}
	if resp.ContentLength > c.limit {
		body.left = -1 // announced too long: not a byte is read
	}
	resp.Body = body
	return resp, nil
}

// jsonOnly keeps the JSON media types of an Accept header, or says application/json.
func jsonOnly(accept string) string {
	var kept []string
	for _, t := range strings.Split(accept, ",") {
		if isJSON(t) {
			kept = append(kept, strings.TrimSpace(t))
		}
	}
	if len(kept) == 0 {
		return "application/json"
	}
	return strings.Join(kept, ",")
}

// isJSON reports a media type whose base type is application/json: what client-go decodes as
// JSON. Note: a missing type is not, as client-go then decodes with the client's own type,
// protobuf for the metadata client.
func isJSON(mediaType string) bool {
	base, _, err := mime.ParseMediaType(mediaType)
	return err == nil && base == "application/json"
}

// cappedBody returns tooLarge once its charge passes its limit: its bytes, and jsonValueCost
// for each value of a JSON body, or for each byte of any other.
type cappedBody struct {
	io.ReadCloser
	left     int64
	tooLarge *ResponseTooLargeError
	// perValue charges a JSON body by its values; inString and escaped follow its strings.
	perValue, inString, escaped bool
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
	values := int64(n)
	if b.perValue {
		values = b.values(p[:n])
	}
	b.left -= int64(n) + jsonValueCost*values
	if b.left < 0 {
		return 0, b.tooLarge // nothing of the read that passed the limit
	}
	return n, err
}

// values counts the values, keys and elements p starts or separates outside strings; a
// string's content is charged as bytes only.
func (b *cappedBody) values(p []byte) int64 {
	var n int64
	for _, c := range p {
		switch {
		case b.escaped:
			b.escaped = false
		case b.inString:
			b.escaped = c == '\\'
			b.inString = c != '"'
		case c == '"':
			b.inString = true
		case c == '{' || c == '[' || c == ',' || c == ':':
			n++
		}
	}
	return n
}
