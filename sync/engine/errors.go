package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	ssaerrors "github.com/fluxcd/pkg/ssa/errors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// Requeue delays of the Waiting errors the engine returns besides probes.
const (
	// dependencyInterval: an API (CRD) or namespace the objects need is missing.
	dependencyInterval = 10 * time.Second
	// UnreachableInterval: the hosted cluster's API server does not answer.
	UnreachableInterval = 30 * time.Second
	// tooLargeInterval: the hosted cluster's API server answered with more than the
	// controller reads; what it sends changes with what its tenant stores, rarely.
	tooLargeInterval = time.Minute
)

// classify turns an error of a request to c into a classified error. It is the one place
// where the engine decides what is stalled (only the user can fix it), waiting (clears by
// itself) or transient.
func (c *cluster) classify(err error) error {
	var (
		stalling *pass.Stalling
		waiting  *pass.Waiting
		large    tooLarge
	)
	switch {
	case err == nil || errors.As(err, &stalling) || errors.As(err, &waiting):
		return err
	case isNoMatch(err):
		return pass.Waitf(convoyv1alpha1.DependencyNotReadyReason, dependencyInterval,
			"%s cluster has no API for %w", c.name, err)
	case errors.As(err, &large):
		// Note: large alone, without client-go's "unexpected error… Please retry" around it.
		// A discovery error that is also a NoMatch (another group is missing) says
		// DependencyNotReady above: either way the pass waits.
		return pass.Waitf(convoyv1alpha1.HostedResponseTooLargeReason, tooLargeInterval,
			"hosted cluster of namespace %s: %w", c.target.Namespace, large)
	case isUnreachable(err):
		if c.hosted() {
			return pass.Waitf(convoyv1alpha1.HostedClusterUnreachableReason, unreachableDelay(err),
				"hosted cluster of namespace %s is unreachable: %w", c.target.Namespace, err)
		}
		return err
	case apierrors.IsNotFound(err):
		return pass.Waitf(convoyv1alpha1.DependencyNotReadyReason, dependencyInterval, "%w", err)
	case ssaerrors.IsImmutableError(err) && !apierrors.IsConflict(err):
		return pass.Stallf(convoyv1alpha1.ApplyFailedReason, "%w%s", err, immutableHint(err))
	case apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err):
		return pass.Stallf(convoyv1alpha1.ApplyFailedReason, "%w", err)
	}
	return &pass.Generic{Reason: convoyv1alpha1.ApplyFailedReason, Err: err}
}

// classifyDelete classifies an error of a prune or teardown. A refusal (Forbidden: convoy may
// lack the delete verb, or an admission webhook refuses) is not a stall: the finalizer must
// go once the permission or the webhook is fixed, without an edit of the owner, so it is
// retried with backoff, and the condition says what was refused.
func (c *cluster) classifyDelete(err error) error {
	if apierrors.IsForbidden(err) {
		return &pass.Generic{Reason: convoyv1alpha1.DeleteFailedReason,
			Err: fmt.Errorf("%s cluster refused a delete (retried with backoff): %w", c.name, err)}
	}
	return c.classify(err)
}

// retryAfter is an error that knows when to try again (hosted.UnreachableError).
type retryAfter interface{ RetryAfter() time.Duration }

// unreachableDelay is when to look again at an unreachable cluster: when its circuit lets a
// request try again, else UnreachableInterval.
func unreachableDelay(err error) time.Duration {
	var ra retryAfter
	if errors.As(err, &ra) {
		return min(ra.RetryAfter(), UnreachableInterval)
	}
	return UnreachableInterval
}

// tooLarge is an answer longer than the client reads (hosted.ResponseTooLargeError).
type tooLarge interface {
	error
	ResponseLimit() int64
}

// immutableHint tells how to get past an immutable field.
func immutableHint(err error) string {
	if !strings.Contains(err.Error(), "immutable") {
		return ""
	}
	return ` (to let convoy delete and recreate the object, annotate it convoy.dev/force: "true")`
}

// isUnreachable reports an error that is not an answer from an API server: a refused
// connection, a DNS failure, a timeout.
func isUnreachable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsServiceUnavailable(err)
	}
	return true
}

// isNoMatch reports an unknown kind.
func isNoMatch(err error) bool { return apimeta.IsNoMatchError(err) }
