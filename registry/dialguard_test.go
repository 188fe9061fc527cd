package registry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"novaos.dev/novaos/netguard"
)

// The dialer refuses a forbidden address before connecting, on the path
// Connect takes with no HTTP client of the caller's (the default
// transport, whose own dial function would connect first) and with a
// caller's transport that has no dial function: the listener never sees
// the connection.
func TestGuardedTransportRefusesBeforeConnecting(t *testing.T) {
	var hits, accepted atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	// barrier connects once, allowed, and returns when the server has
	// answered: the server accepts connections in the order they were
	// made, so by then it has seen any connection made before.
	barrier := func(t *testing.T) {
		t.Helper()
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	tests := []struct {
		name string
		hc   *http.Client // what the caller passes to Connect
	}{
		{name: "no client", hc: nil},
		{name: "default transport", hc: &http.Client{Transport: http.DefaultTransport}},
		{name: "own transport", hc: &http.Client{Transport: &http.Transport{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient("http://registry.example.com", nil)
			if err != nil {
				t.Fatal(err)
			}
			hc := c.guarded(tt.hc) // what ConnectAgent dials with
			defer hc.CloseIdleConnections()
			_, err = hc.Get(srv.URL)
			if !errors.Is(err, ErrURLNotAllowed) || !errors.Is(err, netguard.ErrRefused) {
				t.Fatalf("GET %s = %v, want ErrURLNotAllowed and netguard.ErrRefused", srv.URL, err)
			}
			// A connection made and closed at once may reach Accept after
			// the refusal returns, but before the barrier's.
			barrier(t)
			if n := accepted.Swap(0); n != 1 {
				t.Errorf("the server saw %d connections besides the barrier's, want none", n-1)
			}
		})
	}

	ok, err := NewClient("http://registry.example.com", &ClientOptions{Policy: &Policy{AllowLoopback: true}})
	if err != nil {
		t.Fatal(err)
	}
	hc := ok.guarded(nil)
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatalf("GET with loopback allowed: %v", err)
	}
	resp.Body.Close()
	if hits.Load() != 1+int32(len(tests)) {
		t.Errorf("handler ran %d times, want %d (the barriers and this GET)", hits.Load(), 1+len(tests))
	}
}

// Connects that bring the same transport share one guarded clone of it,
// and with it one pool of idle connections.
func TestGuardedTransportSharedPerSource(t *testing.T) {
	c, err := NewClient("http://registry.example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	mine, other := &http.Transport{}, &http.Transport{}
	first, second := c.guardTransport(mine), c.guardTransport(mine)
	if first != second {
		t.Errorf("two Connects with one transport got two clones")
	}
	if first == http.RoundTripper(mine) {
		t.Errorf("the caller's transport was used unguarded")
	}
	if c.guardTransport(other) == first {
		t.Errorf("two transports share one clone")
	}
	if c.guardTransport(nil) != c.guardTransport(http.DefaultTransport) {
		t.Errorf("the default transport has two clones")
	}
}

// A proxy the operator configured is dialled even on loopback; the target
// URL is the proxy's to resolve.
func TestGuardedTransportExemptsTheProxy(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "via proxy for "+r.URL.Host)
	}))
	defer proxy.Close()
	pu, _ := url.Parse(proxy.URL)
	tr := guardedTransport(&http.Transport{Proxy: http.ProxyURL(pu)}, (*Policy)(nil).Guard())
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "http://agent.example.com/a2a", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip through a loopback proxy: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "via proxy for agent.example.com" {
		t.Errorf("body %q", body)
	}
}

// A caller's own DialContext still dials, and the address it reached is
// checked before the request is written.
func TestGuardedTransportChecksACallersDial(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	// The caller's "resolver" sends every name to the test server.
	toServer := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}
	tr := guardedTransport(&http.Transport{DialContext: toServer}, (*Policy)(nil).Guard())
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "http://agent.example.com/", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, ErrURLNotAllowed) {
		t.Fatalf("RoundTrip = %v, want ErrURLNotAllowed", err)
	}
	if hits.Load() != 0 {
		t.Errorf("the request reached the server")
	}
}
