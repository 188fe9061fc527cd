package llmgw

import (
	"bytes"
	"context"
	"encoding/json"
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
	"novaos.dev/novaos/llm/llmtest"
)

// The usage llmtest reports for a chatBody call (a token a word; the
// answer echoes the prompt, "Say hello.") and for one embedded word.
const (
	chatPrompt, chatCompletion = 2, 2
	chatAnswer                 = "Say hello."
	embedTokens                = 1
)

// newProvider starts an llmtest provider serving models (llmtest's own
// when none are named).
func newProvider(t testing.TB, models ...string) *llmtest.Server {
	t.Helper()
	return newProviderWith(t, &llmtest.Options{Models: models})
}

func newProviderWith(t testing.TB, o *llmtest.Options) *llmtest.Server {
	t.Helper()
	p := llmtest.NewServer(o)
	t.Cleanup(p.Close)
	return p
}

// providerCalls counts the calls that reached p.
func providerCalls(p *llmtest.Server) int {
	return p.Calls(llmtest.PathChatCompletions) + p.Calls(llmtest.PathEmbeddings) + p.Calls(llmtest.PathModels)
}

// lastBody decodes the body of the last request p received.
func lastBody(t testing.TB, p *llmtest.Server) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(p.LastRequest().Body, &m); err != nil {
		t.Fatalf("the provider's last request: %v", err)
	}
	return m
}

// recordingRuns keeps the events the gateway shows in runs.
type recordingRuns struct {
	mu      sync.Mutex
	events  map[string][]gateway.Event
	appends int
	// hold, when set, is received from before an append is recorded;
	// holding says one waits there.
	hold, holding chan struct{}
}

func (r *recordingRuns) AppendEvents(_ context.Context, tenant, runID string, events ...gateway.Event) error {
	r.mu.Lock()
	hold, holding := r.hold, r.holding
	r.hold = nil
	r.mu.Unlock()
	if hold != nil {
		close(holding)
		<-hold
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.appends++
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

// sync writes what the gateway holds in memory to the store, so that a
// test reads it there.
func (h *harness) sync() {
	h.t.Helper()
	if err := h.svc.ledger.flush(context.Background(), false); err != nil {
		h.t.Fatal(err)
	}
	h.svc.events.flush(context.Background())
}

// runEvents are the events the gateway showed in tenant's run, once it
// wrote what it holds.
func (h *harness) runEvents(tenant, run string) []gateway.Event {
	h.t.Helper()
	h.sync()
	return h.runs.of(tenant, run)
}

// run runs the gateway's background work until the test ends.
func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.svc.Run(ctx)
	}()
	h.t.Cleanup(func() {
		cancel()
		<-done
	})
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
func apiErr(t testing.TB, status int, data []byte) *llm.APIError {
	t.Helper()
	var b struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &b); err != nil || b.Error == nil || b.Error.Message == "" {
		t.Fatalf("not an OpenAI-shaped error: %s", data)
	}
	return llm.ParseError(status, data)
}
