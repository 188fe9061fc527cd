package app_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store/sqlite"
	"novaos.dev/novaos/tools"
)

// The fault matrix of the tool gateway: the gate down or slow, the
// upstream down or slow, a token expiring mid-run, a replica killed
// between claim and acknowledgement. Each case counts executions at the
// tool's own backend: no write-class call runs without a pass, none runs
// twice, and the caller is told clearly what happened.

const (
	refundTool = tools.Prefix + "shop.refund"
	lookupTool = tools.Prefix + "shop.lookup_order"
	// claimTimeout is the gate's claim timeout in these tests; the gate's
	// clock is moved past it, never waited for.
	claimTimeout = time.Minute
)

// shop is an upstream MCP server on the official Go SDK (Streamable
// HTTP, stateless) with a write-class tool, refund, and a read-only one,
// lookup_order. It counts each execution as it starts: that is the
// backend the fault tests count at.
type shop struct {
	t       *testing.T
	handler http.Handler
	addr    string

	refunds, lookups atomic.Int32
	// ran is told the tool of each execution as it starts.
	ran chan string

	mu     sync.Mutex
	srv    *httptest.Server
	stalls map[string]chan struct{} // by tool: executions wait until it is closed
}

type orderIn struct {
	ID string `json:"id"`
}

type refundIn struct {
	Order  string  `json:"order"`
	Amount float64 `json:"amount"`
}

func newShop(t *testing.T) *shop {
	t.Helper()
	s := &shop{t: t, ran: make(chan string, 256), stalls: map[string]chan struct{}{}}
	m := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	mcp.AddTool(m, &mcp.Tool{Name: "lookup_order", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, any, error) {
			s.lookups.Add(1)
			s.execute("lookup_order")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "order " + in.ID + ": shipped"}}}, nil, nil
		})
	mcp.AddTool(m, &mcp.Tool{Name: "refund", Description: "Refund an order."},
		func(_ context.Context, _ *mcp.CallToolRequest, in refundIn) (*mcp.CallToolResult, any, error) {
			s.refunds.Add(1)
			s.execute("refund")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded " + in.Order}}}, nil, nil
		})
	s.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m }, &mcp.StreamableHTTPOptions{Stateless: true})
	s.start("127.0.0.1:0")
	t.Cleanup(func() {
		// Stalled executions end first: a server closes only once its
		// requests have.
		s.mu.Lock()
		for name, ch := range s.stalls {
			close(ch)
			delete(s.stalls, name)
		}
		s.mu.Unlock()
		s.stop()
	})
	return s
}

// execute reports an execution of tool, and waits while tool is stalled
// whatever the caller does: a backend's write, once begun, runs on.
func (s *shop) execute(tool string) {
	s.ran <- tool
	s.mu.Lock()
	ch := s.stalls[tool]
	s.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// stall makes executions of tool wait until release is called.
func (s *shop) stall(tool string) (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.stalls[tool] = ch
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.stalls[tool] == ch {
				delete(s.stalls, tool)
			}
			s.mu.Unlock()
			close(ch)
		})
	}
}

// start serves the shop on addr (port 0: a free one, which it keeps).
func (s *shop) start(addr string) {
	s.t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.t.Fatalf("shop: listen: %v", err)
	}
	srv := httptest.NewUnstartedServer(s.handler)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	s.mu.Lock()
	s.srv, s.addr = srv, ln.Addr().String()
	s.mu.Unlock()
}

// stop takes the shop down: its listener and connections close.
func (s *shop) stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

func (s *shop) url() string { return "http://" + s.addr + "/mcp" }

// waitRan waits for an execution of tool to start.
func (s *shop) waitRan(tool string) {
	s.t.Helper()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	for {
		select {
		case got := <-s.ran:
			if got == tool {
				return
			}
		case <-timer.C:
			s.t.Fatalf("shop: %s never ran", tool)
		}
	}
}

// testClock is a clock the test moves forward: the gate's, so a claim's
// timeout passes at once, or the token issuer's, so a token expires.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// toolFaultOptions are o with what every fault test needs: the gate on
// clk with a short claim timeout, upstream servers on loopback allowed,
// and tool lists kept, so a server down is met at the call, not the list.
func toolFaultOptions(clk *testClock, o *app.Options) *app.Options {
	o.Addr = "127.0.0.1:0"
	o.Gate.Now = clk.Now
	o.Gate.ClaimTimeout = claimTimeout
	o.BuiltinTools.Upstream.AllowPrivate = true
	o.BuiltinTools.Upstream.ListTTL = time.Hour
	return o
}

