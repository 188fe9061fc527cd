package adapter

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/secret"
)

// Test secrets: long enough to be redacted, distinct enough to be found.
const (
	clientTestToken    = "nv_agent_token_7f3a9c1e5b2d4f6a8c0e"
	clientTestInvToken = "eyJhbGciOiJFZERTQSJ9.invocation-token-one.sig1"
	clientTestInvNewer = "eyJhbGciOiJFZERTQSJ9.invocation-token-two.sig2"
)

// clientFingerprint names a token in a failure message without showing it.
func clientFingerprint(tok string) string {
	if tok == "" {
		return "<none>"
	}
	sum := sha256.Sum256([]byte(tok))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// clientTestClock is a Clock for tests. In auto mode (the default) Sleep
// records the wait, moves time on by it and returns at once; in manual
// mode Sleep blocks until Advance passes its deadline.
type clientTestClock struct {
	mu      sync.Mutex
	now     time.Time
	manual  bool
	sleeps  []time.Duration
	waiters []*clientSleeper
	notify  chan struct{} // closed and replaced when a sleeper arrives
}

type clientSleeper struct {
	until time.Time
	d     time.Duration
	done  chan struct{}
}

func newClientTestClock(manual bool) *clientTestClock {
	return &clientTestClock{now: time.Now().Truncate(time.Second), manual: manual, notify: make(chan struct{})}
}

func (c *clientTestClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clientTestClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	if !c.manual {
		c.now = c.now.Add(d)
		c.mu.Unlock()
		return ctx.Err()
	}
	s := &clientSleeper{until: c.now.Add(d), d: d, done: make(chan struct{})}
	c.waiters = append(c.waiters, s)
	close(c.notify)
	c.notify = make(chan struct{})
	c.mu.Unlock()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		c.waiters = slices.DeleteFunc(c.waiters, func(w *clientSleeper) bool { return w == s })
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Advance moves time on and wakes the sleepers whose deadline passed.
func (c *clientTestClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waiters = slices.DeleteFunc(c.waiters, func(w *clientSleeper) bool {
		if !w.until.After(c.now) {
			close(w.done)
			return true
		}
		return false
	})
}

// waitSleeper blocks until a sleeper is waiting and returns its wait.
func (c *clientTestClock) waitSleeper(t *testing.T) time.Duration {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		if len(c.waiters) > 0 {
			d := c.waiters[0].d
			c.mu.Unlock()
			return d
		}
		ch := c.notify
		c.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			t.Fatal("no sleeper arrived")
		}
	}
}

func (c *clientTestClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}

// clientSeen is a request as the test server saw it.
type clientSeen struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
	ProofErr            error
	ProofJTI            string
}

// clientTestServer records every request, checks its proof when the
// client uses DPoP, and answers with the test's handler.
type clientTestServer struct {
	*httptest.Server
	t     *testing.T
	key   *dpop.Key // the proof key tokens are bound to; nil for Bearer
	clock Clock

	mu      sync.Mutex
	seen    []clientSeen
	handler func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen)
}

func newClientTestServer(t *testing.T, key *dpop.Key, clock Clock, h func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen)) *clientTestServer {
	t.Helper()
	s := &clientTestServer{t: t, key: key, clock: clock, handler: h}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *clientTestServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	seen := clientSeen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	if s.key != nil {
		now := time.Now()
		if s.clock != nil {
			now = s.clock.Now()
		}
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "DPoP ")
		c, err := dpop.Verify(r.Header.Get(dpop.Header), dpop.Expect{Method: r.Method, URL: s.URL + r.URL.EscapedPath(),
			AccessToken: tok, JKT: s.key.Thumbprint(), Now: now, Window: time.Hour})
		seen.ProofErr, seen.ProofJTI = err, c.JTI
	}
	s.mu.Lock()
	n := len(s.seen)
	s.seen = append(s.seen, seen)
	h := s.handler
	s.mu.Unlock()
	h(w, r, n, seen)
}

func (s *clientTestServer) Seen() []clientSeen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// clientWriteProblem answers a problem.
func clientWriteProblem(w http.ResponseWriter, status int, code, reason string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(delivery.Problem{Title: http.StatusText(status), Status: status, Code: code, Reason: reason,
		CorrelationID: "corr-1"})
}

func clientWriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// clientLogBuffer collects log lines of concurrent writers.
type clientLogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *clientLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *clientLogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *clientLogBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// clientTestSettings are DefaultSettings with three attempts.
func clientTestSettings() *Settings {
	s := DefaultSettings()
	s.RetryMaxAttempts = 3
	return &s
}

func newClientForTest(t *testing.T, base string, creds Credentials, opts *ClientOptions) *Client {
	t.Helper()
	if opts == nil {
		opts = &ClientOptions{}
	}
	if opts.Settings == nil {
		opts.Settings = clientTestSettings()
	}
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(1, 2))
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := NewClient(base, creds, opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

func clientBearer() Credentials { return Credentials{APIToken: secret.New(clientTestToken)} }

func TestClientBaseURLLoopbackOnly(t *testing.T) {
	cases := []struct {
		url  string
		ok   bool
		want string
	}{
		{"http://127.0.0.1:8080", true, "http://127.0.0.1:8080"},
		{"http://127.0.0.1:8080/", true, "http://127.0.0.1:8080"},
		{"http://[::1]:9000/prefix/", true, "http://[::1]:9000/prefix"},
		{"http://localhost", true, "http://localhost"},
		{"HTTP://LocalHost:1", true, "http://LocalHost:1"},
		{"https://platform.example.com", true, "https://platform.example.com"},
		{"https://10.0.0.5:8443/novaos", true, "https://10.0.0.5:8443/novaos"},
		{"http://platform.example.com", false, ""},
		{"http://127.0.0.2", false, ""},
		{"http://10.0.0.1", false, ""},
		{"http://localhost.example.com", false, ""},
		{"http://0.0.0.0", false, ""},
		{"ws://127.0.0.1", false, ""},
		{"ftp://127.0.0.1", false, ""},
		{"/api", false, ""},
		{"https://user:hunter2pass@platform.example.com", false, ""},
		{"https://platform.example.com?x=1", false, ""},
		{"https://platform.example.com#frag", false, ""},
		{"", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			c, err := NewClient(tc.url, clientBearer(), nil)
			if (err == nil) != tc.ok {
				t.Fatalf("NewClient(%q) error = %v, want ok=%v", tc.url, err, tc.ok)
			}
			if err != nil {
				if strings.Contains(err.Error(), "hunter2pass") {
					t.Fatalf("error quotes the URL's password: %v", err)
				}
				return
			}
			if c.BaseURL() != tc.want {
				t.Fatalf("BaseURL = %q, want %q", c.BaseURL(), tc.want)
			}
		})
	}
}

