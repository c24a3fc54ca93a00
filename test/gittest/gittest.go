package gittest

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/internal/gitserver"
)

// NewServer starts a Git server with HTTP and SSH and one repository "repo"; the server stops
// when the test ends.
func NewServer(t *testing.T) (*gitserver.Server, *gitserver.Repo) {
	t.Helper()
	g := NewWithT(t)
	srv, err := gitserver.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(srv.Close)
	_, err = srv.StartHTTP()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = srv.StartSSH()
	g.Expect(err).NotTo(HaveOccurred())
	repo, err := srv.CreateRepo("repo")
	g.Expect(err).NotTo(HaveOccurred())
	return srv, repo
}

// Commit commits files on branch main, fails the test on error and returns the commit.
func Commit(t *testing.T, repo *gitserver.Repo, msg string, files map[string]string) string {
	t.Helper()
	c, err := repo.Commit("main", msg, files)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// KnownHostsAddress returns the address of an ssh://git@host:port/... URL in known_hosts
// form, [host]:port, to swap one server's host key line for another's.
func KnownHostsAddress(sshURL string) string {
	hp := strings.TrimPrefix(sshURL, "ssh://git@")
	hp = hp[:strings.Index(hp, "/")]
	host, port, _ := strings.Cut(hp, ":")
	return "[" + host + "]:" + port
}
