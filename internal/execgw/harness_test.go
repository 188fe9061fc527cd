package execgw_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/secret"
)

// fakeTokens reads test tokens of the form "t|<tenant>|<user>|<scopes,…>"
// (user may be empty) and mints "run:<n>" tokens, remembering their claims.
type fakeTokens struct {
	mu     sync.Mutex
	minted []identity.Claims
	algs   []string // of each token minted: "" for the server's
}

func (f *fakeTokens) parse(tok string) (*identity.Claims, error) {
	parts := strings.Split(tok, "|")
	if len(parts) != 4 || parts[0] != "t" {
		return nil, fmt.Errorf("%w: not a test token", identity.ErrInvalid)
	}
	c := &identity.Claims{TenantID: parts[1], UserID: parts[2], Subject: "sub-" + parts[2]}
	if parts[3] != "" {
		c.Scopes = strings.Split(parts[3], ",")
	}
	return c, nil
}

func (f *fakeTokens) Authenticator() httpapi.Authenticator {
	return httpapi.AuthenticatorFunc(func(r *http.Request) (*httpapi.Caller, error) {
		tok, ok := httpapi.BearerToken(r)
		if !ok {
			return nil, httpapi.ErrUnauthenticated
		}
		c, err := f.parse(tok)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", httpapi.ErrUnauthenticated, err)
		}
		return &httpapi.Caller{Scheme: "execution-token", Subject: c.Subject, Claims: c}, nil
	})
}

func (f *fakeTokens) Verify(_ context.Context, tok string) (*identity.Claims, error) {
	return f.parse(tok)
}

func (f *fakeTokens) Mint(ctx context.Context, c identity.Claims, ttl time.Duration) (string, error) {
	return f.MintAs(ctx, "", c, ttl)
}

func (f *fakeTokens) MintAs(_ context.Context, alg string, c identity.Claims, _ time.Duration) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.minted = append(f.minted, c)
	f.algs = append(f.algs, alg)
	return fmt.Sprintf("run:%d", len(f.minted)), nil
}

// hostedAgents serves test agents by name.
type hostedAgents map[string]http.Handler

func (h hostedAgents) AgentHandler(name string) (http.Handler, bool) {
	a, ok := h[name]
	return a, ok
}

// Test tokens.
const (
	adminTok   = "admin-secret"
	userTok    = "t|acme|alice|runs:*,instances:*"
	bobTok     = "t|acme|bob|runs:*,instances:*"
	serviceTok = "t|acme||runs:*,runs:service,instances:*"
	otherTok   = "t|globex|carol|runs:*,instances:*"
)

// env is a gateway on a memory store behind a test server.
type env struct {
	t      *testing.T
	svc    *execgw.Service
	srv    *httptest.Server
	store  gateway.Store
	tokens *fakeTokens
	wrap   func(http.Handler) http.Handler // in front of the routes, when set
}

func newEnv(t *testing.T, agents hostedAgents, o *execgw.Options) *env {
	t.Helper()
	return newEnvOn(t, gateway.NewMemoryStore(), agents, o)
}

// newEnvOn is newEnv on the store st.
func newEnvOn(t *testing.T, st gateway.Store, agents hostedAgents, o *execgw.Options) *env {
	t.Helper()
	return newEnvWith(t, st, agents, o, nil, nil)
}

// newEnvWith is newEnvOn with deps changed by with, and the routes behind
// wrap, when they are set.
func newEnvWith(t *testing.T, st gateway.Store, agents hostedAgents, o *execgw.Options, with func(*execgw.Deps), wrap func(http.Handler) http.Handler) *env {
	t.Helper()
	e := &env{t: t, store: st, tokens: &fakeTokens{}, wrap: wrap}
	opts := execgw.Options{}
	if o != nil {
		opts = *o
	}
	if opts.SweepEvery == 0 {
		opts.SweepEvery = 20 * time.Millisecond
	}
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = time.Millisecond
	}
	deps := execgw.Deps{AdminToken: secret.New(adminTok), Tokens: e.tokens, Hosted: agents, BaseURL: "http://gateway.test"}
	if with != nil {
		with(&deps)
	}
	e.svc = execgw.New(st, deps, &opts)
	e.serve()
	return e
}

// serve starts e.svc behind a test server, stopped at the test's end.
func (e *env) serve() {
	t := e.t
	mux := http.NewServeMux()
	for _, r := range e.svc.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	var h http.Handler = mux
	if e.wrap != nil {
		h = e.wrap(mux)
	}
	e.srv = httptest.NewServer(h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.svc.Run(ctx); close(done) }()
	t.Cleanup(func() {
		_ = e.svc.Shutdown(context.Background())
		e.srv.Close()
		cancel()
		<-done
	})
}

// do sends a JSON request with token and decodes a JSON answer into out
// (when not nil), returning the status.
func (e *env) do(method, path, token string, body, out any) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			e.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

// install installs a hosted agent as an instance and returns its id.
func (e *env) install(name, hosted string, extra map[string]any) string {
	e.t.Helper()
	body := map[string]any{"name": name, "hosted": hosted}
	for k, v := range extra {
		body[k] = v
	}
	var inst gateway.Instance
	if st := e.do("POST", gateway.InstancesPath, userTok, body, &inst); st != http.StatusCreated {
		e.t.Fatalf("install %s: status %d", name, st)
	}
	return inst.ID
}

