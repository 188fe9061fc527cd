package toolgw

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/tools"
)

// demoProvider serves novaos.demo.* tools whose calls it counts.
type demoProvider struct {
	mu    sync.Mutex
	calls map[string]int
	// block, when set, holds demo calls until it is closed.
	block chan struct{}
	fail  error
	// entered, when set, is told each call's tool as it starts.
	entered chan string
}

var demoTools = []Tool{
	{Tool: tools.Tool{Name: "novaos.demo.get_item", Description: "Read an item.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`)}},
	{Tool: tools.Tool{Name: "novaos.demo.create_item", Description: "Create an item.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"amount":{"type":"number"}},"required":["name"]}`)}},
	{Tool: tools.Tool{Name: "novaos.demo.echo", Description: "Echo, marked read-only.", Annotations: &tools.Annotations{ReadOnly: ptr(true)}}},
	{Tool: tools.Tool{Name: "novaos.demo.scoped_lookup", Description: "Needs an extra scope."}, Scopes: []string{"demo:extra"}},
}

func ptr[T any](v T) *T { return &v }

func (p *demoProvider) Tools(context.Context, *Caller) ([]Tool, error) { return demoTools, nil }

func (p *demoProvider) Find(_ context.Context, _ *Caller, name string) (*Tool, bool, error) {
	for i := range demoTools {
		if demoTools[i].Name == name {
			t := demoTools[i]
			return &t, true, nil
		}
	}
	return nil, false, nil
}

func (p *demoProvider) Call(ctx context.Context, r *Request) (*mcp.CallToolResult, error) {
	p.mu.Lock()
	p.calls[r.Tool.Name]++
	block, fail, entered := p.block, p.fail, p.entered
	p.mu.Unlock()
	if entered != nil {
		entered <- r.Tool.Name
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	var args map[string]any
	_ = json.Unmarshal(r.Arguments, &args)
	return JSONResult(map[string]any{"tool": r.Tool.Name, "args": args, "call_id": r.CallID})
}

func (p *demoProvider) count(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[name]
}

// scriptedGate answers every submit with its verdict and records what it
// was asked.
type scriptedGate struct {
	mu sync.Mutex
	// records answer Action, by tenant/session/action; actionErr fails it.
	records   map[string]gate.ActionRecord
	actionErr error
	verdict   gate.Verdict
	err       error
	// judge, when set, answers each submit in place of verdict.
	judge func(gate.Action) gate.Verdict
	// claim is the status Claim answers (default granted).
	claim gate.ClaimStatus
	// step, when set, runs first in OpenSession, Submit, Claim and Ack
	// (named "open", "submit", "claim", "ack"), outside the lock: an
	// error is the method's, and it may block, as a slow gate does.
	step     func(ctx context.Context, name string) error
	submits  []gate.Action
	claims   []gate.ClaimRequest
	acks     []gate.AckRequest
	sessions []gate.SessionRequest
	audit    []gate.AuditEntry
	auditErr error
	auditW   chan struct{}
}

// enter runs the step hook of the method name.
func (g *scriptedGate) enter(ctx context.Context, name string) error {
	g.mu.Lock()
	step := g.step
	g.mu.Unlock()
	if step == nil {
		return nil
	}
	return step(ctx, name)
}

func (g *scriptedGate) OpenSession(ctx context.Context, _ *Caller, req gate.SessionRequest) error {
	if err := g.enter(ctx, "open"); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sessions = append(g.sessions, req)
	return g.err
}

func (g *scriptedGate) Submit(ctx context.Context, _ *Caller, act gate.Action) (gate.Verdict, error) {
	if err := g.enter(ctx, "submit"); err != nil {
		return gate.Verdict{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.submits = append(g.submits, act)
	v := g.verdict
	if g.judge != nil {
		v = g.judge(act)
	}
	v.ActionID, v.SessionID = act.ActionID, act.SessionID
	return v, g.err
}

func (g *scriptedGate) Claim(ctx context.Context, _ *Caller, req gate.ClaimRequest) (gate.Claim, error) {
	if err := g.enter(ctx, "claim"); err != nil {
		return gate.Claim{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.claims = append(g.claims, req)
	status := cmp.Or(g.claim, gate.ClaimGranted)
	if status != gate.ClaimGranted {
		return gate.Claim{SessionID: req.SessionID, ActionID: req.ActionID, Status: status}, nil
	}
	return gate.Claim{SessionID: req.SessionID, ActionID: req.ActionID, Status: gate.ClaimGranted, FencingToken: 7}, nil
}

// Ack records the acknowledgement even when the step hook fails it: the
// gateway asked.
func (g *scriptedGate) Ack(ctx context.Context, _ *Caller, req gate.AckRequest) (gate.Ack, error) {
	g.mu.Lock()
	g.acks = append(g.acks, req)
	g.mu.Unlock()
	if err := g.enter(ctx, "ack"); err != nil {
		return gate.Ack{}, err
	}
	return gate.Ack{SessionID: req.SessionID, ActionID: req.ActionID}, nil
}

func (g *scriptedGate) Action(_ context.Context, tenant, session, action string) (gate.ActionRecord, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.actionErr != nil {
		return gate.ActionRecord{}, g.actionErr
	}
	rec, ok := g.records[tenant+"/"+session+"/"+action]
	if !ok {
		return gate.ActionRecord{}, gate.ErrNotFound
	}
	return rec, nil
}

func (g *scriptedGate) Audit(_ context.Context, entries ...gate.AuditEntry) error {
	g.mu.Lock()
	err := g.auditErr
	if err == nil {
		g.audit = append(g.audit, entries...)
	}
	w := g.auditW
	g.mu.Unlock()
	if w != nil {
		select {
		case w <- struct{}{}:
		default:
		}
	}
	return err
}

// recordingRuns keeps the events the gateway shows in runs.
type recordingRuns struct {
	mu     sync.Mutex
	events map[string][]gateway.Event
	// waiting are the runs WaitingWrites lists, two to a page; answers
	// are what AnswerWrite was told, sent on answered when it is set.
	waiting  []WaitingWrite
	answers  []runAnswer
	answered chan runAnswer
	// emptyPages are pages WaitingWrites answers first with no write
	// confirmation on them (runs waiting for other answers).
	emptyPages int
}

type runAnswer struct {
	WaitingWrite
	Approved bool
	Actor    string
}

func (r *recordingRuns) AppendEvents(_ context.Context, tenant, runID string, events ...gateway.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range events {
		e.Sequence = int64(len(r.events[tenant+"/"+runID]) + 1)
		e.At = time.Now()
		r.events[tenant+"/"+runID] = append(r.events[tenant+"/"+runID], e)
	}
	return nil
}

func (r *recordingRuns) RecentEvents(_ context.Context, tenant, runID string, limit int) ([]gateway.Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.events[tenant+"/"+runID]
	return slices.Clone(all[max(len(all)-limit, 0):]), nil
}

func (r *recordingRuns) AnswerWrite(_ context.Context, tenant, runID, callID string, approved bool, actor string) error {
	a := runAnswer{WaitingWrite{tenant, runID, callID}, approved, actor}
	r.mu.Lock()
	// An answered run waits no more, as the execution gateway's.
	r.waiting = slices.DeleteFunc(r.waiting, func(w WaitingWrite) bool { return w == a.WaitingWrite })
	r.answers = append(r.answers, a)
	ch := r.answered
	r.mu.Unlock()
	if ch != nil {
		ch <- a
	}
	return nil
}

// WaitingWrites pages by run id, as the execution gateway pages by a key,
// so a run answered between pages moves no other.
func (r *recordingRuns) WaitingWrites(_ context.Context, after string, _ int) ([]WaitingWrite, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := strings.CutPrefix(after, "empty-"); ok || after == "" && r.emptyPages > 0 {
		i, _ := strconv.Atoi(n)
		if i < r.emptyPages {
			return nil, "empty-" + strconv.Itoa(i+1), nil
		}
		after = ""
	}
	var page []WaitingWrite
	for _, w := range r.waiting {
		if w.RunID > after {
			page = append(page, w)
		}
	}
	slices.SortFunc(page, func(a, b WaitingWrite) int { return strings.Compare(a.RunID, b.RunID) })
	if len(page) <= 2 {
		return page, "", nil
	}
	return page[:2], page[1].RunID, nil
}

func (r *recordingRuns) types(tenant, run string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events[tenant+"/"+run] {
		out = append(out, e.Type)
	}
	return out
}

// harness is a gateway over the demo provider, served on loopback.
type harness struct {
	t      testing.TB
	svc    *Service
	srv    *httptest.Server
	issuer *auth.Issuer
	demo   *demoProvider
	gate   *scriptedGate
	runs   *recordingRuns
	store  *tools.MemStore
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, nil)
}

// newHarnessWith is newHarness with the gateway's options o, and extra
// providers after the demo one.
func newHarnessWith(t testing.TB, o *Options, extra ...Provider) *harness {
	t.Helper()
	return newHarnessDeps(t, o, nil, extra...)
}

// newHarnessDeps is newHarnessWith with the gateway's deps changed by
// with, when it is set.
func newHarnessDeps(t testing.TB, o *Options, with func(*Deps), extra ...Provider) *harness {
	t.Helper()
	iss, err := auth.Open("", auth.Options{Issuer: "http://novaos.test"})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, issuer: iss, demo: &demoProvider{calls: map[string]int{}},
		gate: &scriptedGate{verdict: gate.Verdict{Verdict: gate.Pass}}, runs: &recordingRuns{events: map[string][]gateway.Event{}},
		store: tools.NewMemStore()}
	deps := Deps{Store: h.store, Tokens: iss, Providers: append([]Provider{h.demo}, extra...), Gate: h.gate, Runs: h.runs, BaseURL: "http://novaos.test"}
	if with != nil {
		with(&deps)
	}
	h.svc = New(deps, o)
	mux := http.NewServeMux()
	for _, r := range h.svc.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.svc.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// token mints a token for tenant acme's agent bot in run-1 with scopes.
func (h *harness) token(scopes ...string) string {
	return h.tokenFor(identity.Claims{TenantID: "acme", AgentID: "bot", UserID: "u1", RunID: "run-1", Scopes: scopes})
}

func (h *harness) tokenFor(c identity.Claims) string {
	h.t.Helper()
	tok, err := h.issuer.Mint(context.Background(), c, time.Hour)
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

// client connects an official MCP Go client with the token.
func (h *harness) client(tok, path string) *mcp.ClientSession {
	h.t.Helper()
	hc := &http.Client{Transport: bearer{tok: tok, next: http.DefaultTransport}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.srv.URL + path, HTTPClient: hc}, nil)
	if err != nil {
		h.t.Fatalf("connect: %v", err)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

type bearer struct {
	tok  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return b.next.RoundTrip(r)
}

func identityClaims(tenant, agent string) identity.Claims {
	return identity.Claims{TenantID: tenant, AgentID: agent, Scopes: []string{"mcp:tools:*"}}
}
