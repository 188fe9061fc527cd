package registry_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/registry"
)

// server runs a registry service with policy behind a counter of the
// requests that reached it.
func server(t *testing.T, policy *registry.Policy) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	svc := registrysvc.New(registrysvc.NewMemoryStore(), &registrysvc.Options{Policy: policy})
	var hits atomic.Int64
	h := svc.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("X-Test") != "yes" {
			http.Error(w, "missing header", http.StatusBadGateway)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func newClient(t *testing.T, url string, policy *registry.Policy) *registry.Client {
	t.Helper()
	c, err := registry.NewClient(url, &registry.ClientOptions{Policy: policy, Header: http.Header{"X-Test": {"yes"}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientRoundTrip(t *testing.T) {
	ctx := t.Context()
	srv, _ := server(t, &registry.Policy{AllowedHostSuffixes: []string{"example.com"}})
	c := newClient(t, srv.URL+"/", nil)

	for _, name := range []string{"c", "a", "b"} {
		a, err := c.Register(ctx, &registry.Agent{Name: name, URL: "https://" + name + ".example.com/",
			Capabilities: []string{"Cap " + name}, Tags: []string{"all"}})
		if err != nil {
			t.Fatalf("Register(%s): %v", name, err)
		}
		if !registry.IsID(a.ID) || a.Status != registry.StatusActive || a.CreatedAt.IsZero() {
			t.Errorf("Register returned %+v", a)
		}
	}
	got, err := c.Get(ctx, "b")
	if err != nil || got.URL != "https://b.example.com/" {
		t.Fatalf("Get(b) = %+v, %v", got, err)
	}
	if byID, err := c.Get(ctx, got.ID); err != nil || byID.Name != "b" {
		t.Fatalf("Get(id) = %+v, %v", byID, err)
	}
	var names []string
	for a, err := range c.All(ctx, "", &registry.ListQuery{PageSize: 1, Tag: "all"}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, a.Name)
	}
	if !cmp.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("All = %v", names)
	}
	p, err := c.Search(ctx, "CAP-C", nil)
	if err != nil || len(p.Agents) != 1 || p.Agents[0].Name != "c" {
		t.Errorf("Search = %+v, %v", p, err)
	}
	m, err := c.Find(ctx, registry.FindQuery{Capabilities: []string{"cap_a", "cap-b"}, Mode: registry.MatchAny})
	if err != nil || len(m) != 2 || m[0].Agent.Name != "a" || m[0].Score != 0.5 {
		t.Errorf("Find = %+v, %v", m, err)
	}
	m, err = c.Find(ctx, registry.FindQuery{Capabilities: []string{"cap"}, Fuzzy: true, Threshold: 0.5})
	if err != nil || len(m) != 3 {
		t.Errorf("Find(fuzzy) = %+v, %v", m, err)
	}
	up, err := c.Update(ctx, "b", &registry.Agent{URL: "https://b2.example.com/", Status: registry.StatusInactive})
	if err != nil || up.Name != "b" || up.URL != "https://b2.example.com/" || up.Available() {
		t.Errorf("Update = %+v, %v", up, err)
	}
	if err := c.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(ctx, "b")
	if !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("Get(deleted) = %v, want ErrNotFound", err)
	}
	if p, ok := registry.AsProblem(err); !ok || p.Type != registry.ProblemAgentNotFound || p.Status != 404 {
		t.Errorf("problem = %+v", p)
	}
}

func TestClientErrors(t *testing.T) {
	ctx := t.Context()
	srv, hits := server(t, &registry.Policy{AllowedHostSuffixes: []string{".agents.example.com"}})
	c := newClient(t, srv.URL, nil)
	if _, err := c.Register(ctx, &registry.Agent{Name: "dup", URL: "https://dup.agents.example.com/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx, &registry.Agent{Name: "dup", URL: "https://dup.agents.example.com/"}); !errors.Is(err, registry.ErrExists) {
		t.Errorf("duplicate = %v, want ErrExists", err)
	}
	// The registry refuses a URL outside its suffixes.
	_, err := c.Register(ctx, &registry.Agent{Name: "evil", URL: "https://evil.example.net/"})
	if !errors.Is(err, registry.ErrURLNotAllowed) || !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("outside the registry's suffixes = %v, want ErrURLNotAllowed", err)
	}
	if p, ok := registry.AsProblem(err); !ok || p.Type != registry.ProblemURLNotAllowed || len(p.Errors) != 1 || p.Errors[0].Field != "url" {
		t.Errorf("problem = %+v", p)
	}

	// The client refuses, without a request, what its own policy refuses.
	strict := newClient(t, srv.URL, &registry.Policy{AllowedHostSuffixes: []string{".partner.example.com"}})
	before := hits.Load()
	for _, a := range []*registry.Agent{
		{Name: "other", URL: "https://other.agents.example.com/"},
		{Name: "loop", URL: "http://127.0.0.1:9/"},
		{Name: "Bad Name", URL: "https://x.partner.example.com/"},
	} {
		if _, err := strict.Register(ctx, a); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("Register(%s) = %v, want ErrInvalid", a.Name, err)
		}
	}
	if _, err := strict.Update(ctx, "dup", &registry.Agent{URL: "https://elsewhere.example.org/"}); !errors.Is(err, registry.ErrURLNotAllowed) {
		t.Errorf("Update = %v, want ErrURLNotAllowed", err)
	}
	if n := hits.Load() - before; n != 0 {
		t.Errorf("%d refused records reached the server", n)
	}
	// Resolve checks a record the registry accepted against the client's
	// policy.
	if _, err := strict.Resolve(ctx, "dup"); !errors.Is(err, registry.ErrURLNotAllowed) {
		t.Errorf("Resolve(outside the client's suffixes) = %v, want ErrURLNotAllowed", err)
	}
	if a, err := c.Resolve(ctx, "dup"); err != nil || a.Name != "dup" {
		t.Errorf("Resolve = %+v, %v", a, err)
	}
	if _, err := c.Resolve(ctx, "nobody"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Resolve(missing) = %v, want ErrNotFound", err)
	}

	// A response that is not problem+json still gives a Problem.
	bare, _ := registry.NewClient(srv.URL, nil) // without the header the test server wants
	_, err = bare.List(ctx, nil)
	if p, ok := registry.AsProblem(err); !ok || p.Status != http.StatusBadGateway || p.Type != "about:blank" {
		t.Errorf("plain-text error = %v (%+v)", err, p)
	}
	if _, err := c.List(ctx, &registry.ListQuery{PageToken: "%%%"}); !errors.Is(err, registry.ErrBadPageToken) {
		t.Errorf("bad page token = %v, want ErrBadPageToken", err)
	}
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://x", "http://"} {
		if _, err := registry.NewClient(u, nil); err == nil {
			t.Errorf("NewClient(%q) succeeded", u)
		}
	}
}
