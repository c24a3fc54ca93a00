package faultnet

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Mode is what a Proxy does with connections.
type Mode int

const (
	// Forward passes connections to the target.
	Forward Mode = iota
	// Blackhole accepts connections and never answers: a server that hangs, or a network
	// that drops everything after the handshake.
	Blackhole
	// Refuse closes every connection at once: a server that is down.
	Refuse
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Forward:
		return "forward"
	case Blackhole:
		return "blackhole"
	case Refuse:
		return "refuse"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy is a TCP proxy on a loopback port whose behaviour can be switched at any time;
// switching closes every open connection, so that clients see the new mode at once.
type Proxy struct {
	target string
	ln     net.Listener

	mu    sync.Mutex
	mode  Mode
	conns map[net.Conn]struct{}
	done  bool
}

// NewProxy listens on a loopback port and forwards to target (host:port).
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

// Addr returns the host:port clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode switches the proxy to m and closes the open connections.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == m {
		return
	}
	p.mode = m
	p.closeConnsLocked()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.done = true
	p.closeConnsLocked()
	p.mu.Unlock()
	_ = p.ln.Close()
}

func (p *Proxy) closeConnsLocked() {
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// track registers conns, served in mode, for closing on the next switch; false when the proxy
// is closed or has switched away from mode since the connection was accepted (the caller then
// closes them, as the switch would have).
func (p *Proxy) track(mode Mode, conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || p.mode != mode {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) accept() {
	for {
		conn, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		go p.serve(conn)
	}
}

// serve handles one client connection according to the mode.
func (p *Proxy) serve(conn net.Conn) {
	switch mode := p.Mode(); mode {
	case Refuse:
		_ = conn.Close()
	case Blackhole:
		if !p.track(mode, conn) {
			_ = conn.Close()
			return
		}
		_, _ = io.Copy(io.Discard, conn) // read and drop until a switch or the client closes
		_ = conn.Close()
	default:
		p.forward(mode, conn)
	}
}

// forward pipes conn to a new connection to the target, as long as the proxy stays in mode.
func (p *Proxy) forward(mode Mode, conn net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = conn.Close()
		return
	}
	if !p.track(mode, conn, up) {
		_ = conn.Close()
		_ = up.Close()
		return
	}
	go func() {
		_, _ = io.Copy(up, conn)
		_ = up.Close()
	}()
	_, _ = io.Copy(conn, up)
	_ = conn.Close()
}
