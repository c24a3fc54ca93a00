package sources

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// UnsafeSymlinkReason says a tree holds a symlink that points outside of it.
// Note: kept here rather than in api/v1alpha1 because only GitSource uses it.
const UnsafeSymlinkReason = "UnsafeSymlink"

// CommitNotFoundError says that a commit is neither in the store nor on the remote.
type CommitNotFoundError struct {
	// Key of the source.
	Key Key
	// Commit asked for.
	Commit string
	// Attempts counts the fetches that looked for it on the remote; zero when none did.
	Attempts int
	// RetryAt is when the store will look for it on the remote again; zero when unknown.
	RetryAt time.Time
}

// Error implements error.
func (e *CommitNotFoundError) Error() string {
	msg := fmt.Sprintf("commit %s not found in source %s", e.Commit, e.Key)
	if e.Attempts > 0 {
		msg += fmt.Sprintf(" nor on its remote (looked %d %s; next look at %s)", e.Attempts,
			pluralTimes(e.Attempts), e.RetryAt.UTC().Format(time.RFC3339))
	}
	return msg
}

// pluralTimes returns "time" or "times".
func pluralTimes(n int) string {
	if n == 1 {
		return "time"
	}
	return "times"
}

// IsCommitNotFound reports whether err is or wraps a *CommitNotFoundError.
func IsCommitNotFound(err error) bool {
	var nf *CommitNotFoundError
	return errors.As(err, &nf)
}

// RefNotFoundError says that spec.ref matches nothing on the remote.
type RefNotFoundError struct {
	// Ref describes the ref, e.g. `branch "main"`.
	Ref string
	// Empty is set when the remote has no refs at all.
	Empty bool
}

// Error implements error.
func (e *RefNotFoundError) Error() string {
	if e.Empty {
		return fmt.Sprintf("%s not found: the remote repository is empty", e.Ref)
	}
	return fmt.Sprintf("%s not found on the remote", e.Ref)
}

// LimitError says that a tree exceeds one of the store's limits.
type LimitError struct {
	// Limit is "files", "file size" or "total size".
	Limit string
	// Max is the configured limit.
	Max int64
	// Path is the offending file, if any.
	Path string
}

// Error implements error.
func (e *LimitError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("%s limit of %d exceeded by %q", e.Limit, e.Max, e.Path)
	}
	return fmt.Sprintf("%s limit of %d exceeded", e.Limit, e.Max)
}

// StoreReadFailedReason says the store could not read an object of a commit it holds.
const StoreReadFailedReason = "StoreReadFailed"

// StoreReadError says that the store could not read an object of a commit it holds: its
// repository was deleted or replaced under the reader, or the disk failed. It is transient:
// the repository is reopened by the next read, and fetched again when it is gone.
type StoreReadError struct {
	// Key of the source.
	Key Key
	// Commit whose tree was read.
	Commit string
	// Err is what go-git said.
	Err error
}

// Error implements error.
func (e *StoreReadError) Error() string {
	return fmt.Sprintf("reading commit %s of source %s from the store: %v", e.Commit, e.Key, e.Err)
}

// Unwrap returns what go-git said.
func (e *StoreReadError) Unwrap() error { return e.Err }

// IsStoreRead reports whether err is or wraps a *StoreReadError.
func IsStoreRead(err error) bool {
	var sr *StoreReadError
	return errors.As(err, &sr)
}

// UnsafePathError says that a path (through a symlink) leads outside of the tree.
type UnsafePathError struct {
	// Path inside the tree.
	Path string
	// Target of the symlink.
	Target string
}

// Error implements error.
func (e *UnsafePathError) Error() string {
	return fmt.Sprintf("symlink %q points outside of the tree (%q)", e.Path, e.Target)
}

// ClassifyGitError gives a Git error its reason and class for the reconciler; the message is
// scrubbed of credentials embedded in URLs.
func ClassifyGitError(op string, err error) error {
	if pass.ReasonOf(err) != pass.FailedReason {
		return err // already classified (an invalid ref spec)
	}
	msg := scrubURLs(err.Error())
	var (
		rnf *RefNotFoundError
		lim *LimitError
		up  *UnsafePathError
		rs  *RepoSizeError
	)
	switch {
	case errors.As(err, &rnf):
		return pass.Waitf(convoyv1alpha1.RefNotFoundReason, 0, "%s", msg)
	case errors.As(err, &rs):
		return pass.Waitf(convoyv1alpha1.StorageLimitExceededReason, 0, "%s", msg)
	case errors.As(err, &lim):
		return pass.Waitf(convoyv1alpha1.StorageLimitExceededReason, 0, "%s", msg)
	case errors.As(err, &up):
		return pass.Waitf(UnsafeSymlinkReason, 0, "%s", msg)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return pass.Waitf(convoyv1alpha1.RefNotFoundReason, 0, "%s: the remote repository is empty", op)
	case isAuthError(err):
		return pass.Retryf(convoyv1alpha1.AuthenticationFailedReason, "%s: %s", op, msg)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return pass.Retryf(convoyv1alpha1.GitOperationFailedReason, "%s: repository not found", op)
	case errors.Is(err, context.DeadlineExceeded):
		return pass.Retryf(convoyv1alpha1.GitOperationFailedReason, "%s: timed out: %s", op, msg)
	}
	return pass.Retryf(convoyv1alpha1.GitOperationFailedReason, "%s: %s", op, msg)
}

// isAuthError reports whether err is a refusal of credentials or of the host key.
func isAuthError(err error) bool {
	if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "unable to authenticate") || strings.Contains(s, "known_hosts") ||
		strings.Contains(s, "handshake failed")
}