// mint signs a token for c with srv's issuer.
func mint(t *testing.T, srv *app.Server, c identity.Claims) secret.Value {
	t.Helper()
	tok, err := srv.Issuer().Mint(context.Background(), c, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return secret.New(tok)
}

// registerShop registers sh as tenant acme's upstream server "shop", with
// a call timeout (0: the default).
func registerShop(t *testing.T, srv *app.Server, sh *shop, timeout time.Duration) {
	t.Helper()
	tok := mint(t, srv, identity.Claims{TenantID: "acme", Subject: "ops", Scopes: []string{tools.ScopeAdmin}})
	body, err := json.Marshal(tools.ServerRequest{Transport: tools.TransportHTTP, URL: sh.url(), TimeoutMS: timeout.Milliseconds()})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL()+tools.ServersPath+"/shop", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok.Reveal())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("register the shop: status %d", resp.StatusCode)
	}
}

// bot is agent bot of tenant acme, calling tools in a run of its own.
type bot struct {
	t   *testing.T
	run string
}

func newBot(t *testing.T) bot { return bot{t: t, run: "run-" + strings.ToLower(rand.Text()[:10])} }

// session is the gate session of the bot's tool calls.
func (b bot) session() string { return "tools-run-" + b.run }

// client calls srv's tool gateway with the bot's run token; bound to
// callID, it is the token of the run resumed after that call's approval.
func (b bot) client(srv *app.Server, callID string) *tools.Client {
	b.t.Helper()
	tok := mint(b.t, srv, identity.Claims{TenantID: "acme", AgentID: "bot", UserID: "alice", RunID: b.run, CallID: callID,
		Scopes: []string{"mcp:tools:*"}})
	c, err := tools.NewClient(srv.URL(), tok, &tools.ClientOptions{TenantID: "acme"})
	if err != nil {
		b.t.Fatal(err)
	}
	return c
}

var refundArgs = map[string]any{"order": "o-4821", "amount": 240}

// held makes the bot's refund, which the gate holds for a person, and
// returns the hold.
func (b bot) held(srv *app.Server) tools.WriteConfirmationData {
	b.t.Helper()
	_, err := b.client(srv, "").CallTool(context.Background(), refundTool, refundArgs)
	w, ok := errors.AsType[*tools.WriteConfirmationRequired](err)
	if !ok {
		b.t.Fatalf("the refund was not held: %v", err)
	}
	if w.Data.CallID == "" || w.Data.SessionID != b.session() {
		b.t.Fatalf("hold %+v", w.Data)
	}
	return w.Data
}

// approved is a refund held and approved at the gate by a person, and
// the client of the run resumed with a token bound to it.
func (b bot) approved(srv *app.Server) (*tools.Client, tools.WriteConfirmationData) {
	b.t.Helper()
	h := b.held(srv)
	if _, err := srv.Gate().Decide(context.Background(), "acme", h.SessionID, h.ActionID,
		gate.OperatorDecision{Decision: gate.DecisionApprove}, "ops@example.com"); err != nil {
		b.t.Fatal(err)
	}
	return b.client(srv, h.CallID), h
}

// state is the gate's record of the held call h.
func state(t *testing.T, srv *app.Server, h tools.WriteConfirmationData) gate.ActionState {
	t.Helper()
	rec, err := srv.Gate().Get(context.Background(), "acme", h.SessionID, h.ActionID)
	if err != nil {
		t.Fatalf("the gate's record of %s: %v", h.ActionID, err)
	}
	return rec.State
}

// settle moves the gate's clock past the claim timeout and records an
// operator's finding on the unconfirmed call h.
func settle(t *testing.T, srv *app.Server, clk *testClock, h tools.WriteConfirmationData, d gate.OperatorDecisionKind) {
	t.Helper()
	clk.advance(claimTimeout + time.Second)
	if _, err := srv.Gate().Decide(context.Background(), "acme", h.SessionID, h.ActionID,
		gate.OperatorDecision{Decision: d, Note: "checked the shop's ledger"}, "ops@example.com"); err != nil {
		t.Fatalf("operator %s: %v", d, err)
	}
}

// refused checks that err is the gateway's refusal with code and reason.
func refused(t *testing.T, err error, code int, reason string) {
	t.Helper()
	e, ok := errors.AsType[*tools.Error](err)
	if !ok {
		t.Fatalf("err %v, want the gateway's error %d %s", err, code, reason)
	}
	if e.Code != code || e.Data.Code != reason {
		t.Fatalf("error %d %s (%s), want %d %s", e.Code, e.Data.Code, e.Message, code, reason)
	}
}

