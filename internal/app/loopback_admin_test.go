package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/registry"
)

// adminRoute is a request only the server's operator may make: with no
// admin token configured, a peer on the server's own machine.
type adminRoute struct {
	method, path, body string
	ok                 int // the status the operator gets
}

// loopbackAdminRoutes are the routes of every service that takes a
// tokenless loopback peer as its operator. name makes a registration
// unique for each request.
func loopbackAdminRoutes(name string) []adminRoute {
	rules, _ := json.Marshal(gate.RuleSetDocument{Rules: holdOver})
	return []adminRoute{
		{method: http.MethodPut, path: gate.APIPath + "/rules?tenant=acme", body: string(rules), ok: http.StatusOK},
		{method: http.MethodGet, path: gate.APIPath + "/actions?tenant=acme", ok: http.StatusOK},
		{method: http.MethodHead, path: gate.APIPath + "/actions?tenant=acme", ok: http.StatusOK},
		{method: http.MethodGet, path: gate.APIPath + "/actions?tenant=acme&state=held", ok: http.StatusOK},
		{method: http.MethodGet, path: gate.APIPath + "/actions/s-1/a-1?tenant=acme", ok: http.StatusNotFound},
		{method: http.MethodGet, path: gate.APIPath + "/rules?tenant=acme", ok: http.StatusOK},
		{method: http.MethodGet, path: gate.APIPath + "/audit", ok: http.StatusOK},
		{method: http.MethodGet, path: gate.APIPath + "/audit?tenant=acme", ok: http.StatusOK},
		{method: http.MethodPost, path: registry.APIPath, body: `{"name":"` + name + `","url":"https://` + name + `.example.com/"}`,
			ok: http.StatusCreated},
	}
}

// A page whose own name an attacker rebinds to 127.0.0.1 reaches the
// server from a loopback peer; with no admin token configured it must not
// act as the operator, for reads (the gate's audit log, held actions and
// rules of every tenant) as much as for writes. The server on the
// unspecified address has no Host check on writes at all: there the
// admin rule is the only thing standing. The names the operator gave the
// server (its public URL, allowed hosts) are its own.
func TestLoopbackAdminRefusesForeignHost(t *testing.T) {
	configs := []struct {
		name          string
		opts          app.Options
		allow, refuse []string // beyond the loopback names and the rebound ones
	}{
		{name: "loopback", opts: app.Options{Addr: "127.0.0.1:0"}},
		{name: "unspecified address", opts: app.Options{Addr: "0.0.0.0:0", HTTP: app.HTTPOptions{InsecureListen: true}}},
		{name: "public URL and allowed host", opts: app.Options{Addr: "127.0.0.1:0", PublicURL: "http://novaos.test",
			HTTP: app.HTTPOptions{AllowHosts: []string{"proxy.test"}},
		},
			allow: []string{"novaos.test", "novaos.test:80", "proxy.test", "proxy.test:8443"}, refuse: []string{"novaos.test:81", "proxy.test.attacker.test"}},
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			opts := cfg.opts
			opts.DataDir = t.TempDir()
			srv := start(t, &opts)
			_, port, _ := net.SplitHostPort(srv.Addr())
			base := "http://127.0.0.1:" + port
			n := 0
			for _, host := range append([]string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "LOCALHOST:" + port}, cfg.allow...) {
				n++
				for _, r := range loopbackAdminRoutes(fmt.Sprintf("ok-%d", n)) {
					if code, body := call(t, base, host, r); code != r.ok {
						t.Errorf("%s %s with Host %s: status %d, want %d: %s", r.method, r.path, host, code, r.ok, body)
					}
				}
			}
			for _, host := range append([]string{"rebind.attacker.test:" + port, "rebind.attacker.test", "127.0.0.1.nip.io:" + port,
				"localhost.attacker.test:" + port, "0.0.0.0:" + port, "127.1:" + port}, cfg.refuse...) {
				n++
				for _, r := range loopbackAdminRoutes(fmt.Sprintf("no-%d", n)) {
					code, body := call(t, base, host, r)
					if code != http.StatusMisdirectedRequest {
						t.Errorf("%s %s with Host %q: status %d, want 421: %s", r.method, r.path, host, code, body)
						continue
					}
					if r.method == http.MethodHead {
						continue
					}
					var p problem.Problem
					if err := json.Unmarshal(body, &p); err != nil || p.Type != problem.TypeMisdirected {
						t.Errorf("%s %s with Host %q: not a misdirected-request problem: %s", r.method, r.path, host, body)
					}
				}
			}
		})
	}
}

// call sends r to the server at base (a loopback address) with the Host
// header host, as a browser does for the name of the page's URL.
func call(t *testing.T, base, host string, r adminRoute) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), r.method, base+r.path, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}
