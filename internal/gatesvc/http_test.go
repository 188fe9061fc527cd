package gatesvc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
)

// The API's refusals: scopes, tenants, the admin's tenant, body limits,
// strict bodies and the status of each service error.
func TestHTTPRefusals(t *testing.T) {
	f := newFixture(t, nil)
	f.open("s1", 300, false)
	f.submit(action("s1", "held", "refund", 10, "c1", false), false)
	auth := httpapi.AuthenticatorFunc(func(r *http.Request) (*httpapi.Caller, error) {
		switch tok, _ := httpapi.BearerToken(r); tok {
		case "admin":
			return &httpapi.Caller{Scheme: httpapi.SchemeAdminToken, Subject: "admin", Admin: true}, nil
		case "":
			return nil, httpapi.ErrUnauthenticated
		default: // "<tenant> <scope>"
			tenant, scope, _ := strings.Cut(tok, " ")
			return &httpapi.Caller{Scheme: "test", Claims: &identity.Claims{TenantID: tenant, AgentID: "refund-bot", Subject: "someone", Scopes: []string{scope}}}, nil
		}
	})
	srv := httptest.NewServer(f.svc.Handler(auth, &HandlerOptions{MaxBodyBytes: 8 << 10}))
	defer srv.Close()
	good := string(action("s1", "a2", "refund", 10, "c1", false))
	for _, tc := range []struct {
		name, method, path, token, body string
		want                            int
		detail                          string
	}{
		{"no token", "POST", "/actions", "", good, 401, ""},
		{"no scope", "POST", "/actions", "acme gate:operate", good, 403, "gate:submit"},
		{"other tenant", "POST", "/actions", "globex gate:submit", good, 403, "tenant"},
		{"submit", "POST", "/actions?claim=1", "acme gate:submit", good, 200, `"fencing_token":1`},
		{"bad claim flag", "POST", "/actions?claim=maybe", "acme gate:submit", good, 400, "claim"},
		{"duplicate key", "POST", "/actions", "acme gate:submit", `{"action_id":"x","action_id":"y"}`, 400, "duplicate"},
		{"too large", "POST", "/actions", "acme gate:submit", `{"a":"` + strings.Repeat("x", 9<<10) + `"}`, 413, ""},
		{"unknown session", "POST", "/actions", "acme gate:submit", strings.Replace(good, `"s1"`, `"nope"`, 1), 409, "open it first"},
		{"unknown field in a claim", "POST", "/claims", "acme gate:submit", `{"session_id":"s1","action_id":"held","extra":1}`, 400, "unknown field"},
		{"trailing data in an ack", "POST", "/acks", "acme gate:submit", `{"session_id":"s1","action_id":"held","fencing_token":1} {}`, 400, ""},
		{"stale fencing token", "POST", "/acks", "acme gate:submit", `{"session_id":"s1","action_id":"held","fencing_token":7,"executed_at":"2026-12-02T09:00:00Z"}`, 409, "fencing"},
		{"claim of an unknown action", "POST", "/claims", "acme gate:submit", `{"session_id":"s1","action_id":"ghost"}`, 404, ""},
		{"operator list", "GET", "/actions?state=passed", "acme gate:operate", "", 200, `"action_id":"held"`},
		{"operator list page", "GET", "/actions?state=passed,claimed&limit=1", "acme gate:operate", "", 200, `"next":`},
		{"operator list bad limit", "GET", "/actions?limit=0", "acme gate:operate", "", 400, "limit"},
		{"operator list without scope", "GET", "/actions", "acme gate:submit", "", 403, "gate:operate"},
		{"admin must name a tenant", "GET", "/actions/s1/held", "admin", "", 400, "?tenant="},
		{"admin names one", "GET", "/actions/s1/held?tenant=acme", "admin", "", 200, `"state":"passed"`},
		{"approve what is not held", "POST", "/actions/s1/held/decision", "acme gate:operate", `{"decision":"approve"}`, 409, "not held"},
		{"confirm a live claim", "POST", "/actions/s1/a2/decision", "acme gate:operate", `{"decision":"confirm_not_executed"}`, 409, "its holder may still be writing"},
		{"bad decision", "POST", "/actions/s1/held/decision", "acme gate:operate", `{"decision":"maybe"}`, 400, "decision"},
		{"rules need admin scope", "PUT", "/rules", "acme gate:operate", `{"rules":[]}`, 403, "gate:admin"},
		{"invalid rule set", "PUT", "/rules", "acme gate:admin", `{"rules":[{"id":"x","text":"x","when":"1 +","verdict":"kill"}]}`, 400, "invalid rule set"},
		{"no rule set yet", "GET", "/rules", "acme gate:admin", "", 404, ""},
		{"audit spans tenants", "GET", "/audit", "acme gate:admin", "", 403, "admin token"},
		{"audit for the admin", "GET", "/audit?limit=2", "admin", "", 200, `"head_seq"`},
		{"no such endpoint", "GET", "/nothing", "acme gate:submit", "", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+gate.APIPath+tc.path, strings.NewReader(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.detail) {
				t.Fatalf("%s %s = %d %s, want %d containing %q", tc.method, tc.path, resp.StatusCode, body, tc.want, tc.detail)
			}
		})
	}
}

// Paging walks every action once, also with the largest page.
func TestListPages(t *testing.T) {
	f := newFixture(t, nil)
	f.open("s1", 300, false)
	for i := range 1003 {
		f.submit(action("s1", fmt.Sprint("a", i), "refund", 10, "c1", false), false)
	}
	for _, limit := range []int{500, 7} {
		seen := map[string]bool{}
		after := ""
		for {
			page, err := f.svc.List(context.Background(), "acme", []gate.ActionState{gate.ActionPassed}, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range page.Actions {
				if seen[a.ActionID] {
					t.Fatalf("limit %d: %s twice", limit, a.ActionID)
				}
				seen[a.ActionID] = true
			}
			if page.Next == "" {
				break
			}
			after = page.Next
		}
		if len(seen) != 1003 {
			t.Fatalf("limit %d: %d actions listed, want 1003", limit, len(seen))
		}
	}
}
