package authproxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/execgw/authproxy"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/problem"
)

const issuerURL = "https://novaos.test"

// clock is the issuer's clock, moved back to mint a token that has
// expired.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.offset) }
func (c *clock) set(d time.Duration) {
	c.mu.Lock()
	c.offset = d
	c.mu.Unlock()
}

// fixture is a platform issuer, its JWKS served over HTTP, and a verifier
// of that JWKS as the proxy's command builds it.
type fixture struct {
	iss  *auth.Issuer
	clk  *clock
	jwks *httptest.Server
	v    *identity.Verifier
}

var claims = identity.Claims{
	TenantID: "acme", UserID: "user-7", RunID: "run-42", AgentID: "agent-1", InstanceID: "inst-3",
	AgentName: "mailer", ConversationID: "conv-9", Scopes: []string{"memory:read:*"},
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{clk: &clock{}}
	var err error
	if f.iss, err = auth.Open("", auth.Options{Issuer: issuerURL, Now: f.clk.Now}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+auth.JWKSPath, f.iss.JWKSHandler())
	f.jwks = httptest.NewServer(mux)
	t.Cleanup(f.jwks.Close)
	f.v, err = identity.NewJWKSVerifier(f.jwks.URL, issuerURL, &identity.JWKSOptions{Policy: &netguard.Policy{AllowLoopback: true}},
		&identity.Options{Algorithms: []string{identity.RS256, identity.EdDSA}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) mint(t *testing.T, c identity.Claims) string {
	t.Helper()
	tok, err := f.iss.Mint(context.Background(), c, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// badTokens are tokens the proxy must refuse, each with the kind of
// rejection its problem names.
func (f *fixture) badTokens(t *testing.T) []struct{ name, token, reason string } {
	t.Helper()
	good := f.mint(t, claims)
	f.clk.set(-2 * time.Hour)
	expired := f.mint(t, claims)
	f.clk.set(0)
	other, err := auth.Open("", auth.Options{Issuer: issuerURL})
	if err != nil {
		t.Fatal(err)
	}
	unknownKid, _ := other.Mint(context.Background(), claims, time.Minute)
	wrongAud := claims
	wrongAud.Audience = []string{"another-service"}
	parts := strings.Split(good, ".")
	forgedPayload := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"` + issuerURL + `","aud":"acp-agent","exp":4102444800,"tenant_id":"globex"}`))
	noneHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"` + f.iss.KeyID() + `"}`))
	return []struct{ name, token, reason string }{
		{"expired", expired, "token expired"},
		{"unknown kid", unknownKid, "unknown signing key"},
		{"forged payload", parts[0] + "." + forgedPayload + "." + parts[2], "bad signature"},
		{"wrong audience", f.mint(t, wrongAud), "wrong audience"},
		{"alg none", noneHeader + "." + parts[1] + ".", "algorithm not allowed"},
		{"garbage", "not-a-token", "malformed token"},
	}
}

// echo is an upstream that answers what reached it.
type echoed struct {
	Method, Path, Query string
	Header              http.Header
	Body                int
}

func echoUpstream(t *testing.T) (*httptest.Server, func() []echoed) {
	t.Helper()
	var mu sync.Mutex
	var seen []echoed
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		e := echoed{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: int(n)}
		mu.Lock()
		seen = append(seen, e)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(e)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []echoed { mu.Lock(); defer mu.Unlock(); return append([]echoed(nil), seen...) }
}

func newProxy(t *testing.T, upstream string, v *identity.Verifier, opts *authproxy.Options) *httptest.Server {
	t.Helper()
	p, err := authproxy.New(upstream, v, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, r *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// forge sets X-NovaOS-* headers a caller might try, in every spelling, and
// names one in Connection so a proxy that removed hop-by-hop headers after
// setting its own would lose it.
func forge(h http.Header) {
	h.Set("X-NovaOS-User-Id", "mallory")
	h["x-novaos-tenant-id"] = []string{"globex"}
	h["X-NOVAOS-RUN-ID"] = []string{"run-0"}
	h.Set("X-NovaOS-Execution-Token", "forged")
	h.Set("X-Novaos-Custom", "1")
	h.Set("X-NovaOS-", "bare prefix")
	h.Set("X-NovaOS-Instance-Id", "inst-evil")
	h.Add("Connection", "X-NovaOS-Agent-Id")
}

// platformHeaders are r's X-NovaOS-* headers, by lower-case name.
func platformHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for name, vs := range h {
		if strings.HasPrefix(strings.ToLower(name), "x-novaos-") {
			out[strings.ToLower(name)] = strings.Join(vs, ",")
		}
	}
	return out
}

func wantHeaders(tok string) map[string]string {
	return map[string]string{
		"x-novaos-user-id": "user-7", "x-novaos-tenant-id": "acme", "x-novaos-run-id": "run-42",
		"x-novaos-agent-id": "agent-1", "x-novaos-instance-id": "inst-3", "x-novaos-execution-token": tok,
		"x-novaos-agent-name": "mailer", "x-novaos-conversation-id": "conv-9",
	}
}

func TestInjectsVerifiedHeaders(t *testing.T) {
	f := newFixture(t)
	up, seen := echoUpstream(t)
	proxy := newProxy(t, up.URL+"/agent", f.v, nil)
	tok := f.mint(t, claims)
	r, _ := http.NewRequest(http.MethodPost, proxy.URL+"/a2a/v1?stream=1", strings.NewReader(`{"jsonrpc":"2.0"}`))
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Set("X-Request-Id", "req-1")
	forge(r.Header)
	resp, body := do(t, r)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	got := seen()
	if len(got) != 1 {
		t.Fatalf("%d requests reached the agent", len(got))
	}
	e := got[0]
	if diff := cmp.Diff(wantHeaders(tok), platformHeaders(e.Header)); diff != "" {
		t.Errorf("X-NovaOS-* headers at the agent (-want +got):\n%s", diff)
	}
	if e.Header.Get("Authorization") != "Bearer "+tok || e.Header.Get("X-Request-Id") != "req-1" ||
		e.Header.Get("X-Forwarded-For") == "" || e.Header.Get("X-Forwarded-Host") == "" {
		t.Errorf("other headers at the agent: %v", e.Header)
	}
	if e.Method != http.MethodPost || e.Path != "/agent/a2a/v1" || e.Query != "stream=1" || e.Body != len(`{"jsonrpc":"2.0"}`) {
		t.Errorf("request at the agent: %s %s?%s, %d bytes", e.Method, e.Path, e.Query, e.Body)
	}
}

// Claims the token does not carry are not forwarded as headers, and a
// forged one of that name is removed all the same.
func TestOmitsEmptyClaims(t *testing.T) {
	f := newFixture(t)
	up, seen := echoUpstream(t)
	proxy := newProxy(t, up.URL, f.v, nil)
	tok := f.mint(t, identity.Claims{TenantID: "acme", AgentID: "agent-1"})
	r, _ := http.NewRequest(http.MethodGet, proxy.URL+"/", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	forge(r.Header)
	if resp, body := do(t, r); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	want := map[string]string{"x-novaos-tenant-id": "acme", "x-novaos-agent-id": "agent-1", "x-novaos-execution-token": tok}
	if diff := cmp.Diff(want, platformHeaders(seen()[0].Header)); diff != "" {
		t.Errorf("X-NovaOS-* headers at the agent (-want +got):\n%s", diff)
	}
}

func TestRefusesWithoutAValidToken(t *testing.T) {
	f := newFixture(t)
	up, seen := echoUpstream(t)
	proxy := newProxy(t, up.URL, f.v, nil)
	type refusal struct{ name, auth, reason, challenge string }
	tests := []refusal{
		{"no token", "", "a bearer token is required", `Bearer realm="novaos"`},
		{"another scheme", "Basic dXNlcjpwYXNz", "a bearer token is required", `Bearer realm="novaos"`},
	}
	for _, bt := range f.badTokens(t) {
		tests = append(tests, refusal{bt.name, "Bearer " + bt.token, bt.reason, `Bearer realm="novaos", error="invalid_token"`})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, proxy.URL+"/a2a", strings.NewReader("{}"))
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			forge(r.Header)
			resp, body := do(t, r)
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != tc.challenge ||
				resp.Header.Get("Content-Type") != problem.ContentType {
				t.Fatalf("status %d, WWW-Authenticate %q, Content-Type %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header.Get("Content-Type"))
			}
			var p problem.Problem
			if err := json.Unmarshal(body, &p); err != nil || p.Type != identity.ProblemInvalidToken || !strings.Contains(p.Detail, tc.reason) {
				t.Fatalf("problem %s (%v): want the reason %q", body, err, tc.reason)
			}
			if tok := strings.TrimPrefix(tc.auth, "Bearer "); len(tok) > 16 {
				for _, part := range strings.Split(tok, ".") {
					if len(part) >= 16 && bytes.Contains(body, []byte(part)) {
						t.Fatal("the answer holds part of the token")
					}
				}
			}
		})
	}
	if n := len(seen()); n != 0 {
		t.Fatalf("%d refused requests reached the agent", n)
	}
}

func TestHealthz(t *testing.T) {
	f := newFixture(t)
	up, seen := echoUpstream(t)
	proxy := newProxy(t, up.URL, f.v, nil)
	tests := []struct {
		method string
		status int
	}{
		{http.MethodGet, http.StatusOK},
		{http.MethodHead, http.StatusOK},
		{http.MethodPost, http.StatusUnauthorized}, // not the health check: the agent's, and it needs a token
	}
	for _, tc := range tests {
		r, _ := http.NewRequest(tc.method, proxy.URL+authproxy.HealthPath, nil)
		resp, body := do(t, r)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d %s", tc.method, authproxy.HealthPath, resp.StatusCode, body)
		}
		if tc.method == http.MethodGet && string(body) != `{"status":"ok"}`+"\n" {
			t.Errorf("GET %s: %q", authproxy.HealthPath, body)
		}
	}
	// The agent's own /healthz/deeper is the agent's.
	r, _ := http.NewRequest(http.MethodGet, proxy.URL+authproxy.HealthPath+"/deeper", nil)
	if resp, _ := do(t, r); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET %s/deeper without a token: %d", authproxy.HealthPath, resp.StatusCode)
	}
	if n := len(seen()); n != 0 {
		t.Fatalf("%d health checks reached the agent", n)
	}
}

