package authproxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/internal/execgw/authproxy"
)

// BenchmarkProxy is a small POST to an agent on loopback, directly and
// through the proxy with a token the proxy has seen before (what every
// request of a run costs after its first): the difference is the proxy's
// cost per request, a verification cache hit plus one more loopback hop.
func BenchmarkProxy(b *testing.B) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer agent.Close()
	fx := newFixture(b)
	p, err := authproxy.New(agent.URL, fx.v, nil)
	if err != nil {
		b.Fatal(err)
	}
	proxy := httptest.NewServer(p)
	defer proxy.Close()
	tok, err := fx.iss.Mint(b.Context(), claims, 0)
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	run := func(b *testing.B, url string) {
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1}`))
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, agent.URL+"/") })
	b.Run("proxied", func(b *testing.B) { run(b, proxy.URL+"/") })
}
