package hosted

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"
)

// UnreachableError is returned, without a request being sent, for a hosted cluster whose
// last requests failed to get an answer: its circuit is open until RetryAt, or a probe is
// trying it in the background, or too many other unreachable clusters are being probed at
// once; or, Connecting, for a cluster whose TLS handshake has been pending for longer than
// the patience of a worker.
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
	// Probing is set when a probe is trying the cluster in the background.
	Probing bool
	// Connecting is set when a connection's TLS handshake is still pending; the request was
	// given up so as not to hold a worker for the whole connect timeout.
	Connecting bool
}

// Error implements error.
func (e *UnreachableError) Error() string {
	switch {
	case e.Connecting:
		return fmt.Sprintf("%s is slow to answer: a TLS handshake has been pending for longer than a worker waits; it goes on in the background", e.Host)
	case e.Deferred:
		return fmt.Sprintf("%s is not answering (%d failures in a row, last: %v); its next try is deferred: other unreachable hosted clusters hold every probe slot",
			e.Host, e.Failures, e.Cause)
	case e.Probing:
		return fmt.Sprintf("%s is not answering (%d failures in a row, last: %v); a probe is trying it again in the background",
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

// errSlowConnect is the cause of the requests a circuit gives up while a handshake is pending.
var errSlowConnect = errors.New("the TLS handshake is pending for longer than a worker waits")

// circuit guards the requests to one hosted cluster, so that a dead cluster never holds a
// worker for long. Closed, every request goes through; after a request gets no answer (a
// transport error, a timeout, a body cut short) it opens: requests fail at once with an
// *UnreachableError until a backoff has passed, which doubles with every failure in a row up
// to a cap. Then it is half-open: a probe tries the cluster in the background, holding one of
// the probe slots shared by every circuit, while requests still fail at once; the probe's
// answer closes it. A new connection whose TLS handshake is pending for longer than the
// patience (see handshakes) gives up the requests waiting on the circuit, which fail at once
// until the handshake ends: a cluster that accepts connections and never answers holds a
// worker for the patience, not for the connect timeout.
type circuit struct {
	host    string
	next    http.RoundTripper
	probes  chan struct{}
	base    time.Duration
	cap     time.Duration
	timeout time.Duration
	now     func() time.Time

	mu       sync.Mutex
	failures int
	retryAt  time.Time
	lastErr  error
	trying   bool
	slow     int
	waiting  map[*http.Request]context.CancelCauseFunc
}

// admit lets a request through, or fails it. The release function records the request's
// outcome (nil for an answer) and returns the error to give the caller.
func (c *circuit) admit() (func(error) error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failures == 0 && c.slow == 0 {
		return c.record, nil
	}
	if c.failures == 0 {
		return nil, &UnreachableError{Host: c.host, RetryAt: c.now(), Cause: errSlowConnect, Connecting: true}
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
	go c.probe()
	return nil, c.errorLocked(false)
}

// probe tries the half-open cluster with a request of its own, in the background, and
// records the outcome; it holds a probe slot.
func (c *circuit) probe() {
	defer func() { <-c.probes }()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	err := c.get(ctx, strings.TrimSuffix(c.host, "/")+"/version")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trying = false // under the same lock as the outcome: no second probe in between
	_ = c.recordLocked(err)
}

// get sends a GET to url and reads the answer; any answer, whatever its status, is one.
func (c *circuit) get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return err
}

// errorLocked returns the error of a request the circuit refuses. Caller holds c.mu.
func (c *circuit) errorLocked(deferred bool) error {
	retryAt := c.retryAt
	if deferred || c.trying {
		// Look again after a base backoff, not every second while another probe or this
		// cluster's takes its time.
		retryAt = c.now().Add(c.base)
	}
	return &UnreachableError{Host: c.host, Failures: c.failures, RetryAt: retryAt, Cause: c.lastErr,
		Deferred: deferred, Probing: c.trying}
}

// record notes the outcome of a request: nil closes the circuit, an error opens it for the
// next backoff and comes back as an *UnreachableError that says so.
func (c *circuit) record(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recordLocked(err)
}

// recordLocked is record; the caller holds c.mu.
func (c *circuit) recordLocked(err error) error {
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
// cancelled by its caller says nothing about the cluster; one the circuit gave up while a
// handshake was pending fails with an *UnreachableError that says so.
func (c *circuit) RoundTrip(req *http.Request) (*http.Response, error) {
	done, err := c.admit()
	if err != nil {
		return nil, err
	}
	req, cancel := c.wait(req)
	resp, err := c.next.RoundTrip(req)
	c.answered(req)
	if err != nil {
		defer cancel(nil)
		if errors.Is(context.Cause(req.Context()), errSlowConnect) {
			return nil, &UnreachableError{Host: c.host, RetryAt: c.now(), Cause: errSlowConnect, Connecting: true}
		}
		if failure := done(outcome(req, err)); failure != nil {
			return nil, failure
		}
		return nil, err
	}
	resp.Body = &watchedBody{ReadCloser: resp.Body, req: req, done: done, cancel: cancel}
	return resp, nil
}

// wait registers req as waiting on the circuit until it gets a connection, so that a
// pending handshake can give it up; it returns req with a context the circuit can cancel,
// and its cancel function, to call once the request is over. A request sent on a
// connection (a pooled one, or the new one once its handshake is done) no longer waits: a
// slow handshake never cancels a request already in flight on a healthy connection.
func (c *circuit) wait(req *http.Request) (*http.Request, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(req.Context())
	var waiting *http.Request
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { c.answered(waiting) },
	})
	waiting = req.WithContext(ctx)
	req = waiting
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting == nil {
		c.waiting = map[*http.Request]context.CancelCauseFunc{}
	}
	c.waiting[req] = cancel
	return req, cancel
}

// answered notes that req no longer waits for a connection: it got one, or it is over.
func (c *circuit) answered(req *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, req)
}

// handshakeSlow gives up the requests waiting on the circuit: a handshake has been pending
// for longer than the patience. The handshake goes on in the background; until it ends,
// requests fail at once.
func (c *circuit) handshakeSlow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slow++
	for req, cancel := range c.waiting {
		cancel(errSlowConnect)
		delete(c.waiting, req)
	}
}

// handshakeEnded notes the end of a handshake, slow if handshakeSlow was called for it: the
// server answered (err nil), or did not within the connect timeout. A slow handshake that
// failed opens the circuit: the requests it gave up recorded nothing. A failure within the
// patience is recorded by the request that waited on it, once.
func (c *circuit) handshakeEnded(slow bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slow {
		return
	}
	c.slow--
	if err != nil {
		_ = c.recordLocked(err)
	}
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
	req    *http.Request
	once   sync.Once
	done   func(error) error
	cancel context.CancelCauseFunc
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

func (b *watchedBody) finish(err error) {
	b.once.Do(func() {
		_ = b.done(err)
		b.cancel(nil)
	})
}
