package app_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/secret"
)

func TestRegistryRestartSQLite(t *testing.T) {
	dir := t.TempDir()
	testRegistryRestart(t, func() *app.Options { return &app.Options{DataDir: dir} })
}

func TestRegistryRestartPostgres(t *testing.T) {
	url := pgtest.URL(t)
	testRegistryRestart(t, func() *app.Options {
		return &app.Options{DataDir: t.TempDir(), Database: app.DatabaseOptions{URL: url}}
	})
}

func registryClient(t *testing.T, srv *app.Server) *registry.Client {
	t.Helper()
	// The servers of these tests live on loopback: opt in.
	c, err := registry.NewClient(srv.URL(), &registry.ClientOptions{Policy: &registry.Policy{AllowLoopback: true}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type listed struct{ Name, URL, Desc string }

func listAll(t *testing.T, c *registry.Client) []listed {
	t.Helper()
	var out []listed
	for a, err := range c.All(t.Context(), "", nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, listed{a.Name, a.URL, a.Description})
	}
	return out
}

// testRegistryRestart registers an agent through one server and finds it,
// with the hosted agents at the new server's URLs, through a second server
// on the same database.
func testRegistryRestart(t *testing.T, opts func() *app.Options) {
	first := start(t, opts())
	c := registryClient(t, first)
	hosted := func(base string) []listed {
		return []listed{
			{"ask", base + "/agents/ask", "Asks what to call you, then answers: a human-in-the-loop example."},
			{"echo", base + "/agents/echo", "Answers with the text it receives; streams it word by word."},
			{"tck", base + "/agents/tck", "A2A TCK conformance system under test"},
		}
	}
	got := listAll(t, c)
	want := hosted(first.URL())
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2].Name != "tck" || got[2].URL != want[2].URL {
		t.Fatalf("first start lists %+v, want the hosted agents %+v", got, want)
	}
	want[2].Desc = got[2].Desc

	// Every hosted agent is found by its skill and reachable at its URL.
	m, err := c.Find(t.Context(), registry.FindQuery{Capabilities: []string{"Echo"}})
	if err != nil || len(m) != 1 || m[0].Agent.Name != "echo" {
		t.Fatalf("Find(echo) = %+v, %v", m, err)
	}
	ac, err := c.Connect(t.Context(), "echo", nil)
	if err != nil {
		t.Fatalf("Connect(echo): %v", err)
	}
	if res, err := ac.SendText(t.Context(), "ping", "", ""); err != nil || res.Task.Artifacts[0].Parts[0].Text != "ping" {
		t.Fatalf("SendText through the registry: %+v, %v", res, err)
	}

	reg, err := c.Register(t.Context(), &registry.Agent{Name: "weather", URL: "http://127.0.0.1:9/a2a",
		Description: "Forecasts", Capabilities: []string{"Weather Forecast"}, Tags: []string{"beta"}})
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	second := start(t, opts())
	if second.URL() == first.URL() {
		t.Fatalf("both servers at %s; the test needs distinct ports", first.URL())
	}
	c = registryClient(t, second)
	wantAfter := append(hosted(second.URL()), listed{"weather", "http://127.0.0.1:9/a2a", "Forecasts"})
	wantAfter[2].Desc = want[2].Desc
	if diff := cmp.Diff(wantAfter, listAll(t, c)); diff != "" {
		t.Errorf("after restart (-want +got):\n%s", diff)
	}
	got2, err := c.Get(t.Context(), reg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(reg, got2); diff != "" {
		t.Errorf("registered agent after restart (-want +got):\n%s", diff)
	}
}

func TestRegistryPolicy(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir(),
		Registry: app.RegistryOptions{Policy: &registry.Policy{AllowedHostSuffixes: []string{".agents.example.com"}}},
	})
	c := registryClient(t, srv)
	// Hosted agents are recorded at their loopback URLs whatever the policy.
	if a, err := c.Get(t.Context(), "echo"); err != nil || a.URL != srv.URL()+"/agents/echo" {
		t.Fatalf("Get(echo) = %+v, %v", a, err)
	}
	ctx := t.Context()
	// The client refuses loopback by default; use the raw API path through
	// a permissive client to reach the server's own check.
	loose, _ := registry.NewClient(srv.URL(), &registry.ClientOptions{Policy: &registry.Policy{AllowLoopback: true, AllowPrivate: true}})
	for _, u := range []string{"http://127.0.0.1:9/", "https://agent.example.net/", "http://10.0.0.1/"} {
		if _, err := loose.Register(ctx, &registry.Agent{Name: "x", URL: u}); !errors.Is(err, registry.ErrURLNotAllowed) {
			t.Errorf("Register(%s) = %v, want ErrURLNotAllowed", u, err)
		}
	}
	if _, err := c.Register(ctx, &registry.Agent{Name: "ok", URL: "https://ok.agents.example.com/"}); err != nil {
		t.Errorf("Register inside the suffixes: %v", err)
	}
	// The hosted agents' records are the server's own.
	if _, err := c.Update(ctx, "echo", &registry.Agent{URL: "https://evil.agents.example.com/"}); !errors.Is(err, registry.ErrReadOnly) {
		t.Errorf("Update(echo) = %v, want ErrReadOnly", err)
	}
	if err := c.Delete(ctx, "tck"); !errors.Is(err, registry.ErrReadOnly) {
		t.Errorf("Delete(tck) = %v, want ErrReadOnly", err)
	}
}

