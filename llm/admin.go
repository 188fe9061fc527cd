package llm

import (
	"time"
)

// The gateway's administration, for the operator (the admin rule) and
// for tokens holding ScopeAdmin, which act on their own tenant:
//
//	GET    ProvidersPath            providers, a ProviderList
//	GET    ProvidersPath/{name}     one, a ProviderInfo
//	PUT    ProvidersPath/{name}     create or replace one from a ProviderRequest
//	DELETE ProvidersPath/{name}     remove one
//	GET    ModelsPath               model routes, a RouteList
//	GET    ModelsPath/{name}        one, a RouteInfo
//	PUT    ModelsPath/{name}        create or replace one from a RouteRequest
//	DELETE ModelsPath/{name}        remove one
//	GET    BudgetsPath              budgets, a BudgetList (?tenant= for the operator)
//	GET    BudgetsPath/{tenant}[/instances/{instance}]   one, a BudgetInfo
//	PUT    BudgetsPath/{tenant}[/instances/{instance}]   set one from a BudgetRequest (operator only)
//	DELETE BudgetsPath/{tenant}[/instances/{instance}]   remove one (operator only)
//	GET    UsagePath                daily usage, a UsageList
//
// Providers and routes belong to the tenant the operator names in
// TenantHeader, or to the platform when it names none; a token's are its
// tenant's. A record's version is its ETag: a PUT with If-Match:
// "<version>" replaces only that version, one with If-None-Match: * only
// creates (412 otherwise). API keys are write-only: no answer carries one.
const (
	ProvidersPath = "/api/v1/llm/providers"
	ModelsPath    = "/api/v1/llm/models"
	BudgetsPath   = "/api/v1/llm/budgets"
	UsagePath     = "/api/v1/llm/usage"
	// TenantHeader names the tenant an operator's request acts on.
	TenantHeader = "X-Tenant-ID"
	// ScopeAdmin lets a token manage its tenant's providers and routes,
	// and read its budgets and usage.
	ScopeAdmin = "llm:admin"
	// EventCall is the run event of a model call made with the run's
	// token; its payload is a CallEvent.
	EventCall = "llm.call"
)

// ProviderRequest creates or replaces a provider. APIKey is write-only:
// nil keeps the stored key on a replace, "" removes it.
type ProviderRequest struct {
	BaseURL string  `json:"base_url"`
	APIKey  *string `json:"api_key,omitempty"`
	// TimeoutMS bounds one call to the provider (0: the gateway's).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	Disabled  bool  `json:"disabled,omitempty"`
}

