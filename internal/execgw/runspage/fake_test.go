package runspage_test

import (
	"bytes"
	"context"
	"encoding/json"
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

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw/runspage"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
)

var t0 = time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)

// Test tokens and who they are.
const (
	tokAlice   = "tok-alice-0123456789"
	tokBob     = "tok-bob-0123456789"
	tokService = "tok-service-0123456789"
	tokAdmin   = "tok-admin-0123456789"
	tokGlobex  = "tok-globex-0123456789"
	tokBroken  = "tok-broken-0123456789"
	tokNoUser  = "tok-nouser-0123456789"
)

var principals = map[string]runspage.Principal{
	tokAlice:   {Tenant: "acme", UserID: "alice", Actor: "alice@acme", Scopes: []string{"runs:*"}},
	tokBob:     {Tenant: "acme", UserID: "bob", Actor: "bob@acme", Scopes: []string{"runs:*"}},
	tokService: {Tenant: "acme", Service: true, Actor: "svc-acme", Scopes: []string{"runs:*"}},
	tokAdmin:   {Admin: true, Actor: "admin"},
	tokGlobex:  {Tenant: "globex", UserID: "carol", Actor: "carol@globex"},
	tokNoUser:  {Tenant: "acme", Actor: "agent-x"},
}

type fakeAuth struct {
	mu      sync.Mutex
	revoked map[string]bool
}

func (a *fakeAuth) check(_ context.Context, tok string) (runspage.Principal, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if tok == tokBroken {
		return runspage.Principal{}, fmt.Errorf("the key service is down (token %s)", tok)
	}
	p, ok := principals[tok]
	if !ok || a.revoked[tok] {
		return runspage.Principal{}, fmt.Errorf("%w: unknown token %s", httpapi.ErrUnauthenticated, tok)
	}
	return p, nil
}

// fakeRuns keeps runs and their events and applies the gateway's
// visibility rule.
type fakeRuns struct {
	mu        sync.Mutex
	runs      []*gateway.Run
	events    map[string][]gateway.Event
	wakes     map[string][]chan struct{}
	closing   chan struct{}
	follows   int
	noFollow  bool
	cancels   []string
	replies   []replyCall
	lists     []gateway.RunFilter
	listError error
}

type replyCall struct {
	Actor, ID string
	Reply     runspage.Reply
}

func newFakeRuns() *fakeRuns {
	return &fakeRuns{events: map[string][]gateway.Event{}, wakes: map[string][]chan struct{}{}, closing: make(chan struct{})}
}

func (f *fakeRuns) add(r gateway.Run, events ...gateway.Event) {
	st := r.Status
	f.mu.Lock()
	f.runs = append(f.runs, &r)
	f.mu.Unlock()
	f.emit(r.ID, events...)
	// The run's history does not change the status it was added with.
	f.mu.Lock()
	f.find(r.ID).Status = st
	f.mu.Unlock()
}

// emit appends events to a run, numbering them, and wakes its followers.
func (f *fakeRuns) emit(id string, events ...gateway.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.find(id)
	for _, e := range events {
		r.LastSequence++
		e.RunID, e.Sequence = id, r.LastSequence
		if e.At.IsZero() {
			e.At = t0.Add(time.Duration(e.Sequence) * time.Second)
		}
		f.events[id] = append(f.events[id], e)
		if e.Type == gateway.EventStatus {
			var p gateway.StatusPayload
			_ = json.Unmarshal(e.Payload, &p)
			if p.Status.Valid() {
				r.Status = p.Status
			}
		}
	}
	for _, w := range f.wakes[id] {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

func (f *fakeRuns) find(id string) *gateway.Run {
	for _, r := range f.runs {
		if r.ID == id {
			return r
		}
	}
	return nil
}

func sees(p runspage.Principal, r *gateway.Run) bool {
	if p.Tenant != "" && r.TenantID != p.Tenant {
		return false
	}
	return p.Admin || p.Service || r.Caller.UserID == p.UserID
}

func (f *fakeRuns) List(_ context.Context, p runspage.Principal, flt gateway.RunFilter) ([]gateway.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, flt)
	if f.listError != nil {
		return nil, f.listError
	}
	var out []gateway.Run
	for _, r := range f.runs { // newest first: added oldest first
		if !sees(p, r) || len(flt.Statuses) > 0 && !slices.Contains(flt.Statuses, r.Status) {
			continue
		}
		if flt.AfterID != "" && !(r.CreatedAt.Before(flt.AfterCreated) || r.CreatedAt.Equal(flt.AfterCreated) && r.ID < flt.AfterID) {
			continue
		}
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b gateway.Run) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if flt.Limit > 0 && len(out) > flt.Limit {
		out = out[:flt.Limit]
	}
	return out, nil
}

func (f *fakeRuns) get(p runspage.Principal, id string) (*gateway.Run, error) {
	r := f.find(id)
	if r == nil || !sees(p, r) {
		return nil, fmt.Errorf("no run %q: %w", id, gateway.ErrNotFound)
	}
	c := *r
	return &c, nil
}

func (f *fakeRuns) Get(_ context.Context, p runspage.Principal, id string) (*gateway.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.get(p, id)
}

func (f *fakeRuns) Events(_ context.Context, p runspage.Principal, id string, after int64, limit int) ([]gateway.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.get(p, id); err != nil {
		return nil, err
	}
	var out []gateway.Event
	for _, e := range f.events[id] {
		if e.Sequence > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeRuns) Follow(_ context.Context, p runspage.Principal, id string) (*runspage.Feed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.get(p, id); err != nil {
		return nil, err
	}
	if f.noFollow {
		return nil, &problem.Problem{Status: http.StatusServiceUnavailable, Detail: "too many event streams are open"}
	}
	w := make(chan struct{}, 1)
	f.wakes[id] = append(f.wakes[id], w)
	f.follows++
	return &runspage.Feed{Wake: w, Closing: f.closing, Stop: func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.wakes[id] = slices.DeleteFunc(f.wakes[id], func(c chan struct{}) bool { return c == w })
		f.follows--
	}}, nil
}

func (f *fakeRuns) following(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.wakes[id])
}

