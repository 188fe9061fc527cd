package memorysvc

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"novaos.dev/novaos/memory"
)

// Screened values, disguised as a careless or hostile client would send
// them: every one must be refused in every field a memory stores.
var disguised = []struct{ name, value string }{
	{"email", "jane.doe@example.com"},
	{"email with a zero-width space", "jane.doe\u200b@example.com"},
	{"email with a fullwidth at sign", "jane.doe\uff20example.com"},
	{"password", "password:hunter22"},
	{"password with no-break spaces", "password\u00a0:\u00a0hunter22"},
	{"dotted card number", "4111.1111.1111.1111"},
	{"fullwidth card number", "４１１１１１１１１１１１１１１１"},
}

// TestScreenEveryField: an administrator's tenant write (screened at
// once) and an agent's proposal (screened by the write gate) are refused
// whichever stored field holds personal data or a credential, and the
// answer names the field and the kind, never the value.
func TestScreenEveryField(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	admin := agentCaller("t1", "ops", "memory:read:*", "memory:write:*", "memory:admin")
	agent := agentCaller("t1", "a1")
	fields := []struct {
		field string
		req   func(v string) memory.WriteRequest
	}{
		{"content", func(v string) memory.WriteRequest { return memory.WriteRequest{Content: "Escalations go to " + v} }},
		{"metadata.tags", func(v string) memory.WriteRequest {
			return memory.WriteRequest{Content: "Escalations go to the on-call.", Metadata: &memory.WriteMetadata{Tags: []string{"ops", v}}}
		}},
		{"metadata.source", func(v string) memory.WriteRequest {
			return memory.WriteRequest{Content: "Escalations go to the on-call.", Metadata: &memory.WriteMetadata{Source: ptr("from " + v)}}
		}},
		{"conversation_id", func(v string) memory.WriteRequest {
			return memory.WriteRequest{Content: "Escalations go to the on-call.", ConversationID: strings.ReplaceAll(v, " ", "")}
		}},
		{"metadata.custom", func(v string) memory.WriteRequest {
			return memory.WriteRequest{Content: "Escalations go to the on-call.", Metadata: &memory.WriteMetadata{Custom: map[string]any{"note": v}}}
		}},
	}
	for _, f := range fields {
		for _, d := range disguised {
			t.Run(f.field+"/"+d.name, func(t *testing.T) {
				req := f.req(d.value)
				req.Scope = memory.ScopeTenant
				_, err := s.Write(ctx, admin, &req)
				if !refused(err, f.field) {
					t.Fatalf("tenant write = %v; want 422 %s on %s", err, memory.CodeScreened, f.field)
				}
				if strings.Contains(err.Error(), "hunter22") || strings.Contains(err.Error(), "jane") || strings.Contains(err.Error(), "1111") {
					t.Errorf("the error %q repeats the value", err)
				}

				req.Scope = memory.ScopeAgent
				w, err := s.Write(ctx, agent, &req)
				if err != nil {
					if !refused(err, f.field) {
						t.Errorf("agent write = %v; want a proposal, or 422 on %s", err, f.field)
					}
					return
				}
				s.judgeProposals(ctx)
				st, err := s.ProposalStatus(ctx, agent, w.MemoryID)
				if err != nil || st.Status != memory.ProposalRejected || st.Reason == nil || !strings.HasPrefix(*st.Reason, f.field+" ") {
					t.Errorf("proposal = %+v, %v; want rejected naming %s", st, err, f.field)
				}
			})
		}
	}
	// Nothing of it was stored.
	for _, c := range []struct {
		caller *Caller
		scope  memory.Scope
	}{{admin, memory.ScopeTenant}, {agent, memory.ScopeAgent}} {
		q, err := s.Query(ctx, c.caller, &memory.QueryRequest{Scope: c.scope, Query: "escalations on-call"})
		if err != nil || len(q.Items) != 0 {
			t.Errorf("%s memories after refused writes = %d, %v; want none", c.scope, len(q.Items), err)
		}
	}
	// A clean tenant write is stored.
	if _, err := s.Write(ctx, admin, &memory.WriteRequest{Scope: memory.ScopeTenant, Content: "Escalations go to the on-call.",
		ConversationID: "conv-9", Metadata: &memory.WriteMetadata{Source: ptr("runbook"), Tags: []string{"ops"}}}); err != nil {
		t.Errorf("clean tenant write: %v", err)
	}
}

