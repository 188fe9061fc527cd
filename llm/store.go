package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/netguard"
)

// Errors of the gateway's store.
var (
	ErrNotFound = errors.New("llm: not found")
	// ErrConflict: a write's expected version is not the stored one.
	ErrConflict = errors.New("llm: version conflict")
	// ErrInvalid: a record, key or amount no store keeps.
	ErrInvalid = errors.New("llm: invalid")
	// ErrBudgetExceeded is wrapped by the *BudgetError a lease, or a call,
	// that would overspend a budget fails with.
	ErrBudgetExceeded = errors.New("llm: budget exceeded")
)

// Bounds every Store holds records to.
const (
	MaxNameLen       = 63   // a provider's name
	MaxModelNameLen  = 128  // a route's public model name
	MaxUpstreamModel = 256  // the model a target names at its provider
	MaxBaseURLBytes  = 2048 // a provider's base URL
	MaxTargets       = 8    // a route's providers, in order
	MaxKeyBytes      = 256  // a tenant, instance or run id
	// MaxSealedKeyBytes bounds a provider's sealed API key.
	MaxSealedKeyBytes = 16 << 10
	// MaxPriceUSD bounds a route's price per million tokens.
	MaxPriceUSD = 1e6
	// MaxProviderTimeout bounds a provider's own call timeout.
	MaxProviderTimeout = time.Hour
	// MaxAmount bounds the tokens, and the nanodollars, of one estimate
	// or settlement (some 4.5 million dollars), so that counters add up
	// without overflow in every store.
	MaxAmount = 1 << 52
)

// Cost is an amount of US dollars in billionths (nanodollars). Budgets and
// usage add costs up as integers, so a day of calls sums exactly.
type Cost int64

// USD is c in dollars.
func (c Cost) USD() float64 { return float64(c) / 1e9 }

// String is c in dollars, as "$0.001234".
func (c Cost) String() string {
	s := strconv.FormatFloat(c.USD(), 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".00"
	}
	return "$" + s
}

// CostUSD is a dollar amount as a Cost, rounded to the nanodollar; false
// when usd is negative, not finite or too large for a Cost.
func CostUSD(usd float64) (Cost, bool) {
	if math.IsNaN(usd) || usd < 0 || usd > math.MaxInt64/1e9 {
		return 0, false
	}
	return Cost(math.Round(usd * 1e9)), true
}

// Price is the cost of tokens at usdPerMillion dollars per million
// tokens, rounded up to the nanodollar, so that no call is free by
// rounding.
func Price(tokens int64, usdPerMillion float64) Cost {
	if tokens <= 0 || usdPerMillion <= 0 {
		return 0
	}
	v := math.Ceil(float64(tokens) * usdPerMillion * 1e3)
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return Cost(v)
}

