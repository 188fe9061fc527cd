package storetest

import (
	"errors"
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
	t.Run("LeaseLimits", func(t *testing.T) { testLLMLeaseLimits(t, newStore) })
	t.Run("LeaseInvalid", func(t *testing.T) { testLLMLeaseInvalid(t, newStore(t)) })
	t.Run("Commit", func(t *testing.T) { testLLMCommit(t, newStore(t)) })
	t.Run("ConcurrentLease", func(t *testing.T) { testLLMConcurrentLease(t, newStore(t)) })
	t.Run("ConcurrentReplicas", func(t *testing.T) { testLLMConcurrentReplicas(t, newStore(t)) })
	t.Run("Usage", func(t *testing.T) { testLLMUsage(t, newStore(t)) })
	t.Run("Sweep", func(t *testing.T) { testLLMSweep(t, newStore(t)) })
}

// TestLLMReopen checks durability across restarts: providers, routes,
// budgets, counters, leases and usage written through one handle read
// back unchanged through a new handle on the same database.
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
	c := llm.CountersOf(k)[0]
	a := llmAsk(k, c, llm.Amount{Tokens: 300}, llm.Amount{Tokens: 300})
	if _, err := s.Lease(ctx, llmLeaseRequest(1, a)); err != nil {
		t.Fatal(err)
	}
	commit(t, s, llm.Batch{Leases: []llm.LeaseUse{{ID: a.ID, Counter: c, Used: llm.Amount{Tokens: 100, Cost: 7}}},
		Usage: []llm.UsageRow{{UsageKey: llm.UsageKey{TenantID: "acme", Day: k.Day, Model: "gpt-4o", Provider: "openai"}, Calls: 1, Input: 40, Output: 60, Cost: 7}}})
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
	sp, err := s.Spent(ctx, k)
	if err != nil || sp.Used.TenantDay != (llm.Amount{Tokens: 100, Cost: 7}) || sp.Held.TenantDay != (llm.Amount{Tokens: 200}) {
		t.Errorf("after reopening: %+v, %v; want 100 tokens and 7 used, 200 held", sp, err)
	}
	res := commit(t, s, llm.Batch{Leases: []llm.LeaseUse{{ID: a.ID, Counter: c, Used: llm.Amount{Tokens: 50}, Release: true}}})
	if res[0].Gone || res[0].Covered.Tokens != 50 {
		t.Errorf("after reopening, the lease: %+v, want it held and covering 50", res[0])
	}
	if rows, err := s.Usage(ctx, llm.UsageQuery{TenantID: "acme"}); err != nil || len(rows) != 1 || rows[0].Input != 40 {
		t.Errorf("after reopening: usage %+v, %v", rows, err)
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
