package clientmeta

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// guard is the SSRF defence on the dial path. It resolves the host itself,
// refuses unless every resolved address is allowed, dials the checked
// addresses directly (no second resolution), and re-checks the exact socket
// address in the dialer's Control hook before the connect system call.
type guard struct {
	allowLoopback bool
	// lookup resolves a host name; swapped in tests so no DNS traffic leaves.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// beforeDial, when set (tests only), sees every address about to be
	// dialled and may veto it; a test uses it to count dials and as a
	// second net against leaving loopback.
	beforeDial func(address string) error
	dialer     net.Dialer
}

func newGuard(allowLoopback bool, timeout time.Duration) *guard {
	g := &guard{
		allowLoopback: allowLoopback,
		lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
	}
	g.dialer = net.Dialer{Timeout: timeout, ControlContext: g.control}
	return g
}

// allowed reports whether the fetcher may connect to ip.
func (g *guard) allowed(ip netip.Addr) bool {
	if PublicAddress(ip) {
		return true
	}
	return g.allowLoopback && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

func forbidden(cause error) error {
	return newError(ErrForbiddenAddress, "client_id host resolves to a non-public address", cause)
}

// control runs after the socket is created and before it connects.
func (g *guard) control(_ context.Context, network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return forbidden(fmt.Errorf("network %q refused", network))
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return forbidden(fmt.Errorf("unparsable dial address %q", address))
	}
	if !g.allowed(ap.Addr()) {
		return forbidden(fmt.Errorf("address %s is not public", ap.Addr()))
	}
	return nil
}

// dialContext is the transport's DialContext.
func (g *guard) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("invalid port %q", portStr)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = g.lookup(ctx, host)
		if err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("host %q has no addresses", host)
		}
	}
	// One bad record poisons the answer: a name that mixes public and
	// private addresses is either misconfigured or a rebinding attempt.
	for _, ip := range ips {
		if !g.allowed(ip) {
			return nil, forbidden(fmt.Errorf("%s resolves to non-public %s", host, ip))
		}
	}
	var errs []error
	for _, ip := range ips {
		target := netip.AddrPortFrom(ip, uint16(port)).String()
		if g.beforeDial != nil {
			if err := g.beforeDial(target); err != nil {
				return nil, err
			}
		}
		c, err := g.dialer.DialContext(ctx, network, target)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// newTransport builds the guarded transport. A caller-supplied
// *http.Transport (only honoured with AllowLoopback, e.g. an httptest TLS
// client trusting the test CA) is cloned; the dial, proxy and TLS floor are
// always replaced so the guard cannot be bypassed.
func newTransport(g *guard, base *http.Client, timeout time.Duration) *http.Transport {
	var t *http.Transport
	if g.allowLoopback && base != nil {
		if bt, ok := base.Transport.(*http.Transport); ok {
			t = bt.Clone()
		}
	}
	if t == nil {
		t = &http.Transport{}
	}
	t.Proxy = nil // never honour HTTP(S)_PROXY for attacker-chosen URLs
	t.OnProxyConnectResponse = nil
	// A cloned transport's deprecated hooks must not survive either: DialTLS
	// is used whenever DialTLSContext is nil, bypassing the guard.
	//lint:ignore SA1019 cleared, not used, so that no dial escapes the guard
	t.Dial = nil
	//lint:ignore SA1019 cleared, not used, so that no dial escapes the guard
	t.DialTLS = nil
	t.DialTLSContext = nil
	t.DialContext = g.dialContext
	tc := &tls.Config{}
	if t.TLSClientConfig != nil {
		tc = t.TLSClientConfig.Clone()
	}
	tc.InsecureSkipVerify = false
	if tc.MinVersion < tls.VersionTLS12 {
		tc.MinVersion = tls.VersionTLS12
	}
	t.TLSClientConfig = tc
	t.ForceAttemptHTTP2 = true
	// Fetches are rare (results are cached), so pooled connections to
	// arbitrary hosts buy nothing.
	t.DisableKeepAlives = true
	t.TLSHandshakeTimeout = timeout
	t.ResponseHeaderTimeout = timeout
	t.MaxResponseHeaderBytes = 16 << 10
	return t
}