func TestClientNewClientRefuses(t *testing.T) {
	key, err := dpop.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	bad := DefaultSettings()
	bad.RetryMaxAttempts = 0
	cases := []struct {
		name  string
		creds Credentials
		opts  *ClientOptions
	}{
		{"token with newline", Credentials{APIToken: secret.New("abc\r\ndef-secret-value")}, nil},
		{"dpop without token", Credentials{DPoP: key}, nil},
		{"no attempts", clientBearer(), &ClientOptions{Settings: &bad}},
		{"user agent with space", clientBearer(), &ClientOptions{UserAgent: delivery.NameVersion{Name: "my adapter"}}},
		{"user agent version only", clientBearer(), &ClientOptions{UserAgent: delivery.NameVersion{Version: "1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient("http://127.0.0.1:1", tc.creds, tc.opts)
			if err == nil {
				t.Fatal("NewClient succeeded")
			}
			if strings.Contains(err.Error(), "secret-value") {
				t.Fatalf("error shows the token: %v", err)
			}
		})
	}
}

func TestClientBearerAndUserAgent(t *testing.T) {
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, _ clientSeen) {
		clientWriteJSON(w, delivery.Run{ID: "run-1", State: delivery.RunQueued, Version: 3})
	})
	c := newClientForTest(t, srv.URL, clientBearer(), &ClientOptions{UserAgent: delivery.NameVersion{Name: "lotse", Version: "1.4.0"}})
	run, err := c.GetRun(context.Background(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if run.ID != "run-1" || run.Version != 3 {
		t.Fatalf("GetRun = %+v", run)
	}
	seen := srv.Seen()[0]
	if got := seen.Header.Get("Authorization"); got != "Bearer "+clientTestToken {
		t.Fatalf("Authorization = %s, want Bearer with the token", clientFingerprint(got))
	}
	if seen.Header.Get(dpop.Header) != "" {
		t.Fatal("a Bearer request carries a DPoP proof")
	}
	ua := regexp.MustCompile(`^lotse/1\.4\.0 novaos-adapter/[0-9A-Za-z.+_~!-]+ \(go[^ ;]+; [a-z0-9]+/[a-z0-9]+\)$`)
	if got := seen.Header.Get("User-Agent"); !ua.MatchString(got) {
		t.Fatalf("User-Agent = %q", got)
	}
	if got := seen.Header.Get("Accept"); !strings.Contains(got, "application/problem+json") {
		t.Fatalf("Accept = %q", got)
	}
	if seen.Header.Get(delivery.InvocationTokenHeader) != "" || seen.Header.Get(delivery.IdempotencyKeyHeader) != "" {
		t.Fatal("a GET outside a run carries an invocation token or idempotency key")
	}
}

// TestClientFreshProofOnce checks a proof refused with a good token
// (stale on arrival) is repeated once with a new proof, and that a second
// refusal, or a refused token, is the caller's error.
func TestClientFreshProofOnce(t *testing.T) {
	key, err := dpop.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	clock := newClientTestClock(false)
	var mu sync.Mutex
	refusals, reason := 0, delivery.InvalidDPoPProof
	srv := newClientTestServer(t, key, clock, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		mu.Lock()
		defer mu.Unlock()
		if refusals > 0 {
			refusals--
			clientWriteProblem(w, 401, delivery.CodeUnauthenticated, reason)
			return
		}
		clientWriteJSON(w, delivery.Run{ID: "run-1"})
	})
	settings := DefaultSettings()
	settings.RetryMaxAttempts = 1 // the fresh proof is not a retry
	c := newClientForTest(t, srv.URL, Credentials{APIToken: secret.New(clientTestToken), DPoP: key},
		&ClientOptions{Clock: clock, Settings: &settings})
	for _, tc := range []struct {
		name     string
		refusals int
		reason   string
		requests int
		ok       bool
	}{
		{"one stale proof", 1, delivery.InvalidDPoPProof, 2, true},
		{"two stale proofs", 2, delivery.InvalidDPoPProof, 2, false},
		{"a refused token", 1, "", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			refusals, reason = tc.refusals, tc.reason
			mu.Unlock()
			before := len(srv.Seen())
			_, err := c.GetRun(context.Background(), "run-1")
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrUnauthenticated)) {
				t.Fatalf("error = %v, want ok = %v", err, tc.ok)
			}
			seen := srv.Seen()[before:]
			if len(seen) != tc.requests {
				t.Fatalf("%d requests, want %d", len(seen), tc.requests)
			}
			if len(seen) == 2 && seen[0].ProofJTI == seen[1].ProofJTI {
				t.Fatal("the repeat carried the refused proof")
			}
		})
	}
}

