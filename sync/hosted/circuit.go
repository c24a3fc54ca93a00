package hosted

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// UnreachableError is returned, without a request being sent, for a hosted cluster whose
// last requests failed to get an answer: its circuit is open until RetryAt, or it is
// half-open and another request is already trying it, or too many other unreachable clusters
// are being tried at once.
type UnreachableError struct {
	// Host is the API server.
	Host string
	// Failures counts the requests in a row that got no answer.
	Failures int
	// RetryAt is when a request may try the cluster again.
	RetryAt time.Time
	// Cause is the last failure.
	Cause error
	// Deferred is set when the cluster may be tried but every probe slot is taken.
	Deferred bool
}

// Error implements error.
func (e *UnreachableError) Error() string {
	if e.Deferred {
		return fmt.Sprintf("%s is not answering (%d failures in a row, last: %v); its next try is deferred: other unreachable hosted clusters hold every probe slot",
			e.Host, e.Failures, e.Cause)
	}
	return fmt.Sprintf("%s is not answering (%d failures in a row, last: %v); next try after %s",
		e.Host, e.Failures, e.Cause, e.RetryAt.UTC().Format(time.RFC3339))
}

// Unwrap returns the last failure.
func (e *UnreachableError) Unwrap() error { return e.Cause }

// RetryAfter is how long to wait before the cluster may be tried again (at least a second).
func (e *UnreachableError) RetryAfter() time.Duration {
	return max(time.Until(e.RetryAt), time.Second)
}

// circuit guards the requests to one hosted cluster. Closed, every request goes through; after
// a request gets no answer (a transport error, a timeout, a body cut short) it opens: requests
// fail at once with an *UnreachableError until a backoff has passed, which doubles with every
// failure in a row up to a cap. Then it is half-open: one request at a time may try the
// cluster, and only while it holds one of the probe slots shared by every circuit, so that
// dead clusters can never hold more than that many workers. Any answer closes it.
type circuit struct {
	host   string
	next   http.RoundTripper
	probes chan struct{}
	base   time.Duration
	cap    time.Duration
	now    func() time.Time

	mu       sync.Mutex
	failures int
	retryAt  time.Time
	lastErr  error
	trying   bool
}

// admit lets a request through, or fails it. The release function records the request's
// outcome (nil for an answer) and returns the error to give the caller.
func (c *circuit) admit() (func(error) error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failures == 0 {
		return c.record, nil
	}
	if c.trying || c.now().Before(c.retryAt) {
		return nil, c.errorLocked(false)
	}
	select {
	case c.probes <- struct{}{}:
	default:
		return nil, c.errorLocked(true)
	}
	c.trying = true
	return func(err error) error {
		<-c.probes
		c.mu.Lock()
		c.trying = false
		c.mu.Unlock()
		return c.record(err)
	}, nil
}

// errorLocked returns the error of a request the circuit refuses. Caller holds c.mu.
func (c *circuit) errorLocked(deferred bool) error {
	retryAt := c.retryAt
	if deferred {
		retryAt = c.now().Add(c.base) // look again after a base backoff, not in a loop
	}
	return &UnreachableError{Host: c.host, Failures: c.failures, RetryAt: retryAt, Cause: c.lastErr, Deferred: deferred}
}

// record notes the outcome of a request: nil closes the circuit, an error opens it for the
// next backoff and comes back as an *UnreachableError that says so.
func (c *circuit) record(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.failures, c.lastErr = 0, nil
		return nil
	}
	c.failures++
	c.lastErr = err
	d := c.base
	for i := 1; i < c.failures && d < c.cap; i++ {
		d *= 2
	}
	c.retryAt = c.now().Add(min(d, c.cap))
	return c.errorLocked(false)
}

// RoundTrip sends req unless the circuit refuses it, and feeds the outcome back. A request
// cancelled by its caller says nothing about the cluster.
func (c *circuit) RoundTrip(req *http.Request) (*http.Response, error) {
	done, err := c.admit()
	if err != nil {
		return nil, err
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		if failure := done(outcome(req, err)); failure != nil {
			return nil, failure
		}
		return nil, err
	}
	resp.Body = &watchedBody{ReadCloser: resp.Body, req: req, done: done}
	return resp, nil
}

// outcome returns err unless the caller cancelled the request.
func outcome(req *http.Request, err error) error {
	if err != nil && errors.Is(req.Context().Err(), context.Canceled) {
		return nil
	}
	return err
}

// watchedBody reports the outcome of a request once its body is read to the end, fails, or
// is closed: a server that sends headers and then stalls counts as a failure.
type watchedBody struct {
	io.ReadCloser
	req  *http.Request
	once sync.Once
	done func(error) error
}

// Read implements io.Reader.
func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		b.finish(nil)
	case err != nil:
		b.finish(outcome(b.req, err))
	}
	return n, err
}

// Close implements io.Closer; a body closed before its end got an answer all the same.
func (b *watchedBody) Close() error {
	b.finish(nil)
	return b.ReadCloser.Close()
}

func (b *watchedBody) finish(err error) { b.once.Do(func() { _ = b.done(err) }) }
