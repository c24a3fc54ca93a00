package faultnet_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
)

// greeting is what the echo server sends first on every connection, before it echoes: bytes
// that flow from the server without a request.
const greeting = "hello\n"

// echoServer is a real loopback TCP server: it greets each connection, then echoes what it reads.
type echoServer struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
}

// startEchoServer starts an echoServer that stops when t ends.
func startEchoServer(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	s := &echoServer{ln: ln}
	s.wg.Go(s.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *echoServer) serve() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.wg.Go(func() {
			defer func() { _ = conn.Close() }()
			if _, err := io.WriteString(conn, greeting); err != nil {
				return
			}
			_, _ = io.Copy(conn, conn)
		})
	}
}

// Addr returns the server's host:port.
func (s *echoServer) Addr() string { return s.ln.Addr().String() }

// Accepted returns how many connections reached the server.
func (s *echoServer) Accepted() int64 { return s.accepted.Load() }

// newProxy starts a Proxy to target that closes when t ends.
func newProxy(t *testing.T, target string) *faultnet.Proxy {
	t.Helper()
	p, err := faultnet.NewProxy(target)
	if err != nil {
		t.Fatalf("starting the proxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// dial connects to addr; the connection closes when t ends.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dialing %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// expectForwarded checks that conn reaches the echo server: its greeting arrives, and payload
// comes back unchanged.
func expectForwarded(g Gomega, conn net.Conn, payload []byte) {
	g.Expect(conn.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
	got := make([]byte, len(greeting))
	_, err := io.ReadFull(conn, got)
	g.Expect(err).NotTo(HaveOccurred(), "the server's greeting comes through")
	g.Expect(string(got)).To(Equal(greeting))

	written := make(chan error, 1)
	go func() { _, err := conn.Write(payload); written <- err }()
	echoed := make([]byte, len(payload))
	_, err = io.ReadFull(conn, echoed)
	g.Expect(err).NotTo(HaveOccurred(), "the payload comes back")
	g.Expect(<-written).To(Succeed())
	g.Expect(bytes.Equal(echoed, payload)).To(BeTrue(), "the payload comes back unchanged")
}

// expectClosed checks that the proxy closes conn at once: a read ends with EOF or a reset, not
// with the deadline.
func expectClosed(g Gomega, conn net.Conn) {
	g.Expect(conn.SetReadDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
	start := time.Now()
	_, err := io.ReadAll(conn)
	if err != nil {
		g.Expect(isTimeout(err)).To(BeFalse(), "the connection is closed, not held: %v", err)
	}
	g.Expect(time.Since(start)).To(BeNumerically("<", 4*time.Second))
}

// expectHeld checks that conn is open and silent: a read waits for the whole deadline d.
func expectHeld(g Gomega, conn net.Conn, d time.Duration) {
	g.Expect(conn.SetReadDeadline(time.Now().Add(d))).To(Succeed())
	start := time.Now()
	n, err := conn.Read(make([]byte, 1))
	g.Expect(n).To(BeZero(), "nothing is answered")
	g.Expect(isTimeout(err)).To(BeTrue(), "the read ends at the deadline: %v", err)
	g.Expect(time.Since(start)).To(BeNumerically(">=", d-10*time.Millisecond))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func randomBytes(g Gomega, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	g.Expect(err).NotTo(HaveOccurred())
	return b
}

// proxyGoroutines counts the goroutines running the proxy's code.
func proxyGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for stack := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(stack, "faultnet.(*Proxy)") && !strings.Contains(stack, "faultnet.(*Proxy).Close") {
			count++
		}
	}
	return count
}

func TestModeString(t *testing.T) {
	g := NewWithT(t)
	g.Expect(faultnet.Forward.String()).To(Equal("forward"))
	g.Expect(faultnet.Blackhole.String()).To(Equal("blackhole"))
	g.Expect(faultnet.Refuse.String()).To(Equal("refuse"))
	g.Expect(faultnet.Mode(7).String()).To(Equal("Mode(7)"))
}

func TestProxyForwardsBytesBothWays(t *testing.T) {
	g := NewWithT(t)
	echo := startEchoServer(t)
	p := newProxy(t, echo.Addr())
	g.Expect(p.Mode()).To(Equal(faultnet.Forward), "a new proxy forwards")
	g.Expect(p.Addr()).To(HavePrefix("127.0.0.1:"))

	first, second := dial(t, p.Addr()), dial(t, p.Addr())
	expectForwarded(g, first, randomBytes(g, 1<<20))
	expectForwarded(g, second, []byte("ping"))
	g.Expect(echo.Accepted()).To(Equal(int64(2)), "one connection to the target per client connection")
}

func TestProxyBlackholeHoldsConnectionsWithoutAnswering(t *testing.T) {
	g := NewWithT(t)
	echo := startEchoServer(t)
	p := newProxy(t, echo.Addr())
	p.SetMode(faultnet.Blackhole)

	conn := dial(t, p.Addr())
	g.Expect(conn.SetWriteDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
	_, err := conn.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	g.Expect(err).NotTo(HaveOccurred(), "the proxy takes what the client sends")
	expectHeld(g, conn, 300*time.Millisecond)
	expectHeld(g, conn, 200*time.Millisecond) // still open after the client's deadline
	g.Expect(echo.Accepted()).To(BeZero(), "nothing reaches the target")
}

func TestProxyRefuseClosesConnectionsAtOnce(t *testing.T) {
	g := NewWithT(t)
	echo := startEchoServer(t)
	p := newProxy(t, echo.Addr())
	p.SetMode(faultnet.Refuse)

	for range 3 {
		expectClosed(g, dial(t, p.Addr()))
	}
	g.Expect(echo.Accepted()).To(BeZero(), "nothing reaches the target")
}

func TestProxySwitchesModeWhileClientsAreConnected(t *testing.T) {
	g := NewWithT(t)
	echo := startEchoServer(t)
	p := newProxy(t, echo.Addr())

	forwarded := dial(t, p.Addr())
	expectForwarded(g, forwarded, []byte("before"))
	p.SetMode(faultnet.Forward)
	g.Expect(forwarded.SetDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
	_, err := forwarded.Write([]byte("again"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = io.ReadFull(forwarded, make([]byte, len("again")))
	g.Expect(err).NotTo(HaveOccurred(), "setting the current mode again keeps the connections")

	p.SetMode(faultnet.Blackhole)
	g.Expect(p.Mode()).To(Equal(faultnet.Blackhole))
	expectClosed(g, forwarded)
	blackholed := dial(t, p.Addr())
	expectHeld(g, blackholed, 200*time.Millisecond)

	p.SetMode(faultnet.Refuse)
	g.Expect(p.Mode()).To(Equal(faultnet.Refuse))
	expectClosed(g, blackholed)
	expectClosed(g, dial(t, p.Addr()))

	p.SetMode(faultnet.Forward)
	g.Expect(p.Mode()).To(Equal(faultnet.Forward))
	expectForwarded(g, dial(t, p.Addr()), []byte("after"))
	g.Expect(echo.Accepted()).To(Equal(int64(2)), "only the forwarded connections reached the target")
}

func TestProxyCloseEndsItsConnectionsAndGoroutines(t *testing.T) {
	g := NewWithT(t)
	echo := startEchoServer(t)
	g.Eventually(proxyGoroutines, 5*time.Second).Should(BeZero(), "no proxy of an earlier test runs")
	p := newProxy(t, echo.Addr())

	var forwarded []net.Conn
	for range 3 {
		conn := dial(t, p.Addr())
		expectForwarded(g, conn, []byte("ping"))
		forwarded = append(forwarded, conn)
	}
	g.Expect(proxyGoroutines()).To(BeNumerically(">", 3), "the proxy serves the open connections")

	p.Close()
	for _, conn := range forwarded {
		expectClosed(g, conn)
	}
	g.Eventually(proxyGoroutines, 5*time.Second).Should(BeZero(), "the proxy's goroutines end with it")
	_, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	g.Expect(err).To(HaveOccurred(), "the proxy no longer listens")
	p.Close() // twice
}

func TestProxyCloseEndsBlackholedConnections(t *testing.T) {
	g := NewWithT(t)
	echo := startEchoServer(t)
	g.Eventually(proxyGoroutines, 5*time.Second).Should(BeZero(), "no proxy of an earlier test runs")
	p := newProxy(t, echo.Addr())
	p.SetMode(faultnet.Blackhole)
	conn := dial(t, p.Addr())
	expectHeld(g, conn, 100*time.Millisecond)

	p.Close()
	expectClosed(g, conn)
	g.Eventually(proxyGoroutines, 5*time.Second).Should(BeZero(), "the proxy's goroutines end with it")
}

// TestProxySwitchReachesConnectionsAcceptedJustBefore switches right after a client connects,
// while the proxy may still be setting the connection up in the old mode: whatever the timing,
// the client sees the new mode (or a closed connection, as a switch does), never the old one.
func TestProxySwitchReachesConnectionsAcceptedJustBefore(t *testing.T) {
	g := NewWithT(t)
	echo := startEchoServer(t)
	p := newProxy(t, echo.Addr())
	for range 100 {
		p.SetMode(faultnet.Forward)
		conn := dial(t, p.Addr())
		p.SetMode(faultnet.Blackhole)
		g.Expect(conn.SetDeadline(time.Now().Add(50 * time.Millisecond))).To(Succeed())
		_, _ = conn.Write([]byte("x"))
		got, err := io.ReadAll(conn)
		if isTimeout(err) {
			g.Expect(string(got)).To(BeEmpty(), "held, not forwarded, after the switch to blackhole")
		}
		_ = conn.Close()

		conn = dial(t, p.Addr())
		p.SetMode(faultnet.Forward)
		g.Expect(conn.SetDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
		_, err = io.ReadFull(conn, make([]byte, len(greeting)))
		g.Expect(isTimeout(err)).To(BeFalse(), "forwarded or closed, not held, after the switch to forward")
		_ = conn.Close()
	}
}
