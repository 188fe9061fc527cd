package memorysvc

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/sqlite"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openStore(t testing.TB) memory.Store {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "novaos.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db.MemoryStore()
}

func newService(t testing.TB, o *Options) (*Service, *clock) {
	t.Helper()
	clk := &clock{t: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	if o == nil {
		o = &Options{}
	}
	o.Now = clk.now
	return New(openStore(t), o), clk
}

// agentCaller is an agent's token with the scopes an agent usually has.
func agentCaller(tenant, agent string, scopes ...string) *Caller {
	if scopes == nil {
		scopes = []string{"memory:read:*", "memory:write:agent", "memory:write:run", "memory:write:task"}
	}
	return &Caller{Tenant: tenant, Agent: agent, User: "user-1", Run: "run-1", Conversation: "conv-1", Grants: grantsOf(scopes)}
}

// grantsOf matches scopes exactly or by a trailing "*" segment.
func grantsOf(scopes []string) func(string) bool {
	return func(need string) bool {
		for _, s := range scopes {
			if s == need || strings.HasSuffix(s, ":*") && strings.HasPrefix(need, strings.TrimSuffix(s, "*")) {
				return true
			}
		}
		return false
	}
}

func status(err error) int {
	if e, ok := errors.AsType[*memory.Error](err); ok {
		return e.Status
	}
	return 0
}

func ptr[T any](v T) *T { return &v }

func TestScopePolicy(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	admin := agentCaller("t1", "ops", "memory:read:*", "memory:write:*", "memory:admin")
	withUserScope := agentCaller("t1", "a1", "memory:read:*", "memory:write:user", "memory:write:tenant")
	noUser := &Caller{Tenant: "t1", Agent: "a1", Run: "run-1", Grants: grantsOf([]string{"memory:read:*", "memory:write:*"})}
	tests := []struct {
		name   string
		caller *Caller
		scope  memory.Scope
		want   int // 0: allowed
	}{
		{"agent writes run", agentCaller("t1", "a1"), memory.ScopeRun, 0},
		{"agent writes task", agentCaller("t1", "a1"), memory.ScopeTask, 0},
		{"agent writes agent", agentCaller("t1", "a1"), memory.ScopeAgent, 0},
		{"agent without the scope writes user", agentCaller("t1", "a1"), memory.ScopeUser, http.StatusForbidden},
		{"agent without the scope writes tenant", agentCaller("t1", "a1"), memory.ScopeTenant, http.StatusForbidden},
		{"agent with the scope writes user", withUserScope, memory.ScopeUser, http.StatusUnprocessableEntity},
		{"agent with the scope writes tenant", withUserScope, memory.ScopeTenant, http.StatusUnprocessableEntity},
		{"admin writes tenant", admin, memory.ScopeTenant, 0},
		{"read-only token writes agent", agentCaller("t1", "a1", "memory:read:*"), memory.ScopeAgent, http.StatusForbidden},
		{"token without a run writes run", &Caller{Tenant: "t1", Agent: "a1", Grants: grantsOf([]string{"memory:write:run"})}, memory.ScopeRun, http.StatusUnprocessableEntity},
	}
	for _, tt := range tests {
		t.Run("write/"+tt.name, func(t *testing.T) {
			_, err := s.Write(ctx, tt.caller, &memory.WriteRequest{Scope: tt.scope, Content: "The deploy window is Tuesday mornings."})
			if got := status(err); got != tt.want {
				t.Fatalf("status %d (%v), want %d", got, err, tt.want)
			}
		})
	}
	reads := []struct {
		name   string
		caller *Caller
		scope  memory.Scope
		want   int
	}{
		{"agent reads user", agentCaller("t1", "a1"), memory.ScopeUser, 0},
		{"agent without tenant scope reads tenant", agentCaller("t1", "a1", "memory:read:user", "memory:read:agent", "memory:read:run"), memory.ScopeTenant, http.StatusForbidden},
		{"token without a user reads user", noUser, memory.ScopeUser, http.StatusUnprocessableEntity},
		{"write-only token reads agent", agentCaller("t1", "a1", "memory:write:agent"), memory.ScopeAgent, http.StatusForbidden},
	}
	for _, tt := range reads {
		t.Run("read/"+tt.name, func(t *testing.T) {
			_, err := s.Query(ctx, tt.caller, &memory.QueryRequest{Scope: tt.scope, Query: "deploy"})
			if got := status(err); got != tt.want {
				t.Fatalf("status %d (%v), want %d", got, err, tt.want)
			}
		})
	}
}

func TestRunScopeReadYourWriteAndTTL(t *testing.T) {
	s, clk := newService(t, nil)
	ctx := context.Background()
	c := agentCaller("t1", "a1")
	w, err := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "Customer chose the annual plan.", MemoryType: memory.TypeEpisodic})
	if err != nil || !w.Durable || strings.HasPrefix(w.MemoryID, memory.ProposalPrefix) {
		t.Fatalf("run write = %+v, %v", w, err)
	}
	q, err := s.Query(ctx, c, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "which plan did the customer choose?"})
	if err != nil || len(q.Items) != 1 || q.Items[0].Content != "Customer chose the annual plan." {
		t.Fatalf("read your write: %+v, %v", q, err)
	}
	if q.Items[0].Score != nil || q.Partial || !slices.Equal(q.StoresQueried, []string{StoreScratch}) || q.RetrievalID == "" {
		t.Errorf("scratch result = %+v: want a null score, not partial, stores [scratch], a retrieval id", q)
	}
	// A typed query matches only that type.
	q, _ = s.Query(ctx, c, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "plan", MemoryType: memory.TypeSemantic})
	if len(q.Items) != 0 {
		t.Errorf("semantic query returned an episodic memory: %+v", q.Items)
	}
	// Another run of the same agent sees nothing.
	other := agentCaller("t1", "a1")
	other.Run = "run-2"
	if q, _ := s.Query(ctx, other, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "plan"}); len(q.Items) != 0 {
		t.Errorf("another run read this run's scratch: %+v", q.Items)
	}
	clk.add(DefaultScratchTTL + time.Second)
	if q, _ := s.Query(ctx, c, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "plan"}); len(q.Items) != 0 {
		t.Errorf("scratch outlived its 5 minute TTL: %+v", q.Items)
	}
	// ttl_seconds is bounded per scope.
	for _, ttl := range []int64{0, -1, int64(DefaultMaxScratchTTL/time.Second) + 1} {
		_, err := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "x y z", TTLSeconds: ptr(ttl)})
		if status(err) != http.StatusUnprocessableEntity {
			t.Errorf("ttl_seconds %d: err %v, want 422", ttl, err)
		}
	}
}

