package dialpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// AllowLinkLocalFlag is the controller flag that lets checks, chart fetches and commit
// statuses reach link-local and metadata addresses.
const AllowLinkLocalFlag = "--allow-link-local-addresses"

// Policy decides which addresses may be connected to. The zero Policy refuses link-local and
// metadata addresses and resolves names with the system's resolver.
type Policy struct {
	// AllowLinkLocal lets connections reach link-local and metadata addresses
	// (--allow-link-local-addresses).
	AllowLinkLocal bool
	// Lookup resolves a host name to its addresses; net.DefaultResolver's when nil. Tests set
	// it to answer a name as a rebinding DNS server would.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// DialFunc connects to an address, as http.Transport.DialContext does.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// RefusedError is a connection the policy refused: nothing was sent.
type RefusedError struct {
	// Host is the host the request named; Addr is the address it resolved to.
	Host string
	Addr netip.Addr
	// Rule says which kind of address Addr is.
	Rule string
}

// Error implements error.
func (e *RefusedError) Error() string {
	what := "the address " + e.Addr.String()
	if e.Host != "" && e.Host != e.Addr.String() {
		what += " of " + e.Host
	}
	return fmt.Sprintf("%s is %s: refused unless the controller runs with %s", what, e.Rule, AllowLinkLocalFlag)
}

// metadataAddrs are cloud metadata endpoints outside the link-local ranges: AWS's IPv6 one
// and Alibaba Cloud's. (169.254.169.254, GCP's metadata.google.internal, Azure's and
// OpenStack's are link-local.)
var metadataAddrs = []netip.Addr{netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("100.100.100.200")}

// nat64 is the well-known NAT64 prefix: 64:ff9b::a9fe:a9fe reaches 169.254.169.254 through a
// NAT64 gateway.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Check returns a *RefusedError when the policy refuses addr, which host resolved to.
func (p Policy) Check(host string, addr netip.Addr) error {
	if p.AllowLinkLocal {
		return nil
	}
	if rule := classify(addr); rule != "" {
		return &RefusedError{Host: host, Addr: addr, Rule: rule}
	}
	return nil
}

// classify names what kind of refused address addr is, or "" when it is allowed. An IPv4
// address written as IPv6 (::ffff:a.b.c.d, or behind the NAT64 prefix) is judged as IPv4.
func classify(addr netip.Addr) string {
	addr = addr.WithZone("").Unmap()
	if nat64.Contains(addr) {
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte(b[12:]))
	}
	for _, m := range metadataAddrs {
		if addr == m {
			return "a cloud metadata address"
		}
	}
	switch {
	case addr.Is4() && addr.IsLinkLocalUnicast():
		return "link-local (169.254.0.0/16), where cloud metadata endpoints live"
	case addr.IsLinkLocalUnicast():
		return "link-local (fe80::/10), where cloud metadata endpoints live"
	case addr.IsLinkLocalMulticast() || addr.IsInterfaceLocalMulticast():
		return "a link-local multicast address"
	}
	return ""
}

// Control checks, at the socket, the address a net.Dialer is about to connect to: the last
// line, whatever resolved it. Set it as net.Dialer.Control.
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("connecting to %q: not an address and port: %w", address, err)
	}
	return p.Check("", ap.Addr())
}

// Dialer returns a dial function for http.Transport: it resolves the host, refuses it when any
// of its addresses is refused, and connects to its checked addresses in turn with base, whose
// Control is set to p.Control. base is copied.
func (p Policy) Dialer(base *net.Dialer) DialFunc {
	d := *base
	d.Control = p.Control
	d.ControlContext = nil
	return p.DialVia(d.DialContext)
}

// DialVia returns a dial function that resolves the host of address, refuses it when any of
// its addresses is refused (next is then never called), and calls next with each checked
// address ("ip:port") in turn until one connects.
func (p Policy) DialVia(next DialFunc) DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		addrs, err := p.resolve(ctx, host)
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			if err := p.Check(host, a); err != nil {
				return nil, err
			}
		}
		var errs []error
		for _, a := range addrs {
			conn, err := next(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return conn, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
}

// resolve returns the addresses of host: itself when it is an address.
func (p Policy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	lookup := p.Lookup
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no address", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

// CheckHost refuses host (a URL's host name, without a port) when it is a refused address
// written literally; a name is judged when it is resolved. A request sent through a proxy,
// which resolves and connects itself, is judged by this alone: call it before sending.
func (p Policy) CheckHost(host string) error {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return nil
	}
	return p.Check(host, a)
}
