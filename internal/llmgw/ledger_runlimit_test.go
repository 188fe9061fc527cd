package llmgw

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/llm"
)

// A run's own limit, from its token, holds its calls to the tighter of
// it and the configured per-run budget: a run whose own limit is below
// the budget is refused at its own, naming the schedule's limit; one
// without, or with a looser one, is refused at the budget as before.
func TestRunOwnLimit(t *testing.T) {
	const budget = 300 // the tenant's per-run tokens
	tests := []struct {
		name string
		own  int64 // the token's llm_max_tokens
		// cost is the token's llm_max_cost_usd; then calls are refused
		// on cost.
		cost  float64
		limit int64 // where calls stop
		want  string
	}{
		{"no limit of its own", 0, 0, budget, "the tenant's per-run token budget is spent"},
		{"its own below the budget", 150, 0, 150, "the run's schedule limit (what the schedule's daily token budget had left when the run started) is spent"},
		{"its own above the budget", 5000, 0, budget, "the tenant's per-run token budget is spent"},
		{"its own cost", 0, 0.0003, 0, "the run's schedule limit (what the schedule's daily cost budget had left when the run started) is spent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, Deps{})
			// Answers of 100 words, cut at max_tokens: each call uses 22
			// tokens of its estimate.
			p := newProviderWith(t, wordy(100))
			h.provider("openai", p.BaseURL(), "")
			h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
			h.admin(http.MethodPut, llm.BudgetsPath+"/acme", llm.BudgetRequest{RunTokens: budget}, http.StatusCreated)
			c := claims("llm:model:gpt-4o")
			c.LLMMaxTokens, c.LLMMaxCostUSD = tc.own, tc.cost
			tok := h.token(c)
			body := chatBody("gpt-4o", "max_tokens", 20)
			est, used := estimateOf(t, "gpt-4o", 20), int64(chatPrompt+20)
			// Priced $2 and $8 per million input and output tokens.
			estCost, usedCost := int64(llm.Price(est-20, 2)+llm.Price(20, 8)), int64(llm.Price(chatPrompt, 2)+llm.Price(20, 8))
			var ok int64
			var refusal *llm.APIError
			for refusal == nil {
				resp, data := h.do(http.MethodPost, ChatPath, tok, body)
				switch resp.StatusCode {
				case http.StatusOK:
					ok++
				case http.StatusTooManyRequests:
					refusal = apiErr(t, resp.StatusCode, data)
				default:
					t.Fatalf("call %d: %d %s", ok+1, resp.StatusCode, data)
				}
			}
			// A call goes through while what the run used and its
			// estimate fit in the limit: exactly so many.
			var want int64
			if tc.cost > 0 {
				limit := int64(tc.cost * 1e9)
				want = (limit-estCost)/usedCost + 1
			} else {
				want = (tc.limit-est)/used + 1
			}
			if ok != want {
				t.Errorf("%d calls went through, want %d", ok, want)
			}
			if !refusal.BudgetExceeded() || refusal.Type != llm.TypeInsufficientQuota || !strings.Contains(strings.ToLower(refusal.Message), tc.want) {
				t.Errorf("refusal %+v, want insufficient_quota/budget_exceeded saying %q", refusal, tc.want)
			}
			if n := int64(p.Calls("/v1/chat/completions")); n != ok {
				t.Errorf("the provider was called %d times for %d calls let through", n, ok)
			}
			h.sync()
			sp, err := h.store.Spent(t.Context(), llm.Keys{TenantID: "acme", InstanceID: "inst-1", RunID: "run-1", Day: llm.DayOf(testNow)})
			if err != nil {
				t.Fatal(err)
			}
			if sp.Used.Run.Tokens != ok*used {
				t.Errorf("the run used %d tokens, want %d", sp.Used.Run.Tokens, ok*used)
			}
		})
	}
}

// The run's own limit is kept by the leases as a budget is: replicas
// serving one run's calls at once, each from its own leases grown in the
// background, never spend more than the limit together.
func TestReplicasShareARunLimit(t *testing.T) {
	for _, backend := range []string{"memory", "sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			st := testStore(t, backend)
			p := newProviderWith(t, wordy(100))
			const replicas, workers, calls = 3, 3, 10
			est, used := estimateOf(t, "gpt-4o", 20), int64(chatPrompt+20)
			limit := 30 * est
			hs := make([]*harness, replicas)
			ctx, stop := context.WithCancel(t.Context())
			var running sync.WaitGroup
			for i := range hs {
				hs[i] = newHarness(t, &Options{LeaseShare: 0.5, FlushEvery: 5 * time.Millisecond}, Deps{Store: st})
				running.Go(func() { hs[i].svc.Run(ctx) })
			}
			hs[0].provider("openai", p.BaseURL(), "")
			hs[0].route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
			// A looser per-run budget, which must not lend the run more.
			hs[0].admin(http.MethodPut, llm.BudgetsPath+"/acme", llm.BudgetRequest{RunTokens: 10 * limit}, http.StatusCreated)
			c := claims("llm:model:gpt-4o")
			c.LLMMaxTokens = limit
			ok, refused := spend(t, hs, workers, calls, func(h *harness) string { return h.token(c) })
			if ok*used > limit || refused == 0 {
				t.Errorf("%d calls of %d tokens went through a run limit of %d; %d refused", ok, used, limit, refused)
			}
			// As a server stops: the background work, then the calls.
			stop()
			running.Wait()
			for _, h := range hs {
				if err := h.svc.Shutdown(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			sp, err := st.Spent(t.Context(), llm.Keys{TenantID: "acme", InstanceID: "inst-1", RunID: "run-1", Day: llm.DayOf(testNow)})
			if err != nil {
				t.Fatal(err)
			}
			if want := ok * used; sp.Used.Run.Tokens != want || sp.Held.Run != (llm.Amount{}) {
				t.Errorf("after the replicas stopped: %+v, want %d used and nothing held", sp, want)
			}
		})
	}
}
