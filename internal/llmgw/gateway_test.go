package llmgw

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
)

// A chat answer passes through; the provider is asked for its model with
// the provider's key, never the caller's token; the call is settled from
// the provider's usage and shown in its run.
func TestChat(t *testing.T) {
	h := newHarness(t, nil, Deps{})
	p := newProvider(t, "gpt-4o-2024-08-06")
	h.provider("openai", p.BaseURL(), "sk-provider-key")
	h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o-2024-08-06"})
	tok := h.token(claims("llm:model:gpt-4o"))
	resp, data := h.do(http.MethodPost, ChatPath, tok, chatBody("gpt-4o", "max_tokens", 100),
		"X-NovaOS-Tenant-ID", "someone-else")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	var got struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(data, &got); err != nil || len(got.Choices) != 1 || got.Choices[0].Message.Content != chatAnswer ||
		got.Usage.PromptTokens != chatPrompt {
		t.Fatalf("answer %s (%v)", data, err)
	}
	if n := providerCalls(p); n != 1 {
		t.Fatalf("provider calls %d, want 1", n)
	}
	c := p.LastRequest()
	body := lastBody(t, p)
	if body["model"] != "gpt-4o-2024-08-06" || c.Header.Get("Authorization") != "Bearer sk-provider-key" {
		t.Errorf("provider got model %v, Authorization %q", body["model"], c.Header.Get("Authorization"))
	}
	if c.Header.Get("X-Novaos-Tenant-Id") != "" || strings.Contains(c.Header.Get("Authorization"), tok) {
		t.Error("the caller's headers or token reached the provider")
	}
	if body["max_tokens"] != float64(100) {
		t.Errorf("the caller's fields were not passed on: %v", body)
	}
	// Settled from the provider's numbers: 2 in at $2/M, 2 out at $8/M.
	h.sync()
	k := llm.Keys{TenantID: "acme", InstanceID: "inst-1", RunID: "run-1", Day: llm.DayOf(testNow)}
	sp, err := h.store.Spent(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	wantCost := llm.Price(chatPrompt, 2) + llm.Price(chatCompletion, 8)
	want := llm.Amount{Tokens: chatPrompt + chatCompletion, Cost: wantCost}
	if sp.Used != (llm.Counts{TenantDay: want, InstanceDay: want, Run: want}) {
		t.Errorf("counters %+v, want %+v each", sp, want)
	}
	rows, _ := h.store.Usage(t.Context(), llm.UsageQuery{TenantID: "acme"})
	if len(rows) != 1 || rows[0].Calls != 1 || rows[0].Input != chatPrompt || rows[0].Output != chatCompletion || rows[0].Provider != "openai" {
		t.Errorf("usage %+v", rows)
	}
	evs := h.runEvents("acme", "run-1")
	if len(evs) != 1 || evs[0].Type != llm.EventCall {
		t.Fatalf("run events %+v, want one %s", evs, llm.EventCall)
	}
	var ev llm.CallEvent
	if err := json.Unmarshal(evs[0].Payload, &ev); err != nil {
		t.Fatal(err)
	}
	ev.DurationMS = 0
	wantEv := llm.CallEvent{Operation: "chat", Model: "gpt-4o", Provider: "openai", Upstream: "gpt-4o-2024-08-06",
		InputTokens: chatPrompt, OutputTokens: chatCompletion, CostUSD: wantCost.USD(), Attempts: 1, Outcome: "ok"}
	if d := gocmp.Diff(wantEv, ev); d != "" {
		t.Errorf("llm.call event (-want +got):\n%s", d)
	}
	if strings.Contains(string(evs[0].Payload), "hello") {
		t.Error("the run event holds the prompt or the answer")
	}
}

// A stream is passed on chunk by chunk: with the provider holding its
// stream after the first chunk, the caller has that chunk. The usage
// chunk the gateway asked for is dropped unless the caller asked too.
func TestStreamPassesChunksAsTheyCome(t *testing.T) {
	for _, asked := range []bool{false, true} {
		t.Run(map[bool]string{false: "usage not asked", true: "usage asked"}[asked], func(t *testing.T) {
			h := newHarness(t, nil, Deps{})
			p := newProvider(t)
			hold := p.HoldNextStream()
			h.provider("openai", p.BaseURL(), "")
			h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
			body := chatBody("gpt-4o", "stream", true)
			if asked {
				body["stream_options"] = map[string]any{"include_usage": true}
			}
			data, _ := json.Marshal(body)
			req, _ := http.NewRequest(http.MethodPost, h.srv.URL+ChatPath, strings.NewReader(string(data)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+h.token(claims("llm:model:*")))
			resp, err := h.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			rd := llm.NewEventReader(resp.Body, 1<<20)
			first, err := rd.Next()
			if err != nil {
				t.Fatal(err)
			}
			// The provider holds the rest until released: the chunk came
			// through alone.
			<-hold.Held()
			if !strings.Contains(string(first.Data), `"Say "`) {
				t.Fatalf("first event %s", first.Data)
			}
			hold.Release()
			var events []string
			for {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				events = append(events, string(ev.Data))
			}
			if len(events) == 0 || events[len(events)-1] != "[DONE]" {
				t.Fatalf("events %q, want them to end in [DONE]", events)
			}
			usageChunks := 0
			for _, ev := range events {
				if strings.Contains(ev, `"prompt_tokens"`) {
					usageChunks++
				}
			}
			if want := map[bool]int{false: 0, true: 1}[asked]; usageChunks != want {
				t.Errorf("%d usage chunks reached the caller, want %d: %q", usageChunks, want, events)
			}
			if lastBody(t, p)["stream_options"].(map[string]any)["include_usage"] != true {
				t.Error("the gateway did not ask the provider for the stream's usage")
			}
			h.sync()
			sp, _ := h.store.Spent(t.Context(), llm.Keys{TenantID: "acme", Day: llm.DayOf(testNow)})
			if sp.Used.TenantDay.Tokens != chatPrompt+chatCompletion {
				t.Errorf("settled %d tokens, want the provider's %d", sp.Used.TenantDay.Tokens, chatPrompt+chatCompletion)
			}
		})
	}
}

// A provider that reports no usage is counted at the call's estimate,
// and the run event says so.
func TestNoUsageCountsTheEstimate(t *testing.T) {
	h := newHarness(t, &Options{DefaultMaxTokens: 50}, Deps{})
	p := newProviderWith(t, &llmtest.Options{Models: []string{"llama3.1:8b"}, NoUsage: true})
	h.provider("local", p.BaseURL(), "")
	h.route("llama3.1:8b", llm.Target{Provider: "local", Model: "llama3.1:8b"})
	body := chatBody("llama3.1:8b")
	resp, data := h.do(http.MethodPost, ChatPath, h.token(claims("llm:model:llama3.1:8b")), body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	var ev llm.CallEvent
	_ = json.Unmarshal(h.runEvents("acme", "run-1")[0].Payload, &ev)
	raw, _ := json.Marshal(body)
	if !ev.Estimated || ev.OutputTokens != 50 || ev.InputTokens != int64(len(raw))/4+1 {
		t.Errorf("event %+v, want the estimate: %d in, 50 out", ev, len(raw)/4+1)
	}
}

// Bad requests get OpenAI-shaped errors with their statuses, and reach
// no provider.
func TestBadRequests(t *testing.T) {
	h := newHarness(t, &Options{MaxBodyBytes: 4096}, Deps{})
	p := newProvider(t)
	h.provider("openai", p.BaseURL(), "")
	h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
	good := h.token(claims("llm:model:gpt-4o"))
	expired := h.token(identity.Claims{TenantID: "acme", Scopes: []string{"llm:model:*"}})
	long := strings.Repeat("k", llm.MaxKeyBytes+1)
	unkeyed := func(change func(c *identity.Claims)) identity.Claims {
		c := claims("llm:model:*")
		change(&c)
		return c
	}
	tests := []struct {
		name, method, tok string
		body              any
		header            []string
		status            int
		typ, code, param  string
	}{
		{"no token", "POST", "", chatBody("gpt-4o"), nil, 401, llm.TypeInvalidRequest, llm.CodeInvalidAPIKey, ""},
		{"bad token", "POST", "sk-not-a-token", chatBody("gpt-4o"), nil, 401, llm.TypeInvalidRequest, llm.CodeInvalidAPIKey, ""},
		{"tampered token", "POST", expired[:len(expired)-4] + "AAAA", chatBody("gpt-4o"), nil, 401, llm.TypeInvalidRequest, llm.CodeInvalidAPIKey, ""},
		// A verified token whose ids no budget counter can be kept under.
		{"a token's tenant past the key limit", "POST", h.token(unkeyed(func(c *identity.Claims) { c.TenantID = long })), chatBody("gpt-4o"), nil,
			401, llm.TypeInvalidRequest, llm.CodeInvalidAPIKey, ""},
		{"a token's instance past the key limit", "POST", h.token(unkeyed(func(c *identity.Claims) { c.InstanceID = long })), chatBody("gpt-4o"), nil,
			401, llm.TypeInvalidRequest, llm.CodeInvalidAPIKey, ""},
		{"a token's run past the key limit", "POST", h.token(unkeyed(func(c *identity.Claims) { c.RunID = long })), chatBody("gpt-4o"), nil,
			401, llm.TypeInvalidRequest, llm.CodeInvalidAPIKey, ""},
		{"not json type", "POST", good, "x", []string{"Content-Type", "text/plain"}, 415, llm.TypeInvalidRequest, llm.CodeUnsupportedMediaType, ""},
		{"too large", "POST", good, chatBody("gpt-4o", "pad", strings.Repeat("x", 5000)), nil, 413, llm.TypeInvalidRequest, llm.CodeRequestTooLarge, ""},
		{"malformed", "POST", good, `{"model":`, nil, 400, llm.TypeInvalidRequest, llm.CodeInvalidJSON, ""},
		{"array body", "POST", good, `[1]`, nil, 400, llm.TypeInvalidRequest, llm.CodeInvalidJSON, ""},
		{"duplicate key", "POST", good, `{"model":"gpt-4o","model":"x","messages":[{}]}`, nil, 400, llm.TypeInvalidRequest, llm.CodeInvalidJSON, ""},
		{"no model", "POST", good, `{"messages":[{"role":"user","content":"x"}]}`, nil, 400, llm.TypeInvalidRequest, llm.CodeMissingParameter, "model"},
		{"model not string", "POST", good, `{"model":4,"messages":[{}]}`, nil, 400, llm.TypeInvalidRequest, llm.CodeInvalidValue, "model"},
		{"no messages", "POST", good, `{"model":"gpt-4o"}`, nil, 400, llm.TypeInvalidRequest, llm.CodeMissingParameter, "messages"},
		{"empty messages", "POST", good, `{"model":"gpt-4o","messages":[ ]}`, nil, 400, llm.TypeInvalidRequest, llm.CodeInvalidValue, "messages"},
		{"messages object", "POST", good, `{"model":"gpt-4o","messages":{}}`, nil, 400, llm.TypeInvalidRequest, llm.CodeInvalidValue, "messages"},
		{"max_tokens zero", "POST", good, chatBody("gpt-4o", "max_tokens", 0), nil, 400, llm.TypeInvalidRequest, llm.CodeInvalidValue, "max_tokens"},
		{"max_tokens fraction", "POST", good, chatBody("gpt-4o", "max_completion_tokens", 1.5), nil, 400, llm.TypeInvalidRequest, llm.CodeInvalidValue, "max_completion_tokens"},
		{"n too many", "POST", good, chatBody("gpt-4o", "n", 1000), nil, 400, llm.TypeInvalidRequest, llm.CodeInvalidValue, "n"},
		{"stream not bool", "POST", good, chatBody("gpt-4o", "stream", "yes"), nil, 400, llm.TypeInvalidRequest, llm.CodeInvalidValue, "stream"},
		{"stream_options alone", "POST", good, chatBody("gpt-4o", "stream_options", map[string]any{"include_usage": true}), nil, 400, llm.TypeInvalidRequest, llm.CodeInvalidValue, "stream_options"},
		{"unknown model", "POST", h.token(claims("llm:model:*")), chatBody("gpt-5"), nil, 404, llm.TypeInvalidRequest, llm.CodeModelNotFound, "model"},
		{"invalid model name", "POST", good, chatBody("meta/llama"), nil, 404, llm.TypeInvalidRequest, llm.CodeModelNotFound, "model"},
		{"model outside scopes", "POST", h.token(claims("llm:model:gpt-4o-mini")), chatBody("gpt-4o"), nil, 403, llm.TypePermission, llm.CodeModelNotAllowed, "model"},
		{"no llm scope", "POST", h.token(claims("mcp:tools:*")), chatBody("gpt-4o"), nil, 403, llm.TypePermission, llm.CodeModelNotAllowed, "model"},
		{"embeddings without input", "POST", good, `{"model":"gpt-4o"}`, nil, 400, llm.TypeInvalidRequest, llm.CodeMissingParameter, "input"},
		{"GET on chat", "GET", good, nil, nil, 405, llm.TypeInvalidRequest, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := ChatPath
			if strings.HasPrefix(tc.name, "embeddings") {
				path = EmbeddingsPath
			}
			resp, data := h.do(tc.method, path, tc.tok, tc.body, tc.header...)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, data)
			}
			e := apiErr(t, resp.StatusCode, data)
			if e.Type != tc.typ || e.Code != tc.code || e.Param != tc.param {
				t.Errorf("error %+v, want type %q code %q param %q", e, tc.typ, tc.code, tc.param)
			}
			if tc.tok != "" && strings.Contains(string(data), tc.tok) {
				t.Error("the answer repeats the token")
			}
		})
	}
	if n := providerCalls(p); n != 0 {
		t.Errorf("the provider was called %d times", n)
	}
}