// A body over the limit is refused whether its length is declared or it
// only turns out too long while streaming; one at the limit passes.
func TestBodyLimit(t *testing.T) {
	f := newFixture(t)
	up, seen := echoUpstream(t)
	proxy := newProxy(t, up.URL, f.v, &authproxy.Options{MaxBodyBytes: 1024})
	tok := f.mint(t, claims)
	tests := []struct {
		name   string
		body   io.Reader
		status int
	}{
		{"at the limit", bytes.NewReader(make([]byte, 1024)), http.StatusOK},
		{"declared too long", bytes.NewReader(make([]byte, 1025)), http.StatusRequestEntityTooLarge},
		{"streamed too long", io.MultiReader(strings.NewReader(strings.Repeat("x", 1000)), strings.NewReader(strings.Repeat("y", 1000))), http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, proxy.URL+"/", tc.body)
			r.Header.Set("Authorization", "Bearer "+tok)
			resp, body := do(t, r)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.status == http.StatusRequestEntityTooLarge {
				var p problem.Problem
				if json.Unmarshal(body, &p) != nil || p.Type != problem.TypeBodyTooLarge || !strings.Contains(p.Detail, "1024 bytes") {
					t.Fatalf("problem %s", body)
				}
			}
		})
	}
	for _, e := range seen() {
		if e.Body > 1024 {
			t.Fatalf("the agent read %d bytes", e.Body)
		}
	}
	// No limit.
	unlimited := newProxy(t, up.URL, f.v, &authproxy.Options{MaxBodyBytes: -1})
	r, _ := http.NewRequest(http.MethodPost, unlimited.URL+"/", bytes.NewReader(make([]byte, authproxy.DefaultMaxBodyBytes+1)))
	r.Header.Set("Authorization", "Bearer "+tok)
	if resp, body := do(t, r); resp.StatusCode != http.StatusOK {
		t.Fatalf("no limit: %d %s", resp.StatusCode, body)
	}
}