// callOK makes a call that must answer.
func callOK(t *testing.T, c *tools.Client, name string, args any) {
	t.Helper()
	res, err := c.CallTool(context.Background(), name, args)
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", name, err, res)
	}
}

func wantRuns(t *testing.T, sh *shop, refunds, lookups int32) {
	t.Helper()
	if n := sh.refunds.Load(); n != refunds {
		t.Fatalf("the shop ran %d refunds, want %d", n, refunds)
	}
	if n := sh.lookups.Load(); n != lookups {
		t.Fatalf("the shop ran %d lookups, want %d", n, lookups)
	}
}

// errGateStoreDown is the flaky gate store's failure.
var errGateStoreDown = errors.New("gate store: connection refused")

// storeFault is what the flaky gate store does to the calls it hits.
type storeFault struct {
	// hits selects calls by method name and, for WriteAction, the state
	// written ("" otherwise).
	hits func(method string, state gate.ActionState) bool
	// fail answers errGateStoreDown; otherwise the call stalls until
	// stall is closed or its context ends.
	fail  bool
	stall <-chan struct{}
	// late: a stalled write lands when its context ends, though its
	// caller is told it failed (the answer lost on its way back).
	late bool
}

// everything hits every call.
func everything(string, gate.ActionState) bool { return true }

// writing hits the writes of an action into state s.
func writing(s gate.ActionState) func(string, gate.ActionState) bool {
	return func(method string, state gate.ActionState) bool { return method == "WriteAction" && state == s }
}

// flakyGate is a gate store that fails or stalls on demand, as the gate's
// database would when down or slow. It wraps every method (no embedding),
// so a method added to the contract must be given its fault here too.
type flakyGate struct {
	inner gate.Store
	mu    sync.Mutex
	fault *storeFault
}

var _ gate.Store = (*flakyGate)(nil)

func (g *flakyGate) set(f *storeFault) {
	g.mu.Lock()
	g.fault = f
	g.mu.Unlock()
}

// enter applies the fault to a call; late is set when a stalled write is
// to land all the same.
func (g *flakyGate) enter(ctx context.Context, method string, state gate.ActionState) (late bool, err error) {
	g.mu.Lock()
	f := g.fault
	g.mu.Unlock()
	if f == nil || !f.hits(method, state) {
		return false, nil
	}
	if f.fail {
		return false, errGateStoreDown
	}
	select {
	case <-f.stall:
		return false, nil
	case <-ctx.Done():
		return f.late, ctx.Err()
	}
}

func (g *flakyGate) CreateSession(ctx context.Context, s gate.SessionRecord) (gate.SessionRecord, error) {
	if _, err := g.enter(ctx, "CreateSession", ""); err != nil {
		return gate.SessionRecord{}, err
	}
	return g.inner.CreateSession(ctx, s)
}

func (g *flakyGate) GetSession(ctx context.Context, tenant, id string) (gate.SessionRecord, error) {
	if _, err := g.enter(ctx, "GetSession", ""); err != nil {
		return gate.SessionRecord{}, err
	}
	return g.inner.GetSession(ctx, tenant, id)
}

func (g *flakyGate) UpdateSession(ctx context.Context, s gate.SessionRecord) (gate.SessionRecord, error) {
	if _, err := g.enter(ctx, "UpdateSession", ""); err != nil {
		return gate.SessionRecord{}, err
	}
	return g.inner.UpdateSession(ctx, s)
}

func (g *flakyGate) WriteAction(ctx context.Context, w gate.ActionWrite) (gate.ActionRecord, error) {
	late, err := g.enter(ctx, "WriteAction", w.Record.State)
	if late {
		_, _ = g.inner.WriteAction(context.WithoutCancel(ctx), w)
	}
	if err != nil {
		return gate.ActionRecord{}, err
	}
	return g.inner.WriteAction(ctx, w)
}

func (g *flakyGate) GetAction(ctx context.Context, tenant, session, action string) (gate.ActionRecord, error) {
	if _, err := g.enter(ctx, "GetAction", ""); err != nil {
		return gate.ActionRecord{}, err
	}
	return g.inner.GetAction(ctx, tenant, session, action)
}