func TestClientDPoPProofsAndNonce(t *testing.T) {
	key, err := dpop.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	clock := newClientTestClock(false)
	var mu sync.Mutex
	nonce := "nonce-1"
	alwaysStale := false
	srv := newClientTestServer(t, key, clock, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		if seen.ProofErr != nil {
			clientWriteProblem(w, 401, delivery.CodeUnauthenticated, "")
			return
		}
		var claims struct {
			Nonce string `json:"nonce"`
		}
		clientDecodeJWTPart(t, r.Header.Get(dpop.Header), 1, &claims)
		mu.Lock()
		defer mu.Unlock()
		if claims.Nonce != nonce || alwaysStale {
			if alwaysStale {
				nonce += "x"
			}
			w.Header().Set(dpop.NonceHeader, nonce)
			clientWriteProblem(w, 401, delivery.CodeUseDPoPNonce, "")
			return
		}
		// Every good answer rotates the nonce: the next request must
		// use the new one without another refusal.
		nonce = fmt.Sprintf("nonce-%d", n+2)
		w.Header().Set(dpop.NonceHeader, nonce)
		clientWriteJSON(w, delivery.Run{ID: "run-1"})
	})
	settings := DefaultSettings()
	settings.RetryMaxAttempts = 1 // the nonce repeat is not a retry
	c := newClientForTest(t, srv.URL, Credentials{APIToken: secret.New(clientTestToken), DPoP: key},
		&ClientOptions{Clock: clock, Settings: &settings})
	ctx := context.Background()

	if _, err := c.GetRun(ctx, "run-1"); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if got := len(srv.Seen()); got != 2 {
		t.Fatalf("first call made %d requests, want 2 (refused for the nonce, then repeated)", got)
	}
	if _, err := c.GetRun(ctx, "run-1"); err != nil {
		t.Fatalf("second call: %v", err)
	}
	if got := len(srv.Seen()); got != 3 {
		t.Fatalf("after the second call %d requests, want 3 (the rotated nonce used at once)", got)
	}

	mu.Lock()
	alwaysStale = true
	mu.Unlock()
	_, err = c.GetRun(ctx, "run-1")
	if !errors.Is(err, ErrUseDPoPNonce) || !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a second use_dpop_nonce: error = %v, want ErrUseDPoPNonce", err)
	}
	seen := srv.Seen()
	if len(seen) != 5 {
		t.Fatalf("the stale-nonce call made %d requests, want 2", len(seen)-3)
	}
	jtis := map[string]bool{}
	for i, s := range seen {
		if s.ProofErr != nil {
			t.Fatalf("request %d: proof refused: %v", i, s.ProofErr)
		}
		if got := s.Header.Get("Authorization"); got != "DPoP "+clientTestToken {
			t.Fatalf("request %d: Authorization = %s, want DPoP with the token", i, clientFingerprint(got))
		}
		if jtis[s.ProofJTI] {
			t.Fatalf("request %d: a proof's jti repeats: every attempt needs a fresh proof", i)
		}
		jtis[s.ProofJTI] = true
	}
}

// clientDecodeJWTPart decodes part i of a compact JWS.
func clientDecodeJWTPart(t *testing.T, jws string, i int, v any) {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS (%d parts)", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func TestClientProofURLAndClaims(t *testing.T) {
	key, err := dpop.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	clock := newClientTestClock(false)
	srv := newClientTestServer(t, key, clock, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		clientWriteJSON(w, delivery.EventPage{})
	})
	c := newClientForTest(t, srv.URL, Credentials{APIToken: secret.New(clientTestToken), DPoP: key}, &ClientOptions{Clock: clock})
	if _, err := c.PollEvents(context.Background(), "agent/1", "alpha", 10, time.Second); err != nil {
		t.Fatal(err)
	}
	s := srv.Seen()[0]
	if s.ProofErr != nil {
		t.Fatalf("proof refused: %v", s.ProofErr)
	}
	var claims struct {
		HTM string `json:"htm"`
		HTU string `json:"htu"`
		IAT int64  `json:"iat"`
		JTI string `json:"jti"`
	}
	clientDecodeJWTPart(t, s.Header.Get(dpop.Header), 1, &claims)
	wantHTU := srv.URL + "/api/v1/delivery/agents/agent%2F1/consumers/alpha/events"
	if claims.HTM != "GET" || claims.HTU != wantHTU || claims.IAT != clock.Now().Unix() {
		t.Fatalf("claims htm=%q htu=%q iat=%d, want GET %q %d", claims.HTM, claims.HTU, claims.IAT, wantHTU, clock.Now().Unix())
	}
	if len(claims.JTI) != 36 || claims.JTI[14] != '7' {
		t.Fatalf("jti %q is not a UUIDv7", claims.JTI)
	}
	if s.Query != "limit=10&wait=1" {
		t.Fatalf("query = %q", s.Query)
	}
}

