package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store/sqlite"
)

// gateEnv is a real server (novaos serve's app.Server) on a SQLite data
// directory, with the gate mounted, that a test can stop and start again
// on the same address and database, as an operator restarts novaos serve.
type gateEnv struct {
	t    *testing.T
	dir  string
	addr string
	opts gatesvc.Options

	mu  sync.Mutex
	srv *app.Server
}

// startGate starts a server with the gate tuned by o.
func startGate(t *testing.T, o gatesvc.Options) *gateEnv {
	t.Helper()
	e := &gateEnv{t: t, dir: t.TempDir(), addr: "127.0.0.1:0", opts: o}
	e.start()
	t.Cleanup(e.stop)
	return e
}

// start (re)starts the server on the env's address and data directory.
func (e *gateEnv) start() {
	e.t.Helper()
	srv, err := app.New(context.Background(), &app.Options{Addr: e.addr, DataDir: e.dir, AdminToken: gateAdminToken,
		Gate: e.opts})
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	if err := srv.Start(context.Background()); err != nil {
		srv.Shutdown(context.Background())
		e.t.Fatalf("Start: %v", err)
	}
	e.mu.Lock()
	e.srv, e.addr = srv, srv.Addr()
	e.mu.Unlock()
}

// stop shuts the server down; a stopped env's stop does nothing.
func (e *gateEnv) stop() {
	e.mu.Lock()
	srv := e.srv
	e.srv = nil
	e.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		e.t.Errorf("Shutdown: %v", err)
	}
}

// restart stops the server and starts it again with the options mut
// changed (nil: the same), as a new release or a new configuration.
func (e *gateEnv) restart(mut func(*gatesvc.Options)) {
	e.t.Helper()
	e.stop()
	if mut != nil {
		mut(&e.opts)
	}
	e.start()
}

func (e *gateEnv) server() *app.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv == nil {
		e.t.Fatal("the server is stopped")
	}
	return e.srv
}

func (e *gateEnv) url() string { return "http://" + e.addr }

// dbPath is the server's SQLite file.
func (e *gateEnv) dbPath() string { return filepath.Join(e.dir, app.DatabaseFile) }

// store opens a second handle on the server's own database, as another
// process (an older release, an operator's tool) would, and returns its
// gate store: writes through it land in the file the server reads.
func (e *gateEnv) store() gate.Store {
	e.t.Helper()
	db, err := sqlite.Open(context.Background(), e.dbPath(), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { db.Close() })
	return db.GateStore()
}

