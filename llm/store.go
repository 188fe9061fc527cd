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
	// ErrBudgetExceeded is wrapped by the *BudgetError a reservation that
	// would overspend a budget fails with.
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

// Reservation is an estimate held against every budget a call's keys
// fall under, until Settle replaces it with what the call used.
type Reservation struct {
	ID       string
	Keys     Keys
	Estimate Amount
	At       time.Time
}

// Settlement is what a call used, as its provider reported it (or its
// estimate, when the provider reported nothing), and where it went.
type Settlement struct {
	Model    string // the route's name
	Provider string // the provider that answered; "" when none did
	Input    int64  // prompt tokens
	Output   int64  // completion tokens
	Cost     Cost
	// Failed is set when the call did not end in an answer.
	Failed bool
}

// Spending is what the budget counters of a call's keys hold: the
// tenant's and the instance's day, and the run.
type Spending struct {
	TenantDay   Amount
	InstanceDay Amount
	Run         Amount
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
// its usage ledger: budget counters, reservations and the daily usage of
// settled calls. store/sqlite and store/postgres implement it;
// store/storetest is its contract suite. Implementations are safe for
// concurrent use, and Reserve is atomic across every process sharing the
// store: concurrent reservations never take a counter past a limit.
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

	// Reserve holds estimate against the counters of k: the tenant's day,
	// the instance's day and the run. When it would take any counter past
	// a limit of a budget that applies (the tenant's, and the instance's
	// when k names one), nothing is held and the error is a *BudgetError
	// for the first such limit, in the order tenant, instance; daily,
	// per-run; tokens, cost.
	Reserve(ctx context.Context, k Keys, estimate Amount, at time.Time) (Reservation, error)
	// Settle replaces a reservation's estimate with what the call used,
	// in the counters it was held in, and adds the call to the usage of
	// its tenant, day, instance, model and provider. A reservation that is
	// not held (settled already, or swept) is ErrNotFound, and nothing
	// changes.
	Settle(ctx context.Context, r Reservation, s Settlement) error
	// Spent returns the counters of k.
	Spent(ctx context.Context, k Keys) (Spending, error)
	// Usage lists usage rows in UsageKey order.
	Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error)
	// Sweep deletes the reservations made before reservedBefore, leaving
	// their estimates counted (their calls may have run), and the counters
	// last changed before countersBefore.
	Sweep(ctx context.Context, reservedBefore, countersBefore time.Time) error
}

// BudgetError says which budget a reservation would overspend. Its text
// names the budget and the amounts, never a key or token.
type BudgetError struct {
	Scope  string // ScopeTenant or ScopeInstance: whose budget
	Window string // WindowDaily or WindowRun
	Metric string // MetricTokens or MetricCost
	// Limit, Used and Asked are tokens, or nanodollars (a Cost) for
	// MetricCost: the limit, what the counter held, and the estimate.
	Limit, Used, Asked int64
}

func (e *BudgetError) Error() string {
	whose := "the tenant's"
	if e.Scope == ScopeInstance {
		whose = "the agent instance's"
	}
	what := "token"
	amount := func(v int64) string { return strconv.FormatInt(v, 10) + " tokens" }
	if e.Metric == MetricCost {
		what = "cost"
		amount = func(v int64) string { return Cost(v).String() }
	}
	where := "today"
	if e.Window == WindowRun {
		where = "in this run"
	}
	return fmt.Sprintf("%s %s %s budget is spent: %s of %s used %s, and this call may need %s",
		whose, e.Window, what, amount(e.Used), amount(e.Limit), where, amount(e.Asked))
}

// Unwrap makes errors.Is(err, ErrBudgetExceeded) hold.
func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

// Check returns the first limit of budgets (tenant's, then instance's;
// nil ones skipped) that adding asked to the counters in sp would pass,
// or nil. Every Store decides with it.
func Check(budgets [2]*Budget, sp Spending, asked Amount, run bool) *BudgetError {
	type limit struct {
		window, metric string
		max, used, ask int64
	}
	for _, b := range budgets {
		if b == nil {
			continue
		}
		day := sp.TenantDay
		if b.InstanceID != "" {
			day = sp.InstanceDay
		}
		limits := []limit{
			{WindowDaily, MetricTokens, b.DailyTokens, day.Tokens, asked.Tokens},
			{WindowDaily, MetricCost, int64(b.DailyCost), int64(day.Cost), int64(asked.Cost)},
		}
		if run {
			limits = append(limits, limit{WindowRun, MetricTokens, b.RunTokens, sp.Run.Tokens, asked.Tokens},
				limit{WindowRun, MetricCost, int64(b.RunCost), int64(sp.Run.Cost), int64(asked.Cost)})
		}
		for _, l := range limits {
			if l.max > 0 && satAdd(Cost(l.used), Cost(l.ask)) > Cost(l.max) {
				return &BudgetError{Scope: b.Scope(), Window: l.window, Metric: l.metric, Limit: l.max, Used: l.used, Asked: l.ask}
			}
		}
	}
	return nil
}

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

// CheckKeys checks what Reserve is given.
func CheckKeys(k Keys, estimate Amount) error {
	switch {
	case k.TenantID == "" || !ValidKey(k.TenantID) || !ValidKey(k.InstanceID) || !ValidKey(k.RunID):
		return invalid("usage keys name a tenant, and an instance and a run, as valid text of at most %d bytes", MaxKeyBytes)
	case !ValidDay(k.Day):
		return invalid("day %.20q is not a date as DayOf writes it", k.Day)
	case estimate.Tokens < 0 || estimate.Cost < 0 || estimate.Tokens > MaxAmount || estimate.Cost > MaxAmount:
		return invalid("an estimate outside 0 to %d", int64(MaxAmount))
	}
	return nil
}

// CheckSettlement checks what Settle is given.
func CheckSettlement(s Settlement) error {
	switch {
	case s.Input < 0 || s.Output < 0 || s.Cost < 0 || s.Input > MaxAmount || s.Output > MaxAmount || s.Cost > MaxAmount:
		return invalid("a settlement outside 0 to %d", int64(MaxAmount))
	case !ValidKey(s.Model) || !ValidKey(s.Provider):
		return invalid("the model and provider are valid text of at most %d bytes", MaxKeyBytes)
	}
	return nil
}

// Used is what a settlement counts against budgets.
func (s Settlement) Used() Amount {
	return Amount{Tokens: int64(satAdd(Cost(s.Input), Cost(s.Output))), Cost: s.Cost}
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
