package gatesvc

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
)

// agentRules holds refunds unless the acting agent is finance-bot: the
// rule is only as good as the gate's idea of who acts.
const agentRules = `{"rules": [
  {"id": "finance-only", "text": "Hold refunds unless finance-bot makes them.", "when": "action.type == 'refund' && session.agent != 'finance-bot'", "verdict": "hold"}
]}`

// agentAction is a refund in session by agent of team; an empty agent or
// team leaves the member out of the body.
func agentAction(session, id, agent, team string) string {
	a := map[string]any{"action_id": id, "action_type": "refund", "tenant_id": "acme", "session_id": session,
		"context_type": gate.ContextCS, "context": map[string]any{"customer_id": "c1", "amount": 40.0}, "evidence": []any{}}
	if agent != "" {
		a["agent_id"] = agent
	}
	if team != "" {
		a["team_id"] = team
	}
	b, err := json.Marshal(a)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// The gate takes the acting agent from the verified token: a body naming
// another agent or team is refused with a problem, an omitted one is the
// token's (or the session's team), the rules judge the token's agent, and
// an agent acts only in the sessions it opened. The server's admin names
// the agent itself but cannot break a session's ownership either.
func TestActingAgentIsTheToken(t *testing.T) {
	f := newFixture(t, nil)
	f.rules(agentRules)
	auth := httpapi.AuthenticatorFunc(func(r *http.Request) (*httpapi.Caller, error) {
		switch tok, _ := httpapi.BearerToken(r); tok {
		case "admin":
			return &httpapi.Caller{Scheme: httpapi.SchemeAdminToken, Subject: "admin", Admin: true}, nil
		case "support-bot", "finance-bot":
			return &httpapi.Caller{Scheme: "test", Claims: &identity.Claims{TenantID: "acme", AgentID: tok, Subject: tok,
				Scopes: []string{gate.ScopeSubmit}}}, nil
		case "no-agent":
			return &httpapi.Caller{Scheme: "test", Claims: &identity.Claims{TenantID: "acme", Subject: "someone",
				Scopes: []string{gate.ScopeSubmit}}}, nil
		}
		return nil, httpapi.ErrUnauthenticated
	})
	srv := httptest.NewServer(f.svc.Handler(auth, nil))
	defer srv.Close()
	const supportSession = `{"tenant_id":"acme","team_id":"support","session_id":"s-sup","max_hold_s":60}`
	for _, tc := range []struct {
		name, token, method, path, body string
		want                            int
		detail                          string // in the body
	}{
		{"open naming another agent", "support-bot", "POST", "/sessions",
			`{"tenant_id":"acme","team_id":"support","agent_id":"finance-bot","session_id":"s-x","max_hold_s":60}`, 403, `agent_id \"finance-bot\" is not the token's agent \"support-bot\"`},
		{"open without an agent is the token's", "support-bot", "POST", "/sessions", supportSession, 201, `"session_id":"s-sup"`},
		{"open by a token without an agent", "no-agent", "POST", "/sessions",
			`{"tenant_id":"acme","team_id":"support","agent_id":"support-bot","session_id":"s-y","max_hold_s":60}`, 403, "names no agent"},
		{"attach to another agent's session", "finance-bot", "POST", "/sessions",
			`{"tenant_id":"acme","team_id":"support","session_id":"s-sup","max_hold_s":60,"attach":true}`, 409, `agent \"support-bot\"`},
		{"open finance's own", "finance-bot", "POST", "/sessions", `{"tenant_id":"acme","team_id":"finance","session_id":"s-fin","max_hold_s":60}`, 201, ""},

		{"body names finance-bot", "support-bot", "POST", "/actions", agentAction("s-sup", "a1", "finance-bot", "support"), 403,
			`agent_id \"finance-bot\" is not the token's agent \"support-bot\"`},
		{"body names another team", "support-bot", "POST", "/actions", agentAction("s-sup", "a1", "support-bot", "finance"), 403,
			`team_id \"finance\" is not session \"s-sup\"'s team \"support\"`},
		{"the rule judges the token's agent", "support-bot", "POST", "/actions", agentAction("s-sup", "a1", "", ""), 200,
			`"verdict":"hold","rule_id_cited":"finance-only"`},
		{"the same with the agent named", "support-bot", "POST", "/actions", agentAction("s-sup", "a2", "support-bot", "support"), 200,
			`"verdict":"hold"`},
		{"finance-bot passes in its own session", "finance-bot", "POST", "/actions?claim=1", agentAction("s-fin", "f1", "finance-bot", "finance"), 200,
			`"verdict":"pass"`},
		{"submit into another agent's session", "finance-bot", "POST", "/actions", agentAction("s-sup", "a3", "", ""), 403,
			`session \"s-sup\" belongs to agent \"support-bot\", not the token's agent \"finance-bot\"`},
		{"submit as the owner with another's token", "finance-bot", "POST", "/actions", agentAction("s-sup", "a3", "support-bot", ""), 403,
			"is not the token's agent"},
		{"claim in another agent's session", "support-bot", "POST", "/claims", `{"session_id":"s-fin","action_id":"f1"}`, 403, "belongs to agent"},
		{"ack in another agent's session", "support-bot", "POST", "/acks", `{"session_id":"s-fin","action_id":"f1","fencing_token":1}`, 403, "belongs to agent"},
		{"wait in another agent's session", "finance-bot", "POST", "/actions/wait", `{"session_id":"s-sup","action_id":"a1","timeout_s":1}`, 403, "belongs to agent"},
		{"end another agent's session", "finance-bot", "POST", "/sessions/end", `{"session_id":"s-sup","state":"completed"}`, 403, "belongs to agent"},
		{"admin must name the session's agent", "admin", "POST", "/actions", agentAction("s-sup", "a4", "finance-bot", "support"), 403,
			`agent_id \"finance-bot\" is not session \"s-sup\"'s agent \"support-bot\"`},
		{"admin acts as the session's agent", "admin", "POST", "/actions", agentAction("s-sup", "a4", "support-bot", "support"), 200, `"verdict":"hold"`},
		{"the owner acknowledges", "finance-bot", "POST", "/acks", `{"session_id":"s-fin","action_id":"f1","fencing_token":1}`, 200, `"acknowledged_at"`},
		{"the owner ends it", "support-bot", "POST", "/sessions/end", `{"session_id":"s-sup","state":"completed"}`, 204, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+gate.APIPath+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tc.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.detail) {
				t.Fatalf("%s %s = %d %s, want %d containing %s", tc.method, tc.path, resp.StatusCode, body, tc.want, tc.detail)
			}
			if tc.want >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("refusal as %q, want an RFC 9457 problem", resp.Header.Get("Content-Type"))
			}
		})
	}
	// What the page and the audit show is the verified agent.
	ctx := context.Background()
	for id, want := range map[string]string{"a1": "support-bot", "a2": "support-bot", "a4": "support-bot"} {
		rec, err := f.store.GetAction(ctx, "acme", "s-sup", id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.AgentID != want || rec.TeamID != "support" || rec.State != gate.ActionHeld {
			t.Errorf("%s: agent %q team %q state %s, want %s of support, held", id, rec.AgentID, rec.TeamID, rec.State, want)
		}
	}
	if _, err := f.store.GetAction(ctx, "acme", "s-sup", "a3"); err == nil {
		t.Error("a refused submit was recorded")
	}
	sess, err := f.store.GetSession(ctx, "acme", "s-sup")
	if err != nil || sess.AgentID != "support-bot" || sess.State != gate.SessionStateCompleted {
		t.Fatalf("session %+v, %v: want support-bot's, completed by its owner only", sess, err)
	}
}
