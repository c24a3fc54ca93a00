package gittest

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
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

// Credentials are what a test of authentication presents to an AuthServer.
type Credentials struct {
	// Username and Password are the server's basic auth credentials.
	Username, Password string
	// Key is authorized over SSH; WrongKey is not.
	Key, WrongKey *gitserver.ClientKey
	// UnknownHost is a known_hosts line for the server's address with another server's key.
	UnknownHost []byte
}

// NewAuthServer starts NewServer with one commit on main, wanting basic auth over HTTP and an
// authorized key over SSH, and returns the commit and the credentials to try.
func NewAuthServer(t *testing.T) (*gitserver.Server, string, Credentials) {
	t.Helper()
	g := NewWithT(t)
	srv, repo := NewServer(t)
	commit := Commit(t, repo, "one", map[string]string{"f": "1"})
	creds := Credentials{Username: "user", Password: "s3cret"}
	srv.SetBasicAuth(creds.Username, creds.Password)
	var err error
	creds.Key, err = gitserver.NewClientKey()
	g.Expect(err).NotTo(HaveOccurred())
	srv.AuthorizeKey(creds.Key.Public)
	creds.WrongKey, err = gitserver.NewClientKey()
	g.Expect(err).NotTo(HaveOccurred())
	other, err := gitserver.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(other.Close)
	_, err = other.StartSSH()
	g.Expect(err).NotTo(HaveOccurred())
	creds.UnknownHost = []byte(strings.Replace(string(other.KnownHosts()),
		knownHostsAddress(other.SSHURL("x")), knownHostsAddress(srv.SSHURL("repo")), 1))
	return srv, commit, creds
}

// knownHostsAddress returns the address of an ssh://git@host:port/... URL in known_hosts
// form, [host]:port.
func knownHostsAddress(sshURL string) string {
	hp := strings.TrimPrefix(sshURL, "ssh://git@")
	hp = hp[:strings.Index(hp, "/")]
	host, port, _ := strings.Cut(hp, ":")
	return "[" + host + "]:" + port
}