func TestClientRunBinding(t *testing.T) {
	var mu sync.Mutex
	current := clientTestInvToken
	tokenFn := func() string {
		mu.Lock()
		defer mu.Unlock()
		return current
	}
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		if n == 2 {
			// The token is renewed while the call is retried: the retry
			// must carry the new one.
			mu.Lock()
			current = clientTestInvNewer
			mu.Unlock()
			clientWriteProblem(w, 502, "", "")
			return
		}
		clientWriteJSON(w, delivery.Run{ID: "run-1"})
	})
	c := newClientForTest(t, srv.URL, clientBearer(), &ClientOptions{Clock: newClientTestClock(false)})
	ctx := context.Background()
	bound := WithRun(ctx, "run-1", tokenFn)
	if id, ok := BoundRun(bound); !ok || id != "run-1" {
		t.Fatalf("BoundRun = %q, %v", id, ok)
	}
	if _, ok := BoundRun(ctx); ok {
		t.Fatal("an unbound context reports a run")
	}
	if _, err := c.GetRun(ctx, "run-1"); err != nil { // 0: unbound
		t.Fatal(err)
	}
	if _, err := c.GetRunContext(bound, "run-1"); err != nil { // 1: bound
		t.Fatal(err)
	}
	if _, err := c.StartRun(bound, "run-1", delivery.RunStart{}); err != nil { // 2 (502), 3: renewed
		t.Fatal(err)
	}
	child, cancel := context.WithTimeout(bound, time.Minute)
	defer cancel()
	if _, err := c.AckEvents(child, "agent-1", "alpha", 4); err != nil { // 4: a derived context stays bound
		t.Fatal(err)
	}
	if _, err := c.Triggerers(ctx, "agent-1"); err != nil { // 5: unbound again
		t.Fatal(err)
	}
	want := []string{"", clientTestInvToken, clientTestInvToken, clientTestInvNewer, clientTestInvNewer, ""}
	seen := srv.Seen()
	if len(seen) != len(want) {
		t.Fatalf("%d requests, want %d", len(seen), len(want))
	}
	for i, s := range seen {
		got := s.Header.Get(delivery.InvocationTokenHeader)
		if got != want[i] {
			t.Errorf("request %d (%s %s): %s = %s, want %s", i, s.Method, s.Path, delivery.InvocationTokenHeader,
				clientFingerprint(got), clientFingerprint(want[i]))
		}
	}
	if delivery.InvocationTokenHeader != "Invocation-Token" {
		t.Fatalf("header name %q", delivery.InvocationTokenHeader)
	}
	// A binding whose token is empty sends none.
	empty := WithRun(ctx, "run-2", func() string { return "" })
	if _, err := c.GetRun(empty, "run-2"); err != nil {
		t.Fatal(err)
	}
	if got := srv.Seen()[len(want)].Header.Values(delivery.InvocationTokenHeader); len(got) != 0 {
		t.Fatal("an empty token was sent")
	}
}

func TestClientTypedMethodsCoverEveryRoute(t *testing.T) {
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x"}`)
	})
	c := newClientForTest(t, srv.URL, clientBearer(), nil)
	ctx := WithRun(context.Background(), "r1", func() string { return clientTestInvToken })
	calls := []func() error{
		func() error { _, err := c.Discover(ctx); return err },
		func() error { _, err := c.PollEvents(ctx, "a1", "alpha", 0, 0); return err },
		func() error { _, err := c.AckEvents(ctx, "a1", "alpha", 3); return err },
		func() error { _, err := c.ConsumerState(ctx, "a1", "alpha"); return err },
		func() error {
			_, err := c.SendHeartbeat(ctx, "a1", delivery.Heartbeat{Status: delivery.HeartbeatOK})
			return err
		},
		func() error { _, err := c.Triggerers(ctx, "a1"); return err },
		func() error { _, err := c.CreateToken(ctx, "a1", delivery.TokenCreate{DPoPJKT: "jkt"}); return err },
		func() error { _, err := c.RewindConsumer(ctx, "a1", "main", 3); return err },
		func() error { _, err := c.GetRun(ctx, "r1"); return err },
		func() error { _, err := c.PatchRun(ctx, "r1", delivery.RunPatch{BaseVersion: 1}); return err },
		func() error { _, err := c.GetRunContext(ctx, "r1"); return err },
		func() error { _, err := c.StartRun(ctx, "r1", delivery.RunStart{}); return err },
		func() error { _, err := c.ResumeRun(ctx, "r1", delivery.RunResume{}); return err },
		func() error { _, err := c.RenewInvocationToken(ctx, "r1"); return err },
		func() error { _, err := c.AwaitRunInput(ctx, "r1", delivery.RunAwaitInput{}); return err },
		func() error {
			_, err := c.FinishRun(ctx, "r1", delivery.RunFinish{State: delivery.RunCompleted})
			return err
		},
		func() error { _, err := c.CreateMessage(ctx, delivery.MessageCreate{ThreadID: "t1"}); return err },
	}
	for i, call := range calls {
		if err := call(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	reached := map[string]bool{}
	for _, s := range srv.Seen() {
		r, ok := clientRouteOf(s.Method, s.Path)
		if !ok {
			t.Fatalf("%s %s is no route of the API", s.Method, s.Path)
		}
		reached[r.OperationID] = true
		needsKey := (s.Method == "POST" || s.Method == "PATCH") && r.ExemptReason == ""
		if got := s.Header.Get(delivery.IdempotencyKeyHeader) != ""; got != needsKey {
			t.Errorf("%s: Idempotency-Key sent = %v, want %v", r.OperationID, got, needsKey)
		}
		if len(s.Body) > 0 && s.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: body without a JSON Content-Type", r.OperationID)
		}
	}
	for _, r := range delivery.Routes {
		if r.OperationID == "getJwks" {
			continue // the verifier fetches keys from JWKSURL
		}
		if !reached[r.OperationID] {
			t.Errorf("no typed method reaches %s", r.OperationID)
		}
	}
	var m delivery.MessageCreate
	for _, s := range srv.Seen() {
		if s.Path == delivery.MessagesPath {
			_ = json.Unmarshal(s.Body, &m)
		}
	}
	if len(m.ClientMsgID) != 36 {
		t.Fatalf("CreateMessage sent client_msg_id %q, want a new UUIDv7", m.ClientMsgID)
	}
}