func (g *flakyGate) ListActions(ctx context.Context, f gate.ActionFilter) ([]gate.ActionRecord, error) {
	if _, err := g.enter(ctx, "ListActions", ""); err != nil {
		return nil, err
	}
	return g.inner.ListActions(ctx, f)
}

func (g *flakyGate) CountActions(ctx context.Context, state gate.ActionState) (int, time.Time, error) {
	if _, err := g.enter(ctx, "CountActions", state); err != nil {
		return 0, time.Time{}, err
	}
	return g.inner.CountActions(ctx, state)
}

func (g *flakyGate) ExpiringHolds(ctx context.Context, before time.Time, limit int) ([]gate.ActionRecord, error) {
	if _, err := g.enter(ctx, "ExpiringHolds", ""); err != nil {
		return nil, err
	}
	return g.inner.ExpiringHolds(ctx, before, limit)
}

func (g *flakyGate) Aggregate(ctx context.Context, qs []gate.LedgerQuery) ([]gate.LedgerTotal, error) {
	if _, err := g.enter(ctx, "Aggregate", ""); err != nil {
		return nil, err
	}
	return g.inner.Aggregate(ctx, qs)
}

func (g *flakyGate) RuleSet(ctx context.Context, tenant string, version int64) (gate.RuleSetRecord, error) {
	if _, err := g.enter(ctx, "RuleSet", ""); err != nil {
		return gate.RuleSetRecord{}, err
	}
	return g.inner.RuleSet(ctx, tenant, version)
}

func (g *flakyGate) AppendAudit(ctx context.Context, e gate.AuditEntry) (gate.AuditEntry, error) {
	if _, err := g.enter(ctx, "AppendAudit", ""); err != nil {
		return gate.AuditEntry{}, err
	}
	return g.inner.AppendAudit(ctx, e)
}

func (g *flakyGate) PutRuleSet(ctx context.Context, r gate.RuleSetRecord) (gate.RuleSetRecord, error) {
	if _, err := g.enter(ctx, "PutRuleSet", ""); err != nil {
		return gate.RuleSetRecord{}, err
	}
	return g.inner.PutRuleSet(ctx, r)
}

func (g *flakyGate) RuleSetTenants(ctx context.Context) ([]string, error) {
	if _, err := g.enter(ctx, "RuleSetTenants", ""); err != nil {
		return nil, err
	}
	return g.inner.RuleSetTenants(ctx)
}

func (g *flakyGate) AppendAudits(ctx context.Context, entries []gate.AuditEntry) ([]gate.AuditEntry, error) {
	if _, err := g.enter(ctx, "AppendAudits", ""); err != nil {
		return nil, err
	}
	return g.inner.AppendAudits(ctx, entries)
}

func (g *flakyGate) Audit(ctx context.Context, afterSeq int64, limit int) ([]gate.AuditEntry, error) {
	if _, err := g.enter(ctx, "Audit", ""); err != nil {
		return nil, err
	}
	return g.inner.Audit(ctx, afterSeq, limit)
}

func (g *flakyGate) AuditHead(ctx context.Context) (int64, string, error) {
	if _, err := g.enter(ctx, "AuditHead", ""); err != nil {
		return 0, "", err
	}
	return g.inner.AuditHead(ctx)
}

func (g *flakyGate) Heartbeat(ctx context.Context, now time.Time) (time.Time, error) {
	if _, err := g.enter(ctx, "Heartbeat", ""); err != nil {
		return time.Time{}, err
	}
	return g.inner.Heartbeat(ctx, now)
}

// flakyServer starts a server on SQLite whose gate store is flaky, with
// the shop registered.
func flakyServer(t *testing.T, clk *testClock, gateTimeout time.Duration) (*app.Server, *flakyGate, *shop) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), app.DatabaseFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // after the server's shutdown
	st := db.Stores()
	fg := &flakyGate{inner: st.Gate}
	st.Gate = fg
	o := toolFaultOptions(clk, &app.Options{Stores: st})
	o.Tools.GateTimeout = gateTimeout
	srv := start(t, o)
	sh := newShop(t)
	registerShop(t, srv, sh, 0)
	return srv, fg, sh
}

