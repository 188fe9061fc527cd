package llmgw

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/secret"
)

// Providers: a key is sealed at rest and never answered; a replace
// without api_key keeps it; conditions and SSRF rules hold.
func TestAdminProviders(t *testing.T) {
	h := newHarness(t, nil, Deps{})
	p := newProvider(t)
	const key = "sk-very-secret-provider-key"
	h.provider("openai", p.BaseURL(), key)
	raw, err := h.store.GetProvider(t.Context(), "", "openai")
	if err != nil || strings.Contains(string(raw.SealedKey), key) || len(raw.SealedKey) == 0 {
		t.Fatalf("the stored key is not sealed: %v", err)
	}
	data := h.admin(http.MethodGet, llm.ProvidersPath+"/openai", nil, http.StatusOK)
	list := h.admin(http.MethodGet, llm.ProvidersPath, nil, http.StatusOK)
	for _, d := range [][]byte{data, list} {
		if strings.Contains(string(d), key) || !strings.Contains(string(d), `"has_key":true`) {
			t.Errorf("an answer shows the key, or not that there is one: %s", d)
		}
	}
	// Replaced without api_key: the key stays, and calls still send it.
	h.admin(http.MethodPut, llm.ProvidersPath+"/openai", llm.ProviderRequest{BaseURL: p.BaseURL(), TimeoutMS: 5000}, http.StatusOK,
		"If-Match", `"1"`)
	h.route("m", llm.Target{Provider: "openai", Model: llmtest.ModelChat})
	if resp, d := h.do(http.MethodPost, ChatPath, h.token(claims("llm:model:m")), chatBody("m")); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, d)
	}
	if got := p.LastRequest().Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("after a replace without api_key the provider got %q", got)
	}
	h.admin(http.MethodPut, llm.ProvidersPath+"/openai", llm.ProviderRequest{BaseURL: p.BaseURL()}, http.StatusPreconditionFailed,
		"If-Match", `"1"`)
	h.admin(http.MethodPut, llm.ProvidersPath+"/openai", llm.ProviderRequest{BaseURL: p.BaseURL()}, http.StatusPreconditionFailed,
		"If-None-Match", "*")
	for name, req := range map[string]llm.ProviderRequest{
		"bad name!": {BaseURL: p.BaseURL()},
		"metadata":  {BaseURL: "http://169.254.169.254/v1"},
		"ftp":       {BaseURL: "ftp://example.com"},
		"userinfo":  {BaseURL: "https://u:p@example.com/v1"},
		"timeout":   {BaseURL: p.BaseURL(), TimeoutMS: -1},
	} {
		resp, d := h.do(http.MethodPut, llm.ProvidersPath+"/"+strings.ReplaceAll(name, " ", "%20"), "", req)
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
			t.Errorf("%s: %d %s, want a 422 problem", name, resp.StatusCode, d)
		}
	}
	// Without --llm-allow-private, loopback providers are refused.
	strict := New(Deps{Store: llm.NewMemoryStore(), Tokens: h.issuer}, nil)
	if err := strict.guard.CheckURL(p.BaseURL()); err == nil {
		t.Error("a loopback provider passes the default guard")
	}
	h.admin(http.MethodDelete, llm.ProvidersPath+"/openai", nil, http.StatusNoContent)
	h.admin(http.MethodDelete, llm.ProvidersPath+"/openai", nil, http.StatusNotFound)
	// The route now names no provider: its calls fail clearly.
	resp, d := h.do(http.MethodPost, ChatPath, h.token(claims("llm:model:m")), chatBody("m"))
	if resp.StatusCode != http.StatusServiceUnavailable || apiErr(t, resp.StatusCode, d).Code != llm.CodeProviderUnavailable {
		t.Errorf("a route without providers: %d %s", resp.StatusCode, d)
	}
}

