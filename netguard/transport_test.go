package netguard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestHostAllowed(t *testing.T) {
	tests := []struct {
		host     string
		suffixes []string
		want     bool
	}{
		{"agents.partner.example", []string{".partner.example"}, true},
		{"partner.example", []string{".partner.example"}, false},
		{"partner.example", []string{"partner.example"}, true},
		{"a.partner.example", []string{"Partner.Example."}, true},
		{"evilpartner.example", []string{"partner.example"}, false},
		{"partner.example", []string{"", " ", "."}, false},
		{"partner.example", nil, false},
		{"127.0.0.1", []string{"127.0.0.1"}, true},
		{"10.0.0.5", []string{"0.0.5"}, false},           // an address has no subdomains
		{"10.0.0.5", []string{".0.0.5"}, false},          // not even below a dotted entry
		{"agents.10.0.0.5", []string{"10.0.0.5"}, false}, // nor is a name below an address
		{"::1", []string{"::1"}, true},
	}
	for _, tt := range tests {
		if got := HostAllowed(tt.host, tt.suffixes); got != tt.want {
			t.Errorf("HostAllowed(%q, %q) = %v, want %v", tt.host, tt.suffixes, got, tt.want)
		}
	}
}

// GuardClient refuses a redirect to a destination the policy does not
// allow before following it, and the dial-time check refuses what the URL
// check let through; both errors carry WrapRefusal's restatement.
func TestGuardClient(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest", http.StatusFound)
	}))
	defer redirect.Close()
	mine := errors.New("mine")
	opts := &TransportOptions{WrapRefusal: func(err error) error { return errors.Join(mine, err) }}

	tests := []struct {
		name     string
		policy   *Policy
		url      string
		wantErr  bool
		wantHits int32
	}{
		{name: "loopback allowed", policy: &Policy{AllowLoopback: true}, url: target.URL, wantHits: 1},
		{name: "loopback refused at dial", policy: &Policy{}, url: target.URL, wantErr: true},
		{name: "redirect to metadata refused", policy: &Policy{AllowLoopback: true}, url: redirect.URL, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			hc := tt.policy.GuardClient(nil, opts)
			defer hc.CloseIdleConnections()
			resp, err := hc.Get(tt.url)
			if err == nil {
				resp.Body.Close()
			}
			if tt.wantErr != (err != nil) {
				t.Fatalf("GET = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && (!errors.Is(err, ErrRefused) || !errors.Is(err, mine)) {
				t.Errorf("GET = %v, want ErrRefused restated by WrapRefusal", err)
			}
			if got := hits.Load(); got != tt.wantHits {
				t.Errorf("the target saw %d requests, want %d", got, tt.wantHits)
			}
		})
	}
}

// Mutation testing (scripts/mutate ./netguard transport.go): one mutant
// lives and is equivalent, since no test can observe it:
//   - transport.go:71:36, the refusing dialer's Timeout 30 s made 0 (no
//     timeout): only a dial that hangs for 30 s tells them apart, and tests
//     do not wait on the wall clock. (Its KeepAlive, 71:65, is checked by
//     TestGuardTransportKeepsTheDefaultKeepAlive on Linux.)

// counted is a loopback test server that counts the connections it
// accepts and the requests it serves.
type counted struct {
	*httptest.Server
	conns, reqs atomic.Int32
}

func newCounted(t *testing.T, tls bool, h http.HandlerFunc) *counted {
	t.Helper()
	c := &counted{}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.reqs.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	c.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.conns.Add(1)
		}
	}
	if tls {
		c.StartTLS()
	} else {
		c.Start()
	}
	t.Cleanup(c.Close)
	return c
}

// connsBefore reports how many connections the server accepted before
// this call: it makes one more request with a plain client and waits for
// its answer. The server accepts in the order the handshakes completed
// and counts a connection before accepting the next, so a connection
// opened and closed by a refused dial is counted by then.
func (c *counted) connsBefore(t *testing.T) int32 {
	t.Helper()
	hc := c.Client()
	resp, err := hc.Get(c.URL)
	if err != nil {
		t.Fatalf("plain GET %s: %v", c.URL, err)
	}
	resp.Body.Close()
	hc.CloseIdleConnections()
	c.reqs.Add(-1)
	return c.conns.Add(-1)
}

