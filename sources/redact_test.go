package sources

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRedactURLFailsClosed(t *testing.T) {
	cases := map[string]string{
		"https://user:s3cret@git.example.com/repo.git":      "https://git.example.com/repo.git",
		"https://git.example.com/repo.git?private_token=s3": "https://git.example.com/repo.git",
		"https://git.example.com/repo.git":                  "https://git.example.com/repo.git",
		"https://user:s3%zzcret@git.example.com/repo.git":   "https://git.example.com/repo.git",
		"https://us er:s3 cret@git.example.com/r?t=s3":      "https://git.example.com/r",
		"git@github.com:fleet/addons.git":                   "git@github.com:fleet/addons.git",
		"user:s3cret@github.com:fleet/addons.git":           "github.com:fleet/addons.git",
		"ssh://git@github.com/fleet/addons.git":             "ssh://github.com/fleet/addons.git",
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			NewWithT(t).Expect(RedactURL(in)).To(Equal(want))
		})
	}
}

func TestRemoteRedactRemovesEveryCredential(t *testing.T) {
	g := NewWithT(t)
	r := Remote{URL: "https://user:url%2Fpass@git.example.com/repo.git",
		Auth: &Auth{Username: "user", Password: "basic pass", BearerToken: "tok3n"}}
	inner := &RefNotFoundError{Ref: `branch "main"`}
	err := r.Redact(errors.Join(inner, errors.New(
		`Get "https://user:url%2Fpass@git.example.com": url/pass, basic pass, basic+pass, basic%20pass, tok3n`)))
	g.Expect(err.Error()).NotTo(Or(ContainSubstring("url/pass"), ContainSubstring("url%2Fpass"),
		ContainSubstring("basic pass"), ContainSubstring("basic+pass"), ContainSubstring("basic%20pass"), ContainSubstring("tok3n")))
	g.Expect(err.Error()).To(ContainSubstring("https://git.example.com"))
	var rnf *RefNotFoundError
	g.Expect(errors.As(err, &rnf)).To(BeTrue(), "the chain is kept for classification")
	g.Expect(r.Redact(nil)).To(BeNil())
}

func TestURLPolicy(t *testing.T) {
	basic := &Auth{Username: "u", Password: "p"}
	cases := []struct {
		name   string
		remote Remote
		policy URLPolicy
		flag   string
	}{
		{name: "file refused", remote: Remote{URL: "file:///var/lib/convoy/sources/ns/other"}, flag: AllowFileURLsFlag},
		{name: "file allowed", remote: Remote{URL: "file:///srv/repo"}, policy: URLPolicy{AllowFileURLs: true}},
		{name: "http with basic auth refused", remote: Remote{URL: "http://git.example.com/r", Auth: basic}, flag: AllowInsecureHTTPFlag},
		{name: "http with a token refused", remote: Remote{URL: "http://git.example.com/r", Auth: &Auth{BearerToken: "t"}}, flag: AllowInsecureHTTPFlag},
		{name: "http with user info refused", remote: Remote{URL: "http://u:p@git.example.com/r"}, flag: AllowInsecureHTTPFlag},
		{name: "http with credentials allowed", remote: Remote{URL: "http://git.example.com/r", Auth: basic}, policy: URLPolicy{AllowInsecureHTTP: true}},
		{name: "anonymous http", remote: Remote{URL: "http://git.example.com/r", Auth: &Auth{CABundle: []byte("x")}}},
		{name: "https with credentials", remote: Remote{URL: "https://git.example.com/r", Auth: basic}},
		{name: "scp-like ssh", remote: Remote{URL: "git@github.com:fleet/addons.git"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tc.policy.Check(tc.remote)
			if tc.flag == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var refused *InsecureURLError
			g.Expect(errors.As(err, &refused)).To(BeTrue())
			g.Expect(err.Error()).To(ContainSubstring(tc.flag))
			g.Expect(err.Error()).NotTo(ContainSubstring("u:p@"))
		})
	}
}