func TestAgentWriteGate(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	c := agentCaller("t1", "a1")
	w, err := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: "The reporting API requires ISO 8601 date ranges.",
		Metadata: &memory.WriteMetadata{Tags: []string{"api"}}})
	if err != nil || w.Durable || !strings.HasPrefix(w.MemoryID, memory.ProposalPrefix) {
		t.Fatalf("agent write = %+v, %v: want a non-durable proposal", w, err)
	}
	st, err := s.ProposalStatus(ctx, c, w.MemoryID)
	if err != nil || st.Status != memory.ProposalPending {
		t.Fatalf("before the gate: %+v, %v", st, err)
	}
	s.judgeProposals(ctx)
	st, err = s.ProposalStatus(ctx, c, w.MemoryID)
	if err != nil || st.Status != memory.ProposalCommitted || st.MemoryID == nil || *st.MemoryID == w.MemoryID {
		t.Fatalf("after the gate: %+v, %v: want committed under a new id", st, err)
	}
	q, err := s.Query(ctx, c, &memory.QueryRequest{Scope: memory.ScopeAgent, Query: "date format for the reporting API"})
	if err != nil || len(q.Items) == 0 || q.Items[0].MemoryID != *st.MemoryID {
		t.Fatalf("query after commit: %+v, %v", q, err)
	}
	if sc := q.Items[0].Score; sc == nil || *sc <= 0 || *sc > 1 {
		t.Errorf("score %v, want within (0, 1]", sc)
	}
	if !slices.Equal(q.StoresQueried, []string{StoreKeyword, StoreVector}) {
		t.Errorf("stores_queried = %v", q.StoresQueried)
	}
	// Another agent of the tenant cannot read the proposal's status.
	if _, err := s.ProposalStatus(ctx, agentCaller("t1", "a2"), w.MemoryID); status(err) != http.StatusNotFound {
		t.Errorf("another agent's proposal: %v, want 404", err)
	}

	// Personal data and credentials are rejected, and the reason names
	// the kind, never the value.
	for _, content := range []string{"Escalations go to jane.doe@example.com", "deploy key AKIAABCDEFGHABCDEFGH"} {
		w, err := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		s.judgeProposals(ctx)
		st, _ := s.ProposalStatus(ctx, c, w.MemoryID)
		if st.Status != memory.ProposalRejected || st.Reason == nil || st.MemoryID != nil {
			t.Fatalf("screened proposal: %+v", st)
		}
		if strings.Contains(*st.Reason, "jane") || strings.Contains(*st.Reason, "AKIA") {
			t.Errorf("reason %q repeats the screened value", *st.Reason)
		}
	}
}