// forwardingProxy is an HTTP proxy: it sends each request it is given to
// the absolute URL the client asked for, with its own unguarded client.
func forwardingProxy(t *testing.T) *counted {
	t.Helper()
	out := &http.Transport{} // no Proxy, no guard
	t.Cleanup(out.CloseIdleConnections)
	return newCounted(t, false, func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.IsAbs() {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := out.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
}

func get(t *testing.T, rt http.RoundTripper, url string) error {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// GuardTransport checks what a transport's own dial functions connect to
// before anything is sent, and exempts the transport's proxy (the proxy
// resolves the target; only the URL check applies there). The target and
// the proxy are on loopback, so the zero policy refuses both, unless the
// proxy is exempt.
func TestGuardTransport(t *testing.T) {
	target := newCounted(t, false, nil)
	tlsTarget := newCounted(t, true, nil)
	proxy := forwardingProxy(t)
	proxyURL, err := url.Parse(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	mine := errors.New("mine")
	opts := &TransportOptions{WrapRefusal: func(err error) error { return errors.Join(mine, err) }}
	var d net.Dialer
	ownDial := func() *http.Transport { return &http.Transport{DialContext: d.DialContext} }
	// ownTLS dials TLS itself, trusting the test server's certificate.
	ownTLS := func() *http.Transport {
		cfg := tlsTarget.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
		return &http.Transport{DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&tls.Dialer{Config: cfg}).DialContext(ctx, network, addr)
		}}
	}
	plainTLS := func() *http.Transport { return tlsTarget.Client().Transport.(*http.Transport).Clone() }
	viaProxy := func(t *http.Transport) *http.Transport { t.Proxy = http.ProxyURL(proxyURL); return t }

	tests := []struct {
		name      string
		policy    *Policy
		base      *http.Transport
		target    *counted
		refused   bool
		proxyReqs int32
	}{
		{name: "own DialContext, loopback refused", policy: &Policy{}, base: ownDial(), target: target, refused: true},
		{name: "own DialContext, loopback allowed", policy: &Policy{AllowLoopback: true}, base: ownDial(), target: target},
		{name: "own DialTLSContext, loopback refused", policy: &Policy{}, base: ownTLS(), target: tlsTarget, refused: true},
		{name: "own DialTLSContext, loopback allowed", policy: &Policy{AllowLoopback: true}, base: ownTLS(), target: tlsTarget},
		{name: "https by the refusing dialer, loopback allowed", policy: &Policy{AllowLoopback: true}, base: plainTLS(), target: tlsTarget},
		{name: "https by the refusing dialer, loopback refused", policy: &Policy{}, base: plainTLS(), target: tlsTarget, refused: true},
		{name: "proxy exempt", policy: &Policy{}, base: viaProxy(&http.Transport{}), target: target, proxyReqs: 1},
		{name: "proxy exempt with own DialContext", policy: &Policy{}, base: viaProxy(ownDial()), target: target, proxyReqs: 1},
		// A Proxy function that chooses no proxy for this request does
		// not exempt anything.
		{name: "no proxy chosen", policy: &Policy{}, base: &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return nil, nil }}, target: target, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []*counted{target, tlsTarget, proxy} {
				c.reqs.Store(0)
				c.conns.Store(0)
			}
			tr := tt.policy.GuardTransport(tt.base, opts)
			defer tr.CloseIdleConnections()
			err := get(t, tr, tt.target.URL)
			if tt.refused {
				if !errors.Is(err, ErrRefused) || !errors.Is(err, mine) {
					t.Fatalf("GET = %v, want ErrRefused restated by WrapRefusal", err)
				}
			} else if err != nil {
				t.Fatalf("GET = %v, want it through", err)
			}
			wantReqs := int32(1)
			if tt.refused {
				wantReqs = 0
			}
			if got := tt.target.reqs.Load(); got != wantReqs {
				t.Errorf("the target served %d requests, want %d", got, wantReqs)
			}
			if got := proxy.reqs.Load(); got != tt.proxyReqs {
				t.Errorf("the proxy served %d requests, want %d", got, tt.proxyReqs)
			}
		})
	}
	if tr := (&Policy{}).GuardTransport(&http.Transport{}, nil); get(t, tr, target.URL) == nil {
		t.Error("GET with nil options went through; want the refusal unchanged")
	}
}

