package main

import (
	"net/url"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/gittest"
)

// TestRenderNeverPrintsURLCredentials renders from URLs that carry a password, in ways that
// fail (wrong password, unknown ref, a URL that does not parse): the password appears in
// neither output nor the error.
func TestRenderNeverPrintsURLCredentials(t *testing.T) {
	const planted = "Planted-Pa55word"
	srv, repo := gittest.NewServer(t)
	gittest.Commit(t, repo, "one", map[string]string{"p/manifest.yaml": "kind: PackageManifest\n"})
	srv.SetBasicAuth("user", planted)
	withUser := func(password string) string {
		u, err := url.Parse(srv.HTTPURL("repo"))
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		u.User = url.UserPassword("user", password)
		return u.String()
	}
	cases := map[string][]string{
		"wrong password":          {"--url", strings.Replace(withUser("x"), "user:x", "user:"+planted+"x", 1), "--ref", "main"},
		"unknown ref":             {"--url", withUser(planted), "--ref", "no-such-branch"},
		"URL that does not parse": {"--url", "https://user:" + planted + "%zz@127.0.0.1:1/repo", "--ref", "main"},
		"unreachable host":        {"--url", "https://user:" + planted + "@127.0.0.1:1/repo", "--ref", "main"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			out, errOut, err := runCLI(append([]string{"render", "--path", "p"}, args...)...)
			g.Expect(err).To(HaveOccurred())
			for _, surface := range []string{out, errOut, err.Error()} {
				g.Expect(surface).NotTo(ContainSubstring(planted))
				g.Expect(surface).NotTo(ContainSubstring(url.QueryEscape(planted)))
			}
		})
	}
}