// TestScreenUpdateAndForget: an update is screened in every field it
// changes, and a forget's reason, which the append-only audit trail keeps
// for good, is screened too.
func TestScreenUpdateAndForget(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	c := agentCaller("t1", "a1")
	w, _ := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Summaries should be short."})
	s.judgeProposals(ctx)
	st, _ := s.ProposalStatus(ctx, c, w.MemoryID)
	id := *st.MemoryID
	for _, d := range disguised {
		for _, u := range []struct {
			field string
			req   memory.UpdateRequest
		}{
			{"content", memory.UpdateRequest{Content: ptr("Write to " + d.value)}},
			{"metadata.tags", memory.UpdateRequest{Metadata: &memory.UpdateMetadata{Tags: []string{d.value}}}},
			{"metadata.custom", memory.UpdateRequest{Metadata: &memory.UpdateMetadata{Custom: map[string]any{"k": d.value}}}},
		} {
			u.req.Scope, u.req.MemoryID, u.req.Version = memory.ScopeAgent, id, 1
			_, err := s.Update(ctx, c, &u.req)
			if !refused(err, u.field) {
				t.Errorf("update %s with %s = %v; want %s on %s", u.field, d.name, err, memory.CodeScreened, u.field)
			}
		}
		r, _ := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "scratch"})
		_, err := s.Forget(ctx, c, &memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: r.MemoryID, Reason: "asked by " + d.value})
		if e, ok := errors.AsType[*memory.Error](err); !ok || e.Code != memory.CodeScreened || e.Field != "reason" {
			t.Errorf("forget with %s in the reason = %v; want %s on reason", d.name, err, memory.CodeScreened)
		}
	}
}

// TestCustomText: metadata.custom is screened as its keys and values, so a
// secret split from its name by what JSON escapes, or named by a key, is
// found, and a clean document passes.
func TestCustomText(t *testing.T) {
	for _, tt := range []struct {
		custom string
		want   string
	}{
		{``, ``},
		{`{"note":"a\u2028password\u2028:\u2028hunter22"}`, "note: a\u2028password\u2028:\u2028hunter22\n"},
		{`{"password":"hunter22","n":12,"ok":true,"list":["x",{"y":"z"}],"nil":null}`,
			"list: x\ny: z\nn: 12\nnil: \nok: \npassword: hunter22\n"},
		{`not json`, `not json`},
	} {
		if got := customText(json.RawMessage(tt.custom)); got != tt.want {
			t.Errorf("customText(%s) = %q, want %q", tt.custom, got, tt.want)
		}
	}
	for _, custom := range []map[string]any{
		{"note": "password\u2028:\u2028hunter22"},
		{"password": "hunter22"},
		{"contact": map[string]any{"email": []any{"jane.doe@example.com"}}},
	} {
		b, _ := json.Marshal(custom)
		if err := screenMemory(&memory.Memory{Content: "x", Custom: b}); !refused(err, "metadata.custom") {
			t.Errorf("custom %s: %v; want it screened", b, err)
		}
	}
	b, _ := json.Marshal(map[string]any{"team": "billing", "priority": 2})
	if err := screenMemory(&memory.Memory{Content: "x", Custom: b}); err != nil {
		t.Errorf("clean custom %s: %v", b, err)
	}
}

// TestConsolidationScreensConversation: a fact drawn from a hint is stored
// under the hint's conversation id, which is screened with the fact.
func TestConsolidationScreensConversation(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	c := agentCaller("t1", "a1")
	for _, conv := range []string{"conv-ok", "jane\uff20example.com"} {
		if _, err := s.Hint(ctx, c, &memory.HintRequest{Hint: "User prefers dark mode in the editor.", ConversationID: conv}); err != nil {
			t.Fatal(err)
		}
	}
	s.consolidate(ctx)
	q, err := s.Query(ctx, c, &memory.QueryRequest{Scope: memory.ScopeUser, Query: "dark mode editor"})
	if err != nil || len(q.Items) != 1 || q.Items[0].Metadata.ConversationID == nil || *q.Items[0].Metadata.ConversationID != "conv-ok" {
		t.Errorf("user memories = %+v, %v; want only the fact of conv-ok", q.Items, err)
	}
}

// refused reports whether err refuses field with 422: screened, or, for
// the fields that allow no invisible or space characters at all, invalid.
// Either way nothing was stored.
func refused(err error, field string) bool {
	e, ok := errors.AsType[*memory.Error](err)
	if !ok || e.Status != http.StatusUnprocessableEntity {
		return false
	}
	switch e.Code {
	case memory.CodeScreened:
		return e.Field == field
	case memory.CodeInvalid:
		return strings.HasPrefix(e.Field, field)
	}
	return false
}