func TestIdempotentWrites(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	c := agentCaller("t1", "a1")
	req := &memory.WriteRequest{Scope: memory.ScopeRun, Content: "Step one is done.", IdempotencyKey: "exec-7:1"}
	first, err := s.Write(ctx, c, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Write(ctx, c, req)
	if err != nil || again.MemoryID != first.MemoryID {
		t.Fatalf("replay = %+v, %v; want the first result %s", again, err, first.MemoryID)
	}
	q, _ := s.Query(ctx, c, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "step"})
	if len(q.Items) != 1 {
		t.Fatalf("%d memories after a replayed write, want 1", len(q.Items))
	}
	// Proposals replay too.
	preq := &memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Use staging first.", IdempotencyKey: "exec-7:2"}
	p1, _ := s.Write(ctx, c, preq)
	p2, err := s.Write(ctx, c, preq)
	if err != nil || p1.MemoryID != p2.MemoryID {
		t.Fatalf("proposal replay = %v, %v", p2, err)
	}
}

func TestUpdate(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	c := agentCaller("t1", "a1")
	w, _ := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Summaries should be short."})
	s.judgeProposals(ctx)
	st, _ := s.ProposalStatus(ctx, c, w.MemoryID)
	id := *st.MemoryID
	u, err := s.Update(ctx, c, &memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: id, Version: 1, Content: ptr("Summaries should be at most three bullets."),
		Metadata: &memory.UpdateMetadata{Tags: []string{"style"}}})
	if err != nil || u.Version != 2 || u.MemoryID != id {
		t.Fatalf("update = %+v, %v", u, err)
	}
	q, _ := s.Query(ctx, c, &memory.QueryRequest{Scope: memory.ScopeAgent, Query: "bullets"})
	if len(q.Items) == 0 || q.Items[0].Content != "Summaries should be at most three bullets." || !slices.Equal(q.Items[0].Metadata.Tags, []string{"style"}) {
		t.Fatalf("after update: %+v", q.Items)
	}
	cases := []struct {
		name string
		req  memory.UpdateRequest
		want int
	}{
		{"stale version", memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: id, Version: 1, Content: ptr("again")}, http.StatusConflict},
		{"screened content", memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: id, Version: 2, Content: ptr("call +1 415 555 0123 after 5pm")}, http.StatusUnprocessableEntity},
		{"run scope", memory.UpdateRequest{Scope: memory.ScopeRun, MemoryID: id, Version: 2, Content: ptr("x")}, http.StatusUnprocessableEntity},
		{"proposal id", memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: w.MemoryID, Version: 1, Content: ptr("x")}, http.StatusUnprocessableEntity},
		// seed 000, novaos_client_sdk.memory MemoryClient.update, Raises:
		// "403 if it belongs to another agent".
		{"another agent's memory", memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: id, Version: 2, Content: ptr("x")}, http.StatusForbidden},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			caller := c
			if tt.name == "another agent's memory" {
				caller = agentCaller("t1", "a2")
			}
			_, err := s.Update(ctx, caller, &tt.req)
			if got := status(err); got != tt.want {
				t.Fatalf("status %d (%v), want %d", got, err, tt.want)
			}
			if tt.want == http.StatusConflict && !errors.Is(err, memory.ErrConflict) {
				t.Errorf("409 does not match memory.ErrConflict")
			}
		})
	}
}