// Options.RegistryLoopbackIfLocal adds loopback hosts to a policy when the
// server is on loopback; without it the policy is taken as it is.
func TestRegistryLoopbackIfLocal(t *testing.T) {
	tests := []struct {
		name   string
		policy *registry.Policy
		local  bool
		want   map[string]bool // URL: accepted
	}{
		{"default policy", nil, false,
			map[string]bool{"http://127.0.0.1:9/": true, "http://10.0.0.1/": false, "https://a.example.net/": true}},
		{"private, loopback if local", &registry.Policy{AllowPrivate: true}, true,
			map[string]bool{"http://127.0.0.1:9/": true, "http://10.0.0.1/": true, "https://a.example.net/": true}},
		{"private only", &registry.Policy{AllowPrivate: true}, false,
			map[string]bool{"http://127.0.0.1:9/": false, "http://10.0.0.1/": true}},
		{"suffixes, loopback if local", &registry.Policy{AllowedHostSuffixes: []string{"localhost", ".agents.example.com"}}, true,
			map[string]bool{"http://localhost:9/": true, "http://127.0.0.1:9/": false, "https://a.agents.example.com/": true, "https://a.example.net/": false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := start(t, &app.Options{DataDir: t.TempDir(), Registry: app.RegistryOptions{Policy: tc.policy, LoopbackIfLocal: tc.local}})
			loose, _ := registry.NewClient(srv.URL(), &registry.ClientOptions{Policy: &registry.Policy{AllowLoopback: true, AllowPrivate: true}})
			for u, ok := range tc.want {
				_, err := loose.Register(t.Context(), &registry.Agent{Name: "x", URL: u})
				if ok && err != nil || !ok && !errors.Is(err, registry.ErrURLNotAllowed) {
					t.Errorf("Register(%s) = %v, want accepted %v", u, err, ok)
				}
				if err == nil {
					if err := loose.Delete(t.Context(), "x"); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
	if tests[1].policy.AllowLoopback {
		t.Error("the server changed the caller's policy")
	}
}

// lockedBuffer collects the server's logs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The admin token guards the registry's writes through the real server,
// and the startup log says which rule is in effect without showing it.
func TestRegistryAdminToken(t *testing.T) {
	const token = "adm-3d1f0c9b8a7e6d5c"
	for _, tc := range []struct {
		name  string
		token secret.Value
		log   string
	}{
		{"token", secret.New(token), `"msg":"registry: writes need the admin token","writes":"admin-token"`},
		{"no token", secret.Value{}, `"msg":"registry: writes are accepted from loopback peers only (no admin token configured)","writes":"loopback-only"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs lockedBuffer
			srv := start(t, &app.Options{DataDir: t.TempDir(), AdminToken: tc.token,
				Logger:   slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
				Registry: app.RegistryOptions{Policy: &registry.Policy{AllowedHostSuffixes: []string{".agents.example.com"}}},
			})
			client := func(authorization string) *registry.Client {
				h := http.Header{}
				if authorization != "" {
					h.Set("Authorization", authorization)
				}
				c, err := registry.NewClient(srv.URL(), &registry.ClientOptions{Header: h})
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			anon, wrong, right := client(""), client("Bearer "+token[:len(token)-1]+"0"), client("Bearer "+token)
			if n := strings.Count(logs.String(), tc.log); n != 1 {
				t.Errorf("startup logged the write rule %d times, want once:\n%s", n, logs.String())
			}
			ctx := t.Context()
			agent := &registry.Agent{Name: "w", URL: "https://w.agents.example.com/"}
			if tc.token.IsZero() {
				// Loopback peers write without a token.
				if _, err := anon.Register(ctx, agent); err != nil {
					t.Fatalf("Register from loopback without a token: %v", err)
				}
				return
			}
			for name, c := range map[string]*registry.Client{"no token": anon, "wrong token": wrong} {
				_, err := c.Register(ctx, agent)
				if p, ok := registry.AsProblem(err); !ok || p.Status != http.StatusUnauthorized || p.Type != registry.ProblemUnauthorized {
					t.Errorf("Register with %s: got a %T, want a 401 problem", name, err)
				}
				if err := c.Delete(ctx, "nobody"); !isStatus(err, http.StatusUnauthorized) {
					t.Errorf("Delete with %s: got a %T, want a 401 problem", name, err)
				}
			}
			// Reads stay open.
			if _, err := anon.Get(ctx, "echo"); err != nil {
				t.Errorf("Get without a token: %v", err)
			}
			// The policy still applies to an authorized write.
			if _, err := right.Register(ctx, &registry.Agent{Name: "x", URL: "https://x.example.net/"}); !errors.Is(err, registry.ErrURLNotAllowed) {
				t.Errorf("Register outside the suffixes with the token = %v, want ErrURLNotAllowed", err)
			}
			if _, err := right.Register(ctx, agent); err != nil {
				t.Errorf("Register with the token: %v", err)
			}
			if _, err := right.Update(ctx, "w", &registry.Agent{URL: "https://w2.agents.example.com/"}); err != nil {
				t.Errorf("Update with the token: %v", err)
			}
			if err := right.Delete(ctx, "w"); err != nil {
				t.Errorf("Delete with the token: %v", err)
			}
			if strings.Contains(logs.String(), token[4:]) {
				t.Error("the server's logs show the admin token")
			}
		})
	}
}

func isStatus(err error, status int) bool {
	p, ok := registry.AsProblem(err)
	return ok && p.Status == status
}
