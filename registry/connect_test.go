package registry_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/registry"
)

func echoAgent() *agent.Agent {
	a := agent.New("echo", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "echo", Handler: func(c *agent.Context) (agent.Result, error) {
		return agent.Result{Output: c.Input()}, nil
	}})
	return a
}

func TestConnect(t *testing.T) {
	ctx := t.Context()
	mux := http.NewServeMux()
	agents := httptest.NewServer(mux)
	defer agents.Close()
	mount := func(path string, h http.Handler) {
		mux.Handle(path, http.StripPrefix(path, h))
		mux.Handle(path+"/", http.StripPrefix(path, h))
	}
	mount("/agents/echo", echoAgent().Handler(agents.URL+"/agents/echo", nil))
	// A card that sends callers somewhere else.
	mount("/agents/liar", echoAgent().Handler("https://evil.example.net/a2a", nil))
	// A card URL that redirects to a private address.
	mux.Handle("/agents/redir/", http.RedirectHandler("http://10.0.0.1/card.json", http.StatusFound))

	svc := registrysvc.New(registrysvc.NewMemoryStore(), &registrysvc.Options{Policy: &registry.Policy{AllowLoopback: true}})
	for _, name := range []string{"echo", "liar", "redir"} {
		if _, err := svc.Register(ctx, &registry.Agent{Name: name, URL: agents.URL + "/agents/" + name}); err != nil {
			t.Fatal(err)
		}
	}
	regSrv := httptest.NewServer(svc.Handler())
	defer regSrv.Close()

	local := &registry.Policy{AllowedHostSuffixes: []string{"127.0.0.1"}, AllowLoopback: true}
	c, err := registry.NewClient(regSrv.URL, &registry.ClientOptions{Policy: local})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := c.Connect(ctx, "echo", nil)
	if err != nil {
		t.Fatalf("Connect(echo): %v", err)
	}
	res, err := ac.SendText(ctx, "hello", "", "")
	if err != nil {
		t.Fatalf("SendText: %v", err)
	}
	if got := res.Task.Artifacts[0].Parts[0].Text; got != "hello" {
		t.Errorf("echo answered %q", got)
	}

	// A record from a listing connects directly, under the same checks.
	p, err := c.Search(ctx, "echo", nil)
	if err != nil || len(p.Agents) != 1 {
		t.Fatalf("Search = %+v, %v", p, err)
	}
	if _, err := c.ConnectAgent(ctx, p.Agents[0], nil); err != nil {
		t.Errorf("ConnectAgent: %v", err)
	}
	forged := *p.Agents[0]
	forged.URL = "http://10.0.0.1/agents/echo"
	if _, err := c.ConnectAgent(ctx, &forged, nil); !errors.Is(err, registry.ErrURLNotAllowed) {
		t.Errorf("ConnectAgent(private URL) = %v, want ErrURLNotAllowed", err)
	}

	tests := []struct {
		name   string
		policy *registry.Policy
		ref    string
		want   error
	}{
		{"loopback not opted in", &registry.Policy{AllowedHostSuffixes: []string{"127.0.0.1"}}, "echo", registry.ErrURLNotAllowed},
		{"outside the suffixes", &registry.Policy{AllowedHostSuffixes: []string{".example.com"}, AllowLoopback: true}, "echo", registry.ErrURLNotAllowed},
		{"card points elsewhere", local, "liar", registry.ErrURLNotAllowed},
		{"redirect to a private address", local, "redir", registry.ErrURLNotAllowed},
		{"unknown agent", local, "nobody", registry.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := registry.NewClient(regSrv.URL, &registry.ClientOptions{Policy: tc.policy})
			if _, err := c.Connect(ctx, tc.ref, nil); !errors.Is(err, tc.want) {
				t.Fatalf("Connect(%s) = %v, want %v", tc.ref, err, tc.want)
			}
		})
	}
}
