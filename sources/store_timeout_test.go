package sources

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/gittest"
)

func TestOpenOfAStalledServerEndsAtTheTimeout(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	s, err := NewStore(t.TempDir(), StoreOptions{FetchTimeout: time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	key := KeyFor("ns", "src")
	_, err = s.Poll(testCtx(t), key, Remote{URL: srv.HTTPURL("repo")}, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	c2 := gittest.Commit(t, repo, "two", map[string]string{"f": "2"})
	c3 := gittest.Commit(t, repo, "three", map[string]string{"f": "3"})

	srv.SetStalled(true)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, c := range []string{c2, c3} {
		wg.Go(func() { _, errs[i] = s.Open(testCtx(t), key, c) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		g.Expect(err).To(HaveOccurred())
		g.Expect(IsCommitNotFound(err)).To(BeFalse(), "a stall is not an answer: %v", err)
		g.Expect(err.Error()).To(Or(ContainSubstring("deadline exceeded"), ContainSubstring("timeout")))
	}
	g.Expect(elapsed).To(BeNumerically("<", 4*time.Second),
		"two fetches of one repository, each bounded by its timeout including the wait for the other")
	g.Expect(srv.Stalled()).To(BeNumerically(">=", 1), "the server stalled after the headers")
	classified := ClassifyGitError("fetching", errs[0])
	g.Expect(classified.Error()).To(ContainSubstring("timed out"))

	srv.SetStalled(false)
	_, err = s.Open(testCtx(t), key, c3)
	g.Expect(err).NotTo(HaveOccurred(), "the store works again once the server answers")
}

func TestOpenRemembersACommitTheRemoteDoesNotHave(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	s, err := NewStore(t.TempDir(), StoreOptions{MissingCommitBackoff: time.Minute, MaxMissingCommitBackoff: 3 * time.Minute})
	g.Expect(err).NotTo(HaveOccurred())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	key, remote := KeyFor("ns", "src"), Remote{URL: srv.HTTPURL("repo")}
	_, err = s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	absent := strings.Repeat("ab", 20)

	look := func(wantAttempts int, wantFetch bool) {
		t.Helper()
		before := srv.Stats()
		_, err := s.Open(testCtx(t), key, absent)
		var nf *CommitNotFoundError
		g.Expect(errors.As(err, &nf)).To(BeTrue(), "got %v", err)
		g.Expect(nf.Attempts).To(Equal(wantAttempts))
		fetched := srv.Stats().Sub(before).Advertisements > 0
		g.Expect(fetched).To(Equal(wantFetch))
	}
	look(1, true)
	g.Expect(s.knownMissing(key, s.entry(key), absent).Error()).To(ContainSubstring("looked 1 time; next look at 2026-01-01T00:01:00Z"))
	look(1, false)
	now = now.Add(61 * time.Second)
	look(2, true)
	now = now.Add(61 * time.Second)
	look(2, false) // the backoff doubled to 2m
	now = now.Add(time.Minute)
	look(3, true)
	g.Expect(s.missingBackoff(10)).To(Equal(3*time.Minute), "capped")

	gittest.Commit(t, repo, "two", map[string]string{"f": "2"})
	_, err = s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	look(1, true) // new objects on the remote: look again at once
}