// execute starts a run and returns its id.
func (e *env) execute(token string, req gateway.ExecuteRequest) string {
	e.t.Helper()
	var res gateway.ExecuteResult
	if st := e.do("POST", gateway.ExecutePath, token, req, &res); st != http.StatusAccepted {
		e.t.Fatalf("execute: status %d", st)
	}
	if res.RunID == "" || res.Status != gateway.StatusQueued || res.EventsURL != gateway.EventsPath+res.RunID {
		e.t.Fatalf("execute answered %+v", res)
	}
	return res.RunID
}

// sseEvent is one frame read off the wire.
type sseEvent struct {
	ID    string
	Event string
	Frame gateway.Frame
}

// events reads a run's event stream from after lastID until it closes
// (or stop says to stop), the way a raw SSE client would.
func (e *env) events(token, runID, lastID string, stop func(sseEvent) bool) []sseEvent {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+gateway.EventsPath+runID, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		raw, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("events: %d %s", resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		e.t.Fatalf("events Content-Type %q", ct)
	}
	var out []sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != "" {
				out = append(out, cur)
				if stop != nil && stop(cur) {
					return out
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Frame); err != nil {
				e.t.Fatalf("frame %q: %v", line, err)
			}
		}
	}
	return out
}

// waitStatus polls the run until it has status want (a bound on a
// failure, not a timing assumption).
func (e *env) waitStatus(runID string, want gateway.Status) gateway.Run {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := e.store.GetRun(context.Background(), "", runID)
		if err != nil {
			e.t.Fatal(err)
		}
		if r.Status == want {
			return r
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %s is %s (%s), want %s", runID, r.Status, r.Reason, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// types lists the events' types, a status event as "status:<STATUS>".
func types(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		t := e.Frame.Type
		if t == gateway.EventStatus {
			var p map[string]any
			_ = json.Unmarshal(e.Frame.Payload, &p)
			if st, ok := p["status"].(string); ok {
				t += ":" + st
			} else {
				t += ":progress"
			}
		}
		out = append(out, t)
	}
	return out
}

// sdkAgent serves an agent built with the agent SDK in process.
func sdkAgent(t *testing.T, a *agent.Agent) http.Handler {
	t.Helper()
	return a.Handler("http://gateway.test/agents/"+a.Name(), nil)
}

// script is a hand-written A2A agent whose every SendStreamingMessage is
// answered by the next step of a script, so tests can drop streams, fail
// and pause exactly where they want.
type script struct {
	// refuse, when set, answers every call with this A2A error.
	refuse *a2a.Error
	mu     sync.Mutex
	calls  []*a2a.SendMessageRequest
	// seen, when set, hears the method of each call that is not
	// SendStreamingMessage.
	seen  chan string
	steps []func(req *a2a.SendMessageRequest, w *frameWriter)
}

// frameWriter writes stream frames of one call.
type frameWriter struct {
	ctx   context.Context // the call's: done when the gateway hangs up
	w     http.ResponseWriter
	id    json.RawMessage
	task  string
	ctxID string
}

func (f *frameWriter) send(r *a2a.StreamResponse) {
	res, err := a2a.AppendStreamResponse(nil, r)
	if err != nil {
		panic(err)
	}
	body := a2a.AppendResult(nil, f.id, res)
	f.w.Write(a2a.AppendEvent(nil, a2a.Event{Data: body}))
	f.w.(http.Flusher).Flush()
}

func (f *frameWriter) status(state a2a.TaskState, msg *a2a.Message) {
	f.send(&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: f.task, ContextID: f.ctxID,
		Status: a2a.TaskStatus{State: state, Message: msg}}})
}

func (f *frameWriter) text(artifact, text string, appendChunk bool) {
	f.send(&a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: f.task, ContextID: f.ctxID,
		Artifact: a2a.Artifact{ArtifactID: artifact, Parts: []a2a.Part{a2a.TextPart(text)}}, Append: appendChunk}})
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, rpcErr := a2a.DecodeRequest(body)
	if rpcErr != nil {
		http.Error(w, rpcErr.Error(), 400)
		return
	}
	if s.refuse != nil {
		w.Header().Set("Content-Type", "application/json")
		w.Write(a2a.AppendErrorResponse(nil, req.ID, s.refuse))
		s.mu.Lock()
		s.calls = append(s.calls, nil)
		s.mu.Unlock()
		return
	}
	if req.Method != a2a.MethodSendStreamingMessage {
		if s.seen != nil {
			s.seen <- req.Method
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(a2a.AppendErrorResponse(nil, req.ID, a2a.ErrTaskNotFound))
		return
	}
	var params a2a.SendMessageRequest
	if e := a2a.DecodeParams(req.Params, &params); e != nil {
		w.Header().Set("Content-Type", "application/json")
		w.Write(a2a.AppendErrorResponse(nil, req.ID, e))
		return
	}
	s.mu.Lock()
	n := len(s.calls)
	s.calls = append(s.calls, &params)
	var step func(*a2a.SendMessageRequest, *frameWriter)
	if n < len(s.steps) {
		step = s.steps[n]
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	task := params.Message.TaskID
	if task == "" {
		task = "task-1"
	}
	fw := &frameWriter{ctx: r.Context(), w: w, id: req.ID, task: task, ctxID: "ctx-1"}
	if step == nil {
		fw.status(a2a.TaskStateFailed, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("no step left")))
		return
	}
	step(&params, fw)
}

func (s *script) call(i int) *a2a.SendMessageRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[i]
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// platform reads the platform context of a call.
func platform(t *testing.T, req *a2a.SendMessageRequest) agent.PlatformContext {
	t.Helper()
	pc, ok := agent.ParsePlatformContext(req.Metadata)
	if !ok {
		t.Fatalf("no platform context in %v", req.Metadata)
	}
	return pc
}
