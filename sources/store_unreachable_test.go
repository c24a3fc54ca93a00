package sources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	. "github.com/onsi/gomega"
)

// A fetch of a commit by hash that failed for want of an answer is not the remote saying it
// lacks the commit: the commit is not recorded as missing (which a rollout acts on).
func TestAFetchWithoutAnAnswerDoesNotMakeACommitMissing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	for _, err := range []error{
		fmt.Errorf("fetching: %w", refused),
		fmt.Errorf("fetching: %w", &url.Error{Op: "Post", URL: "https://git.example/x", Err: errors.New("EOF")}),
		fmt.Errorf("fetching: %w", plumbing.NewUnexpectedError(errors.New("status code: 503"))),
		fmt.Errorf("fetching: %w", context.DeadlineExceeded),
		fmt.Errorf("fetching: %w", transport.ErrAuthenticationRequired),
	} {
		g.Expect(unreachable(ctx, err)).To(BeTrue(), err.Error())
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	g.Expect(unreachable(cancelled, errors.New("anything"))).To(BeTrue(), "the caller's deadline or cancellation")
	g.Expect(unreachable(ctx, errors.New("fetching: remote error: upload-pack: not our ref"))).To(BeFalse(),
		"the server answered it has no such commit")
}
