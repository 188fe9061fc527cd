package upstream

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/sealkey"
	"novaos.dev/novaos/tools"
)

// FuzzBuild: whatever a PUT carries, build either refuses it or makes a
// registration every store accepts, whose sealed values open to what
// was sent; If-Match and If-None-Match parse or are refused.
func FuzzBuild(f *testing.F) {
	for _, s := range []string{
		`{"transport":"http","url":"https://mcp.example.com/mcp","headers":{"X-Api-Key":"k"},"timeout_ms":5000}`,
		`{"transport":"stdio","command":"true","args":["-x"],"env":{"TOKEN":"t","LD_PRELOAD":"x"}}`,
		`{"transport":"http","url":"http://127.0.0.1:1/mcp","headers":{"mcp-session-id":"x","x-a":null}}`,
		`{"transport":"sse"}`,
	} {
		f.Add("up", s, `"1"`, "")
	}
	f.Add("memory", `{}`, "", "*")
	sealer, err := sealkey.Open(filepath.Join(f.TempDir(), "seal.key"), nil)
	if err != nil {
		f.Fatal(err)
	}
	p, err := New(tools.NewMemoryServerStore(), Deps{Sealer: sealer}, &Options{AllowedCommands: []string{"true"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name, body, ifMatch, ifNoneMatch string) {
		r, _ := http.NewRequest(http.MethodPut, "http://x/", nil)
		r.Header.Set("If-Match", ifMatch)
		r.Header.Set("If-None-Match", ifNoneMatch)
		if c, err := httpapi.ParseConditions(r); err == nil && c.Match < 0 {
			t.Fatalf("If-Match %q parsed to %d", ifMatch, c.Match)
		}
		var req tools.ServerRequest
		if json.Unmarshal([]byte(body), &req) != nil || !tools.ValidServerName(name) {
			return
		}
		s, err := p.build("acme", name, &req, nil)
		if err != nil {
			return
		}
		if err := s.Check(); err != nil {
			t.Fatalf("build made a registration Check refuses: %v", err)
		}
		if _, err := tools.NewMemoryServerStore().PutServer(t.Context(), s, 0); err != nil {
			t.Fatalf("a store refused what build made: %v", err)
		}
		c, err := p.openCredentials(&s)
		if err != nil {
			t.Fatal(err)
		}
		for n, v := range req.Headers {
			if got, ok := c.Headers[http.CanonicalHeaderKey(n)]; !ok || v == nil || got != *v {
				t.Fatalf("header %s did not seal as sent", n)
			}
		}
		for n, v := range req.Env {
			if got, ok := c.Env[n]; !ok || v == nil || got != *v {
				t.Fatalf("variable %s did not seal as sent", n)
			}
		}
	})
}