func TestClientJWKSURL(t *testing.T) {
	c := newClientForTest(t, "https://platform.example.com/novaos/", clientBearer(), nil)
	cases := []struct {
		ref, want string
		ok        bool
	}{
		{"", "https://platform.example.com/novaos" + delivery.JWKSPath, true},
		{"/api/v1/delivery/jwks", "https://platform.example.com/novaos/api/v1/delivery/jwks", true},
		{"keys.json", "https://platform.example.com/novaos/keys.json", true},
		{"https://keys.example.com/jwks", "https://keys.example.com/jwks", true},
		{"http://127.0.0.1:8080/jwks", "http://127.0.0.1:8080/jwks", true},
		{"http://keys.example.com/jwks", "", false},
		{"//keys.example.com/jwks", "https://keys.example.com/jwks", true},
		{"ftp://keys.example.com/jwks", "", false},
	}
	for _, tc := range cases {
		got, err := c.JWKSURL(delivery.Discovery{JWKSURI: tc.ref})
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("JWKSURL(%q) = %q, %v; want %q ok=%v", tc.ref, got, err, tc.want, tc.ok)
		}
	}
}

func TestClientDeprecationWarnedOnce(t *testing.T) {
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		w.Header().Set("Deprecation", "@1767225600")
		w.Header().Set("Sunset", "Wed, 01 Jul 2026 00:00:00 GMT")
		clientWriteJSON(w, delivery.Run{ID: "x"})
	})
	var logs clientLogBuffer
	var notices []DeprecationNotice
	c := newClientForTest(t, srv.URL, clientBearer(), &ClientOptions{Logger: logs.logger(),
		OnDeprecation: func(n DeprecationNotice) { notices = append(notices, n) }})
	ctx := context.Background()
	for _, id := range []string{"r1", "r2", "r3"} {
		if _, err := c.GetRun(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.GetRunContext(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PatchRun(ctx, "r1", delivery.RunPatch{}); err != nil {
		t.Fatal(err)
	}
	want := []DeprecationNotice{
		{"getRun", "GET", "/api/v1/delivery/runs/{run}", "@1767225600", "Wed, 01 Jul 2026 00:00:00 GMT"},
		{"getRunContext", "GET", "/api/v1/delivery/runs/{run}/context", "@1767225600", "Wed, 01 Jul 2026 00:00:00 GMT"},
		{"patchRun", "PATCH", "/api/v1/delivery/runs/{run}", "@1767225600", "Wed, 01 Jul 2026 00:00:00 GMT"},
	}
	if !slices.Equal(notices, want) {
		t.Fatalf("notices = %+v, want %+v", notices, want)
	}
	if got := strings.Count(logs.String(), "deprecates an operation"); got != 3 {
		t.Fatalf("%d warnings logged, want 3:\n%s", got, logs.String())
	}
	// A second client warns again: once per client.
	c2 := newClientForTest(t, srv.URL, clientBearer(), &ClientOptions{Logger: logs.logger()})
	if _, err := c2.GetRun(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(logs.String(), "deprecates an operation"); got != 4 {
		t.Fatalf("%d warnings logged, want 4", got)
	}
}

func TestClientNoRedirect(t *testing.T) {
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		if r.URL.Path == "/elsewhere" {
			clientWriteJSON(w, delivery.Run{ID: "x"})
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	})
	c := newClientForTest(t, srv.URL, clientBearer(), nil)
	ctx := WithRun(context.Background(), "r1", func() string { return clientTestInvToken })
	_, err := c.GetRun(ctx, "r1")
	var pe *ProblemError
	if !errors.As(err, &pe) || pe.Status != http.StatusTemporaryRedirect {
		t.Fatalf("error = %v, want a 307 refusal", err)
	}
	if got := len(srv.Seen()); got != 1 {
		t.Fatalf("%d requests: the redirect was followed", got)
	}
}

func TestClientResponseCapped(t *testing.T) {
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"`+strings.Repeat("x", 4096)+`"}`)
	})
	c := newClientForTest(t, srv.URL, clientBearer(), &ClientOptions{MaxResponseBytes: 1024})
	if _, err := c.GetRun(context.Background(), "r1"); !errors.Is(err, ErrMalformedResponse) {
		t.Fatalf("error = %v, want ErrMalformedResponse", err)
	}
	if got := len(srv.Seen()); got != 1 {
		t.Fatalf("%d attempts, want 1: an oversized answer is not retried", got)
	}
}

func TestClientMalformedAnswers(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		ok     bool
	}{
		{"wrong type", 200, `{"version":"three"}`, false},
		{"not json", 200, `<html>`, false},
		{"empty 200", 200, ``, false},
		{"204", 204, ``, true},
		{"unknown members", 200, `{"id":"r1","new_member":{"a":1}}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			c := newClientForTest(t, srv.URL, clientBearer(), nil)
			_, err := c.GetRun(context.Background(), "r1")
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrMalformedResponse)) {
				t.Fatalf("error = %v, want ok=%v or ErrMalformedResponse", err, tc.ok)
			}
		})
	}
}

