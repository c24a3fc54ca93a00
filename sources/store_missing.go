package sources

import (
	"context"
	"fmt"
	"time"
)

// Defaults of StoreOptions.
const (
	// DefaultFetchTimeout is the default of StoreOptions.FetchTimeout.
	DefaultFetchTimeout = 60 * time.Second
	// DefaultMissingCommitBackoff is the default of StoreOptions.MissingCommitBackoff.
	DefaultMissingCommitBackoff = time.Minute
	// DefaultMaxMissingCommitBackoff is the default of StoreOptions.MaxMissingCommitBackoff.
	DefaultMaxMissingCommitBackoff = 30 * time.Minute
)

// writeLock serializes the writers of one repository; unlike a sync.Mutex, waiting for it
// ends with the caller's context, so that a stalled fetch cannot hold its waiters for longer
// than their own deadline.
type writeLock chan struct{}

// newWriteLock returns an unlocked writeLock.
func newWriteLock() writeLock { return make(writeLock, 1) }

// lock takes the lock, or fails when ctx ends first.
func (l writeLock) lock(ctx context.Context) error {
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for another fetch of the repository: %w", ctx.Err())
	}
}

// unlock releases the lock.
func (l writeLock) unlock() { <-l }

// missingCommit remembers that the remote did not have a commit, so that a Package naming a
// commit that does not exist costs one full fetch per backoff period instead of one per pass.
type missingCommit struct {
	// attempts counts the fetches that did not find the commit.
	attempts int
	// retryAt is when the next fetch may look for it.
	retryAt time.Time
}

// missingBackoff returns the wait after the n-th failed look (n ≥ 1): the initial backoff,
// doubled each time, capped.
func (s *Store) missingBackoff(n int) time.Duration {
	d := s.opts.MissingCommitBackoff
	for i := 1; i < n && d < s.opts.MaxMissingCommitBackoff; i++ {
		d *= 2
	}
	return min(d, s.opts.MaxMissingCommitBackoff)
}

// knownMissing returns the error of a commit the remote did not have at its last look, while
// its backoff runs; nil when the store may look again.
func (s *Store) knownMissing(key Key, e *entry, commit string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.missing[commit]
	if m == nil || !s.now().Before(m.retryAt) {
		return nil
	}
	return &CommitNotFoundError{Key: key, Commit: commit, Attempts: m.attempts, RetryAt: m.retryAt}
}

// recordMissing notes one more failed look for commit and returns its error.
func (s *Store) recordMissing(key Key, e *entry, commit string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.missing == nil {
		e.missing = map[string]*missingCommit{}
	}
	m := e.missing[commit]
	if m == nil {
		m = &missingCommit{}
		e.missing[commit] = m
	}
	m.attempts++
	m.retryAt = s.now().Add(s.missingBackoff(m.attempts))
	return &CommitNotFoundError{Key: key, Commit: commit, Attempts: m.attempts, RetryAt: m.retryAt}
}

// forgetMissing clears what the store remembers of missing commits: the remote got new
// objects, which may hold them.
func (e *entry) forgetMissing() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.missing = nil
}
