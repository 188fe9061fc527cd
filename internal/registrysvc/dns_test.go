package registrysvc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/registry"
)

// dnsServer serves the Agent-DNS API over a registry holding a mail
// agent with every field set and a bare one.
func dnsServer(t *testing.T) *httptest.Server {
	t.Helper()
	svc, _ := newTestService(t)
	ctx := context.Background()
	for _, a := range []*registry.Agent{
		{Name: "mailer", URL: "https://mailer.agents.example.com/a2a", Description: "Sends e-mail",
			Capabilities: []string{"send_email"}, Domains: []string{"communication"}, Tags: []string{"mail"},
			Metadata: map[string]any{"capabilities": []any{map[string]any{"name": "schedule_email"}}}},
		{Name: "indexer", URL: "https://indexer.agents.example.com/a2a"},
	} {
		if _, err := svc.Register(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(svc.DNSHandler())
	t.Cleanup(srv.Close)
	return srv
}

// The records exactly as the NovaOS Python SDK's AgentDNSRecord.from_dict
// reads them.
const (
	dnsMailer = `{"id":"00000000-0000-4000-8000-000000000001","name":"mailer","url":"https://mailer.agents.example.com/a2a",` +
		`"description":"Sends e-mail","metadata":{"capabilities":[{"name":"schedule_email"}]},"capabilities":["send_email"],` +
		`"domains":["communication"],"tags":["mail"],"created_at":"2026-11-30T09:00:00+00:00","updated_at":"2026-11-30T09:00:00+00:00","status":"active"}`
	dnsIndexer = `{"id":"00000000-0000-4000-8000-000000000002","name":"indexer","url":"https://indexer.agents.example.com/a2a",` +
		`"description":null,"metadata":null,"capabilities":[],"domains":[],"tags":[],` +
		`"created_at":"2026-11-30T09:00:00+00:00","updated_at":"2026-11-30T09:00:00+00:00","status":"active"}`
)

func TestDNSShape(t *testing.T) {
	srv := dnsServer(t)
	p := registrysvc.DNSPath
	tests := []struct {
		name, method, path, contentType, body string
		status                                int
		want                                  string // JSON; for a problem, its type
	}{
		{"list", "GET", p + "/agents", "", "", 200, "[" + dnsIndexer + "," + dnsMailer + "]"},
		{"list filtered", "GET", p + "/agents?tag=mail", "", "", 200, "[" + dnsMailer + "]"},
		{"search by query", "POST", p + "/agents/search", jsonCT, `{"query":"E-MAIL sends"}`, 200, "[" + dnsMailer + "]"},
		{"search by capability word", "POST", p + "/agents/search", jsonCT, `{"query":"schedule email"}`, 200, "[" + dnsMailer + "]"},
		{"search by text filters", "POST", p + "/agents/search", jsonCT, `{"name":"MAIL","domain":"communication","tag":"mail","status":"active"}`, 200, "[" + dnsMailer + "]"},
		{"search, unknown fields ignored", "POST", p + "/agents/search", "application/json; charset=utf-8", `{"query":"a2a","limit":5,"capabilities":["x"]}`, 200, "[]"},
		{"search, no filter", "POST", p + "/agents/search", jsonCT, `{}`, 200, "[" + dnsIndexer + "," + dnsMailer + "]"},
		{"search, no body", "POST", p + "/agents/search", jsonCT, ``, 200, "[" + dnsIndexer + "," + dnsMailer + "]"},
		{"get by name", "GET", p + "/agents/mailer", "", "", 200, dnsMailer},
		{"get by id", "GET", p + "/agents/00000000-0000-4000-8000-000000000002", "", "", 200, dnsIndexer},
		{"search is POST", "GET", p + "/agents/search", "", "", 405, registry.ProblemMethodNotAllowed},
		{"unknown agent", "GET", p + "/agents/nobody", "", "", 404, registry.ProblemAgentNotFound},
		{"malformed search", "POST", p + "/agents/search", jsonCT, `{"query":`, 400, registry.ProblemMalformedJSON},
		{"search of the wrong type", "POST", p + "/agents/search", jsonCT, `{"query":7}`, 400, registry.ProblemMalformedJSON},
		{"search as a form", "POST", p + "/agents/search", "text/plain", `{}`, 415, registry.ProblemUnsupportedMedia},
		{"search too large", "POST", p + "/agents/search", jsonCT, `{"query":"` + strings.Repeat("a", registrysvc.MaxBodyBytes) + `"}`, 413, registry.ProblemBodyTooLarge},
		{"no writes", "POST", p + "/agents", jsonCT, `{"name":"x","url":"https://x.agents.example.com"}`, 405, registry.ProblemMethodNotAllowed},
		{"no deletes", "DELETE", p + "/agents/mailer", "", "", 405, registry.ProblemMethodNotAllowed},
		{"unknown path", "GET", p + "/agents/mailer/card", "", "", 404, registry.ProblemNotFound},
		{"outside the base", "GET", "/agents", "", "", 404, registry.ProblemNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, srv, tc.method, tc.path, tc.contentType, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status != http.StatusOK {
				var p registry.Problem
				if err := json.Unmarshal([]byte(r.body), &p); err != nil || p.Type != tc.want {
					t.Errorf("problem %s, want type %s", r.body, tc.want)
				}
				return
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var got, want any
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("body (-want +got):\n%s", d)
			}
		})
	}
}

// FuzzDNSSearch: any search body gets records or a problem, never a
// failure of the server.
func FuzzDNSSearch(f *testing.F) {
	f.Add(`{"query":"mail","name":"m","tag":"mail","domain":"communication","status":"active"}`)
	f.Add(`{"query":null,"limit":-1}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, body string) {
		srv := dnsServer(t)
		r := call(t, srv, "POST", registrysvc.DNSPath+"/agents/search", jsonCT, body)
		switch r.status {
		case http.StatusOK:
			var recs []map[string]any
			if err := json.Unmarshal([]byte(r.body), &recs); err != nil {
				t.Fatalf("200 with %s: %v", r.body, err)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	})
}
