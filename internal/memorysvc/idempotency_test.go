package memorysvc

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/memory"
)

// TestIdempotencyKeysScoped: a key belongs to the agent and run that sent
// it, and to one request. Another caller's key of the same name is another
// key; the same caller's key sent with another request (another body,
// scope or kind of memory) is refused with 409; the identical request
// replays the first answer, within the 24-hour window only.
func TestIdempotencyKeysScoped(t *testing.T) {
	s, clk := newService(t, nil)
	ctx := context.Background()
	a1 := agentCaller("t1", "a1")
	a2 := agentCaller("t1", "a2")
	a1run2 := agentCaller("t1", "a1")
	a1run2.Run = "run-2"
	const key = "exec-7:1"
	first, err := s.Write(ctx, a1, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Use staging first.", IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		caller *Caller
		req    memory.WriteRequest
		want   string // "replay", "new" or an error code
	}{
		{"identical request", a1, memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Use staging first.", IdempotencyKey: key}, "replay"},
		{"identical request with new correlation ids", a1, memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Use staging first.",
			IdempotencyKey: key, RequestID: "req-2", TraceID: "trace-2"}, "replay"},
		{"identical request with empty metadata", a1, memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Use staging first.",
			IdempotencyKey: key, Metadata: &memory.WriteMetadata{}}, "replay"},
		{"another agent", a2, memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Use production first.", IdempotencyKey: key}, "new"},
		{"another run", a1run2, memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Use canary first.", IdempotencyKey: key}, "new"},
		{"another body", a1, memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Use production first.", IdempotencyKey: key}, memory.CodeKeyReused},
		{"another scope", a1, memory.WriteRequest{Scope: memory.ScopeRun, Content: "Use staging first.", IdempotencyKey: key}, memory.CodeKeyReused},
		{"another memory type", a1, memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Use staging first.", IdempotencyKey: key,
			MemoryType: memory.TypeProcedural}, memory.CodeKeyReused},
		{"another tag", a1, memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Use staging first.", IdempotencyKey: key,
			Metadata: &memory.WriteMetadata{Tags: []string{"ops"}}}, memory.CodeKeyReused},
		{"another ttl", a1, memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Use staging first.", IdempotencyKey: key,
			TTLSeconds: ptr(int64(3600))}, memory.CodeKeyReused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Write(ctx, tt.caller, &tt.req)
			switch tt.want {
			case "replay":
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(first, got); d != "" {
					t.Errorf("replay (-first +got):\n%s", d)
				}
			case "new":
				if err != nil || got.MemoryID == first.MemoryID || got.MemoryID == "" {
					t.Errorf("Write = %+v, %v; want a new proposal", got, err)
				}
			default:
				var e *memory.Error
				if !errors.As(err, &e) || e.Status != http.StatusConflict || e.Code != tt.want || e.Field != "idempotency_key" {
					t.Fatalf("Write = %+v, %v; want 409 %s on idempotency_key", got, err, tt.want)
				}
				if !errors.Is(err, memory.ErrKeyReused) || errors.Is(err, memory.ErrConflict) {
					t.Errorf("errors.Is(ErrKeyReused) = %v, errors.Is(ErrConflict) = %v; want true, false",
						errors.Is(err, memory.ErrKeyReused), errors.Is(err, memory.ErrConflict))
				}
				if !strings.Contains(e.Rule, "different request") {
					t.Errorf("rule %q does not say why", e.Rule)
				}
			}
		})
	}
	// Each caller's write was stored as its own: the gate commits them, and
	// each agent finds its own content.
	s.judgeProposals(ctx)
	for _, c := range []struct {
		caller *Caller
		want   []string
	}{{a1, []string{"Use canary first.", "Use staging first."}}, {a2, []string{"Use production first."}}} {
		q, err := s.Query(ctx, c.caller, &memory.QueryRequest{Scope: memory.ScopeAgent, Query: "first"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range q.Items {
			got = append(got, it.Content)
		}
		slices.Sort(got)
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s's agent memories (-want +got):\n%s", c.caller.Agent, d)
		}
	}
	// The run write refused above stored nothing.
	if q, err := s.Query(ctx, a1, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "staging"}); err != nil || len(q.Items) != 0 {
		t.Errorf("run memories after a refused write = %+v, %v; want none", q.Items, err)
	}
	// Past the window the key is free for another request.
	clk.add(memory.IdempotencyWindow + time.Minute)
	if w, err := s.Write(ctx, a1, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "Use staging first.", IdempotencyKey: key}); err != nil || w.MemoryID == first.MemoryID {
		t.Errorf("Write after the window = %+v, %v; want a new write", w, err)
	}
}