// The agent's SSE stream reaches the caller frame by frame: the agent
// writes its second frame only once the caller has read the first, so a
// proxy that held the response back would never deliver either.
func TestSSEStreamsThrough(t *testing.T) {
	f := newFixture(t)
	read1 := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: 1\nevent: message\ndata: {\"sequence\":1}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-read1:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "id: 2\nevent: message\ndata: {\"sequence\":2}\n\n")
	}))
	t.Cleanup(up.Close)
	proxy := newProxy(t, up.URL, f.v, nil)
	// A failure bound only: the test waits on the frames themselves.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, proxy.URL+"/api/v1/events/run-42", nil)
	r.Header.Set("Authorization", "Bearer "+f.mint(t, claims))
	r.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	frame := func() string {
		var b strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("reading a frame: %v (so far %q)", err, b.String())
			}
			if line == "\n" {
				return b.String()
			}
			b.WriteString(line)
		}
	}
	if got := frame(); got != "id: 1\nevent: message\ndata: {\"sequence\":1}\n" {
		t.Fatalf("frame 1: %q", got)
	}
	close(read1)
	if got := frame(); got != "id: 2\nevent: message\ndata: {\"sequence\":2}\n" {
		t.Fatalf("frame 2: %q", got)
	}
}

// An agent that does not answer is a 502 problem; the log line says so
// without the token or the query.
func TestUpstreamDown(t *testing.T) {
	f := newFixture(t)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	proxy := newProxy(t, downURL, f.v, &authproxy.Options{Logger: logger})
	tok := f.mint(t, claims)
	r, _ := http.NewRequest(http.MethodGet, proxy.URL+"/a2a?access=secret-query", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	resp, body := do(t, r)
	var p problem.Problem
	if resp.StatusCode != http.StatusBadGateway || json.Unmarshal(body, &p) != nil || p.Status != http.StatusBadGateway {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	mu.Lock()
	defer mu.Unlock()
	out := logs.String()
	if !strings.Contains(out, "the agent did not answer") || !strings.Contains(out, "path=/a2a") {
		t.Fatalf("log %q", out)
	}
	for _, secret := range append(strings.Split(tok, "."), "secret-query") {
		if strings.Contains(out, secret) {
			t.Fatalf("the log holds %q", secret)
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Keys that cannot be fetched are a 503 with Retry-After: the token may
// be good.
func TestKeysUnavailable(t *testing.T) {
	f := newFixture(t)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(broken.Close)
	v, err := identity.NewJWKSVerifier(broken.URL, issuerURL, &identity.JWKSOptions{Policy: &netguard.Policy{AllowLoopback: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	up, seen := echoUpstream(t)
	proxy := newProxy(t, up.URL, v, nil)
	r, _ := http.NewRequest(http.MethodGet, proxy.URL+"/", nil)
	r.Header.Set("Authorization", "Bearer "+f.mint(t, claims))
	resp, body := do(t, r)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if len(seen()) != 0 {
		t.Fatal("the request reached the agent")
	}
}

func TestNewRefuses(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name, upstream string
		v              *identity.Verifier
		want           string
	}{
		{"no verifier", "http://127.0.0.1:9000", nil, "no verifier"},
		{"relative", "/agent", f.v, "not an absolute http or https URL"},
		{"another scheme", "ftp://127.0.0.1/", f.v, "not an absolute http or https URL"},
		{"no host", "http://", f.v, "not an absolute http or https URL"},
		{"credentials", "http://user:pw@127.0.0.1:9000", f.v, "credentials"},
		{"credentials, no host", "http://user:pw@", f.v, "credentials"},
		{"query", "http://127.0.0.1:9000/?a=b", f.v, "query or fragment"},
		{"fragment", "http://127.0.0.1:9000/#top", f.v, "query or fragment"},
		{"not a URL", "http://user:pw@[::1", f.v, "upstream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := authproxy.New(tc.upstream, tc.v, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%q) = %v, want an error saying %q", tc.upstream, err, tc.want)
			}
			if strings.Contains(err.Error(), "pw@") {
				t.Fatalf("the error shows the credentials: %v", err)
			}
		})
	}
	if _, err := authproxy.New("https://agent.internal:8443/base/", f.v, nil); err != nil {
		t.Fatalf("https upstream with a path: %v", err)
	}
}

// A Transport given in Options is the one that reaches the agent.
func TestTransportOption(t *testing.T) {
	f := newFixture(t)
	up, seen := echoUpstream(t)
	rt := &countingTransport{next: http.DefaultTransport}
	proxy := newProxy(t, up.URL, f.v, &authproxy.Options{Transport: rt})
	r, _ := http.NewRequest(http.MethodGet, proxy.URL+"/", nil)
	r.Header.Set("Authorization", "Bearer "+f.mint(t, claims))
	if resp, body := do(t, r); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if rt.calls() != 1 || len(seen()) != 1 {
		t.Fatalf("the transport made %d requests, the agent saw %d; want 1 and 1", rt.calls(), len(seen()))
	}
}

type countingTransport struct {
	mu   sync.Mutex
	n    int
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func (c *countingTransport) calls() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// Without Options the body limit is DefaultMaxBodyBytes: a request that
// declares more is refused before its body is read.
func TestDefaultBodyLimit(t *testing.T) {
	f := newFixture(t)
	up, seen := echoUpstream(t)
	p, err := authproxy.New(up.URL, f.v, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := f.mint(t, claims)
	for _, tc := range []struct {
		length int64
		status int
	}{{authproxy.DefaultMaxBodyBytes + 1, http.StatusRequestEntityTooLarge}, {2, http.StatusOK}} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
		r.ContentLength = tc.length // what the client declared; the body is never read past it
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		if w.Code != tc.status {
			t.Fatalf("Content-Length %d: status %d, want %d: %s", tc.length, w.Code, tc.status, w.Body)
		}
	}
	if n := len(seen()); n != 1 {
		t.Fatalf("%d requests reached the agent, want 1", n)
	}
}
