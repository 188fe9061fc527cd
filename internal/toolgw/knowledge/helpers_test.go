package knowledge_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/knowledge"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/tools"
)

// clock is a test's time: it moves only when the test says.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// memoryStore is a memory store of its own, on SQLite in a temporary
// directory: there is no in-memory one, and the chunks must be searched
// by the engine the service uses.
func memoryStore(t testing.TB) memory.Store {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "novaos.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db.MemoryStore()
}

// env is a provider over an in-memory knowledge store and its own memory
// store, with a test clock.
type env struct {
	t     testing.TB
	clock *clock
	ks    tools.KnowledgeStore
	ms    memory.Store
	p     *knowledge.Provider
}

func newEnv(t testing.TB, o *knowledge.Options) *env {
	t.Helper()
	e := &env{t: t, clock: newClock(), ks: tools.NewMemKnowledgeStore(), ms: memoryStore(t)}
	e.p = e.provider(o)
	return e
}

// provider returns another provider (a worker) on e's stores and clock.
func (e *env) provider(o *knowledge.Options) *knowledge.Provider {
	var opts knowledge.Options
	if o != nil {
		opts = *o
	}
	opts.Now = e.clock.Now
	return knowledge.New(e.ks, e.ms, &opts)
}

// result is a call's answer: its structured content, or its failure.
type result struct {
	data    map[string]any
	raw     json.RawMessage
	isError bool
	code    string // of a failed result
	msg     string
}

// call calls a tool as tenant; a call that could not be made fails the
// test.
func (e *env) call(p *knowledge.Provider, tenant, tool string, args any) result {
	e.t.Helper()
	r, err := callErr(e.t, p, tenant, tool, args)
	if err != nil {
		e.t.Fatalf("%s: %v", tool, err)
	}
	return r
}

func callErr(t testing.TB, p *knowledge.Provider, tenant, tool string, args any) (result, error) {
	t.Helper()
	raw, ok := args.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	c := &toolgw.Caller{Tenant: tenant, Agent: "agent-1", Scopes: []string{knowledge.ScopeRead, knowledge.ScopeWrite}}
	def, ok, err := p.Find(context.Background(), c, tool)
	if err != nil || !ok {
		t.Fatalf("Find(%s) = %v, %v", tool, ok, err)
	}
	res, err := p.Call(context.Background(), &toolgw.Request{Caller: c, Tool: def, Arguments: raw, CallID: "call-1"})
	if err != nil {
		return result{}, err
	}
	return decodeResult(t, res), nil
}

func decodeResult(t testing.TB, res *mcp.CallToolResult) result {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("a result with %d contents", len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var r result
	r.raw = json.RawMessage(text)
	if res.IsError {
		var body struct{ Code, Error string }
		if err := json.Unmarshal(r.raw, &body); err != nil {
			t.Fatalf("failed result %s: %v", text, err)
		}
		return result{isError: true, code: body.Code, msg: body.Error, raw: r.raw}
	}
	if err := json.Unmarshal(r.raw, &r.data); err != nil {
		t.Fatalf("result %s: %v", text, err)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != text {
		t.Fatalf("structured content %s differs from the text %s", sc, text)
	}
	return r
}

// ok fails the test when r is a failed result.
func (r result) ok(t testing.TB) result {
	t.Helper()
	if r.isError {
		t.Fatalf("failed result: %s: %s", r.code, r.msg)
	}
	return r
}

// refused fails the test unless r failed with code.
func (r result) refused(t testing.TB, code string) {
	t.Helper()
	if !r.isError || r.code != code {
		t.Fatalf("result %s, want a failure %s", r.raw, code)
	}
}

func (r result) str(key string) string { s, _ := r.data[key].(string); return s }

// into decodes the result into v.
func (r result) into(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.raw, v); err != nil {
		t.Fatalf("result %s: %v", r.raw, err)
	}
}

// runOnce runs one round of background work.
func (e *env) runOnce(p *knowledge.Provider) knowledge.Round {
	e.t.Helper()
	r, err := p.RunOnce(context.Background())
	if err != nil {
		e.t.Fatalf("RunOnce: %v", err)
	}
	return r
}

func (e *env) createCollection(tenant, name string) string {
	e.t.Helper()
	r := e.call(e.p, tenant, knowledge.ToolCreateCollection, map[string]any{"name": name}).ok(e.t)
	return r.str("collection_id")
}

func (e *env) ingest(tenant, collection, content string, md map[string]any) result {
	e.t.Helper()
	if md == nil {
		md = map[string]any{}
	}
	if collection != "" {
		md["collection_id"] = collection
	}
	return e.call(e.p, tenant, knowledge.ToolIngest, map[string]any{"content": content, "metadata": md}).ok(e.t)
}

func (e *env) job(tenant, id string) result {
	e.t.Helper()
	return e.call(e.p, tenant, knowledge.ToolJobStatus, map[string]any{"job_id": id}).ok(e.t)
}

// searchResult is a search result as the tool gives it.
type searchResult struct {
	ChunkID      string  `json:"chunk_id"`
	DocumentID   string  `json:"document_id"`
	CollectionID string  `json:"collection_id"`
	Text         string  `json:"text"`
	Score        float64 `json:"score"`
	Citation     struct {
		DocumentID string `json:"document_id"`
		Filename   string `json:"filename"`
		SourceURL  string `json:"source_url"`
		ChunkIndex int    `json:"chunk_index"`
		Start      int    `json:"start"`
		End        int    `json:"end"`
	} `json:"citation"`
}

func (e *env) search(tenant string, args map[string]any) []searchResult {
	e.t.Helper()
	var out struct {
		Results []searchResult `json:"results"`
	}
	e.call(e.p, tenant, knowledge.ToolSearch, args).ok(e.t).into(e.t, &out)
	return out.Results
}

// partitionSize counts the memories of a collection's partition.
func (e *env) partitionSize(tenant, collection string) int {
	e.t.Helper()
	ms, err := e.ms.List(context.Background(), tenant, memory.Filter{Partition: memory.Partition{Scope: memory.ScopeTenant,
		Owner: "knowledge:" + collection}}, 100000)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(ms)
}

// failingEmbedder embeds with the default embedder, but fails with err
// once allow more calls have succeeded.
type failingEmbedder struct {
	*memory.HashEmbedder
	mu    sync.Mutex
	err   error
	allow int
}

func (f *failingEmbedder) set(err error, allow int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err, f.allow = err, allow
}

func (f *failingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	err := f.err
	if f.allow > 0 {
		f.allow--
		err = nil
	}
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.HashEmbedder.Embed(ctx, texts)
}

var errDown = errors.New("embedding service down (dial tcp 10.0.0.7:443: connection refused)")