func TestForget(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	c := agentCaller("t1", "a1")
	w, _ := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "Draft outline, superseded."})
	for _, tt := range []struct {
		name string
		req  memory.ForgetRequest
		want int
	}{
		{"empty reason", memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: w.MemoryID, Reason: ""}, http.StatusUnprocessableEntity},
		{"reason too long", memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: w.MemoryID, Reason: strings.Repeat("x", 501)}, http.StatusUnprocessableEntity},
		{"proposal id", memory.ForgetRequest{Scope: memory.ScopeAgent, MemoryID: "prop_123", Reason: "cleanup"}, http.StatusUnprocessableEntity},
		{"user scope", memory.ForgetRequest{Scope: memory.ScopeUser, MemoryID: w.MemoryID, Reason: "cleanup"}, http.StatusForbidden},
	} {
		if _, err := s.Forget(ctx, c, &tt.req); status(err) != tt.want {
			t.Errorf("%s: %v, want %d", tt.name, err, tt.want)
		}
	}
	f, err := s.Forget(ctx, c, &memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: w.MemoryID, Reason: "superseded by final outline"})
	if err != nil || f.DeletedCount != 1 || f.DeleteEventID == "" {
		t.Fatalf("forget = %+v, %v", f, err)
	}
	// seed 000, novaos_client_sdk.memory MemoryClient.forget, Raises:
	// "NovaOSServerError If the memory is not found (HTTP 404)".
	if f, err := s.Forget(ctx, c, &memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: w.MemoryID, Reason: "again"}); status(err) != http.StatusNotFound || !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("second forget = %+v, %v; want 404", f, err)
	}
}

// failingExtractor fails every extraction.
type failingExtractor struct{}

func (failingExtractor) Extract(context.Context, *memory.Hint) ([]Fact, error) {
	return nil, errors.New("model down")
}

func TestHintsAndConsolidation(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	c := agentCaller("t1", "a1")
	if _, err := s.Hint(ctx, c, &memory.HintRequest{Hint: "User prefers dark mode."}); status(err) != http.StatusUnprocessableEntity {
		t.Fatalf("hint without conversation: %v, want 422", err)
	}
	h, err := s.Hint(ctx, c, &memory.HintRequest{Hint: "User prefers dark mode in every app. Thanks! Their manager is Priya Raman.", ConversationID: "conv-1", Tags: []string{"ui"}})
	if err != nil || h.Status != memory.HintAccepted || h.HintID == "" {
		t.Fatalf("hint = %+v, %v", h, err)
	}
	st, _ := s.HintStatus(ctx, c, h.HintID)
	if st.Status != memory.HintPending {
		t.Fatalf("before consolidation: %+v", st)
	}
	s.consolidate(ctx)
	st, err = s.HintStatus(ctx, c, h.HintID)
	if err != nil || st.Status != memory.HintConsolidated || st.ResolvedAt == nil {
		t.Fatalf("after consolidation: %+v, %v", st, err)
	}
	q, err := s.Query(ctx, c, &memory.QueryRequest{Scope: memory.ScopeUser, Query: "does the user like dark mode?"})
	if err != nil || len(q.Items) == 0 || q.Items[0].Content != "User prefers dark mode in every app." {
		t.Fatalf("user memory after consolidation: %+v, %v", q.Items, err)
	}
	for _, it := range q.Items {
		if it.Content == "Thanks!" {
			t.Errorf("a fragment of fewer than three words became a fact")
		}
	}
	if _, err := s.HintStatus(ctx, agentCaller("t1", "a2"), h.HintID); status(err) != http.StatusNotFound {
		t.Errorf("another agent read the hint's status: %v", err)
	}

	// A hint whose extraction keeps failing is dead-lettered after the
	// configured attempts, each after its lease lapsed.
	f, clk := newService(t, &Options{Extractor: failingExtractor{}, HintAttempts: 2})
	h, _ = f.Hint(ctx, c, &memory.HintRequest{Hint: "User likes tea.", ConversationID: "conv-1"})
	for range 2 {
		f.consolidate(ctx)
		clk.add(5 * DefaultConsolidateEvery)
	}
	if st, _ := f.HintStatus(ctx, c, h.HintID); st.Status != memory.HintDeadLettered {
		t.Fatalf("after 2 failed extractions: %+v, want dead_lettered", st)
	}
}