func TestClientDoRefusesBadRequests(t *testing.T) {
	c := newClientForTest(t, "http://127.0.0.1:1", clientBearer(), nil)
	ctx := context.Background()
	for _, tc := range []struct{ method, path string }{
		{"GET", "https://evil.example.com/x"},
		{"GET", "//evil.example.com/x"},
		{"GET", "relative"},
		{"GET", "/a b"},
		{"GET", "/a\r\nX-Injected: 1"},
		{"get", "/x"},
		{"GE T", "/x"},
	} {
		if err := c.Do(ctx, tc.method, tc.path, nil, nil); err == nil {
			t.Errorf("Do(%q, %q) succeeded", tc.method, tc.path)
		}
	}
	bad := WithIdempotencyKey(ctx, "two words")
	if _, err := c.StartRun(bad, "r1", delivery.RunStart{}); err == nil {
		t.Error("an Idempotency-Key with a space was sent")
	}
	badTok := WithRun(ctx, "r1", func() string { return "tok\nX-Injected: 1" })
	if _, err := c.GetRun(badTok, "r1"); err == nil || strings.Contains(err.Error(), "tok") && strings.Contains(err.Error(), "Injected") {
		t.Errorf("an invocation token with a newline: error = %v", err)
	}
}

// TestClientNoSecretInOutput drives a DPoP client through refusals,
// retries, deprecations, a polling source and a dead server, against a
// platform that echoes every credential it is sent, and looks for any
// token, proof or key in every error, log line and printed value.
func TestClientNoSecretInOutput(t *testing.T) {
	key, err := dpop.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, _ := key.MarshalPEM()
	clock := newClientTestClock(false)
	var mu sync.Mutex
	var proofs []string
	polls := 0
	srv := newClientTestServer(t, key, clock, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		mu.Lock()
		proofs = append(proofs, r.Header.Get(dpop.Header))
		if strings.HasSuffix(r.URL.Path, "/events") {
			polls++
		}
		poll := polls
		mu.Unlock()
		echo := r.Header.Get("Authorization") + " " + r.Header.Get(dpop.Header) + " " + r.Header.Get(delivery.InvocationTokenHeader)
		w.Header().Set("Deprecation", "true")
		w.Header().Set(dpop.NonceHeader, fmt.Sprintf("n-%d", n))
		status, code := 502, ""
		switch {
		case strings.HasSuffix(r.URL.Path, "/start"):
			status, code = 403, delivery.CodeInvocationTokenInvalid
		case strings.HasSuffix(r.URL.Path, "/events") && poll > 3: // the client's 3 attempts fail once
			clientWriteJSON(w, pollEvents(1))
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "code": code, "title": echo, "detail": echo,
			"reason": r.Header.Get(delivery.InvocationTokenHeader), "correlation_id": echo,
			"errors":  []map[string]string{{"code": echo, "pointer": echo, "detail": echo}},
			"current": map[string]string{"id": "r1", "echo": echo}})
	})
	var logs clientLogBuffer
	creds := Credentials{APIToken: secret.New(clientTestToken), DPoP: key}
	opts := &ClientOptions{Clock: clock, Logger: logs.logger()}
	c := newClientForTest(t, srv.URL, creds, opts)
	ctx := WithRun(context.Background(), "r1", func() string { return clientTestInvToken })

	var errs []error
	_, err = c.GetRun(ctx, "r1")
	errs = append(errs, err)
	_, err = c.StartRun(ctx, "r1", delivery.RunStart{})
	errs = append(errs, err)
	src, err := NewPollingSource(c, "agent-1", "alpha", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	dead := newClientForTest(t, "http://127.0.0.1:1", creds, &ClientOptions{Clock: clock, Logger: logs.logger()})
	_, err = dead.GetRun(ctx, "r1")
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Fatalf("call %d succeeded", i)
		}
	}
	var pe *ProblemError
	if !errors.As(errs[1], &pe) {
		t.Fatalf("StartRun: %v", errs[1])
	}

	var out strings.Builder
	out.WriteString(logs.String())
	for _, v := range []any{errs[0], errs[1], errs[2], pe, pe.Problem, c, src, creds, opts, struct {
		C *Client
		S *PollingSource
	}{c, src}} {
		fmt.Fprintf(&out, "%v\n%+v\n%#v\n%s\n", v, v, v, v)
	}
	text := out.String()
	mu.Lock()
	secrets := append([]string{clientTestToken, clientTestInvToken, string(pemBytes[40:80])}, proofs...)
	mu.Unlock()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Fatalf("output shows a secret (%s)", clientFingerprint(s))
		}
	}
	for _, want := range []string{"retrying a call", "deprecates an operation", "polling failed"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the logs miss %q: the test did not reach what it checks", want)
		}
	}
}

func TestClientPollEventsParameters(t *testing.T) {
	srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
		clientWriteJSON(w, delivery.EventPage{})
	})
	c := newClientForTest(t, srv.URL, clientBearer(), nil) // HTTPTimeout 30s
	cases := []struct {
		limit int
		wait  time.Duration
		query string
	}{
		{0, 0, ""},
		{10, 0, "limit=10"},
		{10_000, 0, "limit=500"},
		{0, 500 * time.Millisecond, ""},
		{0, 1500 * time.Millisecond, "wait=1"},
		{0, 10 * time.Second, "wait=10"},
		{0, time.Hour, "wait=15"},
		{-1, -time.Second, ""},
	}
	for i, tc := range cases {
		if _, err := c.PollEvents(context.Background(), "a1", "alpha", tc.limit, tc.wait); err != nil {
			t.Fatal(err)
		}
		if got := srv.Seen()[i].Query; got != tc.query {
			t.Errorf("PollEvents(limit %d, wait %v) sent %q, want %q", tc.limit, tc.wait, got, tc.query)
		}
	}
}
