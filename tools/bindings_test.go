package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/envconfig"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/resilience"
)

// noWait is a retry wait that does not sleep.
func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func testBindings(t *testing.T, g *fakeGateway, o *BindingsOptions) *Bindings {
	t.Helper()
	if o == nil {
		o = &BindingsOptions{}
	}
	if o.Timeout == 0 {
		o.Timeout = time.Minute
	}
	if o.KnowledgeRetry == nil {
		o.KnowledgeRetry = &resilience.Policy{Attempts: 3, Wait: noWait, Breaker: resilience.NewBreaker(nil)}
	}
	b, err := NewBindings(g.client(t, nil), o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }

// Every binding calls its tool with the arguments the gateway's tools
// take.
func TestBindingNamesAndArguments(t *testing.T) {
	tests := []struct {
		name     string
		call     func(ctx context.Context, b *Bindings) (*Response, error)
		tool     string
		wantArgs string
	}{
		{"memory write", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Memory.Write(ctx, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "likes tea", IdempotencyKey: "k1"})
		}, ToolMemoryWrite, `{"scope":"run","content":"likes tea","idempotency_key":"k1"}`},
		{"memory query", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Memory.Query(ctx, &memory.QueryRequest{Scope: memory.ScopeAgent, Query: "tea", TopK: ptr(3)})
		}, ToolMemoryQuery, `{"scope":"agent","query":"tea","top_k":3}`},
		{"memory update", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Memory.Update(ctx, &memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: "m1", Version: 2, Content: ptr("coffee")})
		}, ToolMemoryUpdate, `{"scope":"agent","memory_id":"m1","version":2,"content":"coffee"}`},
		{"memory forget", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Memory.Forget(ctx, &memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: "m1", Reason: "asked", IdempotencyKey: "k2"})
		}, ToolMemoryForget, `{"scope":"run","memory_id":"m1","reason":"asked","idempotency_key":"k2"}`},
		// seed 002, the memory bindings: forget(scope, memory_id, reason="agent-requested").
		{"memory forget without a reason", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Memory.Forget(ctx, &memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: "m1", IdempotencyKey: "k2"})
		}, ToolMemoryForget, `{"scope":"run","memory_id":"m1","reason":"agent-requested","idempotency_key":"k2"}`},
		{"memory hint", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Memory.Hint(ctx, &memory.HintRequest{Hint: "prefers mornings", ConversationID: "conv-1"})
		}, ToolMemoryHint, `{"hint":"prefers mornings","conversation_id":"conv-1"}`},
		{"memory assemble", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Memory.Assemble(ctx, &memory.AssembleRequest{Query: "tea", RequestID: "r1", TraceID: "t1"})
		}, ToolMemoryAssemble, `{"query":"tea","request_id":"r1","trace_id":"t1"}`},
		{"knowledge search", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.Search(ctx, &KnowledgeSearchRequest{Query: "refunds", CollectionID: "col-1", TopK: 5})
		}, ToolKnowledgeSearch, `{"query":"refunds","collection_id":"col-1","top_k":5}`},
		{"knowledge ingest", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.Ingest(ctx, "text", map[string]any{"collection_id": "col-1", "filename": "a.txt"})
		}, ToolKnowledgeIngest, `{"content":"text","metadata":{"collection_id":"col-1","filename":"a.txt"}}`},
		{"knowledge create collection", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.CreateCollection(ctx, "policies", "refund rules")
		}, ToolKnowledgeCreateCollection, `{"name":"policies","description":"refund rules"}`},
		{"knowledge list collections", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.ListCollections(ctx)
		}, ToolKnowledgeListCollections, `{}`},
		{"knowledge delete collection", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.DeleteCollection(ctx, "col-1")
		}, ToolKnowledgeDeleteCollection, `{"collection_id":"col-1"}`},
		{"any tool", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Call(ctx, ToolFilesWrite, &FileWriteRequest{Path: "shared.txt", Content: "x", Scope: FileScopeTenant, IfVersion: ptr[int64](0)})
		}, ToolFilesWrite, `{"path":"shared.txt","content":"x","scope":"tenant","if_version":0}`},
		{"an upstream's tool", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Call(ctx, "novaos.github.create_issue", map[string]any{"title": "bug"})
		}, "novaos.github.create_issue", `{"title":"bug"}`},
		{"knowledge job status", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.JobStatus(ctx, "job-1")
		}, ToolKnowledgeJobStatus, `{"job_id":"job-1"}`},
		{"knowledge build graph", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.BuildGraph(ctx, "col-1")
		}, ToolKnowledgeBuildGraph, `{"collection_id":"col-1"}`},
		{"knowledge graph status", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.GraphStatus(ctx, "col-1")
		}, ToolKnowledgeGraphStatus, `{"collection_id":"col-1"}`},
		{"knowledge local graph query", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.QueryGraphLocal(ctx, "who?", "col-1")
		}, ToolKnowledgeQueryGraphLocal, `{"question":"who?","collection_id":"col-1"}`},
		{"knowledge global graph query", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.QueryGraphGlobal(ctx, "themes?", "col-1")
		}, ToolKnowledgeQueryGraphGlobal, `{"question":"themes?","collection_id":"col-1"}`},
		{"agents call", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Agents.Call(ctx, "inst-1", "summarise this", "summary")
		}, ToolAgentsCall, `{"agent":"inst-1","message":"summarise this","skill_id":"summary"}`},
		{"agents call without a skill", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Agents.Call(ctx, "inst-1", "hi", "")
		}, ToolAgentsCall, `{"agent":"inst-1","message":"hi"}`},
		{"files write", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Files.Write(ctx, "a/b.bin", []byte{0, 1, 2}, "application/octet-stream")
		}, ToolFilesWrite, `{"path":"a/b.bin","content":"AAEC","content_type":"application/octet-stream","encoding":"base64"}`},
		{"files write text", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Files.WriteText(ctx, "notes.md", "# hi", "text/markdown")
		}, ToolFilesWrite, `{"path":"notes.md","content":"# hi","content_type":"text/markdown","encoding":"text"}`},
		{"files read", func(ctx context.Context, b *Bindings) (*Response, error) { return b.Files.Read(ctx, "notes.md") },
			ToolFilesRead, `{"path":"notes.md"}`},
		{"files list", func(ctx context.Context, b *Bindings) (*Response, error) { return b.Files.List(ctx, "a/") },
			ToolFilesList, `{"prefix":"a/"}`},
		{"files delete", func(ctx context.Context, b *Bindings) (*Response, error) { return b.Files.Delete(ctx, "notes.md") },
			ToolFilesDelete, `{"path":"notes.md"}`},
		{"notify webhook", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Notify.Webhook(ctx, "https://hooks.example.com/x", map[string]any{"text": "done"})
		}, ToolNotifyWebhook, `{"url":"https://hooks.example.com/x","payload":{"text":"done"}}`},
		{"http fetch", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.HTTP.Fetch(ctx, &FetchRequest{URL: "https://example.com/", Headers: map[string]string{"Accept": "text/html"}})
		}, ToolHTTPFetch, `{"url":"https://example.com/","method":"GET","headers":{"Accept":"text/html"}}`},
		{"http head", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.HTTP.Fetch(ctx, &FetchRequest{URL: "https://example.com/", Method: "head"})
		}, ToolHTTPFetch, `{"url":"https://example.com/","method":"HEAD"}`},
		{"connector standard", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Connector.Call(ctx, &ConnectorCall{ConnectorID: "clickup", Operation: "create-task", Params: map[string]any{"name": "x"}})
		}, "novaos.connector.clickup.create-task", `{"name":"x"}`},
		{"connector licensed", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Connector.Call(ctx, &ConnectorCall{ConnectorID: "gmail", Operation: "send", Tier: TierLicensed})
		}, "novaos.connector.licensed.gmail.send", `{}`},
		{"connector ext", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Connector.Call(ctx, &ConnectorCall{ConnectorID: "acme_crm", Operation: "get_lead", Tier: TierExt, Params: json.RawMessage(`{"id":7}`)})
		}, "novaos.connector.ext.acme_crm.get_lead", `{"id":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newFakeGateway(t, result(okResult))
			resp, err := tt.call(t.Context(), testBindings(t, g, nil))
			if err != nil || !resp.Success || string(resp.Data) != `{"ok":true}` {
				t.Fatalf("%+v, %v", resp, err)
			}
			calls := g.recorded()
			if len(calls) != 1 || calls[0].Path != CallPath || calls[0].tool() != tt.tool {
				t.Fatalf("calls %+v, want one of %s", calls, tt.tool)
			}
			var got, want any
			_ = json.Unmarshal(calls[0].args(), &got)
			if err := json.Unmarshal([]byte(tt.wantArgs), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
		})
	}
}

// A call the bindings can see is wrong fails before anything is sent.
func TestBindingInvalidArguments(t *testing.T) {
	tests := []struct {
		name string
		call func(ctx context.Context, b *Bindings) (*Response, error)
	}{
		{"memory nil request", func(ctx context.Context, b *Bindings) (*Response, error) { return b.Memory.Write(ctx, nil) }},
		{"memory bad scope", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Memory.Write(ctx, &memory.WriteRequest{Scope: "galaxy", Content: "x"})
		}},
		{"memory query out of range", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Memory.Query(ctx, &memory.QueryRequest{Scope: memory.ScopeAgent, Query: "q", TopK: ptr(-1)})
		}},
		{"knowledge empty query", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.Search(ctx, &KnowledgeSearchRequest{Query: " "})
		}},
		{"knowledge no content", func(ctx context.Context, b *Bindings) (*Response, error) { return b.Knowledge.Ingest(ctx, "", nil) }},
		{"knowledge no job", func(ctx context.Context, b *Bindings) (*Response, error) { return b.Knowledge.JobStatus(ctx, "") }},
		{"knowledge no collection", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.QueryGraphLocal(ctx, "q", "")
		}},
		{"knowledge collection without a name", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.CreateCollection(ctx, "", "")
		}},
		{"any tool, not a name", func(ctx context.Context, b *Bindings) (*Response, error) { return b.Call(ctx, "a b", nil) }},
		{"agents no agent", func(ctx context.Context, b *Bindings) (*Response, error) { return b.Agents.Call(ctx, "", "hi", "") }},
		{"agents no message", func(ctx context.Context, b *Bindings) (*Response, error) { return b.Agents.Call(ctx, "a", "", "") }},
		{"files no path", func(ctx context.Context, b *Bindings) (*Response, error) { return b.Files.Read(ctx, "") }},
		{"notify not a URL", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Notify.Webhook(ctx, "file:///etc/passwd", nil)
		}},
		{"http POST", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.HTTP.Fetch(ctx, &FetchRequest{URL: "https://x/", Method: "POST"})
		}},
		{"http header injection", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.HTTP.Fetch(ctx, &FetchRequest{URL: "https://x/", Headers: map[string]string{"X-A": "1\r\nEvil: 2"}})
		}},
		{"connector bad tier", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Connector.Call(ctx, &ConnectorCall{ConnectorID: "c", Operation: "o", Tier: "premium"})
		}},
		{"connector bad id", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Connector.Call(ctx, &ConnectorCall{ConnectorID: "a.b", Operation: "o"})
		}},
		{"connector params not an object", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Connector.Call(ctx, &ConnectorCall{ConnectorID: "c", Operation: "o", Params: []int{1}})
		}},
		{"connector params too large", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Connector.Call(ctx, &ConnectorCall{ConnectorID: "c", Operation: "o", Params: map[string]string{"x": strings.Repeat("y", DefaultMaxParamsBytes)}})
		}},
		{"connector params against the schema", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Connector.Call(ctx, &ConnectorCall{ConnectorID: "c", Operation: "o", Params: map[string]any{"n": "three"},
				ParamsSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)})
		}},
		{"connector schema with a remote ref", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Connector.Call(ctx, &ConnectorCall{ConnectorID: "c", Operation: "o",
				ParamsSchema: json.RawMessage(`{"$ref":"https://example.com/schema.json"}`)})
		}},
		{"timeout below the gateway's", func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Memory.Query(ctx, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "q"}, WithTimeout(10*time.Second))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newFakeGateway(t, result(okResult))
			resp, err := tt.call(t.Context(), testBindings(t, g, &BindingsOptions{GatewayTimeout: 30 * time.Second}))
			if !errors.Is(err, ErrInvalidArgument) || resp == nil || resp.Success || resp.Error == "" {
				t.Fatalf("%+v, %v: want a failed response and ErrInvalidArgument", resp, err)
			}
			if n := len(g.recorded()); n != 0 {
				t.Fatalf("%d requests sent", n)
			}
		})
	}
	// A schema the params match lets the call through.
	g := newFakeGateway(t, result(okResult))
	resp, err := testBindings(t, g, nil).Connector.Call(t.Context(), &ConnectorCall{ConnectorID: "c", Operation: "o", Params: map[string]any{"n": 3},
		ParamsSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)})
	if err != nil || !resp.Success {
		t.Fatalf("%+v, %v", resp, err)
	}
}

// A Response's data is the structured content, else the first text
// block (JSON, or else a JSON string); a tool's failure is its error
// text.
func TestResponseOf(t *testing.T) {
	text := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
	tests := []struct {
		name   string
		result map[string]any
		want   Response
	}{
		{"structured", map[string]any{"content": text("ignored"), "structuredContent": map[string]any{"a": 1}}, Response{Success: true, Data: json.RawMessage(`{"a":1}`)}},
		{"JSON text", map[string]any{"content": text(` {"job_id":"j1"} `)}, Response{Success: true, Data: json.RawMessage(`{"job_id":"j1"}`)}},
		{"plain text", map[string]any{"content": text("hello")}, Response{Success: true, Data: json.RawMessage(`"hello"`)}},
		{"no content", map[string]any{}, Response{Success: true}},
		{"error string", map[string]any{"isError": true, "content": text(`{"code":"SERVICE_DISABLED","error":"SERVICE_DISABLED: connector-host is off"}`)},
			Response{Error: "SERVICE_DISABLED: connector-host is off", Data: json.RawMessage(`{"code":"SERVICE_DISABLED","error":"SERVICE_DISABLED: connector-host is off"}`)}},
		{"error object", map[string]any{"isError": true, "content": text(`{"error":{"status":409,"code":"conflict","message":"stale version"}}`)},
			Response{Error: "conflict: stale version", Data: json.RawMessage(`{"error":{"status":409,"code":"conflict","message":"stale version"}}`)}},
		{"error text", map[string]any{"isError": true, "content": text("it broke")}, Response{Error: "it broke", Data: json.RawMessage(`"it broke"`)}},
		{"error without words", map[string]any{"isError": true}, Response{Error: "the tool failed without saying why"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newFakeGateway(t, result(tt.result))
			resp, err := testBindings(t, g, nil).Agents.Call(t.Context(), "a", "m", "")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *resp); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// A refused call's Response carries the gateway's message, and the
	// typed error.
	g := newFakeGateway(t, func(gwCall) reply {
		return reply{err: rpcErr(CodeForbidden, "no scope", ErrorData{Code: ReasonInsufficientScope})}
	})
	resp, err := testBindings(t, g, nil).Files.List(t.Context(), "")
	var e *Error
	if !errors.As(err, &e) || resp.Success || resp.Error != "no scope" {
		t.Fatalf("%+v, %v", resp, err)
	}
	// A held call: the Response says so, the error is typed.
	held := newFakeGateway(t, func(gwCall) reply {
		return reply{err: rpcErr(CodeWriteConfirmationRequired, "approve first", WriteConfirmationData{Code: ReasonHITLRequired, CallID: "call-1", ToolName: ToolNotifyWebhook})}
	})
	resp, err = testBindings(t, held, nil).Notify.Webhook(t.Context(), "https://x/", nil)
	var w *WriteConfirmationRequired
	if !errors.As(err, &w) || resp.Success || !strings.Contains(resp.Error, "waits for a person's approval") || w.Data.CallID != "call-1" {
		t.Fatalf("%+v, %v", resp, err)
	}
}

// Knowledge calls retry the transient failures and nothing else; every
// other binding calls once.
func TestRetries(t *testing.T) {
	transient := []struct {
		name  string
		reply reply
	}{
		{"503", reply{status: 503, body: "busy", contentType: "text/plain"}},
		{"429", reply{status: 429, body: "slow down", contentType: "text/plain"}},
		{"502", reply{status: 502, body: "bad gateway", contentType: "text/plain"}},
		{"504", reply{status: 504, body: "timeout", contentType: "text/plain"}},
		{"gateway unavailable", reply{err: rpcErr(CodeUnavailable, "backend down", ErrorData{Code: ReasonUnavailable})}},
	}
	for _, tt := range transient {
		t.Run("knowledge retries "+tt.name, func(t *testing.T) {
			var n atomic.Int32
			g := newFakeGateway(t, func(gwCall) reply {
				if n.Add(1) <= 2 {
					return tt.reply
				}
				return reply{result: okResult}
			})
			resp, err := testBindings(t, g, nil).Knowledge.Search(t.Context(), &KnowledgeSearchRequest{Query: "q"})
			if err != nil || !resp.Success || n.Load() != 3 {
				t.Fatalf("%+v, %v after %d calls", resp, err, n.Load())
			}
		})
	}
	for _, tt := range []struct {
		name  string
		reply reply
	}{
		{"400", reply{status: 400, body: "bad", contentType: "text/plain"}},
		{"forbidden", reply{err: rpcErr(CodeForbidden, "no", nil)}},
		{"invalid params", reply{err: rpcErr(-32602, "bad arguments", nil)}},
		{"held", reply{err: rpcErr(CodeWriteConfirmationRequired, "held", nil)}},
		{"tool failure", reply{result: map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "no"}}}}},
	} {
		t.Run("knowledge does not retry "+tt.name, func(t *testing.T) {
			g := newFakeGateway(t, func(gwCall) reply { return tt.reply })
			resp, _ := testBindings(t, g, nil).Knowledge.Search(t.Context(), &KnowledgeSearchRequest{Query: "q"})
			if resp.Success || len(g.recorded()) != 1 {
				t.Fatalf("%+v after %d calls", resp, len(g.recorded()))
			}
		})
	}
	others := map[string]func(ctx context.Context, b *Bindings) (*Response, error){
		"memory": func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Memory.Query(ctx, &memory.QueryRequest{Scope: memory.ScopeRun, Query: "q"})
		},
		"agents": func(ctx context.Context, b *Bindings) (*Response, error) { return b.Agents.Call(ctx, "a", "m", "") },
		"knowledge create collection": func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Knowledge.CreateCollection(ctx, "c", "")
		},
		"any tool": func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Call(ctx, ToolKnowledgeSearch, nil)
		},
		"files": func(ctx context.Context, b *Bindings) (*Response, error) { return b.Files.List(ctx, "") },
		"notify": func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Notify.Webhook(ctx, "https://x/", nil)
		},
		"http": func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.HTTP.Fetch(ctx, &FetchRequest{URL: "https://x/"})
		},
		"connector": func(ctx context.Context, b *Bindings) (*Response, error) {
			return b.Connector.Call(ctx, &ConnectorCall{ConnectorID: "c", Operation: "o"})
		},
	}
	for name, call := range others {
		t.Run(name+" does not retry", func(t *testing.T) {
			g := newFakeGateway(t, func(gwCall) reply { return reply{status: 503, body: "busy", contentType: "text/plain"} })
			resp, err := call(t.Context(), testBindings(t, g, nil))
			if err == nil || resp.Success || len(g.recorded()) != 1 {
				t.Fatalf("%+v, %v after %d calls", resp, err, len(g.recorded()))
			}
		})
	}
	// Five failures in a row open the knowledge breaker: the next call is
	// refused without a request.
	g := newFakeGateway(t, func(gwCall) reply { return reply{status: 503, body: "busy", contentType: "text/plain"} })
	b := testBindings(t, g, &BindingsOptions{KnowledgeRetry: &resilience.Policy{Attempts: 1, Breaker: resilience.NewBreaker(nil)}})
	for range 5 {
		b.Knowledge.JobStatus(t.Context(), "j")
	}
	resp, err := b.Knowledge.JobStatus(t.Context(), "j")
	if !errors.Is(err, resilience.ErrOpen) || resp.Success || len(g.recorded()) != 5 {
		t.Fatalf("%+v, %v after %d calls", resp, err, len(g.recorded()))
	}
	// The default policy is the seed SDK's: 3 attempts, a 5-failure breaker.
	def, err := NewBindings(g.client(t, nil), &BindingsOptions{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if p := def.Knowledge.k.knowledgeRetry; p.Attempts != 3 || p.Breaker == nil {
		t.Fatalf("default knowledge policy %+v", p)
	}
}

// The timeout comes from the options (a program reads
// NOVAOS_TOOL_TIMEOUT_S with envconfig.ToolTimeout and passes it), 128 s
// when none is given, never from the environment; a call may set its
// own; the gateway's ceiling is a floor when given.
func TestTimeouts(t *testing.T) {
	// Set, the variable must not reach the bindings: only a program's
	// options do.
	t.Setenv(envconfig.ToolTimeoutEnv, "soon")
	g := newFakeGateway(t, result(okResult))
	for _, tt := range []struct {
		name string
		o    *BindingsOptions
		want time.Duration
	}{
		{"nil options", nil, DefaultToolTimeout},
		{"zero", &BindingsOptions{}, 128 * time.Second},
		{"given", &BindingsOptions{Timeout: 45 * time.Second}, 45 * time.Second},
	} {
		b, err := NewBindings(g.client(t, nil), tt.o)
		if err != nil || b.Memory.k.timeout != tt.want {
			t.Errorf("%s: %v: timeout %v, want %v", tt.name, err, b.Memory.k.timeout, tt.want)
		}
	}
	if _, err := NewBindings(g.client(t, nil), &BindingsOptions{Timeout: -time.Second}); err == nil {
		t.Error("a negative timeout passed")
	}
	if err := ValidateTimeout(30*time.Second, 30*time.Second); err != nil {
		t.Error(err)
	}
	if err := ValidateTimeout(29*time.Second, 30*time.Second); err == nil {
		t.Error("a timeout below the floor passed")
	}
	if err := ValidateTimeout(time.Second, 0); err != nil {
		t.Error(err)
	}
	if _, err := NewBindings(g.client(t, nil), &BindingsOptions{Timeout: 10 * time.Second, GatewayTimeout: 30 * time.Second}); err != nil {
		t.Fatal(err) // checked per call, so a call's own timeout can lift it
	}

	// A call that outlives its timeout fails with the deadline, named.
	release := make(chan struct{})
	defer close(release)
	slow := newFakeGateway(t, func(gwCall) reply { <-release; return reply{result: okResult} })
	resp, err := testBindings(t, slow, nil).Files.List(t.Context(), "", WithTimeout(50*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(resp.Error, "no answer within 50ms") {
		t.Fatalf("%+v, %v", resp, err)
	}
}

// Connector tool names follow connector-host's catalogue; a
// standard-tier call of an unknown tool says to try the other tiers.
func TestConnector(t *testing.T) {
	for _, tt := range []struct {
		tier    Tier
		id, op  string
		want    string
		wantErr bool
	}{
		{"", "slack", "send-message", "novaos.connector.slack.send-message", false},
		{TierStandard, "slack", "send_message", "novaos.connector.slack.send_message", false},
		{TierLicensed, "gmail", "send", "novaos.connector.licensed.gmail.send", false},
		{TierExt, "x", "y", "novaos.connector.ext.x.y", false},
		{"Licensed", "x", "y", "", true},
		{"", "", "y", "", true},
		{"", "x", "a/b", "", true},
		{"", strings.Repeat("c", 100), strings.Repeat("o", 20), "", true},
	} {
		got, err := ConnectorToolName(tt.tier, tt.id, tt.op)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%q %q %q: %q, %v", tt.tier, tt.id, tt.op, got, err)
		}
	}
	notFound := func(gwCall) reply {
		return reply{err: rpcErr(-32602, `unknown tool "novaos.connector.gmail.send"`, nil)}
	}
	g := newFakeGateway(t, notFound)
	b := testBindings(t, g, nil)
	resp, err := b.Connector.Call(t.Context(), &ConnectorCall{ConnectorID: "gmail", Operation: "send"})
	if err == nil || !strings.Contains(resp.Error, `try Tier "licensed" or "ext"`) {
		t.Fatalf("%+v, %v", resp, err)
	}
	resp, _ = b.Connector.Call(t.Context(), &ConnectorCall{ConnectorID: "gmail", Operation: "send", Tier: TierLicensed})
	if strings.Contains(resp.Error, "try Tier") {
		t.Fatalf("a licensed call got the hint: %q", resp.Error)
	}
	disabled := newFakeGateway(t, func(gwCall) reply {
		return reply{err: rpcErr(CodeUnavailable, "connector-host is disabled", ErrorData{Code: ReasonServiceDisabled})}
	})
	resp, err = testBindings(t, disabled, nil).Connector.Call(t.Context(), &ConnectorCall{ConnectorID: "c", Operation: "o"})
	var e *Error
	if !errors.As(err, &e) || e.Data.Code != ReasonServiceDisabled || len(disabled.recorded()) != 1 {
		t.Fatalf("%+v, %v", resp, err)
	}
}

// HITL input fails closed without a request; the write classifier is
// the gateway's.
func TestHITL(t *testing.T) {
	g := newFakeGateway(t, result(okResult))
	b := testBindings(t, g, nil)
	resp, err := b.HITL.RequestInput(t.Context(), "Which plan?", "text")
	if !errors.Is(err, ErrHITLUnavailable) || resp.Success || resp.Error == "" || len(g.recorded()) != 0 {
		t.Fatalf("%+v, %v", resp, err)
	}
	for name, want := range map[string]bool{ToolNotifyWebhook: true, ToolMemoryWrite: false, ToolFilesDelete: true,
		ToolFilesRead: false, "novaos.connector.slack.send-message": true, "novaos.connector.slack.list-channels": false} {
		if got := b.HITL.RequiresWriteHITL(name); got != want {
			t.Errorf("%s: %v", name, got)
		}
	}
}

// IngestBatch submits with bounded concurrency, keeps the order, marks
// failed submissions and adds the collection; PollBatch and PollJob wait
// for terminal statuses.
func TestIngestBatchAndPolls(t *testing.T) {
	var mu sync.Mutex
	inFlight, maxInFlight := 0, 0
	polls := map[string]int{}
	gate := make(chan struct{})
	var open sync.Once
	g := newFakeGateway(t, func(c gwCall) reply {
		var args struct {
			Content  string         `json:"content"`
			Metadata map[string]any `json:"metadata"`
			JobID    string         `json:"job_id"`
		}
		_ = json.Unmarshal(c.args(), &args)
		switch c.tool() {
		case ToolKnowledgeIngest:
			mu.Lock()
			inFlight++
			maxInFlight = max(maxInFlight, inFlight)
			if inFlight == 10 {
				open.Do(func() { close(gate) }) // ten submissions in flight at once
			}
			mu.Unlock()
			if args.Content != "doc-0" {
				<-gate
			}
			mu.Lock()
			inFlight--
			mu.Unlock()
			if args.Content == "doc-3" {
				return reply{result: map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": `{"error":"too large"}`}}}}
			}
			if args.Metadata["collection_id"] == nil {
				return reply{err: rpcErr(-32602, "no collection", nil)}
			}
			return reply{result: map[string]any{"structuredContent": map[string]any{"job_id": "job-" + strings.TrimPrefix(args.Content, "doc-"), "status": "pending"}}}
		case ToolKnowledgeJobStatus:
			mu.Lock()
			polls[args.JobID]++
			n := polls[args.JobID]
			mu.Unlock()
			switch {
			case args.JobID == "job-5":
				return reply{result: map[string]any{"structuredContent": map[string]any{"status": "completed", "duplicate_of": "doc-x"}}}
			case args.JobID == "job-6":
				return reply{err: rpcErr(-32602, "no such job", nil)}
			case n < 3:
				return reply{result: map[string]any{"structuredContent": map[string]any{"status": "running"}}}
			}
			return reply{result: map[string]any{"structuredContent": map[string]any{"status": "completed"}}}
		}
		return reply{err: rpcErr(-32601, "no", nil)}
	})
	b := testBindings(t, g, nil)
	items := make([]IngestItem, 25)
	for i := range items {
		items[i] = IngestItem{Content: fmt.Sprint("doc-", i)}
	}
	items[7].Metadata = map[string]any{"collection_id": "own"}
	batch, err := b.Knowledge.IngestBatch(t.Context(), items, "col-1")
	if err != nil {
		t.Fatal(err)
	}
	if maxInFlight > 10 {
		t.Fatalf("%d submissions in flight, over 10", maxInFlight)
	}
	if batch.Total != 25 || len(batch.Items) != 25 || len(batch.BatchID) != 36 {
		t.Fatalf("batch %+v", batch)
	}
	for i, it := range batch.Items {
		switch {
		case it.Index != i:
			t.Errorf("item %d has index %d", i, it.Index)
		case i == 3 && (it.Status != JobSubmitError || it.Error != "too large" || it.JobID != ""):
			t.Errorf("item 3: %+v", it)
		case i != 3 && (it.Status != "pending" || it.JobID != fmt.Sprint("job-", i)):
			t.Errorf("item %d: %+v", i, it)
		}
	}
	for _, c := range g.toolCalls() {
		var a struct{ Content, Metadata any }
		_ = json.Unmarshal(c.args(), &a)
		md, _ := a.Metadata.(map[string]any)
		if want := map[bool]string{true: "own", false: "col-1"}[a.Content == "doc-7"]; c.tool() == ToolKnowledgeIngest && md["collection_id"] != want {
			t.Errorf("%v: collection %v, want %s", a.Content, md["collection_id"], want)
		}
	}

	final, err := b.Knowledge.PollBatch(t.Context(), batch, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range final.Items {
		want := "completed"
		switch i {
		case 3:
			want = JobSubmitError
		case 6:
			want = JobUnknown
		}
		if it.Status != want || (i == 5) != it.IsDuplicate() {
			t.Errorf("item %d: %+v, want %s", i, it, want)
		}
	}
	if batch.Items[0].Status != "pending" {
		t.Error("PollBatch changed the batch it was given")
	}

	resp, err := b.Knowledge.PollJob(t.Context(), "job-new", time.Millisecond)
	if err != nil || !strings.Contains(string(resp.Data), "completed") {
		t.Fatalf("%+v, %v", resp, err)
	}
	st, err := b.Knowledge.IngestStatus(t.Context(), "job-5")
	if err != nil || st.Status != "completed" || !st.IsDuplicate() || st.JobID != "job-5" {
		t.Fatalf("%+v, %v", st, err)
	}
	// A wait that ends first returns the context's error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.Knowledge.PollJob(ctx, "job-never", time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
	if _, err := b.Knowledge.IngestBatch(t.Context(), nil, ""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an empty batch: %v", err)
	}
	small := testBindings(t, g, &BindingsOptions{MaxBatchItems: 2})
	if _, err := small.Knowledge.IngestBatch(t.Context(), items[:3], ""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a batch over the limit: %v", err)
	}
}
