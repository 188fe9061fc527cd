package app_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcclient"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/tlscert/certtest"
)

// tlsServer starts a server with both listeners over TLS, its pair issued
// by a throwaway CA into dir.
func tlsServer(t *testing.T, ca *certtest.CA, dir string, opts *app.Options) *app.Server {
	t.Helper()
	cert, key := ca.Issue(t, "127.0.0.1").WritePEM(t, dir)
	opts.HTTP.TLSCertFile, opts.HTTP.TLSKeyFile = cert, key
	if opts.Agents.GRPCAddr == "" {
		opts.Agents.GRPCAddr = "127.0.0.1:0"
	}
	if opts.DataDir == "" && opts.Stores == nil {
		opts.DataDir = t.TempDir()
	}
	return start(t, opts)
}

// trustingClient is an HTTP client trusting only ca, one connection per
// request.
func trustingClient(ca *certtest.CA) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: ca.ClientConfig(), DisableKeepAlives: true}}
}

// Our client, from the card, over each binding; the card names every
// interface with https://.
func TestTLSServesEveryBinding(t *testing.T) {
	ca := certtest.NewCA(t)
	srv := tlsServer(t, ca, t.TempDir(), &app.Options{})
	if !strings.HasPrefix(srv.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL %q, want https://", srv.URL())
	}
	hc := trustingClient(ca)
	card, err := a2aclient.NewResolver(&a2aclient.ResolverOptions{HTTPClient: hc}).Resolve(t.Context(), srv.URL()+"/agents/echo")
	if err != nil {
		t.Fatalf("resolve the card over TLS: %v", err)
	}
	var got []string
	for _, in := range card.SupportedInterfaces {
		got = append(got, in.ProtocolBinding+" "+in.URL)
	}
	want := []string{
		a2a.BindingJSONRPC + " " + srv.URL() + "/agents/echo",
		a2a.BindingHTTPJSON + " " + srv.URL() + "/agents/echo",
		a2a.BindingGRPC + " https://" + srv.GRPCAddr(),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("card interfaces (-want +got):\n%s", diff)
	}
	for _, b := range []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON, a2a.BindingGRPC} {
		t.Run(b, func(t *testing.T) {
			c, err := a2aclient.New(card, &a2aclient.Options{HTTPClient: hc, Transports: []string{b},
				TransportFactories: map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(&grpcclient.Options{TLSConfig: ca.ClientConfig()})}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.SendText(t.Context(), "over "+b, "", "")
			if err != nil {
				t.Fatalf("SendMessage over TLS: %v", err)
			}
			if res.Task == nil || res.Task.Status.State != a2a.TaskStateCompleted || !strings.Contains(a2a.PartsText(res.Task.Artifacts[0].Parts), "over "+b) {
				t.Errorf("SendMessage: %+v", res)
			}
			for f, err := range c.SendStreamingMessage(t.Context(), a2aclient.TextRequest("streamed", "", "")) {
				if err != nil {
					t.Fatalf("stream over TLS: %v", err)
				}
				_ = f
			}
		})
	}
	// Plaintext is not answered on either listener.
	if resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + srv.Addr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("the TLS listener served a plaintext request")
		}
	}
	// HTTP/1.1 over TLS, as over plaintext, whatever the client offers;
	// gRPC is HTTP/2.
	for _, tt := range []struct{ addr, want string }{{srv.Addr(), "http/1.1"}, {srv.GRPCAddr(), "h2"}} {
		if st := tlsVersion(t, tt.addr, ca, tls.VersionTLS13); st == nil || st.NegotiatedProtocol != tt.want || st.Version != tls.VersionTLS13 {
			t.Errorf("%s: negotiated %+v, want %s over TLS 1.3", tt.addr, st, tt.want)
		}
	}
	if got := tlsVersion(t, srv.Addr(), ca, tls.VersionTLS11); got != nil {
		t.Error("the HTTP listener completed a TLS 1.1 handshake")
	}
	if got := tlsVersion(t, srv.GRPCAddr(), ca, tls.VersionTLS11); got != nil {
		t.Error("the gRPC listener completed a TLS 1.1 handshake")
	}
}

// tlsVersion dials addr with at most version max and returns the
// connection state, nil when the handshake failed.
func tlsVersion(t *testing.T, addr string, ca *certtest.CA, max uint16) *tls.ConnectionState {
	t.Helper()
	cfg := ca.ClientConfig()
	cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS10, max
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil
	}
	defer c.Close()
	st := c.ConnectionState()
	return &st
}

func TestTLSReloadsChangedFiles(t *testing.T) {
	ca := certtest.NewCA(t)
	dir := t.TempDir()
	srv := tlsServer(t, ca, dir, &app.Options{HTTP: app.HTTPOptions{TLSReloadInterval: 5 * time.Millisecond}})
	next := ca.Issue(t, "127.0.0.1")
	next.WritePEM(t, dir)
	certtest.WaitSerial(t, srv.Addr(), ca, next.Cert.SerialNumber)
	certtest.WaitSerial(t, srv.GRPCAddr(), ca, next.Cert.SerialNumber)
}