// The gate down: its store failing at each step of a write. Nothing runs
// that the gate did not pass and claim, the caller is told the gate is
// unavailable (-31503) while it is, and a write whose acknowledgement
// could not be recorded is never made again.
func TestToolFaultGateDown(t *testing.T) {
	clk := &testClock{}
	srv, fg, sh := flakyServer(t, clk, 0)
	ctx := context.Background()

	t.Run("a fresh write", func(t *testing.T) {
		b := newBot(t)
		fg.set(&storeFault{hits: everything, fail: true})
		_, err := b.client(srv, "").CallTool(ctx, refundTool, refundArgs)
		refused(t, err, tools.CodeUnavailable, tools.ReasonUnavailable)
		// Reads do not wait on the gate.
		callOK(t, b.client(srv, ""), lookupTool, map[string]any{"id": "o-1"})
		fg.set(nil)
		wantRuns(t, sh, 0, 1)
		list, err := srv.Gate().List(ctx, "acme", []gate.ActionState{gate.ActionHeld, gate.ActionPassed, gate.ActionClaimed}, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range list.Actions {
			if a.SessionID == b.session() {
				t.Fatalf("the gate recorded %+v while down", a)
			}
		}
	})

	t.Run("a write in an open session", func(t *testing.T) {
		b := newBot(t)
		b.held(srv) // opens the run's gate session
		fg.set(&storeFault{hits: everything, fail: true})
		_, err := b.client(srv, "").CallTool(ctx, refundTool, map[string]any{"order": "o-9", "amount": 5})
		fg.set(nil)
		refused(t, err, tools.CodeUnavailable, tools.ReasonUnavailable)
		wantRuns(t, sh, 0, 1)
	})

	t.Run("the claim of an approved write", func(t *testing.T) {
		b := newBot(t)
		resumed, h := b.approved(srv)
		fg.set(&storeFault{hits: writing(gate.ActionClaimed), fail: true})
		_, err := resumed.CallTool(ctx, refundTool, refundArgs)
		fg.set(nil)
		refused(t, err, tools.CodeUnavailable, tools.ReasonUnavailable)
		wantRuns(t, sh, 0, 1)
		if s := state(t, srv, h); s != gate.ActionApproved {
			t.Fatalf("after a claim that failed the call is %s, want still approved", s)
		}
		// The gate back, the approved call runs, once.
		callOK(t, resumed, refundTool, refundArgs)
		wantRuns(t, sh, 1, 1)
		_, err = resumed.CallTool(ctx, refundTool, refundArgs)
		refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
		wantRuns(t, sh, 1, 1)
		if s := state(t, srv, h); s != gate.ActionExecuted {
			t.Fatalf("the call is %s, want executed", s)
		}
	})

	t.Run("the acknowledgement of a write that ran", func(t *testing.T) {
		b := newBot(t)
		resumed, h := b.approved(srv)
		before := sh.refunds.Load()
		fg.set(&storeFault{hits: writing(gate.ActionExecuted), fail: true})
		// The write ran: its result is the caller's.
		callOK(t, resumed, refundTool, refundArgs)
		fg.set(nil)
		if n := sh.refunds.Load() - before; n != 1 {
			t.Fatalf("the approved refund ran %d times, want once", n)
		}
		if s := state(t, srv, h); s != gate.ActionClaimed {
			t.Fatalf("a write whose acknowledgement was lost is %s, want claimed", s)
		}
		_, err := resumed.CallTool(ctx, refundTool, refundArgs)
		refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
		settle(t, srv, clk, h, gate.DecisionConfirmExecuted)
		_, err = resumed.CallTool(ctx, refundTool, refundArgs)
		refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
		if n := sh.refunds.Load() - before; n != 1 {
			t.Fatalf("the approved refund ran %d times, want once", n)
		}
	})
}

// The gate slow: its store stalls past the gateway's GateTimeout. The
// write fails closed (-31503) and does not run, not even once the gate
// answers; a claim that lands after the gateway gave up leaves the call
// for an operator, never for a second attempt.
func TestToolFaultGateSlow(t *testing.T) {
	clk := &testClock{}
	srv, fg, sh := flakyServer(t, clk, 2*time.Second)
	ctx := context.Background()

	t.Run("a fresh write", func(t *testing.T) {
		b := newBot(t)
		stall := make(chan struct{})
		fg.set(&storeFault{hits: everything, stall: stall})
		_, err := b.client(srv, "").CallTool(ctx, refundTool, refundArgs)
		refused(t, err, tools.CodeUnavailable, tools.ReasonUnavailable)
		close(stall)
		fg.set(nil)
		wantRuns(t, sh, 0, 0)
	})

	t.Run("an approved write whose claim lands late", func(t *testing.T) {
		b := newBot(t)
		resumed, h := b.approved(srv)
		stall := make(chan struct{})
		fg.set(&storeFault{hits: writing(gate.ActionClaimed), stall: stall, late: true})
		_, err := resumed.CallTool(ctx, refundTool, refundArgs)
		refused(t, err, tools.CodeUnavailable, tools.ReasonUnavailable)
		close(stall)
		fg.set(nil)
		if s := state(t, srv, h); s != gate.ActionClaimed {
			t.Fatalf("the late claim left the call %s, want claimed", s)
		}
		// Claimed by an attempt that gave up: not made again.
		_, err = resumed.CallTool(ctx, refundTool, refundArgs)
		refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
		wantRuns(t, sh, 0, 0)
		// An operator finds it did not run; the run's retry makes it, once.
		settle(t, srv, clk, h, gate.DecisionConfirmNotExecuted)
		callOK(t, resumed, refundTool, refundArgs)
		_, err = resumed.CallTool(ctx, refundTool, refundArgs)
		refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
		wantRuns(t, sh, 1, 0)
	})

	t.Run("the acknowledgement of a write that ran", func(t *testing.T) {
		b := newBot(t)
		resumed, h := b.approved(srv)
		before := sh.refunds.Load()
		stall := make(chan struct{})
		fg.set(&storeFault{hits: writing(gate.ActionExecuted), stall: stall})
		callOK(t, resumed, refundTool, refundArgs)
		close(stall)
		fg.set(nil)
		if s := state(t, srv, h); s != gate.ActionClaimed {
			t.Fatalf("a write whose acknowledgement timed out is %s, want claimed", s)
		}
		_, err := resumed.CallTool(ctx, refundTool, refundArgs)
		refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
		if n := sh.refunds.Load() - before; n != 1 {
			t.Fatalf("the approved refund ran %d times, want once", n)
		}
	})
}

// The upstream down: a read fails cleanly; an approved write whose claim
// was granted and whose call failed is not acknowledged, shows at the
// gate as unconfirmed, and is refused when the run retries it, until an
// operator finds it did not run.
func TestToolFaultUpstreamDown(t *testing.T) {
	clk := &testClock{}
	srv := start(t, toolFaultOptions(clk, &app.Options{DataDir: t.TempDir()}))
	sh := newShop(t)
	registerShop(t, srv, sh, 0)
	ctx := context.Background()
	b := newBot(t)
	reader := b.client(srv, "")
	callOK(t, reader, lookupTool, map[string]any{"id": "o-1"})
	resumed, h := b.approved(srv)

	sh.stop()
	_, err := reader.CallTool(ctx, lookupTool, map[string]any{"id": "o-1"})
	refused(t, err, tools.CodeUnavailable, tools.ReasonUnavailable)
	_, err = resumed.CallTool(ctx, refundTool, refundArgs)
	refused(t, err, tools.CodeUnavailable, tools.ReasonUnavailable)
	if s := state(t, srv, h); s != gate.ActionClaimed {
		t.Fatalf("a claimed write whose call failed is %s, want claimed (not acknowledged)", s)
	}
	_, err = resumed.CallTool(ctx, refundTool, refundArgs)
	refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)

	sh.start(sh.addr)
	_, err = resumed.CallTool(ctx, refundTool, refundArgs)
	refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
	wantRuns(t, sh, 0, 1)
	clk.advance(claimTimeout + time.Second)
	_, err = resumed.CallTool(ctx, refundTool, refundArgs)
	refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
	if s := state(t, srv, h); s != gate.ActionUnconfirmed {
		t.Fatalf("past the claim timeout the call is %s, want unconfirmed", s)
	}
	if _, err := srv.Gate().Decide(ctx, "acme", h.SessionID, h.ActionID,
		gate.OperatorDecision{Decision: gate.DecisionConfirmNotExecuted}, "ops@example.com"); err != nil {
		t.Fatal(err)
	}
	callOK(t, resumed, refundTool, refundArgs)
	_, err = resumed.CallTool(ctx, refundTool, refundArgs)
	refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
	wantRuns(t, sh, 1, 1)
	if s := state(t, srv, h); s != gate.ActionExecuted {
		t.Fatalf("the call is %s, want executed", s)
	}
}

