package registry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/secret"
)

const clientToken = "adm-0c4f9a7e31b26d58"

// TestClientAdminToken: the token goes with writes only, and a server that
// wants it answers a write without it with ErrUnauthorized.
func TestClientAdminToken(t *testing.T) {
	ctx := t.Context()
	svc := registrysvc.New(registrysvc.NewMemoryStore(), &registrysvc.Options{
		Policy: &registry.Policy{AllowedHostSuffixes: []string{"example.com"}}, AdminToken: secret.New(clientToken)})
	var (
		mu   sync.Mutex
		seen []string // method path: whether the request carried the token
	)
	h := svc.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %v", r.Method, r.URL.Path, r.Header.Get("Authorization") == "Bearer "+clientToken))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := registry.NewClient(srv.URL, &registry.ClientOptions{AdminToken: secret.New(clientToken)})
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Register", func() error {
			_, err := c.Register(ctx, &registry.Agent{Name: "mailer", URL: "https://mailer.example.com/a2a"})
			return err
		}},
		{"Get", func() error { _, err := c.Get(ctx, "mailer"); return err }},
		{"List", func() error { _, err := c.List(ctx, nil); return err }},
		{"Search", func() error { _, err := c.Search(ctx, "mail", nil); return err }},
		{"Find", func() error {
			_, err := c.Find(ctx, registry.FindQuery{Capabilities: []string{"mail"}})
			return err
		}},
		{"Resolve", func() error { _, err := c.Resolve(ctx, "mailer"); return err }},
		{"Update", func() error {
			_, err := c.Update(ctx, "mailer", &registry.Agent{URL: "https://mailer.example.com/v2"})
			return err
		}},
		{"Delete", func() error { return c.Delete(ctx, "mailer") }},
	}
	for _, call := range calls {
		if err := call.call(); err != nil {
			t.Fatalf("%s: %v", call.name, err)
		}
	}
	want := []string{
		"POST /api/v1/agents true",
		"GET /api/v1/agents/mailer false",
		"GET /api/v1/agents false",
		"GET /api/v1/agents/search false",
		"GET /api/v1/agents/find false",
		"GET /api/v1/agents/mailer false",
		"PUT /api/v1/agents/mailer true",
		"DELETE /api/v1/agents/mailer true",
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("requests and whether they carried the token (-want +got):\n%s", diff)
	}

	// No token, or another one: ErrUnauthorized, and no token in the error.
	for _, tok := range []secret.Value{{}, secret.New(clientToken + "x")} {
		c, err := registry.NewClient(srv.URL, &registry.ClientOptions{AdminToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Register(ctx, &registry.Agent{Name: "mailer", URL: "https://mailer.example.com/a2a"})
		if !errors.Is(err, registry.ErrUnauthorized) || errors.Is(err, registry.ErrForbidden) {
			t.Errorf("Register without the right token: %v, want ErrUnauthorized", err)
		}
		if p, ok := registry.AsProblem(err); !ok || p.Type != registry.ProblemUnauthorized {
			t.Errorf("Register without the right token: %v, want a %s problem", err, registry.ProblemUnauthorized)
		}
		for _, s := range []string{fmt.Sprint(err), fmt.Sprintf("%+v %#v", err, err), fmt.Sprintf("%v %+v", c, c)} {
			if strings.Contains(s, clientToken) {
				t.Error("an error or the client's rendering shows the admin token")
			}
		}
	}
}

// A transport error (the server is gone) carries no token either.
func TestClientAdminTokenNotInTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	opts := &registry.ClientOptions{AdminToken: secret.New(clientToken)}
	c, err := registry.NewClient(srv.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Register(context.Background(), &registry.Agent{Name: "mailer", URL: "https://mailer.example.com/a2a"})
	if err == nil {
		t.Fatal("Register to a closed server succeeded")
	}
	for _, s := range []string{fmt.Sprint(err), fmt.Sprintf("%+v", err), fmt.Sprintf("%v %+v %#v", opts, opts, *opts)} {
		if strings.Contains(s, clientToken) {
			t.Error("an error or the options' rendering shows the admin token")
		}
	}
}

func TestProblemSentinels(t *testing.T) {
	all := []error{registry.ErrNotFound, registry.ErrExists, registry.ErrInvalid, registry.ErrURLNotAllowed,
		registry.ErrBadPageToken, registry.ErrReadOnly, registry.ErrUnauthorized, registry.ErrForbidden}
	for _, tc := range []struct {
		typ    string
		status int
		want   []error
	}{
		{registry.ProblemUnauthorized, http.StatusUnauthorized, []error{registry.ErrUnauthorized}},
		{registry.ProblemWriteForbidden, http.StatusForbidden, []error{registry.ErrForbidden}},
		{registry.ProblemAgentReadOnly, http.StatusForbidden, []error{registry.ErrReadOnly}},
		{"about:blank", http.StatusUnauthorized, []error{registry.ErrUnauthorized}},
		{"about:blank", http.StatusForbidden, []error{registry.ErrForbidden}},
		{registry.ProblemURLNotAllowed, http.StatusUnprocessableEntity, []error{registry.ErrInvalid, registry.ErrURLNotAllowed}},
	} {
		p := &registry.Problem{Type: tc.typ, Status: tc.status}
		err := fmt.Errorf("registry: register x: %w", p)
		for _, sentinel := range all {
			want := false
			for _, w := range tc.want {
				want = want || w == sentinel
			}
			if got := errors.Is(err, sentinel); got != want {
				t.Errorf("%s %d: errors.Is(%v) = %v, want %v", tc.typ, tc.status, sentinel, got, want)
			}
		}
	}
}