// Provider is an OpenAI-compatible API the gateway calls: the platform's
// (TenantID empty), which any tenant's calls may be routed to, or one
// tenant's own.
type Provider struct {
	TenantID string
	// Name identifies the provider among its tenant's (ValidName).
	Name string
	// BaseURL ends before the endpoint, as the OpenAI SDKs take it:
	// "https://api.openai.com/v1", "http://127.0.0.1:11434/v1".
	BaseURL string
	// SealedKey is the API key sealed by the service that stored it;
	// stores keep the bytes exactly as given. Nil: the provider takes no
	// key (a local model server).
	SealedKey []byte
	// Timeout bounds one call to the provider; zero means the gateway's.
	Timeout time.Duration
	// Disabled keeps the provider but routes no call to it.
	Disabled bool

	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Target is one provider a route sends a model's calls to, and the model
// it asks that provider for.
type Target struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// Route is a public model name and where its calls go: Targets in order,
// the next tried when one is overloaded or down. A tenant's route may name
// the tenant's providers only, the platform's route the platform's; a
// tenant's route hides the platform's of the same name from that tenant.
type Route struct {
	TenantID string
	// Name is the model name callers ask for (ValidModelName), granted by
	// the scope llm:model:<Name>.
	Name    string
	Targets []Target
	// InputUSDPerMillion and OutputUSDPerMillion price the route's
	// tokens, whichever target served them.
	InputUSDPerMillion  float64
	OutputUSDPerMillion float64

	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Cost is what input and output tokens cost on the route.
func (r *Route) Cost(input, output int64) Cost {
	return satAdd(Price(input, r.InputUSDPerMillion), Price(output, r.OutputUSDPerMillion))
}

// Budget limits a tenant's model use, or one of its instances' (InstanceID
// set). Zero limits are unlimited. Daily limits count the calls of one UTC
// day (DayOf); per-run limits the calls of each run, which both the
// tenant's and the instance's per-run limits apply to.
type Budget struct {
	TenantID   string
	InstanceID string

	DailyTokens int64
	DailyCost   Cost
	RunTokens   int64
	RunCost     Cost

	Version   int64
	UpdatedAt time.Time
}

// Scope is "tenant" or "instance": whose budget b is.
func (b *Budget) Scope() string {
	if b.InstanceID == "" {
		return ScopeTenant
	}
	return ScopeInstance
}

// Budget scopes, windows and metrics, as a BudgetError names them.
const (
	ScopeTenant   = "tenant"
	ScopeInstance = "instance"
	WindowDaily   = "daily"
	WindowRun     = "per-run"
	MetricTokens  = "tokens"
	MetricCost    = "cost"
)

// Keys are what a call's usage is counted under: its tenant, its
// instance and run ("" for a call that has none, such as the platform's
// own), and the UTC day it started (DayOf).
type Keys struct {
	TenantID   string
	InstanceID string
	RunID      string
	Day        string
}

// DayOf is t's UTC date, the key of daily budgets and usage.
func DayOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// ValidDay reports whether d is a date as DayOf writes it.
func ValidDay(d string) bool {
	t, err := time.Parse(time.DateOnly, d)
	return err == nil && t.Format(time.DateOnly) == d
}

// Amount is tokens and their cost.
type Amount struct {
	Tokens int64
	Cost   Cost
}

// UsageKey is the key of a usage row, in the order rows are listed.
type UsageKey struct {
	TenantID   string `json:"t"`
	Day        string `json:"d"`
	InstanceID string `json:"i"`
	Model      string `json:"m"`
	Provider   string `json:"p"`
}

// Compare orders keys as Usage lists them: by tenant, day, instance,
// model and provider, each byte-wise.
func (k UsageKey) Compare(o UsageKey) int {
	for _, p := range [][2]string{{k.TenantID, o.TenantID}, {k.Day, o.Day}, {k.InstanceID, o.InstanceID}, {k.Model, o.Model}, {k.Provider, o.Provider}} {
		if c := strings.Compare(p[0], p[1]); c != 0 {
			return c
		}
	}
	return 0
}

// UsageRow is the settled calls of one tenant's instance on one day, to
// one model through one provider.
type UsageRow struct {
	UsageKey
	Calls  int64
	Failed int64
	Input  int64
	Output int64
	Cost   Cost
}

// UsageQuery selects usage rows; empty fields select all. From and To are
// days (inclusive).
type UsageQuery struct {
	TenantID   string
	InstanceID string
	Model      string
	From, To   string
	// After continues a listing past that key.
	After *UsageKey
	// Limit bounds the rows (at most MaxUsageRows; zero means that).
	Limit int
}

// MaxUsageRows bounds one Usage answer.
const MaxUsageRows = 1000

// Store keeps the LLM gateway's providers, model routes and budgets, and
// its usage ledger: budget counters, the leases replicas hold on them,
// and the daily usage of settled calls. store/sqlite and store/postgres
// implement it; store/storetest is its contract suite. Implementations
// are safe for concurrent use, and Lease is atomic across every process
// sharing the store: concurrent leases never take a counter past a
// limit.
type Store interface {
	// PutProvider stores p when the stored version is expectVersion (0:
	// none stored), else ErrConflict; it comes back with the next version,
	// and with CreatedAt kept from the version it replaced.
	PutProvider(ctx context.Context, p Provider, expectVersion int64) (Provider, error)
	// GetProvider returns the tenant's provider; ErrNotFound when none.
	GetProvider(ctx context.Context, tenantID, name string) (Provider, error)
	// ListProviders returns the tenant's providers by name ("" the
	// platform's).
	ListProviders(ctx context.Context, tenantID string) ([]Provider, error)
	// DeleteProvider removes the tenant's provider; ErrNotFound when none.
	// Routes naming it skip it from then on.
	DeleteProvider(ctx context.Context, tenantID, name string) error

	// PutRoute, GetRoute, ListRoutes and DeleteRoute are the same for
	// model routes.
	PutRoute(ctx context.Context, r Route, expectVersion int64) (Route, error)
	GetRoute(ctx context.Context, tenantID, name string) (Route, error)
	ListRoutes(ctx context.Context, tenantID string) ([]Route, error)
	DeleteRoute(ctx context.Context, tenantID, name string) error

	// PutBudget stores b when the stored version is expectVersion, as
	// PutProvider does.
	PutBudget(ctx context.Context, b Budget, expectVersion int64) (Budget, error)
	// GetBudget returns a tenant's budget (instanceID "") or its
	// instance's; ErrNotFound when none.
	GetBudget(ctx context.Context, tenantID, instanceID string) (Budget, error)
	// ListBudgets returns the tenant's budgets, its own first, then its
	// instances' by id; every tenant's, by tenant, for "".
	ListBudgets(ctx context.Context, tenantID string) ([]Budget, error)
	// DeleteBudget removes a budget; ErrNotFound when none.
	DeleteBudget(ctx context.Context, tenantID, instanceID string) error

	// Lease grants allowance on budget counters (see Counter), in one
	// atomic step across every process sharing the store, so that what a
	// counter's leases hold and what it has used never pass a limit
	// together. Each ask is decided as PlanLease decides it, in order,
	// against the budgets as they are and the counter as the asks before
	// it left it;
	// its grant is added to its lease (a New one is created, ending at
	// Expires) and counted on its counter as held. With All, one refusal
	// refuses every ask: nothing changes, and the error is its
	// *BudgetError. Without All, a refusal is that ask's Grant. An ask to
	// grow a lease that is not held (it expired and was swept) gets
	// nothing and says Gone.
	Lease(ctx context.Context, r LeaseRequest) ([]Grant, error)
	// Commit writes a holder's Batch in one step: each lease's usage is
	// taken from its allowance, and what the allowance does not cover is
	// counted on its counter beyond it; a released lease returns what is
	// left of its allowance to its counter and ends, the others are
	// renewed to b.Expires; usage on counters without a lease is counted
	// on them; the usage rows grow by b.Usage. A lease that is not held is
	// Gone and its usage counted whole. The results are b.Leases', in
	// order.
	Commit(ctx context.Context, b Batch) ([]LeaseResult, error)
	// Spent returns what the counters of k hold.
	Spent(ctx context.Context, k Keys) (Spending, error)
	// Usage lists usage rows in UsageKey order.
	Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error)
	// Sweep ends the leases that expired before now, their allowance
	// left counted as used (their holder may have spent it and died before
	// it said so), and deletes the counters last changed before
	// countersBefore.
	Sweep(ctx context.Context, now, countersBefore time.Time) error
}

// BudgetError says which budget a call would overspend. Its text names
// the budget and the amounts, never a key or token.
type BudgetError struct {
	// Scope is whose budget: ScopeTenant, ScopeInstance, or ScopeRun for
	// the run's own limit (LeaseAsk.RunLimit), which the platform gives a
	// run a schedule starts.
	Scope  string
	Window string // WindowDaily or WindowRun
	Metric string // MetricTokens or MetricCost
	// Limit, Used and Asked are tokens, or nanodollars (a Cost) for
	// MetricCost: the limit, what the counter held, and what was asked.
	Limit, Used, Asked int64
}

func (e *BudgetError) Error() string {
	what := "token"
	amount := func(v int64) string { return strconv.FormatInt(v, 10) + " tokens" }
	if e.Metric == MetricCost {
		what = "cost"
		amount = func(v int64) string { return Cost(v).String() }
	}
	var budget string
	switch e.Scope {
	case ScopeInstance:
		budget = fmt.Sprintf("the agent instance's %s %s budget", e.Window, what)
	case ScopeRun:
		// Only a schedule gives a run a limit of its own.
		budget = fmt.Sprintf("the run's schedule limit (what the schedule's daily %s budget had left when the run started)", what)
	default:
		budget = fmt.Sprintf("the tenant's %s %s budget", e.Window, what)
	}
	where := "today"
	if e.Window == WindowRun {
		where = "in this run"
	}
	return fmt.Sprintf("%s is spent: %s of %s used %s, and this call may need %s",
		budget, amount(e.Used), amount(e.Limit), where, amount(e.Asked))
}

// Unwrap makes errors.Is(err, ErrBudgetExceeded) hold.
func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

// satAdd adds without wrapping past the largest Cost.
func satAdd(a, b Cost) Cost {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Add is a plus b, saturating.
func (a Amount) Add(b Amount) Amount {
	return Amount{Tokens: int64(satAdd(Cost(a.Tokens), Cost(b.Tokens))), Cost: satAdd(a.Cost, b.Cost)}
}

// sub is a less b, not below zero.
func (a Amount) sub(b Amount) Amount {
	return Amount{Tokens: max(a.Tokens-b.Tokens, 0), Cost: max(a.Cost-b.Cost, 0)}
}

// ValidName reports whether name can name a provider: 1 to MaxNameLen
// of a-z, 0-9, '_' and '-', starting with a letter.
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameLen || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ValidModelName reports whether name can be a route's public model name:
// at most MaxModelNameLen bytes, the segments of a scope (letters, digits,
// '-', '_' and '.', joined by ':'; no '*'), so that llm:model:<name>
// grants it. "gpt-4o", "llama3.1:8b" and "text-embedding-3-small" are.
func ValidModelName(name string) bool {
	if name == "" || len(name) > MaxModelNameLen {
		return false
	}
	for seg := range strings.SplitSeq(name, ":") {
		if seg == "" {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return false
			}
		}
	}
	return true
}

// ModelScopePrefix prefixes a model's name in the scope that grants it:
// llm:model:gpt-4o grants gpt-4o, llm:model:* every model.
const ModelScopePrefix = "llm:model:"

// ValidKey reports whether a tenant, instance or run id can be kept:
// at most MaxKeyBytes of valid UTF-8 without NUL.
func ValidKey(s string) bool {
	return len(s) <= MaxKeyBytes && utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// stamp sets the version and times a store gives a record written at
// updated (now when zero) that replaces version expect.
func stamp(version *int64, created, updated *time.Time, expect int64) error {
	if expect < 0 {
		return invalid("expected version %d is negative", expect)
	}
	now := *updated
	if now.IsZero() {
		now = time.Now()
	}
	now = time.UnixMicro(now.UnixMicro()).UTC()
	*version, *updated = expect+1, now
	if created != nil && expect == 0 {
		*created = now
	}
	return nil
}

// PrepareProvider checks p and sets what a store assigns to a write that
// replaces version expect: the next version, UpdatedAt to the microsecond
// in UTC (now when zero), and CreatedAt for a create. A store keeps the
// stored CreatedAt on a replace.
func PrepareProvider(p *Provider, expect int64) error {
	switch {
	case !ValidKey(p.TenantID):
		return invalid("the tenant id is not valid text of at most %d bytes", MaxKeyBytes)
	case !ValidName(p.Name):
		return invalid("provider name %.70q: want 1 to %d of a-z, 0-9, '_' and '-', starting with a letter", p.Name, MaxNameLen)
	case len(p.BaseURL) > MaxBaseURLBytes:
		return invalid("the base URL is longer than %d bytes", MaxBaseURLBytes)
	case len(p.SealedKey) > MaxSealedKeyBytes:
		return invalid("the sealed key is longer than %d bytes", MaxSealedKeyBytes)
	case p.Timeout < 0 || p.Timeout > MaxProviderTimeout:
		return invalid("the timeout is outside 0 to %s", MaxProviderTimeout)
	}
	if _, _, err := netguard.ParseURL(p.BaseURL); err != nil {
		return invalid("base URL: %v", err)
	}
	if len(p.SealedKey) == 0 {
		p.SealedKey = nil
	}
	return stamp(&p.Version, &p.CreatedAt, &p.UpdatedAt, expect)
}

// PrepareRoute checks r and sets what a store assigns, as PrepareProvider
// does.
func PrepareRoute(r *Route, expect int64) error {
	switch {
	case !ValidKey(r.TenantID):
		return invalid("the tenant id is not valid text of at most %d bytes", MaxKeyBytes)
	case !ValidModelName(r.Name):
		return invalid("model name %.140q: want at most %d letters, digits, '-', '_' and '.' in segments joined by ':'", r.Name, MaxModelNameLen)
	case len(r.Targets) == 0 || len(r.Targets) > MaxTargets:
		return invalid("a route names 1 to %d targets", MaxTargets)
	}
	for _, p := range []float64{r.InputUSDPerMillion, r.OutputUSDPerMillion} {
		if math.IsNaN(p) || p < 0 || p > MaxPriceUSD {
			return invalid("a price per million tokens is from 0 to %g dollars", float64(MaxPriceUSD))
		}
	}
	for i, t := range r.Targets {
		if !ValidName(t.Provider) {
			return invalid("target %d: provider name %.70q is not valid", i, t.Provider)
		}
		if t.Model == "" || len(t.Model) > MaxUpstreamModel || !utf8.ValidString(t.Model) || strings.ContainsFunc(t.Model, isControl) {
			return invalid("target %d: the model is 1 to %d bytes of printable text", i, MaxUpstreamModel)
		}
	}
	return stamp(&r.Version, &r.CreatedAt, &r.UpdatedAt, expect)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// PrepareBudget checks b and sets what a store assigns, as
// PrepareProvider does.
func PrepareBudget(b *Budget, expect int64) error {
	switch {
	case b.TenantID == "" || !ValidKey(b.TenantID) || !ValidKey(b.InstanceID):
		return invalid("a budget names its tenant (and instance) as valid text of at most %d bytes", MaxKeyBytes)
	case b.DailyTokens < 0 || b.DailyCost < 0 || b.RunTokens < 0 || b.RunCost < 0:
		return invalid("a budget's limits are not negative")
	}
	return stamp(&b.Version, nil, &b.UpdatedAt, expect)
}

// CheckUsageQuery checks a usage query and returns its row limit.
func CheckUsageQuery(q UsageQuery) (int, error) {
	for _, d := range []string{q.From, q.To} {
		if d != "" && !ValidDay(d) {
			return 0, invalid("day %.20q is not a date such as 2026-12-31", d)
		}
	}
	if q.Limit < 0 {
		return 0, invalid("a negative limit")
	}
	if q.Limit == 0 || q.Limit > MaxUsageRows {
		return MaxUsageRows, nil
	}
	return q.Limit, nil
}
