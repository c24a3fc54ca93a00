package dialpolicy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
)

// errNotDialled is what guardedDial answers for an address it may not connect to.
var errNotDialled = errors.New("the test's dialer connects to loopback only")

// guardedDial returns the next dialer of the tests: it fails the test when it is called with
// an address the policy refuses (the policy must refuse before dialling), connects to loopback
// addresses only, and records every address it was given. No test sends traffic beyond this
// machine.
func guardedDial(t *testing.T, p Policy, called *[]string) DialFunc {
	var mu sync.Mutex
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		mu.Lock()
		*called = append(*called, address)
		mu.Unlock()
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			t.Errorf("the dialer was given %q, not a checked address", address)
			return nil, errNotDialled
		}
		if p.Check("", ap.Addr()) != nil {
			t.Errorf("the dialer was called for %s, which the policy refuses", address)
			return nil, errNotDialled
		}
		if !ap.Addr().IsLoopback() {
			return nil, errNotDialled
		}
		return (&net.Dialer{}).DialContext(ctx, network, address)
	}
}

// TestPolicyRefusesLinkLocalAndMetadataAddresses dials each refused address, literal or
// resolved, and expects a *RefusedError naming it, the rule and the flag, with the dialer
// never called.
func TestPolicyRefusesLinkLocalAndMetadataAddresses(t *testing.T) {
	metadata := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	}
	cases := []struct{ name, address, rule string }{
		{"AWS, GCP, Azure metadata", "169.254.169.254:80", "link-local (169.254.0.0/16)"},
		{"ECS task metadata", "169.254.170.2:80", "link-local (169.254.0.0/16)"},
		{"IPv6 link-local", "[fe80::a9fe:a9fe]:80", "link-local (fe80::/10)"},
		{"IPv6 link-local with a zone", "[fe80::1%lo]:80", "link-local (fe80::/10)"},
		{"AWS IPv6 metadata", "[fd00:ec2::254]:80", "a cloud metadata address"},
		{"Alibaba Cloud metadata", "100.100.100.200:80", "a cloud metadata address"},
		{"IPv4-mapped IPv6", "[::ffff:169.254.169.254]:80", "link-local (169.254.0.0/16)"},
		{"behind NAT64", "[64:ff9b::a9fe:a9fe]:80", "link-local (169.254.0.0/16)"},
		{"GCP's name", "metadata.google.internal:80", "link-local (169.254.0.0/16)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := Policy{Lookup: metadata}
			var called []string
			_, err := p.DialVia(guardedDial(t, p, &called))(context.Background(), "tcp", tc.address)
			var refused *RefusedError
			g.Expect(errors.As(err, &refused)).To(BeTrue(), "refused: %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.rule))
			g.Expect(err.Error()).To(ContainSubstring("refused unless the controller runs with --allow-link-local-addresses"))
			g.Expect(called).To(BeEmpty(), "the dialer was called")
		})
	}
	t.Run("the message names the host and the address", func(t *testing.T) {
		g := NewWithT(t)
		p := Policy{Lookup: metadata}
		_, err := p.DialVia(guardedDial(t, p, new([]string)))(context.Background(), "tcp", "metadata.google.internal:80")
		g.Expect(err).To(MatchError(HavePrefix("the address 169.254.169.254 of metadata.google.internal is link-local")))
	})
}

// TestPolicyRefusesANameWithOneRefusedAddress resolves a name to a loopback and a metadata
// address: the whole name is refused, its loopback address included.
func TestPolicyRefusesANameWithOneRefusedAddress(t *testing.T) {
	g := NewWithT(t)
	p := Policy{Lookup: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("169.254.169.254")}, nil
	}}
	var called []string
	_, err := p.DialVia(guardedDial(t, p, &called))(context.Background(), "tcp", "mixed.example:80")
	g.Expect(err).To(MatchError(ContainSubstring("the address 169.254.169.254 of mixed.example is link-local")))
	g.Expect(called).To(BeEmpty())
}

