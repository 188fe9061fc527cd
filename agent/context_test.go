package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/identity"
)

func TestParsePlatformContext(t *testing.T) {
	full := map[string]any{
		"run_id": "run-1", "thread_id": "th-1", "session_id": "s-1", "agent_id": "ag-1",
		"instance_id": "in-1", "user_id": "u-1", "tenant_id": "t-1", "trace_id": "tr",
		"span_id": "sp", "traceparent": "tp", "idempotency_key": "idem-1",
		"mcp_gateway_url": "https://gw/mcp/v1", "mcp_write_hitl_active": true, "mcp_gateway_token": "gw-secret",
		"history": []any{
			map[string]any{"role": "user", "content": "hi"},
			map[string]any{"role": "assistant", "content": "hello"},
		},
		"config":        map[string]any{"temperature": 0.2},
		"output_schema": map[string]any{"type": "object"},
	}
	fullWant := PlatformContext{
		RunID: "run-1", ThreadID: "th-1", SessionID: "s-1", AgentID: "ag-1", InstanceID: "in-1",
		UserID: "u-1", TenantID: "t-1", TraceID: "tr", SpanID: "sp", Traceparent: "tp",
		IdempotencyKey: "idem-1", MCPGatewayURL: "https://gw/mcp/v1", MCPWriteHITLActive: true,
		History:      []ConversationTurn{{"user", "hi"}, {"assistant", "hello"}},
		Config:       map[string]any{"temperature": 0.2},
		OutputSchema: map[string]any{"type": "object"},
	}
	tests := []struct {
		name   string
		mds    []map[string]any
		want   PlatformContext
		wantOK bool
	}{
		{"none", []map[string]any{nil, {}}, PlatformContext{}, false},
		{"all fields", []map[string]any{{ContextMetadataKey: full}}, fullWant, true},
		{"request before message", []map[string]any{
			{ContextMetadataKey: map[string]any{"run_id": "from-request"}},
			{ContextMetadataKey: map[string]any{"run_id": "from-message"}},
		}, PlatformContext{RunID: "from-request"}, true},
		{"message when request has none", []map[string]any{
			{"other": 1},
			{ContextMetadataKey: map[string]any{"run_id": "from-message"}},
		}, PlatformContext{RunID: "from-message"}, true},
		{"camelCase spellings", []map[string]any{{ContextMetadataKey: map[string]any{
			"runId": "r", "tenantId": "t", "idempotencyKey": "k", "userId": "u",
			"mcpGatewayUrl": "https://gw/mcp/v1", "mcpWriteHitlActive": true,
		}}}, PlatformContext{RunID: "r", TenantID: "t", IdempotencyKey: "k", UserID: "u",
			MCPGatewayURL: "https://gw/mcp/v1", MCPWriteHITLActive: true}, true},
		{"JSON string value", []map[string]any{{ContextMetadataKey: `{"run_id":"r","history":[{"role":"user","content":"x"}]}`}},
			PlatformContext{RunID: "r", History: []ConversationTurn{{"user", "x"}}}, true},
		{"unreadable turns skipped", []map[string]any{{ContextMetadataKey: map[string]any{"history": []any{
			"not a turn", map[string]any{"content": "no role"}, map[string]any{"role": 3},
			map[string]any{"role": "user"}, map[string]any{"role": "assistant", "content": "ok"},
		}}}}, PlatformContext{History: []ConversationTurn{{"user", ""}, {"assistant", "ok"}}}, true},
		{"wrong field types ignored", []map[string]any{{ContextMetadataKey: map[string]any{
			"run_id": 12, "history": "nope", "config": []any{}, "mcp_write_hitl_active": "yes",
		}}}, PlatformContext{}, true},
		{"Go value", []map[string]any{{ContextMetadataKey: PlatformContext{RunID: "go"}}}, PlatformContext{RunID: "go"}, true},
		{"malformed value skipped", []map[string]any{{ContextMetadataKey: 42}, {ContextMetadataKey: map[string]any{"run_id": "m"}}},
			PlatformContext{RunID: "m"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParsePlatformContext(tt.mds...)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("context (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlatformContextRoundTrip(t *testing.T) {
	pc := PlatformContext{RunID: "r", TenantID: "t", History: []ConversationTurn{{"user", "a"}}, MCPGatewayURL: "https://gw/mcp/v1", MCPWriteHITLActive: true}
	b, err := json.Marshal(map[string]any{ContextMetadataKey: pc})
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	got, ok := ParsePlatformContext(md)
	if !ok {
		t.Fatal("not found")
	}
	if diff := cmp.Diff(pc, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// capture runs a one-skill agent on req and returns the Context the handler
// saw, after the handler returned (only for reading plain values).
func capture(t *testing.T, a *Agent, req *a2asrv.RequestContext) *Context {
	t.Helper()
	var got *Context
	a.MustRegister(Skill{ID: "probe", Handler: func(c *Context) (Result, error) { got = c; return Result{}, nil }})
	if err := a.Execute(context.Background(), req, &fakeUpdater{}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestContextAccessors(t *testing.T) {
	req := request("line one")
	req.Message.Parts = append(req.Message.Parts, a2a.TextPart("line two"))
	req.Metadata = map[string]any{ContextMetadataKey: map[string]any{
		"run_id": "run-9", "tenant_id": "claimed-tenant", "user_id": "claimed-user",
		"idempotency_key": "idem-9",
		"history":         []any{map[string]any{"role": "user", "content": "earlier"}},
	}}
	req.Streaming = true
	req.ReferencedTasks = []*a2a.Task{{ID: "ref-1"}}
	req.UnresolvedReferences = []string{"ref-2"}
	c := capture(t, New("acc", "1", nil), req)
	if refs := c.ReferencedTasks(); len(refs) != 1 || refs[0].ID != "ref-1" || c.UnresolvedReferences()[0] != "ref-2" {
		t.Errorf("references = %v, %v", refs, c.UnresolvedReferences())
	}

	got := map[string]any{
		"Input": c.Input(), "RunID": c.RunID(), "TaskID": c.TaskID(), "ContextID": c.ContextID(),
		"Tenant": c.Tenant(), "User": c.User(), "IdempotencyKey": c.IdempotencyKey(),
		"Skill": c.Skill(), "Streaming": c.Streaming(), "History": c.History(),
	}
	want := map[string]any{
		"Input": "line one\nline two", "RunID": "run-9", "TaskID": "task-1", "ContextID": "ctx-1",
		"Tenant": "claimed-tenant", "User": "claimed-user", "IdempotencyKey": "idem-9",
		"Skill": "probe", "Streaming": true, "History": []ConversationTurn{{"user", "earlier"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("accessors (-want +got):\n%s", diff)
	}
	c.History()[0].Content = "changed"
	if c.History()[0].Content != "earlier" {
		t.Error("History returned the context's own slice")
	}

	// A verified scope wins over the platform's claims.
	req2 := request("x")
	req2.Metadata = req.Metadata
	req2.Scope = a2asrv.Scope{Tenant: "verified-tenant", Owner: "verified-user"}
	c2 := capture(t, New("acc", "1", nil), req2)
	if c2.Tenant() != "verified-tenant" || c2.User() != "verified-user" {
		t.Errorf("Tenant, User = %q, %q; want the verified scope", c2.Tenant(), c2.User())
	}
}

func TestTraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const tp2 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	tests := []struct {
		name      string
		header    string
		pc        map[string]any
		wantTP    string
		wantTrace string
	}{
		{"header", tp, nil, tp, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"header wins over platform", tp, map[string]any{"traceparent": tp2}, tp, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"platform traceparent", "", map[string]any{"traceparent": tp2}, tp2, "0af7651916cd43dd8448eb211c80319c"},
		{"invalid header falls back", "00-xyz-00f067aa0ba902b7-01", map[string]any{"traceparent": tp2}, tp2, "0af7651916cd43dd8448eb211c80319c"},
		{"platform trace id only", "", map[string]any{"trace_id": "0af7651916cd43dd8448eb211c80319c"}, "", "0af7651916cd43dd8448eb211c80319c"},
		{"all-zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", nil, "", ""},
		{"upper-case hex refused", strings.ToUpper(tp), nil, "", ""},
		{"version ff refused", "ff" + tp[2:], nil, "", ""},
		{"none", "", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("x")
			req.Header = http.Header{}
			if tt.header != "" {
				req.Header.Set("Traceparent", tt.header)
			}
			if tt.pc != nil {
				req.Metadata = map[string]any{ContextMetadataKey: tt.pc}
			}
			c := capture(t, New("tr", "1", nil), req)
			if c.Traceparent() != tt.wantTP || c.TraceID() != tt.wantTrace {
				t.Errorf("Traceparent, TraceID = %q, %q; want %q, %q", c.Traceparent(), c.TraceID(), tt.wantTP, tt.wantTrace)
			}
		})
	}
}

func TestCustomHeaders(t *testing.T) {
	h := http.Header{}
	for name, v := range map[string]string{
		"X-Customer-Id":            "c-1",
		"X-Feature":                "beta",
		"Authorization":            "Bearer secret",
		"Proxy-Authorization":      "Basic x",
		"Cookie":                   "session=1",
		"X-Novaos-Run-Id":          "run",
		"X-NovaOS-Execution-Token": "tok",
		"Traceparent":              "00-…",
		"Tracestate":               "a=b",
		"A2a-Version":              "1.0",
		"A2a-Extensions":           "https://example.com/e",
		"Content-Type":             "application/json",
		"Content-Length":           "10",
		"Connection":               "keep-alive, X-Hop",
		"X-Hop":                    "hop",
		"Transfer-Encoding":        "chunked",
		"User-Agent":               "curl",
		"X-Forwarded-For":          "10.0.0.1",
		"X-Api-Key":                "k",
		"Accept":                   "*/*",
	} {
		h.Set(name, v)
	}
	h.Add("X-Multi", "a")
	h.Add("X-Multi", "b")
	h["Bad Name"] = []string{"x"}
	req := request("x")
	req.Header = h
	c := capture(t, New("hd", "1", nil), req)
	got := c.CustomHeaders()
	want := map[string]string{"x-customer-id": "c-1", "x-feature": "beta", "x-multi": "a, b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CustomHeaders (-want +got):\n%s", diff)
	}
	got["x-feature"] = "changed"
	if c.CustomHeaders()["x-feature"] != "beta" {
		t.Error("CustomHeaders did not return a copy")
	}
}

func TestIsSafeCustomHeader(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"X-Customer-Id", true}, {"x-request-id", true}, {"Tenant-Hint", true},
		{"Authorization", false}, {"AUTHORIZATION", false}, {"cookie", false},
		{"X-NovaOS-Tenant-Id", false}, {"x-novaos-anything", false},
		{"A2A-Version", false}, {"X-A2A-Notification-Token", false},
		{"traceparent", false}, {"Baggage", false}, {"Upgrade", false},
		{"Sec-Fetch-Mode", false}, {"If-None-Match", false},
		{"", false}, {"bad name", false}, {"bad:name", false},
	}
	for _, tt := range tests {
		if got := IsSafeCustomHeader(tt.name); got != tt.want {
			t.Errorf("IsSafeCustomHeader(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestExtensions(t *testing.T) {
	const cost = "https://example.com/ext/cost/v1"
	const trace = "https://example.com/ext/trace/v1"
	const other = "https://example.com/ext/other/v1"
	req := request("x")
	req.Extensions = []string{cost, trace}
	req.Header = http.Header{}
	req.Header.Add(a2a.HeaderExtensions, cost+", "+other)
	req.Header.Add(a2a.HeaderExtensions, trace)
	req.Metadata = map[string]any{cost: map[string]any{"budget": 3.0}, other: "ignored"}
	req.Message.Metadata = map[string]any{trace: "from-message", cost: "shadowed"}
	c := capture(t, New("ext", "1", nil), req)
	e := c.Extensions()
	if diff := cmp.Diff([]string{cost, trace}, e.Active()); diff != "" {
		t.Errorf("Active (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{cost, other, trace}, e.Requested()); diff != "" {
		t.Errorf("Requested (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{other}, e.Ignored()); diff != "" {
		t.Errorf("Ignored (-want +got):\n%s", diff)
	}
	tests := []struct {
		uri    string
		active bool
		value  any
		ok     bool
	}{
		{cost, true, map[string]any{"budget": 3.0}, true},
		{trace, true, "from-message", true},
		{other, false, nil, false},
	}
	for _, tt := range tests {
		if e.IsActive(tt.uri) != tt.active {
			t.Errorf("IsActive(%s) = %v", tt.uri, !tt.active)
		}
		v, ok := e.Value(tt.uri)
		if ok != tt.ok || !cmp.Equal(v, tt.value) {
			t.Errorf("Value(%s) = %v, %v; want %v, %v", tt.uri, v, ok, tt.value, tt.ok)
		}
	}
	var zero Extensions
	if zero.IsActive(cost) || len(zero.Active()) != 0 {
		t.Error("zero Extensions is not empty")
	}
}

func TestLoggerBinding(t *testing.T) {
	var buf bytes.Buffer
	a := New("logger-agent", "1", &Options{Logger: slogJSON(&buf)})
	req := request("x")
	req.Metadata = map[string]any{ContextMetadataKey: map[string]any{"run_id": "run-7", "tenant_id": "t-7"}}
	a.MustRegister(Skill{ID: "s", Handler: func(c *Context) (Result, error) {
		c.Logger().Info("working on it", "customer", "jane@example.com")
		return Result{}, nil
	}})
	if err := a.Execute(context.Background(), req, &fakeUpdater{}); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log %q: %v", buf.String(), err)
	}
	for k, want := range map[string]any{
		"msg": "working on it", "run_id": "run-7", "agent_id": "logger-agent", "tenant_id": "t-7",
		"task_id": "task-1", "skill": "s", "customer": "[EMAIL]",
	} {
		if rec[k] != want {
			t.Errorf("log %s = %v, want %v", k, rec[k], want)
		}
	}
}

func slogJSON(w *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, nil))
}

func TestMemoryBudgetParsing(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want *MemoryBudget
	}{
		{"absent", nil, nil},
		{"given", map[string]any{"token_budget": 2000.0, "latency_budget_ms": 300.0}, &MemoryBudget{2000, 300}},
		{"empty object takes the defaults", map[string]any{}, &MemoryBudget{DefaultMemoryTokenBudget, DefaultMemoryLatencyBudgetMS}},
		{"bad values take the defaults", map[string]any{"token_budget": -5.0, "latency_budget_ms": 1.5}, &MemoryBudget{DefaultMemoryTokenBudget, DefaultMemoryLatencyBudgetMS}},
		{"strings are not numbers", map[string]any{"token_budget": "100"}, &MemoryBudget{DefaultMemoryTokenBudget, DefaultMemoryLatencyBudgetMS}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]any{"run_id": "r"}
			if tt.in != nil {
				m["memory_budget"] = tt.in
			}
			pc, _ := ParsePlatformContext(map[string]any{ContextMetadataKey: m})
			if (pc.MemoryBudget == nil) != (tt.want == nil) || pc.MemoryBudget != nil && *pc.MemoryBudget != *tt.want {
				t.Fatalf("MemoryBudget = %+v, want %+v", pc.MemoryBudget, tt.want)
			}
		})
	}
}

// The plain accessors other SDK packages read through their own
// interfaces (memory.Execution, gate.Execution) say what Execution and
// Platform say.
func TestPlainAccessors(t *testing.T) {
	tests := []struct {
		name      string
		pc        map[string]any
		wantToken string
		wantErr   error
		wantURL   string
		wantB     [2]int
		wantOK    bool
	}{
		{"nothing", map[string]any{"run_id": "r"}, "", identity.ErrNoToken, "", [2]int{}, false},
		{"all", map[string]any{"execution_token": "tok-1", "gateway_url": "https://gw.example",
			"memory_budget": map[string]any{"token_budget": 2000.0, "latency_budget_ms": 300.0}},
			"tok-1", nil, "https://gw.example", [2]int{2000, 300}, true},
		{"budget defaults", map[string]any{"memory_budget": map[string]any{}}, "", identity.ErrNoToken, "",
			[2]int{DefaultMemoryTokenBudget, DefaultMemoryLatencyBudgetMS}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("x")
			req.Metadata = map[string]any{ContextMetadataKey: tt.pc}
			c := capture(t, New("acc", "1", nil), req)
			tok, err := c.ExecutionToken()
			if !errors.Is(err, tt.wantErr) || tok.Reveal() != tt.wantToken {
				t.Errorf("ExecutionToken = %q, %v; want %q, %v", tok.Reveal(), err, tt.wantToken, tt.wantErr)
			}
			if got := c.GatewayURL(); got != tt.wantURL {
				t.Errorf("GatewayURL = %q, want %q", got, tt.wantURL)
			}
			tokens, latency, ok := c.MemoryBudget()
			if [2]int{tokens, latency} != tt.wantB || ok != tt.wantOK {
				t.Errorf("MemoryBudget = %d, %d, %v; want %v, %v", tokens, latency, ok, tt.wantB, tt.wantOK)
			}
		})
	}
}

type hookKey string

// A BeforeSkill hook derives the handler's context from its argument, as
// Options.BeforeSkill says; the hooks' and the handler's Context share the
// execution: write keys count on, platform events are held for the result.
func TestBeforeSkillDerivesFromItsArgument(t *testing.T) {
	var keys []string
	hook := func(name string) func(c *Context) context.Context {
		return func(c *Context) context.Context {
			keys = append(keys, c.WriteKey())
			if err := c.PlatformEvent("hook."+name, nil); err != nil {
				t.Error(err)
			}
			return context.WithValue(c, hookKey(name), name+"-value")
		}
	}
	a := New("hooks", "1", &Options{BeforeSkill: []func(*Context) context.Context{hook("first"), hook("second")}})
	var seen []any
	var events []map[string]any
	a.MustRegister(Skill{ID: "s", Handler: func(c *Context) (Result, error) {
		keys = append(keys, c.WriteKey())
		seen = []any{c.Value(hookKey("first")), c.Value(hookKey("second")), c.Value(hookKey("none")), c.Err()}
		events = c.heldEvents()
		return Result{Output: "ok"}, nil
	}})
	req := request("x")
	req.Metadata = map[string]any{ContextMetadataKey: map[string]any{"idempotency_key": "idem"}}
	f, err := run(t, a, req)
	if err != nil {
		t.Fatal(err)
	}
	if f.task == nil || f.task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task %+v", f.task)
	}
	got := map[string]any{"keys": keys, "seen": seen, "events": events}
	want := map[string]any{
		"keys":   []string{"idem:1", "idem:2", "idem:3"},
		"seen":   []any{"first-value", "second-value", nil, nil},
		"events": []map[string]any{{"event": "hook.first"}, {"event": "hook.second"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