// Each budget refuses the call that would overspend it with a 429
// naming it; the provider is not called.
func TestBudgets(t *testing.T) {
	type budget struct {
		path string
		req  llm.BudgetRequest
	}
	tests := []struct {
		name    string
		budgets []budget
		// before are calls that succeed first.
		before int
		want   string
	}{
		{"tenant daily tokens", []budget{{"acme", llm.BudgetRequest{DailyTokens: 100}}}, 0, "the tenant's daily token budget"},
		{"tenant daily cost", []budget{{"acme", llm.BudgetRequest{DailyCostUSD: 0.0005}}}, 0, "the tenant's daily cost budget"},
		{"instance daily tokens", []budget{{"acme/instances/inst-1", llm.BudgetRequest{DailyTokens: 100}}}, 0, "the agent instance's daily token budget"},
		{"instance per-run cost", []budget{{"acme/instances/inst-1", llm.BudgetRequest{RunCostUSD: 0.000001}}}, 0, "the agent instance's per-run cost budget"},
		{"tenant per-run tokens after a call", []budget{{"acme", llm.BudgetRequest{RunTokens: 125}}}, 1, "the tenant's per-run token budget"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, Deps{})
			p := newProvider(t)
			h.provider("openai", p.BaseURL(), "")
			h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
			for _, b := range tc.budgets {
				h.admin(http.MethodPut, llm.BudgetsPath+"/"+b.path, b.req, http.StatusCreated)
			}
			tok := h.token(claims("llm:model:*"))
			// 100 output tokens and a small prompt: some 122 tokens, costing
			// some $0.00085.
			body := chatBody("gpt-4o", "max_tokens", 100)
			for range tc.before {
				if resp, data := h.do(http.MethodPost, ChatPath, tok, body); resp.StatusCode != http.StatusOK {
					t.Fatalf("a call within the budget: %d %s", resp.StatusCode, data)
				}
			}
			calls := providerCalls(p)
			resp, data := h.do(http.MethodPost, ChatPath, tok, body)
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429: %s", resp.StatusCode, data)
			}
			e := apiErr(t, resp.StatusCode, data)
			if e.Type != llm.TypeInsufficientQuota || !e.BudgetExceeded() || !strings.Contains(strings.ToLower(e.Message), tc.want) {
				t.Errorf("error %+v, want insufficient_quota/budget_exceeded naming %q", e, tc.want)
			}
			if strings.Contains(string(data), tok) {
				t.Error("the refusal repeats the token")
			}
			if providerCalls(p) != calls {
				t.Error("a refused call reached the provider")
			}
		})
	}
}

