package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// TransportOptions adjust GuardTransport, GuardRoundTripper and
// GuardClient; nil means the defaults.
type TransportOptions struct {
	// WrapRefusal, when set, restates a refusal (an error wrapping
	// ErrRefused) before the dial returns it, so a caller can add its own
	// sentinel; the result should still wrap the error it was given.
	WrapRefusal func(error) error
}

func (o *TransportOptions) wrap(err error) error {
	if o == nil || o.WrapRefusal == nil || err == nil {
		return err
	}
	return o.WrapRefusal(err)
}

// GuardTransport returns a clone of t whose connections the policy checks
// at dial time, where a URL check cannot see: what a name resolves to,
// now (DNS rebinding). Without a dial function of t's own, a net.Dialer
// with http.DefaultTransport's timeouts refuses the address before
// connecting (a TCP handshake with 169.254.169.254 is already a request).
// With t's own DialContext or DialTLSContext, that function dials and
// the connection's remote address is checked before anything is sent on
// it. Connections to t's proxy are exempt: the operator chose it, and the
// proxy resolves the target, so only the URL check applies there.
func (p *Policy) GuardTransport(t *http.Transport, opts *TransportOptions) *http.Transport {
	t = t.Clone()
	var proxies sync.Map // "host:port" of every proxy the transport has chosen
	if proxy := t.Proxy; proxy != nil {
		t.Proxy = func(r *http.Request) (*url.URL, error) {
			u, err := proxy(r)
			if u != nil {
				proxies.Store(proxyAddr(u), true)
			}
			return u, err
		}
	}
	isProxy := func(addr string) bool { _, ok := proxies.Load(addr); return ok }
	type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)
	checked := func(dial dialFunc) dialFunc {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil || isProxy(addr) {
				return conn, err
			}
			if err := p.CheckConn(conn); err != nil {
				conn.Close()
				return nil, opts.wrap(err)
			}
			return conn, nil
		}
	}
	if t.DialContext != nil {
		t.DialContext = checked(t.DialContext)
	} else {
		// The dialer http.DefaultTransport uses.
		plain := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		guarded := p.Dialer(plain)
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if isProxy(addr) {
				return plain.DialContext(ctx, network, addr)
			}
			conn, err := guarded.DialContext(ctx, network, addr)
			if errors.Is(err, ErrRefused) {
				err = opts.wrap(err)
			}
			return conn, err
		}
	}
	if t.DialTLSContext != nil {
		t.DialTLSContext = checked(t.DialTLSContext)
	}
	return t
}

// GuardRoundTripper is GuardTransport for any RoundTripper: nil and
// http.DefaultTransport become a guarded clone of the default transport
// (its own dial function dropped for the refusing dialer), an
// *http.Transport a guarded clone of itself, and any other RoundTripper
// is returned as it is, since it dials its own way and only URL and
// redirect checks can apply to it. Each call clones: callers that guard
// the same transport repeatedly keep the result.
func (p *Policy) GuardRoundTripper(rt http.RoundTripper, opts *TransportOptions) http.RoundTripper {
	if rt == nil || rt == http.DefaultTransport {
		t, ok := http.DefaultTransport.(*http.Transport)
		if !ok {
			return rt
		}
		t = t.Clone()
		t.DialContext = nil // GuardTransport's refusing dialer
		return p.GuardTransport(t, opts)
	}
	if t, ok := rt.(*http.Transport); ok {
		return p.GuardTransport(t, opts)
	}
	return rt
}

// GuardClient returns a copy of hc (nil: a zero http.Client) whose
// transport is guarded (GuardRoundTripper) and whose redirects must pass
// CheckURL before hc's own CheckRedirect (default: at most 10) runs.
func (p *Policy) GuardClient(hc *http.Client, opts *TransportOptions) *http.Client {
	var g http.Client
	if hc != nil {
		g = *hc
	}
	g.Transport = p.GuardRoundTripper(g.Transport, opts)
	next := g.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := p.CheckURL(req.URL.String()); err != nil {
			return fmt.Errorf("netguard: redirect refused: %w", opts.wrap(err))
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("netguard: stopped after 10 redirects")
		}
		return nil
	}
	return &g
}

// proxyAddr is the address a transport dials for proxy u.
func proxyAddr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	switch u.Scheme {
	case "https":
		port = "443"
	case "socks5", "socks5h":
		port = "1080"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// HostAllowed reports whether host (as ParseURL returns it: lower-case,
// no trailing dot) matches one of suffixes: a suffix with a leading dot
// (".example.com") matches hosts below it; one without ("example.com")
// matches that host and hosts below it, on a label boundary (not
// "badexample.com"). An IP address, as host or suffix, matches only
// itself: an address is not a name and has no subdomains. Suffixes are
// compared without case or a trailing dot; empty ones match nothing.
func HostAllowed(host string, suffixes []string) bool {
	ip := net.ParseIP(host) != nil
	for _, s := range suffixes {
		switch s = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "."); {
		case s == "" || s == ".":
		case host == s:
			return true
		case ip || net.ParseIP(s) != nil:
		case strings.HasPrefix(s, "."):
			if strings.HasSuffix(host, s) {
				return true
			}
		case strings.HasSuffix(host, "."+s):
			return true
		}
	}
	return false
}
