package faultnet_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
)

// floodPrefix is how the flooding server's endless JSON answer starts.
const floodPrefix = `{"kind":"Status","message":"`

// get sends a GET of url with c, bounded by ctx, and checks that the headers arrive with 200.
func get(ctx context.Context, g Gomega, c *http.Client, url string) *http.Response {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := c.Do(req)
	g.Expect(err).NotTo(HaveOccurred(), "the headers arrive")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	return resp
}

// closeWithin calls stop in the background and checks that it returns within d.
func closeWithin(g Gomega, d time.Duration, stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		stop()
	}()
	g.Eventually(done, d).Should(BeClosed(), "Close returns while a client still waits")
}

// countingConn counts the bytes a client reads from the wire.
type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// countingClient returns an HTTP client that asks for gzip, decompresses transparently (as
// client-go does) and counts into read the bytes it reads from the wire.
func countingClient(read *atomic.Int64) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: conn, read: read}, nil
		},
	}}
}

func TestStallingServerSendsHeadersThenNothing(t *testing.T) {
	g := NewWithT(t)
	s := faultnet.NewStallingServer("application/vnd.kubernetes.protobuf")
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()

	start := time.Now()
	resp := get(ctx, g, &http.Client{}, s.URL+"/api/v1/namespaces")
	defer func() { _ = resp.Body.Close() }()
	g.Expect(time.Since(start)).To(BeNumerically("<", 800*time.Millisecond), "the headers come at once")
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/vnd.kubernetes.protobuf"))

	body, err := io.ReadAll(resp.Body)
	g.Expect(body).To(BeEmpty(), "no byte of the body ever comes")
	g.Expect(err).To(MatchError(context.DeadlineExceeded), "only the client's deadline ends the wait")
	g.Expect(time.Since(start)).To(BeNumerically(">=", 990*time.Millisecond))
	g.Expect(s.Requests()).To(Equal(int64(1)))
}

func TestStallingServerHoldsEachRequestUntilTheClientTimesOut(t *testing.T) {
	g := NewWithT(t)
	s := faultnet.NewStallingServer("application/json")
	defer s.Close()
	c := &http.Client{Timeout: 300 * time.Millisecond}

	for range 2 {
		resp := get(context.Background(), g, c, s.URL)
		_, err := io.ReadAll(resp.Body)
		var ne net.Error
		g.Expect(errors.As(err, &ne) && ne.Timeout()).To(BeTrue(), "the client's timeout ends the body: %v", err)
		_ = resp.Body.Close()
	}
	g.Expect(s.Requests()).To(Equal(int64(2)), "every request is counted")
}

func TestStallingServerCloseEndsStalledRequests(t *testing.T) {
	g := NewWithT(t)
	s := faultnet.NewStallingServer("application/json")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := get(ctx, g, &http.Client{}, s.URL)
	defer func() { _ = resp.Body.Close() }()
	read := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); read <- err }()

	closeWithin(g, 5*time.Second, s.Close)
	var err error
	g.Eventually(read, 5*time.Second).Should(Receive(&err), "the stalled body ends with the server")
	g.Expect(err).To(HaveOccurred(), "an answer cut short is an error, not a complete body")
	g.Expect(ctx.Err()).NotTo(HaveOccurred())
}

func TestFloodingServerAnswerNeverEnds(t *testing.T) {
	g := NewWithT(t)
	s := faultnet.NewFloodingServer()
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}

	resp := get(ctx, g, c, s.URL+"/api/v1/configmaps")
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
	g.Expect(resp.Header.Get("Content-Encoding")).To(BeEmpty(), "plain when the client does not ask for gzip")
	g.Expect(resp.ContentLength).To(Equal(int64(-1)), "no announced end")

	const want = 8 << 20
	body := make([]byte, want)
	_, err := io.ReadFull(resp.Body, body)
	g.Expect(err).NotTo(HaveOccurred(), "8 MiB and still going")
	g.Expect(string(body[:len(floodPrefix)])).To(Equal(floodPrefix))
	g.Expect(bytes.Count(body[len(floodPrefix):], []byte("a"))).To(Equal(want-len(floodPrefix)), "one endless JSON string")

	closeWithin(g, 5*time.Second, s.Close)
	g.Expect(s.Requests()).To(Equal(int64(1)))
}

func TestFloodingServerGzipAnswerIsTinyOnTheWire(t *testing.T) {
	g := NewWithT(t)
	s := faultnet.NewFloodingServer()
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wire atomic.Int64

	resp := get(ctx, g, countingClient(&wire), s.URL)
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.Uncompressed).To(BeTrue(), "the answer came gzip-compressed")
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))

	const mib = 1 << 20
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 2*mib))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(int64(2*mib)), "2 MiB decompressed and still going")
	g.Expect(wire.Load()).To(BeNumerically("<", 2*8<<10), "a few KiB on the wire for every MiB")

	cancel()
	closeWithin(g, 5*time.Second, s.Close)
}