// ProviderInfo is a provider as the API shows it: whether it has a key,
// never the key.
type ProviderInfo struct {
	TenantID  string    `json:"tenant_id,omitempty"`
	Name      string    `json:"name"`
	BaseURL   string    `json:"base_url"`
	HasKey    bool      `json:"has_key"`
	TimeoutMS int64     `json:"timeout_ms,omitempty"`
	Disabled  bool      `json:"disabled,omitempty"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Info is p as the API shows it.
func (p *Provider) Info() ProviderInfo {
	return ProviderInfo{TenantID: p.TenantID, Name: p.Name, BaseURL: p.BaseURL, HasKey: len(p.SealedKey) > 0,
		TimeoutMS: p.Timeout.Milliseconds(), Disabled: p.Disabled, Version: p.Version, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// ProviderList is the answer of GET ProvidersPath.
type ProviderList struct {
	Providers []ProviderInfo `json:"providers"`
}

// RouteRequest creates or replaces a model route.
type RouteRequest struct {
	Targets             []Target `json:"targets"`
	InputUSDPerMillion  float64  `json:"input_usd_per_million,omitempty"`
	OutputUSDPerMillion float64  `json:"output_usd_per_million,omitempty"`
}

// RouteInfo is a model route as the API shows it.
type RouteInfo struct {
	TenantID            string    `json:"tenant_id,omitempty"`
	Name                string    `json:"name"`
	Targets             []Target  `json:"targets"`
	InputUSDPerMillion  float64   `json:"input_usd_per_million"`
	OutputUSDPerMillion float64   `json:"output_usd_per_million"`
	Version             int64     `json:"version"`
	CreatedAt           time.Time `json:"created_at"`
	UpdatedAt           time.Time `json:"updated_at"`
}

// Info is r as the API shows it.
func (r *Route) Info() RouteInfo {
	return RouteInfo{TenantID: r.TenantID, Name: r.Name, Targets: r.Targets, InputUSDPerMillion: r.InputUSDPerMillion,
		OutputUSDPerMillion: r.OutputUSDPerMillion, Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// RouteList is the answer of GET ModelsPath.
type RouteList struct {
	Models []RouteInfo `json:"models"`
}

// BudgetRequest sets a budget; zero or absent limits are unlimited.
type BudgetRequest struct {
	DailyTokens  int64   `json:"daily_tokens,omitempty"`
	DailyCostUSD float64 `json:"daily_cost_usd,omitempty"`
	RunTokens    int64   `json:"run_tokens,omitempty"`
	RunCostUSD   float64 `json:"run_cost_usd,omitempty"`
}

// BudgetInfo is a budget as the API shows it, with what its day's
// counter holds today (UTC): what calls used, and the allowance the
// gateway's replicas hold in leases and have not spent, which the limits
// count as used too.
type BudgetInfo struct {
	TenantID     string    `json:"tenant_id"`
	InstanceID   string    `json:"instance_id,omitempty"`
	Scope        string    `json:"scope"`
	DailyTokens  int64     `json:"daily_tokens"`
	DailyCostUSD float64   `json:"daily_cost_usd"`
	RunTokens    int64     `json:"run_tokens"`
	RunCostUSD   float64   `json:"run_cost_usd"`
	Day          string    `json:"day,omitempty"`
	UsedTokens   int64     `json:"used_tokens"`
	UsedCostUSD  float64   `json:"used_cost_usd"`
	HeldTokens   int64     `json:"held_tokens,omitempty"`
	HeldCostUSD  float64   `json:"held_cost_usd,omitempty"`
	Version      int64     `json:"version"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// Info is b as the API shows it, with its day's counter: used, and
// held in leases.
func (b *Budget) Info(day string, used, held Amount) BudgetInfo {
	return BudgetInfo{TenantID: b.TenantID, InstanceID: b.InstanceID, Scope: b.Scope(), DailyTokens: b.DailyTokens,
		DailyCostUSD: b.DailyCost.USD(), RunTokens: b.RunTokens, RunCostUSD: b.RunCost.USD(), Day: day,
		UsedTokens: used.Tokens, UsedCostUSD: used.Cost.USD(), HeldTokens: held.Tokens, HeldCostUSD: held.Cost.USD(),
		Version: b.Version, UpdatedAt: b.UpdatedAt}
}

// BudgetList is the answer of GET BudgetsPath.
type BudgetList struct {
	Budgets []BudgetInfo `json:"budgets"`
}

// UsageInfo is one usage row as the API shows it.
type UsageInfo struct {
	TenantID     string  `json:"tenant_id"`
	Day          string  `json:"day"`
	InstanceID   string  `json:"instance_id,omitempty"`
	Model        string  `json:"model"`
	Provider     string  `json:"provider,omitempty"`
	Calls        int64   `json:"calls"`
	Failed       int64   `json:"failed"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Info is u as the API shows it.
func (u *UsageRow) Info() UsageInfo {
	return UsageInfo{TenantID: u.TenantID, Day: u.Day, InstanceID: u.InstanceID, Model: u.Model, Provider: u.Provider,
		Calls: u.Calls, Failed: u.Failed, InputTokens: u.Input, OutputTokens: u.Output, CostUSD: u.Cost.USD()}
}

// UsageList is the answer of GET UsagePath: rows by tenant, day,
// instance, model and provider, and the token of the next page when
// there is one.
type UsageList struct {
	Usage         []UsageInfo `json:"usage"`
	NextPageToken string      `json:"nextPageToken,omitempty"`
}

// CallEvent is the payload of an EventCall run event. It never holds a
// prompt or an answer.
type CallEvent struct {
	Operation    string  `json:"operation"` // "chat" or "embeddings"
	Model        string  `json:"model"`
	Provider     string  `json:"provider,omitempty"`
	Upstream     string  `json:"upstream_model,omitempty"`
	Stream       bool    `json:"stream,omitempty"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	// Estimated is set when the provider reported no usage and the
	// call was counted at its estimate.
	Estimated  bool   `json:"estimated,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Attempts   int    `json:"attempts"`
	Outcome    string `json:"outcome"`
}
