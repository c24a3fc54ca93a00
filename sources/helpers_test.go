package sources

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/gitserver"
)

// newGitServer starts a git server with HTTP and SSH and one repository "repo".
func newGitServer(t *testing.T) (*gitserver.Server, *gitserver.Repo) {
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

// commit commits files on branch main and fails the test on error.
func commit(t *testing.T, repo *gitserver.Repo, msg string, files map[string]string) string {
	t.Helper()
	c, err := repo.Commit("main", msg, files)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// newStore returns a store in a temporary directory.
func newStore(t *testing.T, limits Limits) *Store {
	t.Helper()
	s, err := NewStore(t.TempDir(), StoreOptions{Limits: limits})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return s
}

// testCtx returns a context cancelled at the end of the test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// makeTempDir returns a directory for process-wide fixtures (benchmarks); it is left to the
// OS temp cleaner.
func makeTempDir() (string, error) { return os.MkdirTemp("", "convoy-bench-*") }