// The upstream slow, past its registration's timeout: a read times out
// cleanly; an approved write that timed out in flight is not
// acknowledged, and the run's retry is refused though the shop finished
// it late. It ran once.
func TestToolFaultUpstreamSlow(t *testing.T) {
	clk := &testClock{}
	srv := start(t, toolFaultOptions(clk, &app.Options{DataDir: t.TempDir()}))
	sh := newShop(t)
	registerShop(t, srv, sh, 1500*time.Millisecond)
	ctx := context.Background()
	b := newBot(t)
	resumed, h := b.approved(srv)

	release := sh.stall("lookup_order")
	_, err := b.client(srv, "").CallTool(ctx, lookupTool, map[string]any{"id": "o-1"})
	refused(t, err, tools.CodeUnavailable, tools.ReasonTimeout)
	release()

	release = sh.stall("refund")
	_, err = resumed.CallTool(ctx, refundTool, refundArgs)
	refused(t, err, tools.CodeUnavailable, tools.ReasonTimeout)
	release() // the shop finishes the refund, late
	if s := state(t, srv, h); s != gate.ActionClaimed {
		t.Fatalf("a write that timed out in flight is %s, want claimed (not acknowledged)", s)
	}
	_, err = resumed.CallTool(ctx, refundTool, refundArgs)
	refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
	settle(t, srv, clk, h, gate.DecisionConfirmExecuted)
	_, err = resumed.CallTool(ctx, refundTool, refundArgs)
	refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
	wantRuns(t, sh, 1, 1)
}