// A call goes to the next target when one is rate-limited, fails or
// cannot be reached before anything was sent; once the stream began, it
// ends with the target that began it.
func TestFallback(t *testing.T) {
	down := newProvider(t)
	down.Close() // connection refused
	tests := []struct {
		name     string
		first    func(p *llmtest.Server)
		stream   bool
		status   int
		second   int // calls the second target gets
		attempts int
	}{
		{"429", func(p *llmtest.Server) { p.FailNext(1, 429) }, false, 200, 1, 2},
		{"503", func(p *llmtest.Server) { p.FailNext(1, 503) }, true, 200, 1, 2},
		{"500 streamed", func(p *llmtest.Server) { p.FailNext(1, 500) }, true, 200, 1, 2},
		{"401 from the provider", func(p *llmtest.Server) { p.FailNext(1, 401) }, false, 200, 1, 2},
		{"400 is the caller's", func(p *llmtest.Server) { p.FailNext(1, 400) }, false, 400, 0, 1},
		{"broken after the first chunk", func(p *llmtest.Server) { p.CutNextStream() }, true, 200, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, Deps{})
			a, b := newProvider(t, "m-a"), newProvider(t, "m-b")
			tc.first(a)
			h.provider("a", a.BaseURL(), "")
			h.provider("b", b.BaseURL(), "")
			h.route("m", llm.Target{Provider: "a", Model: "m-a"}, llm.Target{Provider: "b", Model: "m-b"})
			resp, data := h.do(http.MethodPost, ChatPath, h.token(claims("llm:model:m")), chatBody("m", "stream", tc.stream))
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, data)
			}
			if got := providerCalls(b); got != tc.second {
				t.Errorf("second target called %d times, want %d", got, tc.second)
			}
			var ev llm.CallEvent
			_ = json.Unmarshal(h.runEvents("acme", "run-1")[0].Payload, &ev)
			if ev.Attempts != tc.attempts {
				t.Errorf("attempts %d, want %d", ev.Attempts, tc.attempts)
			}
			if tc.name == "broken after the first chunk" {
				if !strings.Contains(string(data), `"Say "`) || !strings.Contains(string(data), "broke off") || strings.Contains(string(data), "[DONE]") {
					t.Errorf("a broken stream reads %s", data)
				}
				if ev.Outcome != outcomeProvider || !ev.Estimated {
					t.Errorf("event %+v, want a provider error counted at its estimate", ev)
				}
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		h := newHarness(t, nil, Deps{Tracing: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
		b := newProvider(t, "m")
		h.provider("a", down.BaseURL(), "")
		h.provider("b", b.BaseURL(), "")
		h.route("m", llm.Target{Provider: "a", Model: "m"}, llm.Target{Provider: "b", Model: "m"})
		if resp, data := h.do(http.MethodPost, EmbeddingsPath, h.token(claims("llm:model:m")), map[string]any{"model": "m", "input": "hi"}); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, data)
		}
		if providerCalls(b) != 1 {
			t.Error("the second target was not called")
		}
		// The span tells which provider failed and how, as a bounded
		// class: no status came back.
		want := map[string]string{"gen_ai.provider.name": "a", "error.type": "_OTHER"}
		if got := failedProviders(rec); len(got) != 1 || !maps.Equal(got[0], want) {
			t.Errorf("provider failures in the span %v, want %v", got, want)
		}
	})
	t.Run("all fail", func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		h := newHarness(t, nil, Deps{Tracing: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
		a, b := newProvider(t, "m"), newProvider(t, "m")
		a.FailNext(1, 503)
		b.FailNextWith(1, &llm.APIError{Status: 429, Type: "requests", Code: llm.CodeRateLimit, Message: "Slow down.", After: 7 * time.Second})
		h.provider("a", a.BaseURL(), "")
		h.provider("b", b.BaseURL(), "")
		h.route("m", llm.Target{Provider: "a", Model: "m"}, llm.Target{Provider: "b", Model: "m"})
		resp, data := h.do(http.MethodPost, ChatPath, h.token(claims("llm:model:m")), chatBody("m"))
		if got, want := failedProviders(rec), []map[string]string{{"gen_ai.provider.name": "a", "error.type": "503"},
			{"gen_ai.provider.name": "b", "error.type": "429"}}; !slices.EqualFunc(got, want, maps.Equal) {
			t.Errorf("provider failures in the span %v, want %v", got, want)
		}
		if e := apiErr(t, resp.StatusCode, data); resp.StatusCode != 429 || e.Code != llm.CodeRateLimit || resp.Header.Get("Retry-After") != "7" {
			t.Errorf("status %d %+v, Retry-After %q; want 429 rate_limit_exceeded after 7s", resp.StatusCode, e, resp.Header.Get("Retry-After"))
		}
		h.sync()
		sp, _ := h.store.Spent(t.Context(), llm.Keys{TenantID: "acme", Day: llm.DayOf(testNow)})
		if sp.Used.TenantDay.Tokens != 0 {
			t.Errorf("a call no provider answered counts %d tokens", sp.Used.TenantDay.Tokens)
		}
	})
}

