package registry_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/registry"
)

// A record whose public-looking name resolves to loopback passes every URL
// check and is refused when Connect dials it.
func TestConnectRefusesANameThatResolvesToLoopback(t *testing.T) {
	ctx := t.Context()
	var hits atomic.Int32
	mux := http.NewServeMux()
	agents := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	defer agents.Close()
	u, _ := url.Parse(agents.URL)
	public := "http://echo.agents.example.com:" + u.Port() + "/agents/echo"
	h := echoAgent().Handler(public, nil)
	mux.Handle("/agents/echo", http.StripPrefix("/agents/echo", h))
	mux.Handle("/agents/echo/", http.StripPrefix("/agents/echo", h))

	svc := registrysvc.New(registrysvc.NewMemoryStore(), nil)
	if _, err := svc.Register(ctx, &registry.Agent{Name: "echo", URL: public}); err != nil {
		t.Fatal(err)
	}
	regSrv := httptest.NewServer(svc.Handler())
	defer regSrv.Close()

	// The test's resolver: every name is the agents server, on 127.0.0.1.
	resolveToLoopback := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, agents.Listener.Addr().String())
	}}
	defer resolveToLoopback.CloseIdleConnections()
	guarded, _ := registry.NewClient(regSrv.URL, nil)
	_, err := guarded.ConnectAgent(ctx, &registry.Agent{Name: "echo", URL: public}, clientWith(resolveToLoopback))
	if !errors.Is(err, registry.ErrURLNotAllowed) || !errors.Is(err, netguard.ErrRefused) {
		t.Fatalf("ConnectAgent(%s resolving to loopback) = %v, want ErrURLNotAllowed wrapping netguard.ErrRefused", public, err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the agent server answered %d requests; the refusal must come first", n)
	}

	// With loopback allowed, the same resolver reaches the agent: the
	// refusal above was the policy's.
	loop, _ := registry.NewClient(regSrv.URL, &registry.ClientOptions{Policy: &registry.Policy{AllowLoopback: true}})
	ac, err := loop.ConnectAgent(ctx, &registry.Agent{Name: "echo", URL: public}, clientWith(resolveToLoopback))
	if err != nil {
		t.Fatalf("ConnectAgent with loopback allowed: %v", err)
	}
	if res, err := ac.SendText(ctx, "hello", "", ""); err != nil || res.Task.Artifacts[0].Parts[0].Text != "hello" {
		t.Fatalf("SendText = %+v, %v", res, err)
	}
}

func clientWith(tr http.RoundTripper) *a2aclient.Options {
	return &a2aclient.Options{HTTPClient: &http.Client{Transport: tr}}
}
