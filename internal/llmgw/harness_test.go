package llmgw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/sealkey"
	"novaos.dev/novaos/llm"
)

// fakeProvider is an OpenAI-compatible provider in the test: chat
// completions (answered, or streamed piece by piece with a usage chunk
// when asked), embeddings, and answers it can be told to fail with.
type fakeProvider struct {
	t   testing.TB
	srv *httptest.Server

	mu     sync.Mutex
	status int // answer every call with this status instead (0: answer)
	// hold, when set, holds a stream after its first chunk until closed;
	// held is told when it is.
	hold, held chan struct{}
	// breakAfterFirst cuts the connection after a stream's first chunk.
	breakAfterFirst bool
	noUsage         bool
	pieces          []string
	calls           []fakeCall
	noRecord        bool // keep no calls (a benchmark's)
}

// fakeCall is a request the provider received.
type fakeCall struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

const (
	fakePrompt, fakeCompletion = 11, 7
	fakeEmbedTokens            = 5
)

func newFakeProvider(t testing.TB) *fakeProvider {
	p := &fakeProvider{t: t, pieces: []string{"Hel", "lo", "!"}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeProvider) URL() string { return p.srv.URL + "/v1" }

func (p *fakeProvider) set(f func(p *fakeProvider)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *fakeProvider) recorded() []fakeCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]fakeCall(nil), p.calls...)
}

func (p *fakeProvider) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	data, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(data, &body)
	p.mu.Lock()
	if !p.noRecord {
		p.calls = append(p.calls, fakeCall{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	}
	status, hold, held, breakOff, noUsage, pieces := p.status, p.hold, p.held, p.breakAfterFirst, p.noUsage, p.pieces
	p.mu.Unlock()
	if status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"fake provider says %d","type":"fake","param":null,"code":"fake_%d"}}`, status, status)
		return
	}
	model, _ := body["model"].(string)
	usage := map[string]any{"prompt_tokens": fakePrompt, "completion_tokens": fakeCompletion, "total_tokens": fakePrompt + fakeCompletion}
	switch r.URL.Path {
	case "/v1/embeddings":
		out := map[string]any{"object": "list", "model": model,
			"data":  []any{map[string]any{"object": "embedding", "index": 0, "embedding": []float64{0.25, -0.5, 1}}},
			"usage": map[string]any{"prompt_tokens": fakeEmbedTokens, "total_tokens": fakeEmbedTokens}}
		writeJSON(w, http.StatusOK, out)
	case "/v1/chat/completions":
		if stream, _ := body["stream"].(bool); !stream {
			out := map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
				"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
					"message": map[string]any{"role": "assistant", "content": strings.Join(pieces, "")}}}}
			if !noUsage {
				out["usage"] = usage
			}
			writeJSON(w, http.StatusOK, out)
			return
		}
		so, _ := body["stream_options"].(map[string]any)
		withUsage, _ := so["include_usage"].(bool)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		send := func(v any) {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		for i, piece := range pieces {
			chunk := map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece}, "finish_reason": nil}}}
			if withUsage {
				chunk["usage"] = nil
			}
			send(chunk)
			if i == 0 && breakOff {
				panic(http.ErrAbortHandler)
			}
			if i == 0 && hold != nil {
				if held != nil {
					close(held)
				}
				select {
				case <-hold:
				case <-r.Context().Done():
					return
				}
			}
		}
		send(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
		if withUsage && !noUsage {
			send(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
				"choices": []any{}, "usage": usage})
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	default:
		http.NotFound(w, r)
	}
}

// recordingRuns keeps the events the gateway shows in runs.
type recordingRuns struct {
	mu     sync.Mutex
	events map[string][]gateway.Event
}

func (r *recordingRuns) AppendEvents(_ context.Context, tenant, runID string, events ...gateway.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[tenant+"/"+runID] = append(r.events[tenant+"/"+runID], events...)
	return nil
}

func (r *recordingRuns) of(tenant, run string) []gateway.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]gateway.Event(nil), r.events[tenant+"/"+run]...)
}

// harness is a gateway over a memory store, served over HTTP on
// loopback, with the platform's token issuer and sealer.
type harness struct {
	t      testing.TB
	issuer *auth.Issuer
	svc    *Service
	srv    *httptest.Server
	store  llm.Store
	runs   *recordingRuns
}

// testDay is the harness's day: its clock stands still in it.
var testNow = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

func newHarness(t testing.TB, o *Options, deps Deps) *harness {
	t.Helper()
	iss, err := auth.Open("", auth.Options{Issuer: "http://novaos.test"})
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := sealkey.Open(filepath.Join(t.TempDir(), "seal.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	opts.AllowPrivate = true
	if opts.Now == nil {
		opts.Now = func() time.Time { return testNow }
	}
	h := &harness{t: t, issuer: iss, store: deps.Store, runs: &recordingRuns{events: map[string][]gateway.Event{}}}
	if h.store == nil {
		h.store = llm.NewMemoryStore()
	}
	deps.Store, deps.Tokens, deps.Sealer = h.store, iss, sealer
	if deps.Runs == nil {
		deps.Runs = h.runs
	}
	h.svc = New(deps, &opts)
	mux := http.NewServeMux()
	for _, r := range h.svc.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() { _ = h.svc.Shutdown(context.Background()) })
	return h
}

// claims are acme's agent in instance inst-1 and run run-1, with scopes.
func claims(scopes ...string) identity.Claims {
	return identity.Claims{TenantID: "acme", AgentID: "bot", InstanceID: "inst-1", RunID: "run-1", Scopes: scopes}
}

func (h *harness) token(c identity.Claims) string {
	h.t.Helper()
	tok, err := h.issuer.Mint(context.Background(), c, time.Hour)
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

// do sends a request with tok as the bearer token ("" none) and body as
// JSON (a []byte or string as it is), and returns the answer read whole.
func (h *harness) do(method, path, tok string, body any, header ...string) (*http.Response, []byte) {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, data
}

// admin sends an operator's request (a loopback peer, no admin token
// configured) and fails the test unless it answers want.
func (h *harness) admin(method, path string, body any, want int, header ...string) []byte {
	h.t.Helper()
	resp, data := h.do(method, path, "", body, header...)
	if resp.StatusCode != want {
		h.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, data, want)
	}
	return data
}

// provider registers a platform provider at url with key.
func (h *harness) provider(name, url, key string) {
	h.t.Helper()
	req := llm.ProviderRequest{BaseURL: url}
	if key != "" {
		req.APIKey = &key
	}
	h.admin(http.MethodPut, llm.ProvidersPath+"/"+name, req, http.StatusCreated)
}

// route registers a platform model route to targets, priced $2 and $8
// per million input and output tokens.
func (h *harness) route(model string, targets ...llm.Target) {
	h.t.Helper()
	h.admin(http.MethodPut, llm.ModelsPath+"/"+model, llm.RouteRequest{Targets: targets, InputUSDPerMillion: 2, OutputUSDPerMillion: 8},
		http.StatusCreated)
}

// chatBody is a small chat request for model.
func chatBody(model string, extra ...any) map[string]any {
	b := map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": "Say hello."}}}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

// apiErr decodes an OpenAI-shaped error answer.
func apiErr(t testing.TB, data []byte) errorDetail {
	t.Helper()
	var b struct {
		Error *errorDetail `json:"error"`
	}
	if err := json.Unmarshal(data, &b); err != nil || b.Error == nil {
		t.Fatalf("not an OpenAI-shaped error: %s", data)
	}
	return *b.Error
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
