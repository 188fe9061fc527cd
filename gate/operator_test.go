package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
)

func record(sid, aid string, state gate.ActionState) gate.ActionRecord {
	return gate.ActionRecord{TenantID: "acme", SessionID: sid, ActionID: aid, ActionType: "issue_refund", TeamID: "t", AgentID: "a",
		Action: json.RawMessage(`{}`), State: state, Verdict: gate.Hold, RuleIDCited: "AP-2", Version: 1, CreatedAt: t0, UpdatedAt: t0}
}

func TestOperatorCalls(t *testing.T) {
	f := newFake(t, map[string]handler{
		"GET /actions": func(int, *http.Request, []byte) reply {
			return jsonReply(200, gate.ActionList{Actions: []gate.ActionRecord{record("s1", "a1", gate.ActionHeld)}, Next: "cursor-2"})
		},
		"GET /actions/*": func(_ int, r *http.Request, _ []byte) reply {
			return jsonReply(200, record("s/1", "a 1?", gate.ActionHeld))
		},
		"POST /actions/s%2F1/a%201%3F/decision": func(_ int, _ *http.Request, body []byte) reply {
			d, err := gate.DecodeOperatorDecision(body)
			if err != nil || d.Decision != gate.DecisionApprove || d.Note != "checked" {
				return problem(400, "")(0, nil, nil)
			}
			return jsonReply(200, record("s/1", "a 1?", gate.ActionApproved))
		},
		"PUT /rules": func(_ int, _ *http.Request, body []byte) reply {
			return jsonReply(201, gate.RuleSetInfo{TenantID: "acme", Version: 2, Hash: "h", CreatedAt: t0})
		},
		"GET /rules": func(_ int, r *http.Request, _ []byte) reply {
			v, _ := strconv.ParseInt(r.URL.Query().Get("version"), 10, 64)
			return jsonReply(200, gate.RuleSetInfo{TenantID: "acme", Version: v, Hash: "h", CreatedAt: t0,
				Document: &gate.RuleSetDocument{Rules: []gate.RuleDocument{{ID: "AP-2", Text: "hold payments after a bank change"}}}})
		},
	})
	c, _ := f.client(&gate.ClientOptions{Tenant: "acme"})
	ctx := context.Background()

	list, err := c.ListActions(ctx, &gate.ListQuery{States: []gate.ActionState{gate.ActionHeld, gate.ActionUnconfirmed}, Limit: 10, After: "cursor-1"})
	if err != nil || len(list.Actions) != 1 || list.Next != "cursor-2" {
		t.Fatalf("list: %+v, %v", list, err)
	}
	rec, err := c.Action(ctx, "s/1", "a 1?")
	if err != nil || rec.SessionID != "s/1" {
		t.Fatalf("action: %+v, %v", rec, err)
	}
	rec, err = c.Decide(ctx, "s/1", "a 1?", gate.OperatorDecision{Decision: gate.DecisionApprove, Note: "checked"})
	if err != nil || rec.State != gate.ActionApproved {
		t.Fatalf("decide: %+v, %v", rec, err)
	}
	if _, err := c.Decide(ctx, "s", "a", gate.OperatorDecision{Decision: "maybe"}); err == nil {
		t.Fatal("an invalid decision was sent")
	}
	info, err := c.PutRules(ctx, gate.RuleSetDocument{Rules: []gate.RuleDocument{{ID: "AP-2", Text: "x"}}})
	if err != nil || info.Version != 2 {
		t.Fatalf("put rules: %+v, %v", info, err)
	}
	info, err = c.Rules(ctx, 2)
	if err != nil || info.Version != 2 || info.Document == nil {
		t.Fatalf("rules: %+v, %v", info, err)
	}

	wantQueries := map[string]string{
		"GET /actions":                          "after=cursor-1&limit=10&state=held%2Cunconfirmed&tenant=acme",
		"GET /actions/s%2F1/a%201%3F":           "tenant=acme",
		"POST /actions/s%2F1/a%201%3F/decision": "tenant=acme",
		"PUT /rules":                            "tenant=acme",
		"GET /rules":                            "tenant=acme&version=2",
	}
	for _, cl := range f.all() {
		if want, ok := wantQueries[cl.method+" "+cl.path]; ok && cl.query != want {
			t.Errorf("%s %s?%s, want ?%s", cl.method, cl.path, cl.query, want)
		}
		if cl.auth != "Bearer "+testToken {
			t.Errorf("%s %s without the token", cl.method, cl.path)
		}
	}
}