// /v1/models lists the models the token's scopes grant.
func TestModelsScopes(t *testing.T) {
	h := newHarness(t, nil, Deps{})
	p := newProvider(t)
	h.provider("openai", p.BaseURL(), "")
	for _, m := range []string{"gpt-4o", "gpt-4o-mini", "text-embedding-3-small"} {
		h.route(m, llm.Target{Provider: "openai", Model: m})
	}
	// acme's own route hides nothing of the platform's but adds one.
	h.admin(http.MethodPut, llm.ProvidersPath+"/own", llm.ProviderRequest{BaseURL: p.BaseURL()}, http.StatusCreated, llm.TenantHeader, "acme")
	h.admin(http.MethodPut, llm.ModelsPath+"/acme-tuned", llm.RouteRequest{Targets: []llm.Target{{Provider: "own", Model: "ft:1"}}},
		http.StatusCreated, llm.TenantHeader, "acme")
	tests := []struct {
		scopes []string
		want   []string
	}{
		{[]string{"llm:model:*"}, []string{"acme-tuned", "gpt-4o", "gpt-4o-mini", "text-embedding-3-small"}},
		{[]string{"llm:*"}, []string{"acme-tuned", "gpt-4o", "gpt-4o-mini", "text-embedding-3-small"}},
		{[]string{"llm:model:gpt-4o", "llm:model:text-embedding-3-small"}, []string{"gpt-4o", "text-embedding-3-small"}},
		{[]string{"memory:read:*"}, []string{}},
	}
	for _, tc := range tests {
		resp, data := h.do(http.MethodGet, ModelsPath, h.token(claims(tc.scopes...)), nil)
		var list llm.ModelList
		if err := json.Unmarshal(data, &list); err != nil || resp.StatusCode != 200 || list.Object != "list" {
			t.Fatalf("%v: %d %s", tc.scopes, resp.StatusCode, data)
		}
		got := []string{}
		for _, m := range list.Data {
			got = append(got, m.ID)
		}
		if d := gocmp.Diff(tc.want, got); d != "" {
			t.Errorf("%v (-want +got):\n%s", tc.scopes, d)
		}
	}
	other := h.token(identity.Claims{TenantID: "globex", Scopes: []string{"llm:model:*"}})
	if _, data := h.do(http.MethodGet, ModelsPath, other, nil); strings.Contains(string(data), "acme-tuned") {
		t.Error("another tenant sees acme's model")
	}
	resp, data := h.do(http.MethodGet, ModelsPath+"/gpt-4o", h.token(claims("llm:model:gpt-4o")), nil)
	if resp.StatusCode != 200 || !strings.Contains(string(data), `"id":"gpt-4o"`) {
		t.Errorf("GET a model: %d %s", resp.StatusCode, data)
	}
	if resp, _ := h.do(http.MethodGet, ModelsPath+"/gpt-4o-mini", h.token(claims("llm:model:gpt-4o")), nil); resp.StatusCode != 403 {
		t.Errorf("GET a model outside the scopes: %d, want 403", resp.StatusCode)
	}
	if resp, _ := h.do(http.MethodGet, ModelsPath+"/nope", h.token(claims("llm:model:*")), nil); resp.StatusCode != 404 {
		t.Errorf("GET a missing model: %d, want 404", resp.StatusCode)
	}
	if resp, _ := h.do(http.MethodGet, ModelsPath, "", nil); resp.StatusCode != 401 {
		t.Errorf("GET models without a token: %d, want 401", resp.StatusCode)
	}
}