// TestForgetIdempotencyKey: a forget key replays only the forget it was
// sent with. Forgetting Y under X's key is refused and Y stays, so an
// erasure is never reported done when it was not.
func TestForgetIdempotencyKey(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	c := agentCaller("t1", "a1")
	x, _ := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "Draft outline, superseded."})
	y, _ := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "Final outline, keep."})
	const key = "exec-7:forget"
	fx := memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: x.MemoryID, Reason: "superseded", IdempotencyKey: key}
	first, err := s.Forget(ctx, c, &fx)
	if err != nil || first.DeletedCount != 1 {
		t.Fatalf("forget x = %+v, %v", first, err)
	}
	fy := fx
	fy.MemoryID = y.MemoryID
	if got, err := s.Forget(ctx, c, &fy); status(err) != http.StatusConflict || !errors.Is(err, memory.ErrKeyReused) {
		t.Errorf("forget y under x's key = %+v, %v; want 409 idempotency_key_reused", got, err)
	}
	q, err := s.Query(ctx, c, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "outline"})
	if err != nil || len(q.Items) != 1 || q.Items[0].MemoryID != y.MemoryID {
		t.Errorf("run memories = %+v, %v; want y only", q.Items, err)
	}
	again, err := s.Forget(ctx, c, &fx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(first, again); d != "" {
		t.Errorf("replayed forget (-first +again):\n%s", d)
	}
	// Another agent's forget under the same key name is its own (the run
	// partition is the run's, so it may forget y); a write key of that
	// name does not make a forget a replay.
	other := agentCaller("t1", "a2")
	if got, err := s.Forget(ctx, other, &fy); err != nil || got.DeletedCount != 1 || got.DeleteEventID == first.DeleteEventID {
		t.Errorf("another agent's forget of y = %+v, %v; want y deleted by a new event", got, err)
	}
	w, _ := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "Scratch.", IdempotencyKey: "k"})
	if got, err := s.Forget(ctx, c, &memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: w.MemoryID, Reason: "done", IdempotencyKey: "k"}); err != nil || got.DeletedCount != 1 {
		t.Errorf("forget under a write's key = %+v, %v; want 1 deleted", got, err)
	}
}

// TestRequestDigests: the digest of a write or forget is the same for two
// spellings of one request and differs for every field that changes what
// is stored or deleted.
func TestRequestDigests(t *testing.T) {
	c := agentCaller("t1", "a1")
	digest := func(v any) string {
		t.Helper()
		k, err := c.key("k", v)
		if err != nil || k.Name != "k" || k.Agent != "a1" || k.Run != "run-1" {
			t.Fatalf("key = %+v, %v", k, err)
		}
		return k.Request
	}
	base := memory.WriteRequest{Scope: memory.ScopeAgent, Content: "c"}
	same := []memory.WriteRequest{
		{Scope: memory.ScopeAgent, Content: "c", IdempotencyKey: "other", RequestID: "r", TraceID: "t"},
		{Scope: memory.ScopeAgent, Content: "c", Metadata: &memory.WriteMetadata{Tags: []string{}, Custom: map[string]any{}}},
	}
	for _, r := range same {
		if digest(writeDigest(&r)) != digest(writeDigest(&base)) {
			t.Errorf("%+v digests unlike %+v", r, base)
		}
	}
	typed := memory.WriteRequest{Scope: memory.ScopeAgent, Content: "c", MemoryType: memory.TypeSemantic}
	typedInMetadata := memory.WriteRequest{Scope: memory.ScopeAgent, Content: "c", Metadata: &memory.WriteMetadata{MemoryType: memory.TypeSemantic}}
	if digest(writeDigest(&typed)) != digest(writeDigest(&typedInMetadata)) {
		t.Error("memory_type and metadata.memory_type digest differently")
	}
	different := map[string]memory.WriteRequest{
		"scope":           {Scope: memory.ScopeRun, Content: "c"},
		"content":         {Scope: memory.ScopeAgent, Content: "d"},
		"type":            typed,
		"ttl":             {Scope: memory.ScopeAgent, Content: "c", TTLSeconds: ptr(int64(60))},
		"classification":  {Scope: memory.ScopeAgent, Content: "c", Classification: memory.ClassExplicit},
		"conversation_id": {Scope: memory.ScopeAgent, Content: "c", ConversationID: "conv-2"},
		"tags":            {Scope: memory.ScopeAgent, Content: "c", Metadata: &memory.WriteMetadata{Tags: []string{"x"}}},
		"source":          {Scope: memory.ScopeAgent, Content: "c", Metadata: &memory.WriteMetadata{Source: ptr("s")}},
		"confidence":      {Scope: memory.ScopeAgent, Content: "c", Metadata: &memory.WriteMetadata{Confidence: ptr(0.5)}},
		"custom":          {Scope: memory.ScopeAgent, Content: "c", Metadata: &memory.WriteMetadata{Custom: map[string]any{"a": 1.0}}},
	}
	seen := map[string]string{digest(writeDigest(&base)): "base"}
	for name, r := range different {
		d := digest(writeDigest(&r))
		if prev, ok := seen[d]; ok {
			t.Errorf("a write differing in %s digests like %s", name, prev)
		}
		seen[d] = name
	}
	f := memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: "m1", Reason: "r"}
	for name, g := range map[string]memory.ForgetRequest{
		"scope": {Scope: memory.ScopeTask, MemoryID: "m1", Reason: "r"}, "memory_id": {Scope: memory.ScopeRun, MemoryID: "m2", Reason: "r"},
		"reason": {Scope: memory.ScopeRun, MemoryID: "m1", Reason: "s"},
	} {
		if digest(forgetDigest(&g)) == digest(forgetDigest(&f)) {
			t.Errorf("a forget differing in %s digests alike", name)
		}
	}
	// A write and a forget never share a digest, even if their fields did.
	if digest(forgetDigest(&f)) == digest(writeDigest(&memory.WriteRequest{Scope: memory.ScopeRun})) {
		t.Error("a forget digests like a write")
	}
	if k, err := c.key("", writeDigest(&base)); err != nil || k != (memory.Key{}) {
		t.Errorf("key without a name = %+v, %v; want none", k, err)
	}
}
