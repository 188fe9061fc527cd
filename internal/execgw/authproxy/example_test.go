package authproxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/execgw/authproxy"
)

func Example() {
	// The platform's issuer, and a verifier of its keys (an agent's
	// sidecar fetches them: identity.NewJWKSVerifier).
	iss, _ := auth.Open("", auth.Options{Issuer: "https://novaos.example.com"})
	keys, _ := identity.NewStaticKeys(iss.PublicKeys()...)
	v, _ := identity.New(keys, identity.Options{Issuer: "https://novaos.example.com"})

	// The agent reads who it acts for from the proxy's headers.
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tenant %s, run %s", r.Header.Get("X-NovaOS-Tenant-Id"), r.Header.Get("X-NovaOS-Run-Id"))
	}))
	defer agent.Close()
	p, _ := authproxy.New(agent.URL, v, nil)
	proxy := httptest.NewServer(p)
	defer proxy.Close()

	tok, _ := iss.Mint(context.Background(), identity.Claims{TenantID: "acme", RunID: "run-42"}, time.Minute)
	req, _ := http.NewRequest(http.MethodPost, proxy.URL+"/", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-NovaOS-Tenant-Id", "globex") // a caller's own: removed
	resp, _ := http.DefaultClient.Do(req)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	resp, _ = http.Post(proxy.URL+"/", "application/json", nil) // no token
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	// Output:
	// 200 tenant acme, run run-42
	// 401 Bearer realm="novaos"
}