// readEvents reads an SSE body's events.
func readEvents(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// A caller that leaves mid-stream ends the provider's stream too; the
// call is settled at its estimate and shown as canceled. A provider that
// goes quiet past StreamIdle ends the stream with an error event.
func TestStreamEnds(t *testing.T) {
	t.Run("caller leaves", func(t *testing.T) {
		h := newHarness(t, nil, Deps{})
		p := newProvider(t, "m")
		hold := p.HoldNextStream()
		defer hold.Release()
		h.provider("openai", p.BaseURL(), "")
		h.route("m", llm.Target{Provider: "openai", Model: "m"})
		data, _ := json.Marshal(chatBody("m", "stream", true, "max_tokens", 40))
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.srv.URL+ChatPath, strings.NewReader(string(data)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+h.token(claims("llm:model:m")))
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := llm.NewEventReader(resp.Body, 1<<20).Next(); err != nil {
			t.Fatal(err)
		}
		<-hold.Held()
		cancel()
		resp.Body.Close()
		// Shutdown waits for the call's settlement.
		if err := h.svc.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		evs := h.runEvents("acme", "run-1")
		if len(evs) != 1 {
			t.Fatalf("run events %+v", evs)
		}
		var ev llm.CallEvent
		_ = json.Unmarshal(evs[0].Payload, &ev)
		if ev.Outcome != outcomeCanceled || !ev.Estimated || ev.OutputTokens != 40 {
			t.Errorf("event %+v, want canceled, at the estimate", ev)
		}
	})
	t.Run("provider goes quiet", func(t *testing.T) {
		h := newHarness(t, &Options{StreamIdle: 50 * time.Millisecond}, Deps{})
		p := newProvider(t, "m")
		defer p.HoldNextStream().Release()
		h.provider("openai", p.BaseURL(), "")
		h.route("m", llm.Target{Provider: "openai", Model: "m"})
		resp, data := h.do(http.MethodPost, ChatPath, h.token(claims("llm:model:m")), chatBody("m", "stream", true))
		evs := readEvents(t, string(data))
		if resp.StatusCode != 200 || len(evs) != 2 || !strings.Contains(evs[1], "broke off") {
			t.Errorf("a quiet provider's stream: %d %q", resp.StatusCode, evs)
		}
	})
}

// failedProviders are the provider and error.type of each
// gen_ai.provider.failed event of the spans rec holds.
func failedProviders(rec *tracetest.SpanRecorder) []map[string]string {
	var out []map[string]string
	for _, s := range rec.Ended() {
		for _, ev := range s.Events() {
			if ev.Name != "gen_ai.provider.failed" {
				continue
			}
			m := map[string]string{}
			for _, a := range ev.Attributes {
				if k := string(a.Key); k == "gen_ai.provider.name" || k == "error.type" {
					m[k] = a.Value.Emit()
				}
			}
			out = append(out, m)
		}
	}
	return out
}
