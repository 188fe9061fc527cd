package llm_test

import (
	"errors"
	"strings"
	"testing"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/llm"
)

// A valid model name is one its scope grants, alone and by llm:model:*.
func TestValidModelNameIsAScope(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"gpt-4o", true}, {"llama3.1:8b", true}, {"text-embedding-3-small", true}, {"Qwen2.5-72B-Instruct", true},
		{"", false}, {"gpt-*", false}, {"meta/llama", false}, {"a::b", false}, {":a", false}, {"a:", false},
		{"ü", false}, {"with space", false}, {strings.Repeat("a", llm.MaxModelNameLen+1), false},
	}
	for _, tc := range tests {
		if got := llm.ValidModelName(tc.name); got != tc.ok {
			t.Errorf("ValidModelName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
		if !tc.ok {
			continue
		}
		scope := llm.ModelScopePrefix + tc.name
		if !identity.ScopeMatches(scope, scope) || !identity.ScopeMatches("llm:model:*", scope) || identity.ScopeMatches("llm:model:other", scope) {
			t.Errorf("the scope of %q does not grant as it should", tc.name)
		}
	}
}

func TestCostAndPrice(t *testing.T) {
	if got := llm.Price(1_000_000, 2.5); got != 2_500_000_000 {
		t.Errorf("a million tokens at $2.5/M = %d nanodollars, want 2.5e9", got)
	}
	if got := llm.Price(1, 0.02); got != 20 {
		t.Errorf("one token at $0.02/M = %d, want 20", got)
	}
	if got := llm.Price(1, 0.0000001); got != 1 {
		t.Errorf("a token is never free by rounding: %d", got)
	}
	if c, ok := llm.CostUSD(0.5); !ok || c != 500_000_000 || c.String() != "$0.5" {
		t.Errorf("CostUSD(0.5) = %d %v (%s)", c, ok, c)
	}
	if _, ok := llm.CostUSD(-1); ok {
		t.Error("a negative cost")
	}
	r := llm.Route{InputUSDPerMillion: 2, OutputUSDPerMillion: 8}
	if got := r.Cost(1000, 500); got != llm.Price(1000, 2)+llm.Price(500, 8) {
		t.Errorf("route cost %d", got)
	}
}

// A budget error names the budget, window and metric, with the amounts.
func TestBudgetErrorText(t *testing.T) {
	tests := []struct {
		e    llm.BudgetError
		want string
	}{
		{llm.BudgetError{Scope: "tenant", Window: "daily", Metric: "tokens", Limit: 1000, Used: 990, Asked: 20},
			"the tenant's daily token budget is spent: 990 tokens of 1000 tokens used today, and this call may need 20 tokens"},
		{llm.BudgetError{Scope: "instance", Window: "per-run", Metric: "cost", Limit: 500_000_000, Used: 499_000_000, Asked: 2_000_000},
			"the agent instance's per-run cost budget is spent: $0.499 of $0.5 used in this run, and this call may need $0.002"},
		{llm.BudgetError{Scope: "run", Window: "per-run", Metric: "tokens", Limit: 300, Used: 280, Asked: 40},
			"the run's schedule limit (what the schedule's daily token budget had left when the run started) is spent: " +
				"280 tokens of 300 tokens used in this run, and this call may need 40 tokens"},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
		if !errors.Is(&tc.e, llm.ErrBudgetExceeded) {
			t.Error("not ErrBudgetExceeded")
		}
	}
}
