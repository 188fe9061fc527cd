package app_test

import (
	"net/http"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/internal/app"
)

// Options.Agents are hosted beside the built-in agents.
func TestOptionsAgents(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir(), Agents: app.AgentOptions{Hosted: map[string]app.Agent{"extra-1": agent.New("extra", "1.0.0", nil)}}})
	if code, body := get(t, srv.URL()+"/agents/extra-1"+a2a.WellKnownCardPath); code != http.StatusOK || !strings.Contains(string(body), `"name":"extra"`) {
		t.Errorf("card: %d %s", code, body)
	}
	var names []string
	for _, ep := range srv.Endpoints() {
		names = append(names, ep.Name)
	}
	if strings.Join(names, ",") != "echo,tck,ask,extra-1" {
		t.Errorf("endpoints %v", names)
	}
}

func TestOptionsAgentsRefused(t *testing.T) {
	a := agent.New("extra", "1.0.0", nil)
	tests := []struct {
		name   string
		agents map[string]app.Agent
		want   string
	}{
		{"taken", map[string]app.Agent{"echo": a}, `agent name "echo"`},
		{"a path", map[string]app.Agent{"a/b": a}, `agent name "a/b"`},
		{"empty", map[string]app.Agent{"": a}, `agent name ""`},
		{"nil", map[string]app.Agent{"x": nil}, `agent "x" is nil`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := app.New(t.Context(), &app.Options{DataDir: t.TempDir(), Agents: app.AgentOptions{Hosted: tt.agents}})
			if err == nil {
				srv.Shutdown(t.Context())
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want %q", err, tt.want)
			}
		})
	}
}
