package sources

import (
	"net/url"
	"regexp"
	"strings"
)

// redacted replaces a credential in messages.
const redacted = "***"

var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"']+`)

// scrubURLs removes user info and queries from URLs in s.
func scrubURLs(s string) string {
	return urlPattern.ReplaceAllStringFunc(s, RedactURL)
}

// RedactURL returns raw without its user info, query and fragment, the places where URLs
// carry credentials. It fails closed: a URL that does not parse is cut down to what follows
// its last "@", without query or fragment, so that nothing of its user info is returned.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		// Note: "user:password@host:path" parses as scheme "user" with an opaque part.
		return redactUnparsed(raw)
	}
	if u.User == nil && u.RawQuery == "" && u.Fragment == "" {
		return raw
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// redactUnparsed redacts a URL that url.Parse refused, including scp-like SSH URLs
// (user@host:path), whose user is kept only when it holds no colon (no password).
func redactUnparsed(raw string) string {
	scheme, rest, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		scheme, rest = "", raw
	}
	rest, _, _ = strings.Cut(rest, "?")
	rest, _, _ = strings.Cut(rest, "#")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if user := rest[:at]; hasScheme || strings.ContainsAny(user, ":/") {
			rest = rest[at+1:]
		}
	}
	if hasScheme {
		return scheme + "://" + rest
	}
	return rest
}

// secrets returns the credentials of r as they may appear in messages: raw, and escaped as
// in a URL.
func (r Remote) secrets() []string {
	var raw []string
	if r.Auth != nil {
		raw = append(raw, r.Auth.Password, r.Auth.BearerToken)
	}
	raw = append(raw, urlPassword(r.URL))
	var out []string
	for _, s := range raw {
		if s == "" {
			continue
		}
		out = append(out, s, url.PathEscape(s), url.QueryEscape(s), url.UserPassword("u", s).String()[2:])
	}
	return out
}

// urlPassword returns the password in the user info of a URL, also when the URL does not
// parse (what lies between the first colon of its user info and its last "@").
func urlPassword(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Opaque == "" {
		if u.User == nil {
			return ""
		}
		p, _ := u.User.Password()
		return p
	}
	rest := raw
	if _, after, ok := strings.Cut(raw, "://"); ok {
		rest = after
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return ""
	}
	_, pass, _ := strings.Cut(rest[:at], ":")
	return pass
}

// RedactString returns s with every credential of r replaced by "***" and the user info
// and queries of URLs removed.
func (r Remote) RedactString(s string) string {
	for _, secret := range r.secrets() {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, redacted)
		}
	}
	return scrubURLs(s)
}

// Redact returns err with its message passed through RedactString; errors.Is and errors.As
// still see the original chain. nil stays nil.
func (r Remote) Redact(err error) error {
	if err == nil {
		return nil
	}
	msg := r.RedactString(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error whose message had credentials removed.
type redactedError struct {
	msg string
	err error
}

// Error implements error.
func (e *redactedError) Error() string { return e.msg }

// Unwrap returns the original error, for errors.Is and errors.As only: never print it.
func (e *redactedError) Unwrap() error { return e.err }