func TestCrossTenantIsolation(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	const content = "The escalation path is the on-call lead, then the duty manager."
	tenants := []string{"t1", "t2", "t3", "t4"}
	ids := map[string]string{}
	for _, tn := range tenants {
		c := agentCaller(tn, "a1") // the same agent and user names in every tenant
		if _, err := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: content}); err != nil {
			t.Fatal(err)
		}
		w, _ := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: content})
		ids[tn] = w.MemoryID
	}
	s.judgeProposals(ctx)
	for _, tn := range tenants {
		c := agentCaller(tn, "a1")
		for _, scope := range []memory.Scope{memory.ScopeAgent, memory.ScopeRun} {
			q, err := s.Query(ctx, c, &memory.QueryRequest{Scope: scope, Query: "escalation path"})
			if err != nil || len(q.Items) != 1 {
				t.Fatalf("tenant %s %s: %d items, %v; want exactly its own one", tn, scope, len(q.Items), err)
			}
		}
		for other, id := range ids {
			if other == tn {
				continue
			}
			if f, err := s.Forget(ctx, c, &memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: id, Reason: "probe"}); f.DeletedCount != 0 || status(err) != http.StatusNotFound {
				t.Fatalf("tenant %s forgetting tenant %s's memory: %+v, %v; want 404", tn, other, f, err)
			}
		}
	}
}

// slowStore makes keyword search wait for its context.
type slowStore struct{ memory.Store }

func (s slowStore) SearchKeyword(ctx context.Context, tenant string, f memory.Filter, terms []string, limit int) ([]memory.Hit, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestAssemble(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	c := agentCaller("t1", "a1")
	s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Deploys happen on Tuesday mornings."})
	s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "Ticket 4411 is being handled."})
	s.judgeProposals(ctx)
	if err := s.store.AppendMessage(ctx, "t1", "conv-1", memory.LiveMessage{MessageID: "m1", Role: "user", Content: "When do deploys happen?", Timestamp: s.now()}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Assemble(ctx, c, &memory.AssembleRequest{Query: "when do deploys happen"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Partial || len(res.AgentMemories) != 1 || len(res.LiveMessages) != 1 || res.RetrievalID == nil || !strings.Contains(string(res.RunData), "Ticket 4411") {
		t.Fatalf("assemble = %+v", res)
	}
	slices.Sort(res.SourcesConsulted)
	if !slices.Equal(res.SourcesConsulted, []string{SourceAgent, SourceUser, SourceLive, SourceRun}) || len(res.SourcesSkipped) != 0 {
		t.Errorf("consulted %v skipped %v", res.SourcesConsulted, res.SourcesSkipped)
	}

	// Sources the token cannot read, or names no id for, are skipped.
	narrow := &Caller{Tenant: "t1", Agent: "a1", Grants: grantsOf([]string{"memory:read:agent"})}
	res, _ = s.Assemble(ctx, narrow, &memory.AssembleRequest{Query: "deploys"})
	slices.Sort(res.SourcesSkipped)
	if res.Partial || !slices.Equal(res.SourcesConsulted, []string{SourceAgent}) || !slices.Equal(res.SourcesSkipped, []string{SourceUser, SourceLive, SourceRun}) {
		t.Errorf("narrow token: consulted %v skipped %v partial %v", res.SourcesConsulted, res.SourcesSkipped, res.Partial)
	}

	// A token budget keeps the best that fits.
	res, _ = s.Assemble(ctx, c, &memory.AssembleRequest{Query: "deploys", TokenBudget: ptr(1)})
	if len(res.AgentMemories)+len(res.DurableMemories)+len(res.LiveMessages) != 0 {
		t.Errorf("a 1-token budget kept %+v", res)
	}

	// A source that misses the latency budget is dropped, and the result
	// says it is partial.
	slow := New(slowStore{s.store}, &Options{Now: s.now})
	// slowStore answers only when its context ends, so a result at all
	// shows the budget cut the search; no clock is read.
	res, err = slow.Assemble(ctx, c, &memory.AssembleRequest{Query: "deploys", LatencyBudgetMS: ptr(50)})
	if err != nil || !res.Partial || len(res.AgentMemories) != 0 || len(res.LiveMessages) != 1 {
		t.Fatalf("slow keyword search: %+v, %v; want partial with the live messages", res, err)
	}
	q, err := slow.Query(ctx, c, &memory.QueryRequest{Scope: memory.ScopeAgent, Query: "deploys", LatencyBudgetMS: ptr(50)})
	if err != nil || !q.Partial || len(q.Items) != 0 {
		t.Fatalf("slow query: %+v, %v; want partial", q, err)
	}
}