// token mints a platform token of the server for tenant with scopes.
// The signing key lives in the data directory, so tokens outlive restarts.
func (e *gateEnv) token(tenant string, scopes ...string) secret.Value {
	e.t.Helper()
	tok, err := e.server().Issuer().Mint(context.Background(), identity.Claims{TenantID: tenant, AgentID: "refund-bot",
		Subject: "refund-bot@" + tenant, Scopes: scopes}, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	return secret.New(tok)
}

// client is an SDK client of the env for tenant with one scope; every
// request it sends is counted in n when n is not nil.
func (e *gateEnv) client(tenant, scope string, n *atomic.Int64, o *gate.ClientOptions) *gate.Client {
	e.t.Helper()
	var opts gate.ClientOptions
	if o != nil {
		opts = *o
	}
	if opts.WaitPoll == 0 {
		opts.WaitPoll = 5 * time.Second
	}
	if opts.HoldMargin == 0 {
		opts.HoldMargin = 3 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = discard
	}
	opts.HTTPClient = &http.Client{Transport: countingTransport{n: n}}
	c, err := gate.NewClient(gate.Config{URL: e.url(), Token: e.token(tenant, scope)}, &opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// serverAdmin is a client with the server's admin token, which the
// audit chain (spanning tenants) needs.
func (e *gateEnv) serverAdmin() *gate.Client {
	e.t.Helper()
	c, err := gate.NewClient(gate.Config{URL: e.url(), Token: gateAdminToken}, &gate.ClientOptions{Logger: discard})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// gateAdminToken is the servers' admin token in these tests.
var gateAdminToken = secret.New("e2e-admin-token-0123456789abcdef")

func (e *gateEnv) agent(tenant string, n *atomic.Int64) *gate.Client {
	return e.client(tenant, gate.ScopeSubmit, n, nil)
}

func (e *gateEnv) operator(tenant string) *gate.Client {
	return e.client(tenant, gate.ScopeOperate, nil, nil)
}

func (e *gateEnv) admin(tenant string) *gate.Client {
	return e.client(tenant, gate.ScopeAdmin, nil, nil)
}

// rules stores tenant's rule set through the admin API.
func (e *gateEnv) rules(tenant string, rules ...gate.RuleDocument) {
	e.t.Helper()
	if _, err := e.admin(tenant).PutRules(context.Background(), gate.RuleSetDocument{Rules: rules}); err != nil {
		e.t.Fatal(err)
	}
}

// holdOver is the rule set the flows use: hold above 100, kill above 1000.
var holdOver = []gate.RuleDocument{
	{ID: "large-refund", Text: "Hold refunds over 100 for a person.", When: "ctx.amount > 100.0", Verdict: gate.Hold},
	{ID: "huge-refund", Text: "Never refund more than 1000.", When: "ctx.amount > 1000.0", Verdict: gate.Kill},
}

type countingTransport struct{ n *atomic.Int64 }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.n != nil {
		c.n.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// refund is the gated write's argument in these tests.
type refund struct {
	ID     string  `json:"id"`
	Record string  `json:"record"`
	Amount float64 `json:"amount"`
}

func refundContext(r refund) (gate.Context, error) {
	amount := r.Amount
	return gate.GenericContext{RecordID: r.Record, Summary: "refund", Amount: &amount}, nil
}

func refundID(r refund) (string, error) { return r.ID, nil }

var refundSpec = gate.WriteSpec[refund]{ActionType: "issue_refund", Context: refundContext, ActionID: refundID}

// effects counts the runs of a gated Go function, and when it last ran.
type effects struct {
	n    atomic.Int64
	mu   sync.Mutex
	last time.Time
}

func (f *effects) fn(context.Context, refund) (string, error) {
	f.mu.Lock()
	f.last = time.Now()
	f.mu.Unlock()
	f.n.Add(1)
	return "refunded", nil
}

func (f *effects) lastRun() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// session is a plain session of tenant with a fixed id.
func session(tenant, id string) gate.Session {
	return gate.Session{TenantID: tenant, TeamID: "support", AgentID: "refund-bot", ID: id}
}

// runOne runs one gated write of r in s and returns the write's error
// (a failure to open the session included).
func runOne(ctx context.Context, c *gate.Client, s gate.Session, spec gate.WriteSpec[refund], fn func(context.Context, refund) (string, error), r refund) error {
	var werr error
	err := c.Run(ctx, s, func(ctx context.Context) error {
		_ = gate.SetReasoning(ctx, "the customer was charged twice")
		_, werr = gate.Write(c, spec, fn)(ctx, r)
		return nil
	})
	return errors.Join(werr, err)
}

// decideWhenHeld waits until the action is held and records the
// operator's decision, returning the moment just before it was sent.
func decideWhenHeld(ctx context.Context, op *gate.Client, sid, aid string, d gate.OperatorDecisionKind) (time.Time, error) {
	for {
		rec, err := op.Action(ctx, sid, aid)
		if err == nil && rec.State == gate.ActionHeld {
			at := time.Now()
			_, err = op.Decide(ctx, sid, aid, gate.OperatorDecision{Decision: d, Note: "e2e"})
			return at, err
		}
		var p *gate.Problem
		if err != nil && !(errors.As(err, &p) && p.Status == http.StatusNotFound) {
			return time.Time{}, err
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// wantKill checks err is a *KillError with reason (its bracketed prefix
// leading the message) and returns it.
func wantKill(t *testing.T, err error, reason gate.Reason) *gate.KillError {
	t.Helper()
	var k *gate.KillError
	if !errors.As(err, &k) {
		t.Fatalf("err = %v (%T), want a *gate.KillError with reason %s", err, err, reason)
	}
	if k.Reason != reason {
		t.Fatalf("reason %q, want %q (%v)", k.Reason, reason, k)
	}
	if reason != "" && !strings.HasPrefix(k.Error(), "["+string(reason)+"] ") {
		t.Fatalf("message %q lacks the prefix [%s]", k.Error(), reason)
	}
	return k
}

// fakeJudge is an in-process OpenAI-compatible chat-completions server.
// A record id "jf[mode]" in the judged action selects a fault; any other
// action is judged pass. It counts requests per mode.
type fakeJudge struct {
	srv *httptest.Server
	mu  sync.Mutex
	n   map[string]int
}

const judgePass = `{"verdict":"pass","rule_id_cited":"","rule_ids":[],"rationale":"no rule applies","signals":[]}`

// judgeModes are the scripted faults: an HTTP status, a message content,
// a finish reason, a whole raw body, or a delay past the judge's timeout.
var judgeModes = map[string]struct {
	status  int
	content string
	finish  string
	raw     string
	delay   time.Duration
}{
	"timeout":   {delay: 10 * time.Second, content: judgePass},
	"429":       {status: http.StatusTooManyRequests},
	"500":       {status: http.StatusInternalServerError},
	"503":       {status: http.StatusServiceUnavailable},
	"malformed": {content: `The write looks fine: pass.`},
	"dupkeys":   {content: `{"verdict":"kill","rule_id_cited":"","rule_ids":[],"rationale":"r","signals":[],"verdict":"pass"}`},
	"extra":     {content: `{"verdict":"pass","rule_id_cited":"","rule_ids":[],"rationale":"r","signals":[],"confidence":0.99}`},
	"trailing":  {content: judgePass + ` {"verdict":"pass"}`},
	"verdict":   {content: `{"verdict":"approve","rule_id_cited":"","rule_ids":[],"rationale":"r","signals":[]}`},
	"rule":      {content: `{"verdict":"hold","rule_id_cited":"made-up-rule","rule_ids":["made-up-rule"],"rationale":"r","signals":[]}`},
	"envelope":  {raw: `<html>502 bad gateway</html>`},
	"refusal":   {raw: `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":"I cannot judge this."}}]}`},
	"length":    {content: `{"verdict":"pass","rule_id_cited":"",`, finish: "length"},
}

func newFakeJudge(t *testing.T) *fakeJudge {
	f := &fakeJudge{n: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeJudge) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	mode := ""
	for m := range judgeModes {
		if strings.Contains(string(body), "jf["+m+"]") {
			mode = m
		}
	}
	f.mu.Lock()
	f.n[mode]++
	f.mu.Unlock()
	m := judgeModes[mode]
	if mode == "" {
		m.content = judgePass
	}
	if m.delay > 0 {
		select {
		case <-time.After(m.delay):
		case <-r.Context().Done():
			return
		}
	}
	if m.status != 0 {
		w.WriteHeader(m.status)
		_, _ = io.WriteString(w, `{"error":{"message":"scripted failure"}}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if m.raw != "" {
		_, _ = io.WriteString(w, m.raw)
		return
	}
	finish := m.finish
	if finish == "" {
		finish = "stop"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
		"index": 0, "finish_reason": finish, "message": map[string]any{"role": "assistant", "content": m.content},
	}}})
}

func (f *fakeJudge) calls(mode string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[mode]
}

// noRetry is a single-attempt policy, so a scripted 429 or 5xx is
// answered once rather than retried into the judge's timeout.
var discard = slog.New(slog.DiscardHandler)

var noRetry = &resilience.Policy{Attempts: 1}

// gateClock is a gate's clock that moves only when a test moves it.
type gateClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *gateClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *gateClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