// Tokens with llm:admin manage their own tenant's providers and models,
// read their budgets and usage, and set no budget.
func TestAdminTenants(t *testing.T) {
	h := newHarness(t, nil, Deps{})
	p := newProvider(t)
	adminTok := h.token(identity.Claims{TenantID: "acme", Subject: "ops", Scopes: []string{llm.ScopeAdmin}})
	plain := h.token(claims("llm:model:*"))
	put := func(tok, path string, body any, want int, header ...string) []byte {
		t.Helper()
		resp, d := h.do(http.MethodPut, path, tok, body, header...)
		if resp.StatusCode != want {
			t.Fatalf("PUT %s: %d %s, want %d", path, resp.StatusCode, d, want)
		}
		return d
	}
	put(adminTok, llm.ProvidersPath+"/own", llm.ProviderRequest{BaseURL: p.BaseURL()}, http.StatusCreated)
	put(plain, llm.ProvidersPath+"/own", llm.ProviderRequest{BaseURL: p.BaseURL()}, http.StatusForbidden)
	put(adminTok, llm.ProvidersPath+"/x", llm.ProviderRequest{BaseURL: p.BaseURL()}, http.StatusForbidden, llm.TenantHeader, "globex")
	// A route names its own tenant's providers only.
	h.provider("platform", p.BaseURL(), "")
	put(adminTok, llm.ModelsPath+"/cheap", llm.RouteRequest{Targets: []llm.Target{{Provider: "platform", Model: llmtest.ModelChat}}}, http.StatusUnprocessableEntity)
	put(adminTok, llm.ModelsPath+"/cheap", llm.RouteRequest{Targets: []llm.Target{{Provider: "own", Model: llmtest.ModelChat}}}, http.StatusCreated)
	if _, err := h.store.GetRoute(t.Context(), "acme", "cheap"); err != nil {
		t.Errorf("the tenant's route is not the tenant's: %v", err)
	}
	put(adminTok, llm.BudgetsPath+"/acme", llm.BudgetRequest{DailyTokens: 5}, http.StatusForbidden)
	h.admin(http.MethodPut, llm.BudgetsPath+"/acme", llm.BudgetRequest{DailyTokens: 100000, DailyCostUSD: 1.5}, http.StatusCreated)
	resp, d := h.do(http.MethodGet, llm.BudgetsPath+"/acme", adminTok, nil)
	var b llm.BudgetInfo
	if resp.StatusCode != 200 || json.Unmarshal(d, &b) != nil || b.DailyCostUSD != 1.5 || b.Scope != "tenant" {
		t.Errorf("the tenant reads its budget: %d %s", resp.StatusCode, d)
	}
	if resp, _ := h.do(http.MethodGet, llm.BudgetsPath+"/globex", adminTok, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another tenant's budget: %d, want 403", resp.StatusCode)
	}
	if resp, _ := h.do(http.MethodGet, llm.UsagePath+"?tenant=globex", adminTok, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another tenant's usage: %d, want 403", resp.StatusCode)
	}
	// A call through the tenant's route counts in its budget and usage.
	if resp, d := h.do(http.MethodPost, ChatPath, plain, chatBody("cheap")); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, d)
	}
	_, d = h.do(http.MethodGet, llm.BudgetsPath+"/acme", adminTok, nil)
	if json.Unmarshal(d, &b) != nil || b.UsedTokens != chatPrompt+chatCompletion || b.Day != llm.DayOf(testNow) {
		t.Errorf("budget after a call: %s", d)
	}
	_, d = h.do(http.MethodGet, llm.UsagePath, adminTok, nil)
	var u llm.UsageList
	if json.Unmarshal(d, &u) != nil || len(u.Usage) != 1 || u.Usage[0].Model != "cheap" || u.Usage[0].Calls != 1 {
		t.Errorf("usage: %s", d)
	}
}

// The usage listing pages through its rows, and refuses what it cannot
// use.
func TestAdminUsagePaging(t *testing.T) {
	h := newHarness(t, nil, Deps{})
	ctx := t.Context()
	var rows []llm.UsageRow
	for _, model := range []string{"a", "b", "c", "d", "e"} {
		rows = append(rows, llm.UsageRow{UsageKey: llm.UsageKey{TenantID: "acme", Day: "2026-12-01", Model: model, Provider: "p"}, Calls: 1, Input: 1})
	}
	if _, err := h.store.Commit(ctx, llm.Batch{Usage: rows, At: testNow, Expires: testNow.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	var got []string
	path := llm.UsagePath + "?pageSize=2&from=2026-12-01&to=2026-12-01"
	for range 5 {
		var page llm.UsageList
		if err := json.Unmarshal(h.admin(http.MethodGet, path, nil, http.StatusOK), &page); err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Usage {
			got = append(got, r.Model)
		}
		if page.NextPageToken == "" {
			break
		}
		path = llm.UsagePath + "?pageSize=2&from=2026-12-01&to=2026-12-01&pageToken=" + page.NextPageToken
	}
	if strings.Join(got, "") != "abcde" {
		t.Errorf("paged models %v", got)
	}
	for _, q := range []string{"?from=yesterday", "?pageSize=-1", "?pageToken=%21%21"} {
		if resp, d := h.do(http.MethodGet, llm.UsagePath+q, "", nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", q, resp.StatusCode, d)
		}
	}
}

// With an admin token configured, the operator's writes need it; other
// callers are refused.
func TestAdminToken(t *testing.T) {
	h := newHarness(t, nil, Deps{AdminToken: secret.New("admin-secret")})
	p := newProvider(t)
	body := llm.ProviderRequest{BaseURL: p.BaseURL()}
	if resp, _ := h.do(http.MethodPut, llm.ProvidersPath+"/x", "", body); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
	if resp, _ := h.do(http.MethodPut, llm.ProvidersPath+"/x", "wrong", body); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", resp.StatusCode)
	}
	if resp, d := h.do(http.MethodPut, llm.ProvidersPath+"/x", "admin-secret", body); resp.StatusCode != http.StatusCreated {
		t.Errorf("the admin token: %d %s", resp.StatusCode, d)
	}
}