// GuardRoundTripper: nil and http.DefaultTransport get the refusing
// dialer, which refuses before connecting (the server never sees a
// handshake); another *http.Transport keeps its own settings, here its
// dial function; any other RoundTripper is returned as it is.
func TestGuardRoundTripper(t *testing.T) {
	target := newCounted(t, false, nil)
	var p Policy // loopback refused
	for _, rt := range []http.RoundTripper{nil, http.DefaultTransport} {
		g := p.GuardRoundTripper(rt, nil)
		tr, ok := g.(*http.Transport)
		if !ok || tr == http.DefaultTransport {
			t.Fatalf("GuardRoundTripper(%T) = %T, want a guarded clone of http.DefaultTransport", rt, g)
		}
		if err := get(t, tr, target.URL); !errors.Is(err, ErrRefused) {
			t.Errorf("GET through GuardRoundTripper(%T) = %v, want ErrRefused", rt, err)
		}
		tr.CloseIdleConnections()
		if n := target.connsBefore(t); n != 0 {
			t.Errorf("GuardRoundTripper(%T): the server accepted %d connections, want none (refused before connecting)", rt, n)
		}
	}

	var dials atomic.Int32
	var d net.Dialer
	own := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}}
	g := (&Policy{AllowLoopback: true}).GuardRoundTripper(own, nil)
	if g == own {
		t.Fatal("GuardRoundTripper returned the caller's transport itself, want a clone")
	}
	if err := get(t, g, target.URL); err != nil {
		t.Fatalf("GET through the guarded own transport: %v", err)
	}
	g.(*http.Transport).CloseIdleConnections()
	if n := dials.Load(); n != 1 {
		t.Errorf("the transport's own DialContext ran %d times, want 1", n)
	}

	other := roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })
	if g := p.GuardRoundTripper(other, nil); fmt.Sprintf("%p", g) != fmt.Sprintf("%p", other) {
		t.Errorf("GuardRoundTripper(another RoundTripper) = %T, want it returned as it is", g)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// GuardClient's redirect check: the URL check refuses a redirect before
// it is followed (here the transport's network would reach the metadata
// address, so only the URL check stands between), an allowed redirect is
// followed, the client's own CheckRedirect runs after the URL check, and
// without one the client stops after 10 redirects as net/http does.
func TestGuardClientRedirects(t *testing.T) {
	target := newCounted(t, false, nil)
	toMetadata := newCounted(t, false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest", http.StatusFound)
	})
	toTarget := newCounted(t, false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusFound)
	})
	loop := newCounted(t, false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/again", http.StatusFound)
	})
	// fakeNet sends the metadata address to the target: a network where
	// the dial-time check sees only an allowed loopback address.
	var d net.Dialer
	fakeNet := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == "169.254.169.254:80" {
			addr = target.Listener.Addr().String()
		}
		return d.DialContext(ctx, network, addr)
	}}
	defer fakeNet.CloseIdleConnections()
	var ownCalls atomic.Int32
	stopAtFirst := func(*http.Request, []*http.Request) error { ownCalls.Add(1); return http.ErrUseLastResponse }
	mine := errors.New("mine")
	opts := &TransportOptions{WrapRefusal: func(err error) error { return errors.Join(mine, err) }}

	tests := []struct {
		name       string
		hc         *http.Client
		url        string
		wantStatus int
		wantErr    string // a substring; "" for none
		refused    bool
		server     *counted
		wantReqs   int32
		targetReqs int32
		ownCalls   int32
	}{
		{name: "redirect refused by the URL check", hc: &http.Client{Transport: fakeNet}, url: toMetadata.URL,
			wantErr: "redirect refused", refused: true, server: toMetadata, wantReqs: 1},
		{name: "allowed redirect followed", url: toTarget.URL, wantStatus: http.StatusOK, server: toTarget, wantReqs: 1, targetReqs: 1},
		{name: "own CheckRedirect runs", hc: &http.Client{CheckRedirect: stopAtFirst}, url: toTarget.URL,
			wantStatus: http.StatusFound, server: toTarget, wantReqs: 1, ownCalls: 1},
		{name: "own CheckRedirect after the URL check", hc: &http.Client{Transport: fakeNet, CheckRedirect: stopAtFirst}, url: toMetadata.URL,
			wantErr: "redirect refused", refused: true, server: toMetadata, wantReqs: 1},
		{name: "stopped after 10 redirects", url: loop.URL, wantErr: "stopped after 10 redirects", server: loop, wantReqs: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []*counted{target, toMetadata, toTarget, loop} {
				c.reqs.Store(0)
			}
			ownCalls.Store(0)
			hc := (&Policy{AllowLoopback: true}).GuardClient(tt.hc, opts)
			defer hc.CloseIdleConnections()
			resp, err := hc.Get(tt.url)
			if resp != nil {
				resp.Body.Close()
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("GET = %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("GET = %v, want an error saying %q", err, tt.wantErr)
			case tt.refused && (!errors.Is(err, ErrRefused) || !errors.Is(err, mine)):
				t.Fatalf("GET = %v, want ErrRefused restated by WrapRefusal", err)
			case tt.wantStatus != 0 && resp.StatusCode != tt.wantStatus:
				t.Fatalf("GET = %s, want %d", resp.Status, tt.wantStatus)
			}
			if got := tt.server.reqs.Load(); got != tt.wantReqs {
				t.Errorf("the first server served %d requests, want %d", got, tt.wantReqs)
			}
			if got := target.reqs.Load(); got != tt.targetReqs {
				t.Errorf("the redirect target served %d requests, want %d", got, tt.targetReqs)
			}
			if got := ownCalls.Load(); got != tt.ownCalls {
				t.Errorf("the client's own CheckRedirect ran %d times, want %d", got, tt.ownCalls)
			}
		})
	}
}

// proxyAddr is the address net/http dials for a proxy URL: the default
// port of the proxy's scheme when the URL has none.
func TestProxyAddr(t *testing.T) {
	tests := []struct{ url, want string }{
		{"http://proxy.example:3128", "proxy.example:3128"},
		{"http://proxy.example", "proxy.example:80"},
		{"https://proxy.example", "proxy.example:443"},
		{"socks5://proxy.example", "proxy.example:1080"},
		{"socks5h://proxy.example", "proxy.example:1080"},
		{"http://[::1]", "[::1]:80"},
		{"https://[::1]:8443", "[::1]:8443"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := proxyAddr(u); got != tt.want {
			t.Errorf("proxyAddr(%s) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
