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

// The default dialer refuses a forbidden address before connecting: the
// listener never sees the connection.
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

	tr := guardedTransport(&http.Transport{}, (*Policy)(nil).Guard())
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	_, err := tr.RoundTrip(req)
	if !errors.Is(err, ErrURLNotAllowed) || !errors.Is(err, netguard.ErrRefused) {
		t.Fatalf("RoundTrip to %s = %v, want ErrURLNotAllowed and netguard.ErrRefused", srv.URL, err)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the server saw %d connections, want none", n)
	}

	ok := guardedTransport(&http.Transport{}, (&Policy{AllowLoopback: true}).Guard())
	defer ok.CloseIdleConnections()
	resp, err := ok.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip with loopback allowed: %v", err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Errorf("handler ran %d times, want 1", hits.Load())
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
