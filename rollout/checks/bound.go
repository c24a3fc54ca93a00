package checks

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of what an evaluation reports.
const (
	// MaxValueBytes bounds Evaluation.Value.
	MaxValueBytes = 256
	// MaxMessageBytes bounds Evaluation.Message.
	MaxMessageBytes = 1024
	// MaxSampleBytes bounds the sample of an answer (an HTTP check's, or one that is not the
	// API's) that a message quotes.
	MaxSampleBytes = 256
)

// redactedText replaces a credential found in an output.
const redactedText = "[redacted]"

// truncate cuts s to at most max bytes on a rune boundary, marking the cut with "…".
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "…"
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// sample returns the first MaxSampleBytes of b as printable text, marked "…" when cut:
// invalid UTF-8 and control characters become U+FFFD, line breaks spaces.
func sample(b []byte) string {
	cut := ""
	if len(b) > MaxSampleBytes {
		b, cut = b[:MaxSampleBytes], "…"
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			sb.WriteByte(' ')
		case r == utf8.RuneError || !unicode.IsPrint(r):
			if len(b) == 0 && size < utf8.UTFMax && r == utf8.RuneError {
				continue // a rune cut by the sample's end
			}
			sb.WriteRune(utf8.RuneError)
		default:
			sb.WriteRune(r)
		}
	}
	return strings.TrimSpace(sb.String()) + cut
}

// redactURL returns u as text without its user information.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	return c.String()
}

// secrets returns the strings of creds that must never appear in an output, longest first
// so that a secret containing another is replaced whole.
func (c *Credentials) secrets() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, s := range []string{c.Token, c.Password} {
		if s != "" {
			out = append(out, s, url.QueryEscape(s), url.PathEscape(s))
		}
	}
	if c.Token == "" && (c.Username != "" || c.Password != "") {
		out = append(out, base64.StdEncoding.EncodeToString([]byte(c.Username+":"+c.Password)))
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// scrub replaces every credential of creds in s.
func scrub(s string, creds *Credentials) string {
	for _, secret := range creds.secrets() {
		s = strings.ReplaceAll(s, secret, redactedText)
	}
	return s
}

// scrubBytes replaces every credential of creds in b.
func scrubBytes(b []byte, creds *Credentials) []byte {
	for _, secret := range creds.secrets() {
		b = bytes.ReplaceAll(b, []byte(secret), []byte(redactedText))
	}
	return b
}

// finish scrubs an evaluation of credentials and bounds its value and message.
func finish(ev Evaluation, creds *Credentials) Evaluation {
	ev.Value = truncate(scrub(ev.Value, creds), MaxValueBytes)
	ev.Message = truncate(scrub(ev.Message, creds), MaxMessageBytes)
	return ev
}

// inconclusive is an Inconclusive evaluation with a formatted message.
func inconclusive(format string, args ...any) Evaluation {
	return Evaluation{Outcome: Inconclusive, Message: fmt.Sprintf(format, args...)}
}
