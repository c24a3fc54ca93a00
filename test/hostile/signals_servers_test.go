package hostile

import (
	"bytes"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// floodSize is what a flooding check server offers: 1 GiB, streamed, never buffered.
const floodSize = 1 << 30

// silentServer accepts connections and never writes a byte: a check's URL that never answers.
type silentServer struct {
	ln       net.Listener
	mu       sync.Mutex
	conns    []net.Conn
	accepted atomic.Int32
	// closed counts the connections the client hung up, and longestHeld is the longest time
	// one was held open before that.
	closed      atomic.Int32
	longestHeld atomic.Int64
}

// newSilentServer listens on a free port of 127.0.0.1 until the test ends.
func newSilentServer(t *testing.T) *silentServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentServer{ln: ln}
	go s.serve()
	t.Cleanup(s.close)
	return s
}

// serve accepts connections and reads (never answers) what they send.
func (s *silentServer) serve() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.conns = append(s.conns, conn)
		s.mu.Unlock()
		go func() {
			start := time.Now()
			_, _ = io.Copy(io.Discard, conn) // until the client hangs up
			s.closed.Add(1)
			for held := int64(time.Since(start)); ; {
				old := s.longestHeld.Load()
				if held <= old || s.longestHeld.CompareAndSwap(old, held) {
					break
				}
			}
		}()
	}
}

// close stops listening and drops every connection.
func (s *silentServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
}

// URL is the server's base URL.
func (s *silentServer) URL() string { return "http://" + s.ln.Addr().String() }

// floodServer answers every request with floodSize bytes of a body that looks like the start of
// what the check expects, written in chunks as the client reads them, and records the most
// bytes one answer got written before the client hung up.
type floodServer struct {
	*httptest.Server
	requests atomic.Int32
	// maxWritten is the most bytes of one answer the kernel accepted: what the client read,
	// plus the sockets' buffers.
	maxWritten atomic.Int64
}

// newFloodServer starts a flooding server that answers with status and contentType, its body
// prefix followed by repetitions of chunk.
func newFloodServer(t *testing.T, status int, contentType, prefix, chunk string) *floodServer {
	t.Helper()
	f := &floodServer{}
	block := bytes.Repeat([]byte(chunk), 32<<10/len(chunk))
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(floodSize))
		w.WriteHeader(status)
		written := int64(0)
		defer func() { f.recordWritten(written) }()
		n, err := io.WriteString(w, prefix)
		written += int64(n)
		for err == nil && written < floodSize {
			n, err = w.Write(block[:min(int64(len(block)), floodSize-written)])
			written += int64(n)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// recordWritten keeps the largest answer written.
func (f *floodServer) recordWritten(n int64) {
	for {
		old := f.maxWritten.Load()
		if n <= old || f.maxWritten.CompareAndSwap(old, n) {
			return
		}
	}
}

// countingServer answers every request with status and a body, counting the requests and those
// that carried an Authorization header.
type countingServer struct {
	*httptest.Server
	requests, authorized atomic.Int32
}

// newCountingServer starts a server whose answer is made by answer from the request: over TLS
// when secure (checks send credentials over https:// only; every such server has the
// certificate of testCA), else plain HTTP.
func newCountingServer(t *testing.T, secure bool, answer func(w http.ResponseWriter, r *http.Request)) *countingServer {
	t.Helper()
	c := &countingServer{}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		if r.Header.Get("Authorization") != "" {
			c.authorized.Add(1)
		}
		answer(w, r)
	}))
	if secure {
		c.StartTLS()
	} else {
		c.Start()
	}
	t.Cleanup(c.Close)
	return c
}

// testCA returns the PEM certificate of the TLS test servers (httptest's, shared by all), which
// a check's Secret gives as its ca.crt.
func testCA(c *countingServer) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate().Raw}))
}
