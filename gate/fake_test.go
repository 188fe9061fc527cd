package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// testToken is the bearer token of every test client; no error text or
// log line may contain it.
const testToken = "tok-s3cr3t-7f3a9c"

// reply is one scripted answer.
type reply struct {
	status int
	body   string
	header http.Header
}

// handler scripts one route: n counts its calls from 1; r is the request
// (its context ends when the client gives up).
type handler func(n int, r *http.Request, body []byte) reply

// call is one request the fake gate saw.
type call struct {
	method, path, query, auth string
	body                      []byte
}

// fakeGate is the client's test double: an httptest server that answers
// each route of gate/api.go as its test scripts it and records every call.
type fakeGate struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	routes map[string]handler
	counts map[string]int
	calls  []call
}

func newFake(t *testing.T, routes map[string]handler) *fakeGate {
	t.Helper()
	f := &fakeGate{t: t, routes: map[string]handler{
		"POST /sessions":     sessionOK(300, false),
		"POST /sessions/end": func(int, *http.Request, []byte) reply { return reply{status: http.StatusNoContent} },
	}, counts: map[string]int{}}
	for k, h := range routes {
		f.routes[k] = h
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGate) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.EscapedPath(), gate.APIPath)
	key := r.Method + " " + path
	f.mu.Lock()
	f.calls = append(f.calls, call{method: r.Method, path: path, query: r.URL.RawQuery, auth: r.Header.Get("Authorization"), body: body})
	h, ok := f.routes[key]
	if !ok && strings.HasPrefix(path, "/actions/") && r.Method == http.MethodGet {
		h, ok = f.routes["GET /actions/*"]
	}
	f.counts[key]++
	n := f.counts[key]
	f.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"title":"no such route","status":404}`)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	rep := h(n, r, body)
	for k, v := range rep.header {
		w.Header()[k] = v
	}
	if rep.status == 0 {
		rep.status = http.StatusOK
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

// count returns how many calls route key got.
func (f *fakeGate) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[key]
}

// all returns the recorded calls.
func (f *fakeGate) all() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// last returns the body of the last call of route key.
func (f *fakeGate) last(key string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if c := f.calls[i]; c.method+" "+c.path == key {
			return c.body
		}
	}
	return nil
}

// logBuf collects what a client logs, to check it for the token.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// client returns a client of f with fast retries and short waits.
func (f *fakeGate) client(o *gate.ClientOptions) (*gate.Client, *logBuf) {
	f.t.Helper()
	if o == nil {
		o = &gate.ClientOptions{}
	}
	if o.Retry == nil {
		o.Retry = &resilience.Policy{Attempts: 3, Base: time.Millisecond, Max: 2 * time.Millisecond, NoJitter: true}
	}
	if o.WaitPoll == 0 {
		o.WaitPoll = 2 * time.Second
	}
	if o.HoldMargin == 0 {
		o.HoldMargin = 50 * time.Millisecond
	}
	logs := &logBuf{}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	c, err := gate.NewClient(gate.Config{URL: f.srv.URL, Token: secret.New(testToken)}, o)
	if err != nil {
		f.t.Fatal(err)
	}
	return c, logs
}

// sessionOK answers a session request with the given window.
func sessionOK(windowS float64, indefinite bool) handler {
	return func(_ int, _ *http.Request, body []byte) reply {
		var req gate.SessionRequest
		json.Unmarshal(body, &req)
		info := gate.SessionInfo{SessionID: req.SessionID, HoldWindowS: windowS, HoldIndefinite: indefinite, Attached: req.Attach}
		if indefinite {
			info.HoldWindowS = 0
		}
		return jsonReply(http.StatusCreated, info)
	}
}

func jsonReply(status int, v any) reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return reply{status: status, body: string(b)}
}

// action decodes a submitted action.
func action(t *testing.T, body []byte) gate.Action {
	t.Helper()
	a, err := gate.DecodeAction(body)
	if err != nil {
		t.Fatalf("the client submitted an invalid action: %v\n%s", err, body)
	}
	return a
}

var t0 = time.Date(2026, 9, 3, 2, 0, 0, 0, time.UTC)

// verdict answers a submitted action (or a wait for it) with v, filling
// in its ids from the request.
func verdict(v gate.Verdict) handler {
	return func(_ int, _ *http.Request, body []byte) reply {
		var ids struct {
			SessionID string `json:"session_id"`
			ActionID  string `json:"action_id"`
		}
		json.Unmarshal(body, &ids)
		v := v
		v.SessionID, v.ActionID = ids.SessionID, ids.ActionID
		if v.Hold != nil {
			h := *v.Hold
			h.ActionID = ids.ActionID
			v.Hold = &h
		}
		if v.Claim != nil {
			cl := *v.Claim
			cl.SessionID, cl.ActionID = ids.SessionID, ids.ActionID
			v.Claim = &cl
		}
		return jsonReply(http.StatusOK, v)
	}
}

// seq answers the n-th call with hs[n-1] and later calls with the last.
func seq(hs ...handler) handler {
	return func(n int, r *http.Request, body []byte) reply {
		return hs[min(n, len(hs))-1](n, r, body)
	}
}

func granted(token uint64) *gate.Claim {
	return &gate.Claim{Status: gate.ClaimGranted, FencingToken: token, ClaimedAt: &t0}
}

func passClaimed(token uint64) handler {
	return verdict(gate.Verdict{Verdict: gate.Pass, Claim: granted(token)})
}

func pending(windowS float64) *gate.HoldStatus {
	return &gate.HoldStatus{State: gate.HoldPending, WindowS: windowS}
}

// claimAnswer answers POST /claims with a claim of the given status.
func claimAnswer(cl gate.Claim) handler {
	return func(_ int, _ *http.Request, body []byte) reply {
		var req gate.ClaimRequest
		json.Unmarshal(body, &req)
		cl.SessionID, cl.ActionID = req.SessionID, req.ActionID
		return jsonReply(http.StatusOK, cl)
	}
}

// ackOK acknowledges any ack.
func ackOK(_ int, _ *http.Request, body []byte) reply {
	var req gate.AckRequest
	json.Unmarshal(body, &req)
	return jsonReply(http.StatusOK, gate.Ack{SessionID: req.SessionID, ActionID: req.ActionID, AcknowledgedAt: t0})
}

func problem(status int, reason gate.Reason) handler {
	return func(int, *http.Request, []byte) reply {
		p := map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": "scripted"}
		if reason != "" {
			p["reason"] = reason
		}
		r := jsonReply(status, p)
		r.header = http.Header{"Content-Type": {"application/problem+json"}}
		return r
	}
}

func raw(status int, body string) handler {
	return func(int, *http.Request, []byte) reply { return reply{status: status, body: body} }
}

// hang answers only when the client gives up.
func hang(_ int, r *http.Request, _ []byte) reply {
	<-r.Context().Done()
	return reply{status: http.StatusServiceUnavailable}
}

var _ = context.Background
