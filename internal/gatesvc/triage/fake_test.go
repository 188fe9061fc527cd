package triage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc/triage"
	"novaos.dev/novaos/internal/httpapi"
)

// t0 is the fake clock's now.
var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// decideCall is one call of Operator.Decide.
type decideCall struct {
	Tenant, Session, Action string
	Decision                gate.OperatorDecision
	Actor                   string
}

// fakeOp is an in-memory gate service. A held action's "write" waits on
// its channel in waits until an operator decides it.
type fakeOp struct {
	mu        sync.Mutex
	actions   []gate.ActionRecord
	calls     []decideCall
	lists     []string // the tenant of each List call
	afters    []string
	decideErr error
	listErr   error
	getErr    error
	waits     map[string]chan gate.OperatorDecisionKind
}

var _ triage.Operator = (*fakeOp)(nil)

func key(session, action string) string { return session + "/" + action }

func (f *fakeOp) add(recs ...gate.ActionRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		f.actions = append(f.actions, r)
		if f.waits == nil {
			f.waits = map[string]chan gate.OperatorDecisionKind{}
		}
		f.waits[key(r.SessionID, r.ActionID)] = make(chan gate.OperatorDecisionKind, 1)
	}
}

// wait blocks like a held SDK write until the action is decided.
func (f *fakeOp) wait(ctx context.Context, session, action string) (gate.OperatorDecisionKind, error) {
	f.mu.Lock()
	ch := f.waits[key(session, action)]
	f.mu.Unlock()
	select {
	case k := <-ch:
		return k, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (f *fakeOp) List(_ context.Context, tenant string, states []gate.ActionState, after string, limit int) (gate.ActionList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, tenant)
	f.afters = append(f.afters, after)
	if f.listErr != nil {
		return gate.ActionList{}, f.listErr
	}
	var out gate.ActionList
	var sel []gate.ActionRecord
	for _, a := range f.actions {
		if (tenant == "" || a.TenantID == tenant) && slices.Contains(states, a.State) {
			sel = append(sel, a)
		}
	}
	slices.SortStableFunc(sel, func(a, b gate.ActionRecord) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if after != "" {
		i := slices.IndexFunc(sel, func(a gate.ActionRecord) bool { return key(a.SessionID, a.ActionID) == after })
		sel = sel[i+1:]
	}
	if len(sel) > limit {
		sel = sel[:limit]
		out.Next = key(sel[limit-1].SessionID, sel[limit-1].ActionID)
	}
	out.Actions = sel
	return out, nil
}

func (f *fakeOp) find(tenant, session, action string) int {
	return slices.IndexFunc(f.actions, func(a gate.ActionRecord) bool {
		return (tenant == "" || a.TenantID == tenant) && a.SessionID == session && a.ActionID == action
	})
}

func (f *fakeOp) Get(_ context.Context, tenant, session, action string) (gate.ActionRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.getErr != nil {
		return gate.ActionRecord{}, f.getErr
	}
	i := f.find(tenant, session, action)
	if i < 0 {
		return gate.ActionRecord{}, fmt.Errorf("fake: get %s/%s: %w", session, action, gate.ErrNotFound)
	}
	return f.actions[i], nil
}

func (f *fakeOp) Decide(_ context.Context, tenant, session, action string, d gate.OperatorDecision, actor string) (gate.ActionRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, decideCall{Tenant: tenant, Session: session, Action: action, Decision: d, Actor: actor})
	if f.decideErr != nil {
		return gate.ActionRecord{}, f.decideErr
	}
	i := f.find(tenant, session, action)
	if i < 0 {
		return gate.ActionRecord{}, fmt.Errorf("fake: decide %s/%s: %w", session, action, gate.ErrNotFound)
	}
	a := &f.actions[i]
	next := map[gate.OperatorDecisionKind]struct{ from, to gate.ActionState }{
		gate.DecisionApprove:            {gate.ActionHeld, gate.ActionApproved},
		gate.DecisionDeny:               {gate.ActionHeld, gate.ActionDenied},
		gate.DecisionConfirmExecuted:    {gate.ActionUnconfirmed, gate.ActionExecuted},
		gate.DecisionConfirmNotExecuted: {gate.ActionUnconfirmed, gate.ActionPassed},
	}[d.Decision]
	if a.State != next.from {
		return *a, fmt.Errorf("fake: decide %s/%s: state %s: %w", session, action, a.State, gate.ErrConflict)
	}
	a.State, a.DecidedBy, a.DecidedAt = next.to, actor, t0
	a.Version++
	if ch := f.waits[key(session, action)]; ch != nil {
		ch <- d.Decision
	}
	return *a, nil
}

func (f *fakeOp) decideCalls() []decideCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Tokens the fake authenticator knows.
const (
	tokenAcme    = "tok-acme-operator-0123456789"
	tokenGlobex  = "tok-globex-operator-987654321"
	tokenAdmin   = "tok-admin-secret-abcdef"
	tokenNoScope = "tok-no-scope"
	tokenBroken  = "tok-checker-fails"
	tokenNoTen   = "tok-no-tenant"
	tokenQuoted  = "tok-quoted-by-the-checker"
)

// revoked tokens are refused from then on, as an expired token would be.
type fakeAuth struct {
	mu      sync.Mutex
	revoked map[string]bool
}

func (a *fakeAuth) revoke(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.revoked == nil {
		a.revoked = map[string]bool{}
	}
	a.revoked[tok] = true
}

func (a *fakeAuth) check(_ context.Context, tok string) (triage.Principal, error) {
	a.mu.Lock()
	revoked := a.revoked[tok]
	a.mu.Unlock()
	if revoked {
		return triage.Principal{}, fmt.Errorf("fake: token expired: %w", httpapi.ErrUnauthenticated)
	}
	switch tok {
	case tokenAcme:
		return triage.Principal{Tenant: "acme", Actor: "alice@acme"}, nil
	case tokenGlobex:
		return triage.Principal{Tenant: "globex", Actor: "gus@globex"}, nil
	case tokenAdmin:
		return triage.Principal{Actor: "admin", Admin: true}, nil
	case tokenNoScope:
		return triage.Principal{}, fmt.Errorf("fake: scope gate:operate missing: %w", httpapi.ErrForbidden)
	case tokenBroken:
		return triage.Principal{}, errors.New("fake: identity store unavailable")
	case tokenQuoted:
		// A careless checker that quotes what it was given.
		return triage.Principal{}, fmt.Errorf("fake: token %q is malformed: %w", tok, httpapi.ErrUnauthenticated)
	case tokenNoTen:
		return triage.Principal{Actor: "nobody"}, nil
	}
	return triage.Principal{}, fmt.Errorf("fake: unknown token: %w", httpapi.ErrUnauthenticated)
}

func amount(v float64) *float64 { return &v }

// heldAction is a held AP payment with evidence, reasoning and a decision
// record whose every part the detail page shows.
func heldAction(tenant, session, action string, created time.Time) gate.ActionRecord {
	a := gate.Action{
		ActionID: action, ActionType: "pay_invoice", TenantID: tenant, TeamID: "finance", AgentID: "ap-agent",
		SessionID: session,
		Context: gate.APContext{VendorID: "V-17", VendorName: "Northwind", InvoiceID: "INV-991", Amount: 12500,
			Currency: "EUR", PayeeAccount: "DE89370400440532013000"},
		Evidence: []gate.Evidence{
			{Tool: "get_vendor", Arguments: json.RawMessage(`{"vendor_id":"V-17"}`),
				Result:     json.RawMessage(`{"bank_changed":"2026-11-30"}`),
				Provenance: gate.Provenance{Sequence: 1, CallID: "call-aa1", ObservedAt: t0.Add(-3 * time.Minute)}},
			{Tool: "get_invoice", Arguments: json.RawMessage(`{"id":"INV-991"}`),
				Result:     json.RawMessage(`{"lines":["x"]}`),
				Provenance: gate.Provenance{Sequence: 2, CallID: "call-bb2", ObservedAt: t0.Add(-2 * time.Minute), Truncated: true, OriginalBytes: 90210}},
			{Tool: "get_po", Error: "po service timed out",
				Provenance: gate.Provenance{Sequence: 3, CallID: "call-cc3", ObservedAt: t0.Add(-time.Minute)}},
		},
		Reasoning: "Invoice matches the PO; paying before the discount window closes.",
	}
	raw, err := json.Marshal(a)
	if err != nil {
		panic(err)
	}
	d := gate.Decision{
		RuleSetVersion: 7, RuleSetHash: "sha256:rules7",
		Rules: gate.Hold,
		Matched: []gate.RuleMatch{
			{RuleID: "ap-bank-change", Text: "Hold payments within 7 days of a bank detail change.", Verdict: gate.Hold},
			{RuleID: "ap-velocity", Text: "Kill a third payment to one vendor in a day.", Verdict: gate.Kill, Error: "no such field: agg.vendor_day"},
		},
		Aggregates: map[string]float64{"payments_vendor_7d": 3, "amount_vendor_7d": 31000.5},
		Judge: &gate.JudgeDecision{Model: "judge-mini", PromptVersion: "p3", Verdict: gate.Hold, RuleIDCited: "ap-bank-change",
			Rationale: "Bank details changed two days ago.", Signals: []string{"bank_change_recent", "amount_high"}},
		FingerprintScheme: "jcs-sha256-v1", CommitmentVersion: "c1",
		RulesMicros: 42, JudgeMicros: 1800, TotalMicros: 1900,
	}
	draw, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	return gate.ActionRecord{
		TenantID: tenant, SessionID: session, ActionID: action, ActionType: "pay_invoice", TeamID: "finance", AgentID: "ap-agent",
		Action: raw, Decision: draw,
		Fingerprint: "fp-5d41402abc4b2a76", FingerprintScheme: "jcs-sha256-v1", CommitmentVersion: "c1",
		State: gate.ActionHeld, Verdict: gate.Hold, RuleIDCited: "ap-bank-change", Rationale: "Bank details changed two days ago.",
		HoldWindow: 5 * time.Minute, HoldExpiresAt: created.Add(5 * time.Minute),
		Version: 2, CreatedAt: created, UpdatedAt: created,
	}
}

// unconfirmedAction is a claimed write whose acknowledgement never came.
func unconfirmedAction(tenant, session, action string, created time.Time) gate.ActionRecord {
	a := gate.Action{
		ActionID: action, ActionType: "issue_refund", TenantID: tenant, TeamID: "support", AgentID: "cs-agent", SessionID: session,
		Context: gate.CSContext{CustomerID: "C-9", Amount: amount(40), Currency: "USD"},
	}
	raw, err := json.Marshal(a)
	if err != nil {
		panic(err)
	}
	return gate.ActionRecord{
		TenantID: tenant, SessionID: session, ActionID: action, ActionType: "issue_refund", TeamID: "support", AgentID: "cs-agent",
		Action: raw, State: gate.ActionUnconfirmed, Verdict: gate.Pass,
		FencingToken: 3, ClaimedAt: created.Add(time.Second),
		Version: 4, CreatedAt: created, UpdatedAt: created,
	}
}

// harness is the page over the fake service, with a log buffer.
type harness struct {
	op   *fakeOp
	auth *fakeAuth
	h    http.Handler
	logs *bytes.Buffer
}

func newHarness(t *testing.T, o *triage.Options) *harness {
	t.Helper()
	op := &fakeOp{}
	op.add(
		heldAction("acme", "s-1", "a-held", t0.Add(-4*time.Minute)),
		unconfirmedAction("acme", "s-2", "a-unconf", t0.Add(-10*time.Minute)),
		func() gate.ActionRecord {
			r := heldAction("globex", "s-9", "g-held", t0.Add(-time.Minute))
			r.HoldIndefinite, r.HoldExpiresAt, r.RuleIDCited = true, time.Time{}, "globex-rule"
			return r
		}(),
	)
	logs := &bytes.Buffer{}
	var opts triage.Options
	if o != nil {
		opts = *o
	}
	opts.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.Now = func() time.Time { return t0 }
	auth := &fakeAuth{}
	return &harness{op: op, auth: auth, h: triage.New(op, auth.check, &opts), logs: logs}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// browser is a minimal cookie-keeping client that calls the handler
// directly, sending the headers a browser on the page would.
type browser struct {
	t       *testing.T
	h       http.Handler
	cookies map[string]*http.Cookie
	// origin is sent as Origin on POSTs ("" sends none).
	origin string
	tls    bool
}

const host = "gate.example.test"

func (hs *harness) browser(t *testing.T) *browser {
	return &browser{t: t, h: hs.h, cookies: map[string]*http.Cookie{}, origin: "http://" + host}
}

func (b *browser) do(method, target string, form url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, "http://"+host+target, body)
	if b.tls {
		r = httptest.NewRequest(method, "https://"+host+target, body)
	}
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if method == http.MethodPost && b.origin != "" {
		r.Header.Set("Origin", b.origin)
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	for _, c := range b.cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	b.h.ServeHTTP(w, r)
	for _, c := range w.Result().Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	return w
}

func (b *browser) get(target string) *httptest.ResponseRecorder {
	return b.do(http.MethodGet, target, nil, nil)
}

func (b *browser) post(target string, form url.Values) *httptest.ResponseRecorder {
	return b.do(http.MethodPost, target, form, nil)
}

func (b *browser) login(token string) {
	b.t.Helper()
	w := b.post("/ui/gate/login", url.Values{"token": {token}})
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/ui/gate" {
		b.t.Fatalf("login: %d %q, want 303 to /ui/gate\n%s", w.Code, w.Header().Get("Location"), w.Body)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token from a page behind the login.
func (b *browser) csrf() string {
	b.t.Helper()
	w := b.get("/ui/gate")
	m := csrfField.FindStringSubmatch(w.Body.String())
	if m == nil {
		b.t.Fatalf("no CSRF field on the list (%d):\n%s", w.Code, w.Body)
	}
	return m[1]
}

func wantStatus(t *testing.T, w *httptest.ResponseRecorder, status int) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d\n%s", w.Code, status, w.Body)
	}
}

func wantContains(t *testing.T, body string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", body)
	}
}