// TestPolicyResistsDNSRebinding answers a name with a loopback address, then with the metadata
// address (a rebinding DNS server): the first connection reaches the local listener, the
// second is refused, and the listener sees one connection.
func TestPolicyResistsDNSRebinding(t *testing.T) {
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	var lookups atomic.Int32
	p := Policy{Lookup: func(context.Context, string) ([]netip.Addr, error) {
		if lookups.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	}}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	var called []string
	dial := p.DialVia(guardedDial(t, p, &called))
	conn, err := dial(context.Background(), "tcp", net.JoinHostPort("rebind.example", port))
	g.Expect(err).NotTo(HaveOccurred())
	_ = conn.Close()
	_, err = dial(context.Background(), "tcp", net.JoinHostPort("rebind.example", port))
	g.Expect(err).To(MatchError(ContainSubstring("the address 169.254.169.254 of rebind.example is link-local")))
	g.Expect(called).To(Equal([]string{"127.0.0.1:" + port}))
	g.Eventually(accepted.Load).Should(BeEquivalentTo(1))
}

// TestPolicyAllowsWithTheFlag hands the metadata address to the dialer when the flag allows
// it: the test's dialer records it and connects nowhere.
func TestPolicyAllowsWithTheFlag(t *testing.T) {
	g := NewWithT(t)
	p := Policy{AllowLinkLocal: true}
	var called []string
	_, err := p.DialVia(guardedDial(t, p, &called))(context.Background(), "tcp", "169.254.169.254:80")
	g.Expect(err).To(MatchError(errNotDialled))
	g.Expect(called).To(Equal([]string{"169.254.169.254:80"}))
}

// TestPolicyControlChecksTheSocketAddress calls Control as net.Dialer does, without a socket.
func TestPolicyControlChecksTheSocketAddress(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Policy{}.Control("tcp4", "169.254.169.254:80", nil)).To(MatchError(ContainSubstring("link-local")))
	g.Expect(Policy{}.Control("tcp6", "[fd00:ec2::254]:80", nil)).To(MatchError(ContainSubstring("cloud metadata")))
	g.Expect(Policy{}.Control("tcp4", "127.0.0.1:80", nil)).To(Succeed())
	g.Expect(Policy{}.Control("tcp4", "10.0.0.1:443", nil)).To(Succeed())
	g.Expect(Policy{AllowLinkLocal: true}.Control("tcp4", "169.254.169.254:80", nil)).To(Succeed())
}

// TestPolicyDialerThroughHTTP sends a request through an http.Transport dialling with
// Dialer: a loopback server answers, a metadata URL is refused before any connection.
func TestPolicyDialerThroughHTTP(t *testing.T) {
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	p := Policy{}
	var called []string
	client := &http.Client{Transport: &http.Transport{DialContext: p.DialVia(guardedDial(t, p, &called))}}
	resp, err := client.Get("http://" + ln.Addr().String() + "/")
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusNoContent))
	_, err = client.Get("http://169.254.169.254/latest/meta-data/")
	var refused *RefusedError
	g.Expect(errors.As(err, &refused)).To(BeTrue(), "refused: %v", err)
	g.Expect(called).To(Equal([]string{ln.Addr().String()}))
	dialled := &http.Client{Transport: &http.Transport{DialContext: p.Dialer(&net.Dialer{})}}
	resp, err = dialled.Get("http://" + ln.Addr().String() + "/")
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
}

// TestPolicyCheckHostJudgesLiteralAddresses checks a URL's host as a request through a proxy
// is: a literal refused address is refused, a name is left to the resolution.
func TestPolicyCheckHostJudgesLiteralAddresses(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Policy{}.CheckHost("169.254.169.254")).To(MatchError(ContainSubstring("link-local")))
	g.Expect(Policy{}.CheckHost("fd00:ec2::254")).To(MatchError(ContainSubstring("cloud metadata")))
	g.Expect(Policy{}.CheckHost("metadata.google.internal")).To(Succeed())
	g.Expect(Policy{}.CheckHost("127.0.0.1")).To(Succeed())
}
