package hosted

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Bounds of the patience: how long a request waits for a pending TLS handshake before the
// circuit gives it up (see circuit). It is patienceFactor times the typical handshake of
// the hosted clusters that answered, at least minPatience and at most half the connect
// timeout, so that a loaded machine, whose handshakes are slower, waits longer.
const (
	minPatience    = 250 * time.Millisecond
	patienceFactor = 10
)

// errClosedBeforeAnswer ends the handshake of a connection closed before the server answered.
var errClosedBeforeAnswer = errors.New("connection closed before the server answered the TLS handshake")

// handshakes measures how long hosted API servers take to answer a TLS client hello, across
// every hosted cluster, and derives the patience from it.
type handshakes struct {
	mu      sync.Mutex
	typical time.Duration
}

// observe adds the time a server took to answer (a moving average: 1/8 of the new one).
func (h *handshakes) observe(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.typical == 0 {
		h.typical = d
		return
	}
	h.typical += (d - h.typical) / 8
}

// patience returns how long a request waits for a pending handshake, given the connect
// timeout.
func (h *handshakes) patience(connectTimeout time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return min(max(patienceFactor*h.typical, minPatience), max(connectTimeout/2, minPatience))
}

// watch bounds the wait for the first bytes of conn, a new TLS connection (the server's
// answer to the client hello), by the connect timeout, and reports to cb: a handshake
// pending for longer than the patience gives up the requests waiting on cb; its end, the
// answer or the failure. Note: client-go wraps its transport, so its TLSHandshakeTimeout
// (10s) cannot be changed; the deadline on the connection does the same.
func (h *handshakes) watch(conn net.Conn, cb *circuit, connectTimeout time.Duration) net.Conn {
	_ = conn.SetReadDeadline(time.Now().Add(connectTimeout))
	hc := &handshakeConn{Conn: conn, circuit: cb, stats: h, started: time.Now()}
	hc.timer = time.AfterFunc(h.patience(connectTimeout), hc.tooSlow)
	return hc
}

// handshakeConn is a new TLS connection until its server answered.
type handshakeConn struct {
	net.Conn
	circuit *circuit
	stats   *handshakes
	started time.Time
	timer   *time.Timer

	mu    sync.Mutex
	slow  bool
	ended bool
}

// Read implements io.Reader; the first bytes end the handshake's watch and clear the deadline.
func (h *handshakeConn) Read(p []byte) (int, error) {
	n, err := h.Conn.Read(p)
	switch {
	case n > 0:
		h.end(nil)
	case err != nil:
		h.end(err)
	}
	return n, err
}

// Close implements io.Closer; a connection closed before its server answered failed.
func (h *handshakeConn) Close() error {
	h.end(errClosedBeforeAnswer)
	return h.Conn.Close()
}

// tooSlow tells the circuit that the handshake is pending for longer than the patience.
func (h *handshakeConn) tooSlow() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return
	}
	h.slow = true
	h.circuit.handshakeSlow()
}

// end reports the handshake's outcome once: nil when the server answered.
func (h *handshakeConn) end(err error) {
	h.mu.Lock()
	if h.ended {
		h.mu.Unlock()
		return
	}
	h.ended = true
	slow := h.slow
	h.mu.Unlock()
	h.timer.Stop()
	if err == nil {
		_ = h.SetReadDeadline(time.Time{})
		h.stats.observe(time.Since(h.started))
	}
	h.circuit.handshakeEnded(slow, err)
}