// Operator answers are decoded strictly; refusals come back as *Problem;
// a decision is not replayed on a transient fault.
func TestOperatorErrors(t *testing.T) {
	f := newFake(t, map[string]handler{
		"GET /actions/*":             raw(200, `{"session_id":"s","session_id":"t"}`),
		"GET /rules":                 problem(404, ""),
		"POST /actions/s/a/decision": problem(503, ""),
		"GET /audit":                 problem(503, ""),
	})
	c, _ := f.client(nil)
	ctx := context.Background()
	if _, err := c.Action(ctx, "s", "a"); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate key: %v", err)
	}
	_, err := c.Rules(ctx, 0)
	var p *gate.Problem
	if !errors.As(err, &p) || p.Status != 404 || p.Detail != "scripted" {
		t.Fatalf("rules: %v", err)
	}
	if _, err := c.Decide(ctx, "s", "a", gate.OperatorDecision{Decision: gate.DecisionDeny}); err == nil || f.count("POST /actions/s/a/decision") != 1 {
		t.Fatalf("decide: %v after %d attempts; want one attempt", err, f.count("POST /actions/s/a/decision"))
	}
	if _, err := c.Audit(ctx, 0, 10); err == nil || f.count("GET /audit") != 3 {
		t.Fatalf("audit: %v after %d attempts; want 3", err, f.count("GET /audit"))
	}
	if strings.Contains(fmt.Sprint(err), testToken) {
		t.Fatal("token in an error")
	}
}

// chain builds n valid audit entries.
func chain(n int) []gate.AuditEntry {
	out := make([]gate.AuditEntry, n)
	prev := gate.AuditGenesis
	for i := range out {
		e := gate.AuditEntry{Seq: int64(i + 1), At: t0.Add(time.Duration(i) * time.Second), Kind: "decision", TenantID: "acme",
			ActionID: fmt.Sprintf("a%d", i), Body: json.RawMessage(`{"verdict":"pass"}`), PrevHash: prev}
		e.Hash = gate.ChainHash(prev, e)
		prev = e.Hash
		out[i] = e
	}
	return out
}

func TestVerifyAudit(t *testing.T) {
	const n = 2500 // three pages of 1000
	tests := []struct {
		name   string
		mutate func(entries []gate.AuditEntry, head *int64, hash *string) []gate.AuditEntry
		want   int64 // verified
		broken bool
	}{
		{"intact", nil, n, false},
		{"altered entry", func(es []gate.AuditEntry, _ *int64, _ *string) []gate.AuditEntry {
			es[1500].Body = json.RawMessage(`{"verdict":"kill"}`)
			return es
		}, 1500, true},
		{"removed entry", func(es []gate.AuditEntry, _ *int64, _ *string) []gate.AuditEntry {
			return append(es[:700:700], es[701:]...)
		}, 700, true},
		{"removed from the end", func(es []gate.AuditEntry, _ *int64, _ *string) []gate.AuditEntry {
			return es[:n-3]
		}, n - 3, true},
		{"head hash not the last entry", func(es []gate.AuditEntry, _ *int64, hash *string) []gate.AuditEntry {
			*hash = gate.AuditGenesis
			return es
		}, n, true},
		{"entries past the head", func(es []gate.AuditEntry, head *int64, hash *string) []gate.AuditEntry {
			*head, *hash = n-1, es[n-2].Hash
			return es
		}, n, true},
		{"empty chain", func([]gate.AuditEntry, *int64, *string) []gate.AuditEntry { return nil }, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries := chain(n)
			head, hash := int64(n), entries[n-1].Hash
			if tt.mutate != nil {
				entries = tt.mutate(entries, &head, &hash)
			}
			if len(entries) == 0 {
				head, hash = 0, gate.AuditGenesis
			}
			f := newFake(t, map[string]handler{"GET /audit": func(_ int, r *http.Request, _ []byte) reply {
				after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
				limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
				page := gate.AuditPage{Entries: []gate.AuditEntry{}, HeadSeq: head, HeadHash: hash}
				for _, e := range entries {
					if e.Seq > after && len(page.Entries) < limit {
						page.Entries = append(page.Entries, e)
					}
				}
				return jsonReply(200, page)
			}})
			c, _ := f.client(nil)
			got, gotHead, err := c.VerifyAudit(context.Background())
			var ce *gate.ChainError
			if tt.broken != errors.As(err, &ce) || (!tt.broken && err != nil) {
				t.Fatalf("err = %v, want broken=%v", err, tt.broken)
			}
			if got != tt.want {
				t.Fatalf("verified %d, want %d", got, tt.want)
			}
			wantHead := gate.AuditGenesis
			if got > 0 {
				wantHead = entries[got-1].Hash
			}
			if gotHead != wantHead {
				t.Fatalf("head %s, want the hash of entry %d", gotHead, got)
			}
		})
	}
}
