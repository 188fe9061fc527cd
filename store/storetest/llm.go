package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/llm"
)

// TestLLMStore runs the llm.Store contract. newStore must return a new,
// empty store each time it is called.
func TestLLMStore(t *testing.T, newStore func(t *testing.T) llm.Store) {
	t.Run("Providers", func(t *testing.T) { testLLMProviders(t, newStore(t)) })
	t.Run("ProviderInvalid", func(t *testing.T) { testLLMProviderInvalid(t, newStore(t)) })
	t.Run("Routes", func(t *testing.T) { testLLMRoutes(t, newStore(t)) })
	t.Run("Budgets", func(t *testing.T) { testLLMBudgets(t, newStore(t)) })
	t.Run("ReserveLimits", func(t *testing.T) { testLLMReserveLimits(t, newStore) })
	t.Run("ReserveInvalid", func(t *testing.T) { testLLMReserveInvalid(t, newStore(t)) })
	t.Run("Settle", func(t *testing.T) { testLLMSettle(t, newStore(t)) })
	t.Run("ConcurrentReserve", func(t *testing.T) { testLLMConcurrentReserve(t, newStore(t)) })
	t.Run("Usage", func(t *testing.T) { testLLMUsage(t, newStore(t)) })
	t.Run("Sweep", func(t *testing.T) { testLLMSweep(t, newStore(t)) })
}

