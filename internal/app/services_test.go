package app_test

import (
	"net/http"
	"testing"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/jwk"
)

// Every service of the list answers at its paths, and a path of none gets
// the mux's 404: the list mounts what Start mounted by hand before.
func TestEveryServiceIsMounted(t *testing.T) {
	key, err := jwk.GenerateKey("EdDSA")
	if err != nil {
		t.Fatal(err)
	}
	srv := start(t, &app.Options{Stores: tasksOnly(a2asrv.NewMemoryTaskStore(nil)), Agents: app.AgentOptions{CardKey: key}})
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/agents/echo/.well-known/agent-card.json", 200},
		{"/agents/tck/.well-known/agent-card.json", 200},
		{"/.well-known/jwks.json", 200},
		{"/.well-known/agent-card-jwks.json", 200},
		{"/api/v1/agents", 200},
		{"/api/v1/agents/echo", 200},
		{"/api/v1/agents/nobody", 404},
		{"/api/v1/dns/agents", 200},
		{"/api/v1/dns/agents/tck", 200},
		{"/healthz", 200},
		{"/", 200},
		{"/agents", 404},
		{"/api/v1/elsewhere", 404},
	} {
		if code, body := get(t, srv.URL()+tc.path); code != tc.want {
			t.Errorf("GET %s = %d, want %d: %s", tc.path, code, tc.want, body)
		}
	}
	resp, err := http.Post(srv.URL()+"/healthz", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz = %d, want 405", resp.StatusCode)
	}
}