// ReloadTLS (SIGHUP) loads a renewal at once, and a bad one leaves the
// pair in use; with polling off, nothing else reads the files.
func TestReloadTLS(t *testing.T) {
	ca := certtest.NewCA(t)
	dir := t.TempDir()
	srv := tlsServer(t, ca, dir, &app.Options{HTTP: app.HTTPOptions{TLSReloadInterval: -1}})
	first := certtest.ServedSerial(t, srv.Addr(), ca)

	next := ca.Issue(t, "127.0.0.1")
	cert, key := next.PEM(t)
	certtest.WriteFile(t, filepath.Join(dir, "server.crt"), cert) // half a renewal: the old key
	if err := srv.ReloadTLS(); err == nil {
		t.Fatal("ReloadTLS with a certificate and the wrong key succeeded")
	}
	for _, addr := range []string{srv.Addr(), srv.GRPCAddr()} {
		if got := certtest.ServedSerial(t, addr, ca); got.Cmp(first) != 0 {
			t.Fatalf("%s presents %x after a refused reload, want the first certificate %x", addr, got, first)
		}
	}
	certtest.WriteFile(t, filepath.Join(dir, "server.key"), key)
	if err := srv.ReloadTLS(); err != nil {
		t.Fatalf("ReloadTLS: %v", err)
	}
	for _, addr := range []string{srv.Addr(), srv.GRPCAddr()} {
		if got := certtest.ServedSerial(t, addr, ca); got.Cmp(next.Cert.SerialNumber) != 0 {
			t.Errorf("%s presents %x after ReloadTLS, want %x", addr, got, next.Cert.SerialNumber)
		}
	}

	plain := start(t, &app.Options{Stores: tasksOnly(a2asrv.NewMemoryTaskStore(nil))})
	if err := plain.ReloadTLS(); err == nil {
		t.Error("ReloadTLS on a plaintext server succeeded")
	}
}

func TestPlaintextListenRefused(t *testing.T) {
	ca := certtest.NewCA(t)
	cert, key := ca.Issue(t, "127.0.0.1").WritePEM(t, t.TempDir())
	tests := []struct {
		name    string
		opts    app.Options
		refused bool
	}{
		{"unspecified address", app.Options{Addr: "0.0.0.0:0"}, true},
		{"unspecified IPv6 address", app.Options{Addr: "[::]:0"}, true},
		{"no host", app.Options{Addr: ":0"}, true},
		{"gRPC on an unspecified address", app.Options{Agents: app.AgentOptions{GRPCAddr: "0.0.0.0:0"}}, true},
		{"loopback", app.Options{Addr: "127.0.0.1:0", Agents: app.AgentOptions{GRPCAddr: "127.0.0.1:0"}}, false},
		{"localhost", app.Options{Addr: "localhost:0"}, false},
		{"insecure listen", app.Options{Addr: "0.0.0.0:0", HTTP: app.HTTPOptions{InsecureListen: true}, Agents: app.AgentOptions{GRPCAddr: "0.0.0.0:0"}}, false},
		{"TLS", app.Options{Addr: "0.0.0.0:0", HTTP: app.HTTPOptions{TLSCertFile: cert, TLSKeyFile: key}, Agents: app.AgentOptions{GRPCAddr: "0.0.0.0:0"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Stores = tasksOnly(a2asrv.NewMemoryTaskStore(nil))
			if o.Addr == "" {
				o.Addr = "127.0.0.1:0"
			}
			srv, err := app.New(t.Context(), &o)
			if err == nil {
				defer srv.Shutdown(context.Background())
				err = srv.Start(t.Context())
			}
			if tt.refused {
				if !errors.Is(err, app.ErrPlaintextListen) {
					t.Fatalf("Start: %v, want ErrPlaintextListen", err)
				}
				return
			}
			if err != nil && strings.Contains(err.Error(), "address family not supported") {
				t.Skipf("no IPv6 here: %v", err)
			}
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
		})
	}
}

func TestTLSOptionsChecked(t *testing.T) {
	ca := certtest.NewCA(t)
	dir := t.TempDir()
	cert, key := ca.Issue(t, "127.0.0.1").WritePEM(t, dir)
	tests := []struct {
		name      string
		cert, key string
		want      string
	}{
		{"certificate only", cert, "", "both"},
		{"key only", "", key, "both"},
		{"missing file", filepath.Join(dir, "nope.crt"), key, "nope.crt"},
		{"key of the wrong certificate", cert, cert, "tlscert"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := app.New(t.Context(), &app.Options{Stores: tasksOnly(a2asrv.NewMemoryTaskStore(nil)), HTTP: app.HTTPOptions{TLSCertFile: tt.cert, TLSKeyFile: tt.key}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

// The connection cap's reserve serves /healthz only, over TLS as over
// plaintext: the reserve mark must reach requests through the TLS layer.
func TestTLSReserveServesHealthOnly(t *testing.T) {
	ca := certtest.NewCA(t)
	srv := tlsServer(t, ca, t.TempDir(), &app.Options{Logger: slog.New(slog.DiscardHandler),
		HTTP: app.HTTPOptions{Limits: httpapi.Limits{MaxConns: 1, ConnReserve: 1, HeaderTimeout: time.Minute}},
	})
	// Hold the one connection under the cap.
	held, err := tls.Dial("tcp", srv.Addr(), ca.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	hc := trustingClient(ca)
	// A request's connection is released when the server has closed it,
	// which may be after the client read the answer: until then a new
	// connection is past the reserve and closed at accept, so a request
	// is retried until it gets an answer.
	do := func(path string) int {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			resp, err := hc.Get(srv.URL() + path)
			if err == nil {
				defer resp.Body.Close()
				io.Copy(io.Discard, resp.Body)
				return resp.StatusCode
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s on the reserve: %v", path, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if got := do("/agents/echo/.well-known/agent-card.json"); got != http.StatusServiceUnavailable {
		t.Errorf("card on the reserve: status %d, want 503", got)
	}
	if got := do("/healthz"); got != http.StatusOK {
		t.Errorf("healthz on the reserve: status %d, want 200", got)
	}
}
