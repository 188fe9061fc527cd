package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
)

var proxyLine = regexp.MustCompile(`serving (http://\S+), forwarding`)

// startProxy runs the proxy command until the test ends and returns its
// base URL.
func startProxy(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	e, out, errOut := testEnv(nil)
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"proxy"}, args...), e) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("proxy exited with %d after its context ended: %s", code, errOut)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("proxy did not stop; stderr %s", errOut)
		}
	})
	deadline := time.After(30 * time.Second) // a failure bound: the test waits for the line
	for {
		if m := proxyLine.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("proxy exited with %d before serving: %s", code, errOut)
		case <-deadline:
			t.Fatalf("proxy printed no address; stdout %q", out)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestProxyCommand(t *testing.T) {
	const issuer = "https://novaos.test"
	iss, err := auth.Open("", auth.Options{Issuer: issuer})
	if err != nil {
		t.Fatal(err)
	}
	gateway := httptest.NewServer(iss.JWKSHandler())
	t.Cleanup(gateway.Close)
	var seen http.Header
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(agent.Close)
	base := startProxy(t, "--listen", "127.0.0.1:0", "--upstream", agent.URL, "--issuer", issuer,
		"--jwks", gateway.URL+identity.JWKSPath, "--algorithms", "RS256")
	tok, _ := iss.Mint(context.Background(), identity.Claims{TenantID: "acme", UserID: "user-7", RunID: "run-42",
		AgentID: "agent-1", InstanceID: "inst-3"}, time.Minute)

	get := func(path, tok string) int {
		r, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		r.Header.Set("X-NovaOS-Tenant-Id", "globex")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/a2a", tok); code != http.StatusNoContent {
		t.Fatalf("with a token: %d", code)
	}
	got := map[string]string{}
	for _, h := range []string{identity.HeaderUserID, identity.HeaderTenantID, identity.HeaderRunID, identity.HeaderAgentID,
		identity.HeaderInstanceID, identity.HeaderExecutionToken} {
		got[h] = seen.Get(h)
	}
	want := map[string]string{identity.HeaderUserID: "user-7", identity.HeaderTenantID: "acme", identity.HeaderRunID: "run-42",
		identity.HeaderAgentID: "agent-1", identity.HeaderInstanceID: "inst-3", identity.HeaderExecutionToken: tok}
	if b1, b2 := mustMarshal(want), mustMarshal(got); b1 != b2 {
		t.Fatalf("the agent saw %s, want %s", b2, b1)
	}
	seen = nil
	if code := get("/a2a", ""); code != http.StatusUnauthorized || seen != nil {
		t.Fatalf("without a token: %d, reached the agent %v", code, seen != nil)
	}
	if code := get("/healthz", ""); code != http.StatusOK || seen != nil {
		t.Fatalf("/healthz: %d, reached the agent %v", code, seen != nil)
	}
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestProxyUsage(t *testing.T) {
	base := []string{"proxy", "--upstream", "http://127.0.0.1:9", "--issuer", "https://novaos.test", "--listen", "127.0.0.1:0"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no upstream", []string{"proxy", "--issuer", "https://novaos.test"}, "--upstream and --issuer are required"},
		{"no issuer", []string{"proxy", "--upstream", "http://127.0.0.1:9"}, "--upstream and --issuer are required"},
		{"relative issuer", []string{"proxy", "--upstream", "http://127.0.0.1:9", "--issuer", "novaos"}, "--issuer must be an absolute URL"},
		{"bad upstream", []string{"proxy", "--upstream", "ftp://x", "--issuer", "https://novaos.test"}, "--upstream"},
		{"no algorithm", append(base, "--algorithms", " , "), "--algorithms names none"},
		{"HS256", append(base, "--algorithms", "RS256,HS256"), "HS256"},
		{"zero body", append(base, "--max-body-bytes", "0"), "--max-body-bytes"},
		{"negative body", append(base, "--max-body-bytes", "-2"), "--max-body-bytes"},
		{"zero header", append(base, "--max-header-bytes", "0"), "--max-header-bytes"},
		{"half TLS", append(base, "--tls-cert", "cert.pem"), "--tls-cert and --tls-key go together"},
		{"bad JWKS", append(base, "--jwks", "file:///etc/passwd"), "--jwks"},
		{"plaintext on every address", append(base, "--listen", "0.0.0.0:0"), "not loopback"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d saying %q", code, errOut, exitUsage, tc.want)
			}
		})
	}
	code, _, errOut := runCmd(t, "proxy", "-h")
	for _, want := range []string{"X-NovaOS-Execution-Token", "-upstream", "-max-body-bytes", "-insecure-listen", "/healthz"} {
		if code != exitOK || !strings.Contains(errOut, want) {
			t.Errorf("proxy -h: exit %d, missing %q", code, want)
		}
	}
	code, out, _ := runCmd(t, "help")
	if code != exitOK || !strings.Contains(out, "proxy ") {
		t.Errorf("help does not list proxy: %s", out)
	}
}