func (f *fakeRuns) Cancel(_ context.Context, p runspage.Principal, id string) (*gateway.Run, error) {
	f.mu.Lock()
	r, err := f.get(p, id)
	if err == nil {
		f.cancels = append(f.cancels, p.Actor+" "+id)
	}
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if r.Status.Terminal() {
		return nil, &problem.Problem{Type: gateway.ProblemRunEnded, Status: http.StatusConflict, Title: "Conflict",
			Detail: "the run has ended: " + string(r.Status)}
	}
	f.emit(id, statusEvent(gateway.StatusCancelled, "cancelled by "+p.Actor), event(gateway.EventError, `{"status":"CANCELLED"}`))
	return r, nil
}

func (f *fakeRuns) Reply(_ context.Context, p runspage.Principal, id string, rep runspage.Reply) (*gateway.Run, error) {
	f.mu.Lock()
	r, err := f.get(p, id)
	if err == nil {
		f.replies = append(f.replies, replyCall{p.Actor, id, rep})
	}
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if r.Status != gateway.StatusWaitingUser {
		return nil, &problem.Problem{Type: gateway.ProblemRunNotWaiting, Status: http.StatusConflict, Title: "Conflict",
			Detail: "the run waits for no answer: it is " + string(r.Status)}
	}
	f.emit(id, statusEvent(gateway.StatusQueued, "answered by "+p.Actor))
	return r, nil
}

func event(typ, payload string) gateway.Event {
	return gateway.Event{Type: typ, Payload: json.RawMessage(payload)}
}

func statusEvent(st gateway.Status, reason string) gateway.Event {
	b, _ := json.Marshal(gateway.StatusPayload{Status: st, Reason: reason})
	return gateway.Event{Type: gateway.EventStatus, Payload: b}
}

func newRun(id, tenant, user string, st gateway.Status, created time.Time) gateway.Run {
	return gateway.Run{ID: id, TenantID: tenant, InstanceID: "inst-" + tenant, Caller: gateway.Caller{UserID: user, Subject: "sub-" + user},
		Status: st, Input: "question of " + id, CreatedAt: created, StartedAt: created.Add(time.Second), Turn: 1, Attempt: 1}
}

// harness is the page over the fakes, with a log buffer.
type harness struct {
	runs *fakeRuns
	auth *fakeAuth
	h    http.Handler
	logs *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newHarness(t *testing.T, o *runspage.Options) *harness {
	t.Helper()
	runs := newFakeRuns()
	runs.add(newRun("r-alice-1", "acme", "alice", gateway.StatusCompleted, t0.Add(-3*time.Minute)),
		statusEvent(gateway.StatusQueued, "queued"), statusEvent(gateway.StatusRunning, ""),
		event(gateway.EventMessageDelta, `{"content":"hello"}`), statusEvent(gateway.StatusCompleted, "the agent completed the task"),
		event(gateway.EventDone, `{"status":"COMPLETED"}`))
	runs.add(newRun("r-alice-2", "acme", "alice", gateway.StatusRunning, t0.Add(-2*time.Minute)),
		statusEvent(gateway.StatusQueued, "queued"), statusEvent(gateway.StatusRunning, ""))
	runs.add(newRun("r-bob-1", "acme", "bob", gateway.StatusRunning, t0.Add(-time.Minute)),
		statusEvent(gateway.StatusQueued, "queued"))
	runs.add(newRun("r-carol-1", "globex", "carol", gateway.StatusFailed, t0),
		statusEvent(gateway.StatusFailed, "the agent failed"))
	logs := &lockedBuffer{}
	var opts runspage.Options
	if o != nil {
		opts = *o
	}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	auth := &fakeAuth{revoked: map[string]bool{}}
	return &harness{runs: runs, auth: auth, h: runspage.New(runs, auth.check, &opts), logs: logs}
}

// browser is a cookie-keeping client that calls the handler directly,
// sending the headers a browser on the page would.
type browser struct {
	t       *testing.T
	h       http.Handler
	cookies map[string]*http.Cookie
	origin  string // sent as Origin on POSTs ("" sends none)
	tls     bool
}

const host = "runs.example.test"

func (hs *harness) browser(t *testing.T) *browser {
	return &browser{t: t, h: hs.h, cookies: map[string]*http.Cookie{}, origin: "http://" + host}
}

func (b *browser) do(method, target string, form url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	scheme := "http://"
	if b.tls {
		scheme = "https://"
	}
	r := httptest.NewRequest(method, scheme+host+target, body)
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
	w := b.post("/ui/runs/login", url.Values{"token": {token}})
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/ui/runs" {
		b.t.Fatalf("login: %d %q, want 303 to /ui/runs\n%s", w.Code, w.Header().Get("Location"), w.Body)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token from the list.
func (b *browser) csrf() string {
	b.t.Helper()
	w := b.get("/ui/runs")
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

func wantLacks(t *testing.T, body string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if strings.Contains(body, s) {
			t.Errorf("page shows %q", s)
		}
	}
}