// patientAgent reads an order, then waits for the test before it makes a
// refund and reads again: the test lets its run's token expire meanwhile.
func patientAgent(mid chan<- struct{}, resume <-chan struct{}, errs chan<- [2]error) *agent.Agent {
	var attempts atomic.Int32
	a := agent.New("patient", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "work", Handler: func(c *agent.Context) (agent.Result, error) {
		if attempts.Add(1) > 1 {
			return agent.Result{}, errors.New("delivered twice")
		}
		b, err := tools.From(c, nil)
		if err != nil {
			return agent.Result{}, err
		}
		if _, err := b.Call(c, lookupTool, map[string]any{"id": "o-1"}); err != nil {
			return agent.Result{}, err
		}
		mid <- struct{}{}
		<-resume
		_, werr := b.Call(c, refundTool, refundArgs)
		_, rerr := b.Call(c, lookupTool, map[string]any{"id": "o-1"})
		errs <- [2]error{werr, rerr}
		return agent.Result{Output: "done"}, nil
	}})
	return a
}

// A run's token that expires mid-run is refused (401, with the challenge
// naming where to authenticate) and nothing is called: the refund is not
// made, not even held.
func TestToolFaultTokenExpiredMidRun(t *testing.T) {
	clk, issuer := &testClock{}, &testClock{}
	mid, resume, errs := make(chan struct{}, 1), make(chan struct{}), make(chan [2]error, 1)
	o := toolFaultOptions(clk, &app.Options{DataDir: t.TempDir(),
		Agents: app.AgentOptions{Hosted: map[string]app.Agent{"patient": patientAgent(mid, resume, errs)}}})
	o.Token.Now = issuer.Now
	o.Gateway.TokenTTL = time.Minute
	srv := start(t, o)
	sh := newShop(t)
	registerShop(t, srv, sh, 0)
	ctx := context.Background()
	console := mint(t, srv, identity.Claims{TenantID: "acme", UserID: "alice", AgentID: "console", Scopes: []string{"runs:*", "instances:*"}})
	c, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{Token: console})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := c.Install(ctx, gateway.InstallRequest{Name: "patient", Hosted: "patient", Scopes: []string{"mcp:tools:*"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Execute(ctx, gateway.ExecuteRequest{InstanceID: inst.ID, Input: "refund o-4821"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-mid:
	case <-time.After(time.Minute):
		t.Fatal("the agent never made its first call")
	}
	issuer.advance(o.Gateway.TokenTTL + identity.DefaultLeeway + time.Minute)
	close(resume)
	got := <-errs
	for i, err := range got {
		e, ok := errors.AsType[*tools.Error](err)
		if !ok || e.Status != http.StatusUnauthorized || e.Code != tools.CodeUnauthorized || !strings.Contains(e.Message, "expired") {
			t.Fatalf("call %d with the expired token: %v, want 401 (%d) saying it expired", i, err, tools.CodeUnauthorized)
		}
	}
	wantRuns(t, sh, 0, 1)
	held, err := srv.Gate().List(ctx, "acme", nil, "", 100)
	if err != nil || len(held.Actions) != 0 {
		t.Fatalf("the gate holds %+v (%v): the expired token reached it", held.Actions, err)
	}
	if _, _, end := follow(t, c, res.RunID, ""); !end.IsTerminal() {
		t.Fatalf("the run ended on %+v", end)
	}
}

// A replica killed between claim and acknowledgement: server A claims an
// approved write and calls the shop, and dies before the shop answers.
// The same approved call through server B, on the same database, is
// refused, and the shop counts one execution; an operator's finding
// settles it. Before that, the same approved call made at once through
// both replicas runs once.
func TestToolFaultReplicaKilledSQLite(t *testing.T) {
	dir := t.TempDir()
	testReplicaKilled(t, func() *app.Options { return &app.Options{DataDir: dir} })
}

func TestToolFaultReplicaKilledPostgres(t *testing.T) {
	url := pgtest.URL(t)
	dir := filepath.Join(t.TempDir(), "keys")
	testReplicaKilled(t, func() *app.Options { return &app.Options{DataDir: dir, Database: app.DatabaseOptions{URL: url}} })
}

func testReplicaKilled(t *testing.T, opts func() *app.Options) {
	clk := &testClock{}
	a := start(t, toolFaultOptions(clk, opts()))
	b := start(t, toolFaultOptions(clk, opts()))
	sh := newShop(t)
	registerShop(t, a, sh, 0)
	ctx := context.Background()

	// Eight attempts at one approved call, across both replicas at once.
	racer := newBot(t)
	_, h := racer.approved(a)
	release := sh.stall("refund")
	var wg sync.WaitGroup
	results := make(chan error, 8)
	for i := range 8 {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		c := racer.client(srv, h.CallID)
		wg.Go(func() {
			_, err := c.CallTool(ctx, refundTool, refundArgs)
			results <- err
		})
	}
	sh.waitRan("refund")
	release()
	wg.Wait()
	close(results)
	var ok int
	for err := range results {
		if err == nil {
			ok++
			continue
		}
		refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
	}
	if ok != 1 {
		t.Fatalf("%d of the racing attempts answered, want 1", ok)
	}
	wantRuns(t, sh, 1, 0)

	// A claims, calls, and is killed before the shop answers.
	victim := newBot(t)
	onA, h := victim.approved(a)
	release = sh.stall("refund")
	done := make(chan error, 1)
	go func() {
		_, err := onA.CallTool(ctx, refundTool, refundArgs)
		done <- err
	}()
	sh.waitRan("refund")
	killed, cancel := context.WithCancel(ctx)
	cancel()
	_ = a.Shutdown(killed)
	if err := <-done; err == nil {
		t.Fatal("the call on the killed replica answered")
	}
	if s := state(t, b, h); s != gate.ActionClaimed {
		t.Fatalf("the write A claimed is %s on B, want claimed", s)
	}
	onB := victim.client(b, h.CallID)
	_, err := onB.CallTool(ctx, refundTool, refundArgs)
	refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
	release() // the shop finishes the refund A asked for
	_, err = onB.CallTool(ctx, refundTool, refundArgs)
	refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
	wantRuns(t, sh, 2, 0)
	settle(t, b, clk, h, gate.DecisionConfirmExecuted)
	_, err = onB.CallTool(ctx, refundTool, refundArgs)
	refused(t, err, tools.CodeForbidden, tools.ReasonAlreadyExecuted)
	wantRuns(t, sh, 2, 0)
	if s := state(t, b, h); s != gate.ActionExecuted {
		t.Fatalf("the settled call is %s, want executed", s)
	}
}

// A run resumed after its write was approved makes that write once; a
// later write of the run, with other arguments, is held on its own under
// a new call id, not refused as the approved call changed.
func TestToolResumedRunWritesAgain(t *testing.T) {
	clk := &testClock{}
	srv := start(t, toolFaultOptions(clk, &app.Options{DataDir: t.TempDir()}))
	sh := newShop(t)
	registerShop(t, srv, sh, 0)
	b := newBot(t)
	resumed, h := b.approved(srv)
	callOK(t, resumed, refundTool, refundArgs)
	_, err := resumed.CallTool(context.Background(), refundTool, map[string]any{"order": "o-77", "amount": 12})
	w, ok := errors.AsType[*tools.WriteConfirmationRequired](err)
	if !ok || w.Data.CallID == "" || w.Data.CallID == h.CallID {
		t.Fatalf("the resumed run's next refund: %v, want it held under a new call id", err)
	}
	if s := state(t, srv, tools.WriteConfirmationData{SessionID: w.Data.SessionID, ActionID: w.Data.ActionID}); s != gate.ActionHeld {
		t.Fatalf("the next refund is %s, want held", s)
	}
	wantRuns(t, sh, 1, 0)
}