// TestLLMReopen checks durability across restarts: providers, routes,
// budgets, counters, reservations and usage written through one handle
// read back unchanged through a new handle on the same database.
func TestLLMReopen(t *testing.T, open func(t *testing.T) (llm.Store, func())) {
	ctx := ctxT(t)
	s, closeDB := open(t)
	p, err := s.PutProvider(ctx, llmProvider("acme", "openai"), 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.PutRoute(ctx, llmRoute("", "gpt-4o"), 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.PutBudget(ctx, llm.Budget{TenantID: "acme", DailyTokens: 1000, UpdatedAt: llmT0}, 0)
	if err != nil {
		t.Fatal(err)
	}
	k := llmKeys("acme", "inst", "run-1")
	res, err := s.Reserve(ctx, k, llm.Amount{Tokens: 300, Cost: 7}, llmT0)
	if err != nil {
		t.Fatal(err)
	}
	closeDB()
	s, closeDB = open(t)
	defer closeDB()
	if got, err := s.GetProvider(ctx, "acme", "openai"); err != nil || !gocmp.Equal(p, got) {
		t.Errorf("after reopening: provider %+v, %v; want %+v", got, err, p)
	}
	if got, err := s.GetRoute(ctx, "", "gpt-4o"); err != nil || !gocmp.Equal(r, got) {
		t.Errorf("after reopening: route %+v, %v; want %+v", got, err, r)
	}
	if got, err := s.GetBudget(ctx, "acme", ""); err != nil || !gocmp.Equal(b, got) {
		t.Errorf("after reopening: budget %+v, %v; want %+v", got, err, b)
	}
	if err := s.Settle(ctx, res, llm.Settlement{Model: "gpt-4o", Provider: "openai", Input: 10, Output: 20, Cost: 3}); err != nil {
		t.Fatalf("after reopening: Settle: %v", err)
	}
	if sp, _ := s.Spent(ctx, k); sp.TenantDay != (llm.Amount{Tokens: 30, Cost: 3}) {
		t.Errorf("after reopening and settling: tenant day %+v, want 30 tokens, 3", sp.TenantDay)
	}
}

// llmT0 is the suite's clock: nanoseconds, which stores drop, in a zone
// other than UTC, which reads back as UTC.
var llmT0 = time.Date(2026, 7, 1, 8, 0, 0, 987654321, time.UTC).In(gateZone)

func llmProvider(tenant, name string) llm.Provider {
	return llm.Provider{TenantID: tenant, Name: name, BaseURL: "https://api.example.com/v1",
		SealedKey: []byte{0, 1, '"', '\\', 0xfe, 0xff}, Timeout: 90*time.Second + 3*time.Millisecond, Disabled: true,
		Version: 9, CreatedAt: llmT0.Add(-time.Hour), UpdatedAt: llmT0}
}

func llmRoute(tenant, name string) llm.Route {
	return llm.Route{TenantID: tenant, Name: name, Targets: []llm.Target{{Provider: "openai", Model: "gpt-4o-2024-08-06"},
		{Provider: "azure", Model: "deployments/ü gpt-4o"}}, InputUSDPerMillion: 2.5, OutputUSDPerMillion: 10, UpdatedAt: llmT0}
}

func llmKeys(tenant, instance, run string) llm.Keys {
	return llm.Keys{TenantID: tenant, InstanceID: instance, RunID: run, Day: llm.DayOf(llmT0)}
}

func wantStored(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

func testLLMProviders(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	in := llmProvider("acme", "openai")
	got, err := s.PutProvider(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.Version, want.CreatedAt, want.UpdatedAt = 1, time.UnixMicro(llmT0.UnixMicro()).UTC(), time.UnixMicro(llmT0.UnixMicro()).UTC()
	wantStored(t, "PutProvider", want, got)
	read, err := s.GetProvider(ctx, "acme", "openai")
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, "GetProvider", want, read)
	read.SealedKey[0] = 'x' // the caller's copy
	if again, _ := s.GetProvider(ctx, "acme", "openai"); again.SealedKey[0] != 0 {
		t.Error("changing a returned provider changed the stored one")
	}

	if _, err := s.PutProvider(ctx, in, 0); !errors.Is(err, llm.ErrConflict) {
		t.Errorf("create over a stored provider: %v, want ErrConflict", err)
	}
	if _, err := s.PutProvider(ctx, in, 2); !errors.Is(err, llm.ErrConflict) {
		t.Errorf("replace of version 2 when 1 is stored: %v, want ErrConflict", err)
	}
	next := in
	next.SealedKey, next.Disabled, next.UpdatedAt = nil, false, llmT0.Add(time.Minute)
	got, err = s.PutProvider(ctx, next, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || !got.CreatedAt.Equal(want.CreatedAt) || got.SealedKey != nil || got.Disabled {
		t.Errorf("replaced: %+v, want version 2, the first CreatedAt, no key, enabled", got)
	}

	// The platform's providers and each tenant's are apart.
	for _, tenant := range []string{"", "globex"} {
		if _, err := s.PutProvider(ctx, llmProvider(tenant, "openai"), 0); err != nil {
			t.Fatalf("tenant %q: %v", tenant, err)
		}
	}
	if _, err := s.PutProvider(ctx, llmProvider("acme", "local"), 0); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListProviders(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list {
		names = append(names, p.TenantID+"/"+p.Name)
	}
	wantStored(t, "ListProviders(acme)", []string{"acme/local", "acme/openai"}, names)
	if list, _ := s.ListProviders(ctx, ""); len(list) != 1 || list[0].TenantID != "" {
		t.Errorf("ListProviders(\"\") = %+v, want the platform's one", list)
	}
	if list, _ := s.ListProviders(ctx, "nobody"); list == nil || len(list) != 0 {
		t.Errorf("ListProviders(nobody) = %#v, want an empty list", list)
	}

	if err := s.DeleteProvider(ctx, "acme", "openai"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteProvider(ctx, "acme", "openai"); !errors.Is(err, llm.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := s.GetProvider(ctx, "acme", "openai"); !errors.Is(err, llm.ErrNotFound) {
		t.Errorf("get after delete: %v, want ErrNotFound", err)
	}
	if _, err := s.GetProvider(ctx, "globex", "openai"); err != nil {
		t.Errorf("another tenant's provider is gone: %v", err)
	}
}

func testLLMProviderInvalid(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	tests := []struct {
		name   string
		change func(p *llm.Provider)
	}{
		{"name upper case", func(p *llm.Provider) { p.Name = "OpenAI" }},
		{"name empty", func(p *llm.Provider) { p.Name = "" }},
		{"name too long", func(p *llm.Provider) { p.Name = "a" + string(make([]byte, 63)) }},
		{"url not http", func(p *llm.Provider) { p.BaseURL = "ftp://example.com" }},
		{"url with user", func(p *llm.Provider) { p.BaseURL = "https://u:p@example.com/v1" }},
		{"negative timeout", func(p *llm.Provider) { p.Timeout = -time.Second }},
		{"tenant not text", func(p *llm.Provider) { p.TenantID = "a\x00b" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := llmProvider("acme", "openai")
			tc.change(&p)
			if _, err := s.PutProvider(ctx, p, 0); !errors.Is(err, llm.ErrInvalid) {
				t.Errorf("PutProvider: %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := s.PutProvider(ctx, llmProvider("acme", "openai"), -1); !errors.Is(err, llm.ErrInvalid) {
		t.Errorf("negative expected version: %v, want ErrInvalid", err)
	}
}

func testLLMRoutes(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	in := llmRoute("acme", "llama3.1:8b")
	got, err := s.PutRoute(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.Version, want.CreatedAt, want.UpdatedAt = 1, time.UnixMicro(llmT0.UnixMicro()).UTC(), time.UnixMicro(llmT0.UnixMicro()).UTC()
	wantStored(t, "PutRoute", want, got)
	read, err := s.GetRoute(ctx, "acme", "llama3.1:8b")
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, "GetRoute", want, read)
	read.Targets[0].Model = "changed"
	if again, _ := s.GetRoute(ctx, "acme", "llama3.1:8b"); again.Targets[0].Model != in.Targets[0].Model {
		t.Error("changing a returned route changed the stored one")
	}
	if _, err := s.PutRoute(ctx, in, 0); !errors.Is(err, llm.ErrConflict) {
		t.Errorf("create over a stored route: %v, want ErrConflict", err)
	}
	next := in
	next.Targets, next.UpdatedAt = next.Targets[:1], llmT0.Add(time.Minute)
	if got, err = s.PutRoute(ctx, next, 1); err != nil || got.Version != 2 || len(got.Targets) != 1 || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("replace: %+v, %v", got, err)
	}
	for _, tc := range []struct {
		name   string
		change func(r *llm.Route)
	}{
		{"no targets", func(r *llm.Route) { r.Targets = nil }},
		{"too many targets", func(r *llm.Route) { r.Targets = make([]llm.Target, llm.MaxTargets+1) }},
		{"wildcard name", func(r *llm.Route) { r.Name = "gpt-*" }},
		{"slash in name", func(r *llm.Route) { r.Name = "meta/llama" }},
		{"bad provider", func(r *llm.Route) { r.Targets[0].Provider = "Bad" }},
		{"empty upstream model", func(r *llm.Route) { r.Targets[0].Model = "" }},
		{"negative price", func(r *llm.Route) { r.InputUSDPerMillion = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := llmRoute("acme", "other")
			tc.change(&r)
			if _, err := s.PutRoute(ctx, r, 0); !errors.Is(err, llm.ErrInvalid) {
				t.Errorf("PutRoute: %v, want ErrInvalid", err)
			}
		})
	}
	for _, name := range []string{"b-model", "a-model"} {
		if _, err := s.PutRoute(ctx, llmRoute("", name), 0); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.ListRoutes(ctx, "")
	if err != nil || len(list) != 2 || list[0].Name != "a-model" || list[1].Name != "b-model" {
		t.Errorf("ListRoutes(\"\") = %+v, %v; want a-model, b-model", list, err)
	}
	if err := s.DeleteRoute(ctx, "", "a-model"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRoute(ctx, "", "a-model"); !errors.Is(err, llm.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := s.GetRoute(ctx, "", "llama3.1:8b"); !errors.Is(err, llm.ErrNotFound) {
		t.Errorf("a tenant's route read as the platform's: %v, want ErrNotFound", err)
	}
}

func testLLMBudgets(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	in := llm.Budget{TenantID: "acme", DailyTokens: 1, DailyCost: 2, RunTokens: 3, RunCost: 4, UpdatedAt: llmT0}
	got, err := s.PutBudget(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.Version, want.UpdatedAt = 1, time.UnixMicro(llmT0.UnixMicro()).UTC()
	wantStored(t, "PutBudget", want, got)
	if read, err := s.GetBudget(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	} else {
		wantStored(t, "GetBudget", want, read)
	}
	if _, err := s.PutBudget(ctx, in, 0); !errors.Is(err, llm.ErrConflict) {
		t.Errorf("create over a stored budget: %v, want ErrConflict", err)
	}
	in.DailyTokens = 10
	if got, err := s.PutBudget(ctx, in, 1); err != nil || got.Version != 2 || got.DailyTokens != 10 {
		t.Errorf("replace: %+v, %v", got, err)
	}
	for _, b := range []llm.Budget{{TenantID: "acme", InstanceID: "i-2"}, {TenantID: "acme", InstanceID: "i-1"}, {TenantID: "beta"}} {
		if _, err := s.PutBudget(ctx, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []llm.Budget{{}, {TenantID: "acme", InstanceID: "x", DailyTokens: -1}, {TenantID: "acme", InstanceID: "y", RunCost: -1}} {
		if _, err := s.PutBudget(ctx, bad, 0); !errors.Is(err, llm.ErrInvalid) {
			t.Errorf("PutBudget(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	keys := func(list []llm.Budget) []string {
		var out []string
		for _, b := range list {
			out = append(out, b.TenantID+"/"+b.InstanceID)
		}
		return out
	}
	list, err := s.ListBudgets(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, "ListBudgets(acme)", []string{"acme/", "acme/i-1", "acme/i-2"}, keys(list))
	list, _ = s.ListBudgets(ctx, "")
	wantStored(t, "ListBudgets(\"\")", []string{"acme/", "acme/i-1", "acme/i-2", "beta/"}, keys(list))
	if err := s.DeleteBudget(ctx, "acme", "i-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBudget(ctx, "acme", "i-1"); !errors.Is(err, llm.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := s.GetBudget(ctx, "acme", "i-1"); !errors.Is(err, llm.ErrNotFound) {
		t.Errorf("get after delete: %v, want ErrNotFound", err)
	}
}

func testLLMReserveLimits(t *testing.T, newStore func(t *testing.T) llm.Store) {
	type step struct {
		keys llm.Keys
		ask  llm.Amount
		// want is the refusal, nil for a reservation that is held.
		want *llm.BudgetError
	}
	acme := llmKeys("acme", "inst-1", "run-1")
	acmeRun2 := llmKeys("acme", "inst-1", "run-2")
	acmeOther := llmKeys("acme", "inst-2", "run-3")
	noRun := llmKeys("acme", "inst-1", "")
	nextDay := acme
	nextDay.Day = llm.DayOf(llmT0.Add(24 * time.Hour))
	tests := []struct {
		name    string
		budgets []llm.Budget
		steps   []step
	}{
		{"no budget is unlimited", nil, []step{{acme, llm.Amount{Tokens: 1 << 40, Cost: 1 << 50}, nil}}},
		{"tenant daily tokens", []llm.Budget{{TenantID: "acme", DailyTokens: 1000}}, []step{
			{acme, llm.Amount{Tokens: 600}, nil},
			{acmeOther, llm.Amount{Tokens: 400}, nil}, // exactly the limit
			{acmeRun2, llm.Amount{Tokens: 1}, &llm.BudgetError{Scope: "tenant", Window: "daily", Metric: "tokens", Limit: 1000, Used: 1000, Asked: 1}},
			{nextDay, llm.Amount{Tokens: 1000}, nil}, // a new day
			{llmKeys("beta", "", ""), llm.Amount{Tokens: 5000}, nil},
		}},
		{"tenant daily cost", []llm.Budget{{TenantID: "acme", DailyCost: 500}}, []step{
			{acme, llm.Amount{Tokens: 10, Cost: 300}, nil},
			{acme, llm.Amount{Tokens: 10, Cost: 201}, &llm.BudgetError{Scope: "tenant", Window: "daily", Metric: "cost", Limit: 500, Used: 300, Asked: 201}},
			{acme, llm.Amount{Tokens: 10, Cost: 200}, nil},
		}},
		{"instance daily", []llm.Budget{{TenantID: "acme", DailyTokens: 10000}, {TenantID: "acme", InstanceID: "inst-1", DailyTokens: 100}}, []step{
			{acme, llm.Amount{Tokens: 100}, nil},
			{acmeRun2, llm.Amount{Tokens: 1}, &llm.BudgetError{Scope: "instance", Window: "daily", Metric: "tokens", Limit: 100, Used: 100, Asked: 1}},
			{acmeOther, llm.Amount{Tokens: 5000}, nil}, // another instance
			{llmKeys("acme", "", ""), llm.Amount{Tokens: 4900}, nil},
			{acmeOther, llm.Amount{Tokens: 1}, &llm.BudgetError{Scope: "tenant", Window: "daily", Metric: "tokens", Limit: 10000, Used: 10000, Asked: 1}},
		}},
		{"per-run of the tenant", []llm.Budget{{TenantID: "acme", RunTokens: 50, RunCost: 1000}}, []step{
			{acme, llm.Amount{Tokens: 50}, nil},
			{acme, llm.Amount{Tokens: 1}, &llm.BudgetError{Scope: "tenant", Window: "per-run", Metric: "tokens", Limit: 50, Used: 50, Asked: 1}},
			{acmeRun2, llm.Amount{Tokens: 50, Cost: 1001}, &llm.BudgetError{Scope: "tenant", Window: "per-run", Metric: "cost", Limit: 1000, Used: 0, Asked: 1001}},
			{acmeRun2, llm.Amount{Tokens: 50, Cost: 1000}, nil},
			{noRun, llm.Amount{Tokens: 5000}, nil}, // no run, no per-run limit
		}},
		{"per-run of the instance", []llm.Budget{{TenantID: "acme", RunTokens: 1000}, {TenantID: "acme", InstanceID: "inst-1", RunCost: 10}}, []step{
			{acme, llm.Amount{Tokens: 5, Cost: 10}, nil},
			{acme, llm.Amount{Tokens: 5, Cost: 1}, &llm.BudgetError{Scope: "instance", Window: "per-run", Metric: "cost", Limit: 10, Used: 10, Asked: 1}},
			{acmeOther, llm.Amount{Tokens: 5, Cost: 100}, nil},
		}},
		{"first limit named", []llm.Budget{{TenantID: "acme", DailyTokens: 10, DailyCost: 10, RunTokens: 10}, {TenantID: "acme", InstanceID: "inst-1", DailyTokens: 1}}, []step{
			{acme, llm.Amount{Tokens: 11, Cost: 11}, &llm.BudgetError{Scope: "tenant", Window: "daily", Metric: "tokens", Limit: 10, Used: 0, Asked: 11}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, ctx := newStore(t), ctxT(t)
			for _, b := range tc.budgets {
				if _, err := s.PutBudget(ctx, b, 0); err != nil {
					t.Fatal(err)
				}
			}
			for i, st := range tc.steps {
				before, err := s.Spent(ctx, st.keys)
				if err != nil {
					t.Fatal(err)
				}
				res, err := s.Reserve(ctx, st.keys, st.ask, llmT0)
				if st.want == nil {
					if err != nil {
						t.Fatalf("step %d: Reserve(%+v): %v", i, st.ask, err)
					}
					if res.ID == "" || res.Keys != st.keys || res.Estimate != st.ask {
						t.Errorf("step %d: reservation %+v", i, res)
					}
					continue
				}
				var be *llm.BudgetError
				if !errors.As(err, &be) || !errors.Is(err, llm.ErrBudgetExceeded) {
					t.Fatalf("step %d: Reserve(%+v) = %v, want a *BudgetError", i, st.ask, err)
				}
				wantStored(t, fmt.Sprintf("step %d: refusal", i), *st.want, *be)
				if after, _ := s.Spent(ctx, st.keys); after != before {
					t.Errorf("step %d: a refused reservation changed the counters: %+v, then %+v", i, before, after)
				}
			}
		})
	}
}

func testLLMReserveInvalid(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	bad := []struct {
		keys llm.Keys
		ask  llm.Amount
	}{
		{llm.Keys{Day: llm.DayOf(llmT0)}, llm.Amount{}},
		{llm.Keys{TenantID: "acme", Day: "2026-7-1"}, llm.Amount{}},
		{llmKeys("acme", "", ""), llm.Amount{Tokens: -1}},
		{llmKeys("acme", "a\x00", ""), llm.Amount{}},
	}
	for _, b := range bad {
		if _, err := s.Reserve(ctx, b.keys, b.ask, llmT0); !errors.Is(err, llm.ErrInvalid) {
			t.Errorf("Reserve(%+v, %+v): %v, want ErrInvalid", b.keys, b.ask, err)
		}
	}
	res, err := s.Reserve(ctx, llmKeys("acme", "", ""), llm.Amount{Tokens: 1}, llmT0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, res, llm.Settlement{Model: "m", Input: -1}); !errors.Is(err, llm.ErrInvalid) {
		t.Errorf("Settle with negative tokens: %v, want ErrInvalid", err)
	}
}

func testLLMSettle(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	k := llmKeys("acme", "inst-1", "run-1")
	if _, err := s.PutBudget(ctx, llm.Budget{TenantID: "acme", DailyTokens: 1000}, 0); err != nil {
		t.Fatal(err)
	}
	a, err := s.Reserve(ctx, k, llm.Amount{Tokens: 900, Cost: 9000}, llmT0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, k, llm.Amount{Tokens: 200}, llmT0); !errors.Is(err, llm.ErrBudgetExceeded) {
		t.Fatalf("while 900 are held: %v, want ErrBudgetExceeded", err)
	}
	// The provider's numbers replace the estimate.
	if err := s.Settle(ctx, a, llm.Settlement{Model: "gpt-4o", Provider: "openai", Input: 30, Output: 70, Cost: 1234}); err != nil {
		t.Fatal(err)
	}
	sp, err := s.Spent(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Amount{Tokens: 100, Cost: 1234}
	wantStored(t, "Spent after settling", llm.Spending{TenantDay: want, InstanceDay: want, Run: want}, sp)
	if err := s.Settle(ctx, a, llm.Settlement{Model: "gpt-4o", Provider: "openai", Input: 30, Output: 70, Cost: 1234}); !errors.Is(err, llm.ErrNotFound) {
		t.Errorf("second Settle: %v, want ErrNotFound", err)
	}
	if sp2, _ := s.Spent(ctx, k); sp2 != sp {
		t.Errorf("a second Settle changed the counters: %+v", sp2)
	}
	b, err := s.Reserve(ctx, k, llm.Amount{Tokens: 200}, llmT0)
	if err != nil {
		t.Fatalf("after settling: %v", err)
	}
	// A call that used more than its estimate counts what it used.
	if err := s.Settle(ctx, b, llm.Settlement{Model: "gpt-4o", Provider: "azure", Input: 500, Output: 450, Failed: true}); err != nil {
		t.Fatal(err)
	}
	if sp, _ := s.Spent(ctx, k); sp.TenantDay.Tokens != 1050 {
		t.Errorf("tenant day after an overrun: %+v, want 1050 tokens", sp.TenantDay)
	}
	if _, err := s.Reserve(ctx, k, llm.Amount{}, llmT0); !errors.Is(err, llm.ErrBudgetExceeded) {
		t.Errorf("with the day overrun, even an empty estimate: %v, want ErrBudgetExceeded", err)
	}
	rows, err := s.Usage(ctx, llm.UsageQuery{TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	day := llm.DayOf(llmT0)
	wantStored(t, "Usage", []llm.UsageRow{
		{UsageKey: llm.UsageKey{TenantID: "acme", Day: day, InstanceID: "inst-1", Model: "gpt-4o", Provider: "azure"}, Calls: 1, Failed: 1, Input: 500, Output: 450},
		{UsageKey: llm.UsageKey{TenantID: "acme", Day: day, InstanceID: "inst-1", Model: "gpt-4o", Provider: "openai"}, Calls: 1, Input: 30, Output: 70, Cost: 1234},
	}, rows)
}

// testLLMConcurrentReserve races reservers against one daily limit and
// settlers returning what they did not use: the counter never passes the
// limit, and exactly as many reservations are held as fit.
func testLLMConcurrentReserve(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	const limit, each, workers = 2000, 100, 48
	if _, err := s.PutBudget(ctx, llm.Budget{TenantID: "acme", DailyTokens: limit, RunCost: 5 * each}, 0); err != nil {
		t.Fatal(err)
	}
	var held atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() {
			<-start
			k := llmKeys("acme", fmt.Sprintf("inst-%d", i%3), fmt.Sprintf("run-%d", i%4))
			_, err := s.Reserve(ctx, k, llm.Amount{Tokens: each, Cost: each}, llmT0)
			switch {
			case err == nil:
				held.Add(1)
			case !errors.Is(err, llm.ErrBudgetExceeded):
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Reserve: %v", err)
	}
	// 20 fit the day; each of the 4 runs holds at most 5 (its cost limit).
	if got := held.Load(); got != limit/each {
		t.Errorf("%d reservations held, want %d", got, limit/each)
	}
	sp, err := s.Spent(ctx, llmKeys("acme", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if sp.TenantDay.Tokens != limit {
		t.Errorf("tenant day holds %d tokens, want %d", sp.TenantDay.Tokens, limit)
	}
	for r := range 4 {
		if sp, _ := s.Spent(ctx, llmKeys("acme", "", fmt.Sprintf("run-%d", r))); sp.Run.Cost > 5*each {
			t.Errorf("run-%d holds cost %d, past its limit %d", r, sp.Run.Cost, 5*each)
		}
	}

	// Settlers free what they did not use while reservers take it.
	s2 := llmKeys("beta", "", "")
	if _, err := s.PutBudget(ctx, llm.Budget{TenantID: "beta", DailyTokens: 1000}, 0); err != nil {
		t.Fatal(err)
	}
	var over atomic.Bool
	var wg2 sync.WaitGroup
	for range 16 {
		wg2.Go(func() {
			for range 10 {
				res, err := s.Reserve(ctx, s2, llm.Amount{Tokens: 300}, llmT0)
				if errors.Is(err, llm.ErrBudgetExceeded) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if sp, _ := s.Spent(ctx, s2); sp.TenantDay.Tokens > 1000 {
					over.Store(true)
				}
				if err := s.Settle(ctx, res, llm.Settlement{Model: "m", Input: 1}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg2.Wait()
	if over.Load() {
		t.Error("the counter passed the limit while reservations were settled")
	}
	if sp, _ := s.Spent(ctx, s2); sp.TenantDay.Tokens > 1000 || sp.TenantDay.Tokens < 1 {
		t.Errorf("beta's day holds %d tokens, want the settled calls' (at most 1000)", sp.TenantDay.Tokens)
	}
}

func testLLMUsage(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	days := []time.Time{llmT0, llmT0.Add(24 * time.Hour), llmT0.Add(48 * time.Hour)}
	var all []llm.UsageKey
	for _, tenant := range []string{"acme", "beta"} {
		for _, at := range days {
			for _, inst := range []string{"", "i-1"} {
				for _, model := range []string{"gpt-4o", "embed"} {
					k := llm.Keys{TenantID: tenant, InstanceID: inst, Day: llm.DayOf(at)}
					res, err := s.Reserve(ctx, k, llm.Amount{Tokens: 10}, at)
					if err != nil {
						t.Fatal(err)
					}
					if err := s.Settle(ctx, res, llm.Settlement{Model: model, Provider: "p", Input: 1, Output: 2, Cost: 3}); err != nil {
						t.Fatal(err)
					}
					all = append(all, llm.UsageKey{TenantID: tenant, Day: k.Day, InstanceID: inst, Model: model, Provider: "p"})
				}
			}
		}
	}
	keysOf := func(rows []llm.UsageRow) []llm.UsageKey {
		var out []llm.UsageKey
		for _, r := range rows {
			if r.Calls != 1 || r.Input != 1 || r.Output != 2 || r.Cost != 3 {
				t.Errorf("row %+v, want one call of 1+2 tokens costing 3", r)
			}
			out = append(out, r.UsageKey)
		}
		return out
	}
	// Everything, page by page, in key order.
	var paged []llm.UsageKey
	q := llm.UsageQuery{Limit: 5}
	for {
		rows, err := s.Usage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, keysOf(rows)...)
		if len(rows) < q.Limit {
			break
		}
		last := rows[len(rows)-1].UsageKey
		q.After = &last
	}
	sorted := append([]llm.UsageKey(nil), all...)
	slices.SortFunc(sorted, llm.UsageKey.Compare)
	wantStored(t, "all usage, paged", sorted, paged)

	day2 := llm.DayOf(days[1])
	rows, err := s.Usage(ctx, llm.UsageQuery{TenantID: "beta", InstanceID: "i-1", Model: "embed", From: day2, To: day2})
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, "filtered usage", []llm.UsageKey{{TenantID: "beta", Day: day2, InstanceID: "i-1", Model: "embed", Provider: "p"}}, keysOf(rows))
	rows, _ = s.Usage(ctx, llm.UsageQuery{TenantID: "acme", From: day2})
	if len(rows) != 8 {
		t.Errorf("acme from day 2: %d rows, want 8", len(rows))
	}
	if _, err := s.Usage(ctx, llm.UsageQuery{From: "yesterday"}); !errors.Is(err, llm.ErrInvalid) {
		t.Errorf("a bad day: %v, want ErrInvalid", err)
	}
}

func testLLMSweep(t *testing.T, s llm.Store) {
	ctx := ctxT(t)
	old := llmKeys("acme", "", "run-old")
	oldRes, err := s.Reserve(ctx, old, llm.Amount{Tokens: 10}, llmT0)
	if err != nil {
		t.Fatal(err)
	}
	later := llmT0.Add(2 * time.Hour)
	fresh := llm.Keys{TenantID: "acme", RunID: "run-new", Day: llm.DayOf(later)}
	freshRes, err := s.Reserve(ctx, fresh, llm.Amount{Tokens: 20}, later)
	if err != nil {
		t.Fatal(err)
	}
	// Reservations older than an hour go; their estimates stay counted.
	if err := s.Sweep(ctx, later.Add(-time.Hour), llmT0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, oldRes, llm.Settlement{Model: "m"}); !errors.Is(err, llm.ErrNotFound) {
		t.Errorf("settling a swept reservation: %v, want ErrNotFound", err)
	}
	if sp, _ := s.Spent(ctx, old); sp.Run.Tokens != 10 {
		t.Errorf("the swept reservation's run holds %d tokens, want its estimate, 10", sp.Run.Tokens)
	}
	if err := s.Settle(ctx, freshRes, llm.Settlement{Model: "m", Input: 5}); err != nil {
		t.Errorf("settling a reservation the sweep kept: %v", err)
	}
	// Counters last changed before the cutoff go.
	if err := s.Sweep(ctx, llmT0, later.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if sp, _ := s.Spent(ctx, old); sp.Run.Tokens != 0 {
		t.Errorf("an old run's counter outlived the sweep: %+v", sp.Run)
	}
	if sp, _ := s.Spent(ctx, fresh); sp.Run.Tokens != 5 {
		t.Errorf("a fresh run's counter: %+v, want 5 tokens", sp.Run)
	}
}
