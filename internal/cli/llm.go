package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/secret"
)

var llmCommands = []command{
	{"providers", "the OpenAI-compatible APIs models are routed to: llm providers list|show|set|remove", runLLMProviders},
	{"models", "model routes (a name, its providers in order, its price): llm models list|show|set|remove", runLLMModels},
	{"budgets", "tenants' and instances' budgets, with today's use: llm budgets list|show|set|remove", runLLMBudgets},
	{"usage", "daily usage by tenant, instance, model and provider: llm usage [--tenant T] [--from DAY] [--to DAY] …", runLLMUsage},
}

func runLLM(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "llm", llmCommands, args, e)
}

func runLLMProviders(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "llm providers", []command{
		{"list", "the tenant's providers (the platform's without --tenant)", llmProviders.list},
		{"show", "one provider, without its key: llm providers show NAME", llmProviders.show},
		{"set", "create or replace a provider: llm providers set NAME --base-url URL [--api-key-file FILE]", runLLMProvidersSet},
		{"remove", "remove a provider: llm providers remove NAME", llmProviders.remove},
	}, args, e)
}

func runLLMModels(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "llm models", []command{
		{"list", "the tenant's model routes (the platform's without --tenant)", llmModels.list},
		{"show", "one model route: llm models show NAME", llmModels.show},
		{"set", "create or replace a model route: llm models set NAME --target PROVIDER=MODEL … [--input-usd-per-million X]", runLLMModelsSet},
		{"remove", "remove a model route: llm models remove NAME", llmModels.remove},
	}, args, e)
}

func runLLMBudgets(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "llm budgets", []command{
		{"list", "budgets, with what each has used today (every tenant's without --tenant)", runLLMBudgetsList},
		{"show", "one budget: llm budgets show --tenant T [--instance I]", runLLMBudgetsShow},
		{"set", "set a budget (0: unlimited): llm budgets set --tenant T [--instance I] [--daily-tokens N] …", runLLMBudgetsSet},
		{"remove", "remove a budget: llm budgets remove --tenant T [--instance I]", runLLMBudgetsRemove},
	}, args, e)
}

// llmCmd is what every llm subcommand shares: the server, the caller's
// credential and the output format.
type llmCmd struct {
	fs                   *flag.FlagSet
	server               *string
	tokenFile, adminFile *string
	tenant               *string
	json                 *bool
	e                    *env
}

func newLLMCmd(name, synopsis, tenantHelp string, e *env) *llmCmd {
	fs := newFlags(name, name+" "+synopsis+" [--server URL] [--admin-token-file FILE | --token-file FILE] [--json]", e)
	return &llmCmd{
		fs: fs, e: e,
		server:    fs.String("server", defaultServer(e), "NovaOS server `URL` ($"+EnvServer+" sets the default)"),
		adminFile: fs.String("admin-token-file", "", "`file` holding the server's admin token (default $"+EnvAdminToken+"); with no token at all, a server without an admin token takes a caller on its own machine as its admin"),
		tokenFile: fs.String("token-file", "", "`file` holding a platform token with the scope "+llm.ScopeAdmin+", which acts for its own tenant ($"+EnvToken+" is not used: it is usually an agent's)"),
		tenant:    fs.String("tenant", "", tenantHelp),
		json:      fs.Bool("json", false, "print the server's answer as JSON"),
	}
}

const llmTenantRecords = "tenant `id` whose providers and models the admin manages (none: the platform's, which every tenant's calls may use)"

// llmClient calls the gateway's administration.
type llmClient struct {
	base   string
	token  secret.Value
	tenant string // sent as llm.TenantHeader
	http   *http.Client
}

// client builds the client from the flags, or reports a usage error.
func (c *llmCmd) client(sendTenant bool) (*llmClient, int, bool) {
	u, err := neturl.Parse(*c.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, usageError(c.fs, "--server: want an absolute http(s) URL without user information"), false
	}
	if *c.tokenFile != "" && *c.adminFile != "" {
		return nil, usageError(c.fs, "give --admin-token-file or --token-file, not both"), false
	}
	var tok secret.Value
	switch {
	case *c.tokenFile != "":
		tok, err = platformToken(*c.tokenFile)
	default:
		tok, err = adminToken(*c.adminFile, c.e)
	}
	if err != nil {
		fmt.Fprintf(c.e.stderr, "novaos %s: %v\n", c.fs.Name(), err)
		return nil, exitFail, false
	}
	if tok.IsZero() && !isLoopbackHost(u.Hostname()) {
		return nil, usageError(c.fs, "no token: set $%s or --admin-token-file, or --token-file (a platform token with %s)",
			EnvAdminToken, llm.ScopeAdmin), false
	}
	if !tok.IsZero() && u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		fmt.Fprintf(c.e.stderr, "novaos %s: warning: sending a token to %s over plain http\n", c.fs.Name(), u.Host)
	}
	cl := &llmClient{base: strings.TrimRight(*c.server, "/"), token: tok, http: &http.Client{Timeout: 30 * time.Second}}
	if sendTenant {
		cl.tenant = *c.tenant
	}
	return cl, 0, true
}

// llmError is a refusal of the administration: its status and detail.
type llmError struct {
	Status int
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

func (e *llmError) Error() string {
	s := strconv.Itoa(e.Status) + " " + e.Title
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// do sends a request and decodes a JSON answer into out (nil: none).
func (c *llmClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if t := c.token.Reveal(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	if c.tenant != "" {
		req.Header.Set(llm.TenantHeader, c.tenant)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err // not the URL, which may carry a query
		}
		return fmt.Errorf("reach the server: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		e := &llmError{Status: resp.StatusCode}
		if json.Unmarshal(data, e) != nil || e.Title == "" {
			e.Title = http.StatusText(resp.StatusCode)
		}
		return e
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("the server's answer does not decode: %w", err)
		}
	}
	return nil
}

// call sends the command's request and prints its answer, which out
// holds then, with table, or as JSON with --json.
func (c *llmCmd) call(ctx context.Context, sendTenant bool, method, path string, in, out any, table func(io.Writer)) int {
	cl, code, ok := c.client(sendTenant)
	if !ok {
		return code
	}
	if err := cl.do(ctx, method, path, in, out); err != nil {
		return c.fail(err)
	}
	return c.print(out, table)
}

// remove deletes the record at path and says done.
func (c *llmCmd) remove(ctx context.Context, sendTenant bool, path, done string) int {
	cl, code, ok := c.client(sendTenant)
	if !ok {
		return code
	}
	if err := cl.do(ctx, http.MethodDelete, path, nil, nil); err != nil {
		return c.fail(err)
	}
	fmt.Fprintln(c.e.stdout, done)
	return exitOK
}

func (c *llmCmd) fail(err error) int {
	msg := err.Error()
	var le *llmError
	if errors.As(err, &le) && le.Status == http.StatusUnauthorized {
		msg += " (check the token: --admin-token-file, $" + EnvAdminToken + " or --token-file)"
	}
	fmt.Fprintf(c.e.stderr, "novaos %s: %s\n", c.fs.Name(), msg)
	return exitFail
}

// print writes v as JSON with --json, else as table does.
func (c *llmCmd) print(v any, table func(w io.Writer)) int {
	if *c.json {
		enc := json.NewEncoder(c.e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return c.fail(err)
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(c.e.stdout, 0, 4, 2, ' ', 0)
	table(tw)
	tw.Flush()
	return exitOK
}

func pathName(name string) string { return "/" + neturl.PathEscape(name) }

func usd(v float64) string { return "$" + strconv.FormatFloat(v, 'f', -1, 64) }

// llmRecords are a kind of the gateway's records, of a tenant or of the
// platform, that the llm commands list, show, set and remove by name:
// providers, and model routes.
type llmRecords[Info, List any] struct {
	group string // "llm providers"
	noun  string // "provider"
	path  string
	items func(*List) []Info
	table func(io.Writer, ...Info)
}

var (
	llmProviders = llmRecords[llm.ProviderInfo, llm.ProviderList]{group: "llm providers", noun: "provider", path: llm.ProvidersPath,
		items: func(l *llm.ProviderList) []llm.ProviderInfo { return l.Providers }, table: providerTable}
	llmModels = llmRecords[llm.RouteInfo, llm.RouteList]{group: "llm models", noun: "model", path: llm.ModelsPath,
		items: func(l *llm.RouteList) []llm.RouteInfo { return l.Models }, table: routeTable}
)

func (r llmRecords[Info, List]) list(ctx context.Context, args []string, e *env) int {
	c := newLLMCmd(r.group+" list", "[--tenant T]", llmTenantRecords, e)
	if _, code, ok := parseArgsN(c.fs, args, 0, 0, ""); !ok {
		return code
	}
	var out List
	return c.call(ctx, true, http.MethodGet, r.path, nil, &out, func(w io.Writer) { r.table(w, r.items(&out)...) })
}

func (r llmRecords[Info, List]) show(ctx context.Context, args []string, e *env) int {
	c := newLLMCmd(r.group+" show", "NAME [--tenant T]", llmTenantRecords, e)
	name, code, ok := r.name(c, args)
	if !ok {
		return code
	}
	var out Info
	return c.call(ctx, true, http.MethodGet, r.path+pathName(name), nil, &out, func(w io.Writer) { r.table(w, out) })
}

// set puts req as the record name and prints the record answered.
func (r llmRecords[Info, List]) set(ctx context.Context, c *llmCmd, name string, req any) int {
	var out Info
	return c.call(ctx, true, http.MethodPut, r.path+pathName(name), req, &out, func(w io.Writer) { r.table(w, out) })
}

func (r llmRecords[Info, List]) remove(ctx context.Context, args []string, e *env) int {
	c := newLLMCmd(r.group+" remove", "NAME [--tenant T]", llmTenantRecords, e)
	name, code, ok := r.name(c, args)
	if !ok {
		return code
	}
	return c.remove(ctx, true, r.path+pathName(name), r.noun+" "+name+" removed")
}

// name parses c's flags from args and wants the record's name, alone.
func (r llmRecords[Info, List]) name(c *llmCmd, args []string) (string, int, bool) {
	pos, code, ok := parseArgsN(c.fs, args, 1, 1, "the "+r.noun+"'s NAME")
	if !ok {
		return "", code, false
	}
	return pos[0], 0, true
}

func providerTable(w io.Writer, list ...llm.ProviderInfo) {
	fmt.Fprintln(w, "NAME\tBASE URL\tKEY\tTIMEOUT\tDISABLED\tVERSION")
	for _, p := range list {
		key, timeout := "none", "default"
		if p.HasKey {
			key = "sealed"
		}
		if p.TimeoutMS > 0 {
			timeout = (time.Duration(p.TimeoutMS) * time.Millisecond).String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%t\t%d\n", p.Name, p.BaseURL, key, timeout, p.Disabled, p.Version)
	}
}

func runLLMProvidersSet(ctx context.Context, args []string, e *env) int {
	c := newLLMCmd("llm providers set", "NAME --base-url URL [--api-key-file FILE | --no-api-key] [--timeout D] [--disabled] [--tenant T]", llmTenantRecords, e)
	base := c.fs.String("base-url", "", "the provider's OpenAI-compatible base `URL`, ending before /chat/completions (https://api.openai.com/v1, http://127.0.0.1:11434/v1)")
	keyFile := c.fs.String("api-key-file", "", "`file` holding the provider's API key (owner-only); sealed at rest, never shown again. Without it a replaced provider keeps its key")
	noKey := c.fs.Bool("no-api-key", false, "remove the provider's API key (a local model server)")
	timeout := c.fs.Duration("timeout", 0, "time one call to the provider may take (0: the server's --llm-timeout)")
	disabled := c.fs.Bool("disabled", false, "keep the provider but route no call to it")
	name, code, ok := llmProviders.name(c, args)
	if !ok {
		return code
	}
	switch {
	case *base == "":
		return usageError(c.fs, "--base-url is required")
	case *keyFile != "" && *noKey:
		return usageError(c.fs, "give --api-key-file or --no-api-key, not both")
	case *timeout < 0:
		return usageError(c.fs, "--timeout must not be negative")
	}
	req := llm.ProviderRequest{BaseURL: *base, TimeoutMS: timeout.Milliseconds(), Disabled: *disabled}
	if *noKey {
		req.APIKey = new(string)
	}
	if *keyFile != "" {
		key, err := readAPIKey(*keyFile, "--api-key-file")
		if err != nil {
			return c.fail(err)
		}
		k := key.Reveal()
		req.APIKey = &k
	}
	return llmProviders.set(ctx, c, name, req)
}

func routeTable(w io.Writer, list ...llm.RouteInfo) {
	fmt.Fprintln(w, "MODEL\tTARGETS\tINPUT $/1M\tOUTPUT $/1M\tVERSION")
	for _, r := range list {
		var ts []string
		for _, t := range r.Targets {
			ts = append(ts, t.Provider+"="+t.Model)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\n", r.Name, strings.Join(ts, ","), usd(r.InputUSDPerMillion), usd(r.OutputUSDPerMillion), r.Version)
	}
}

func runLLMModelsSet(ctx context.Context, args []string, e *env) int {
	c := newLLMCmd("llm models set", "NAME --target PROVIDER=MODEL … [--input-usd-per-million X] [--output-usd-per-million Y] [--tenant T]", llmTenantRecords, e)
	var targets listFlag
	c.fs.Var(&targets, "target", "a `PROVIDER=MODEL` the model's calls go to, in order: the next is tried when one is rate-limited or down (repeatable)")
	in := c.fs.Float64("input-usd-per-million", 0, "price of a million input tokens in US `dollars`, for budgets and usage")
	out := c.fs.Float64("output-usd-per-million", 0, "price of a million output tokens in US `dollars`")
	name, code, ok := llmModels.name(c, args)
	if !ok {
		return code
	}
	req := llm.RouteRequest{InputUSDPerMillion: *in, OutputUSDPerMillion: *out}
	for _, t := range targets {
		p, m, ok := strings.Cut(t, "=")
		if !ok || p == "" || m == "" {
			return usageError(c.fs, "--target: want PROVIDER=MODEL, not %q", t)
		}
		req.Targets = append(req.Targets, llm.Target{Provider: p, Model: m})
	}
	if len(req.Targets) == 0 {
		return usageError(c.fs, "give at least one --target PROVIDER=MODEL")
	}
	return llmModels.set(ctx, c, name, req)
}

func budgetTable(w io.Writer, list ...llm.BudgetInfo) {
	limit := func(n int64) string {
		if n == 0 {
			return "-"
		}
		return strconv.FormatInt(n, 10)
	}
	cost := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return usd(v)
	}
	fmt.Fprintln(w, "TENANT\tINSTANCE\tDAILY TOKENS\tDAILY COST\tRUN TOKENS\tRUN COST\tUSED TODAY\tHELD")
	for _, b := range list {
		inst := b.InstanceID
		if inst == "" {
			inst = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d tokens, %s\t%d tokens, %s\n", b.TenantID, inst, limit(b.DailyTokens), cost(b.DailyCostUSD),
			limit(b.RunTokens), cost(b.RunCostUSD), b.UsedTokens, usd(b.UsedCostUSD), b.HeldTokens, usd(b.HeldCostUSD))
	}
}

const llmTenantBudget = "tenant `id` of the budget"

// parseBudget parses c's flags from args, which name no record, and
// returns the path of the budget --tenant and instance name.
func parseBudget(c *llmCmd, args []string, instance *string) (string, int, bool) {
	if _, code, ok := parseArgsN(c.fs, args, 0, 0, ""); !ok {
		return "", code, false
	}
	return budgetPath(c, *instance)
}

// budgetPath is the path of the budget --tenant and --instance name.
func budgetPath(c *llmCmd, instance string) (string, int, bool) {
	if *c.tenant == "" {
		return "", usageError(c.fs, "--tenant is required"), false
	}
	p := llm.BudgetsPath + pathName(*c.tenant)
	if instance != "" {
		p += "/instances" + pathName(instance)
	}
	return p, 0, true
}

func runLLMBudgetsList(ctx context.Context, args []string, e *env) int {
	c := newLLMCmd("llm budgets list", "[--tenant T]", "tenant `id` whose budgets to list (none: every tenant's, for the admin)", e)
	if _, code, ok := parseArgsN(c.fs, args, 0, 0, ""); !ok {
		return code
	}
	path := llm.BudgetsPath
	if *c.tenant != "" {
		path += "?tenant=" + neturl.QueryEscape(*c.tenant)
	}
	var out llm.BudgetList
	return c.call(ctx, false, http.MethodGet, path, nil, &out, func(w io.Writer) { budgetTable(w, out.Budgets...) })
}

func runLLMBudgetsShow(ctx context.Context, args []string, e *env) int {
	c := newLLMCmd("llm budgets show", "--tenant T [--instance I]", llmTenantBudget, e)
	inst := c.fs.String("instance", "", "the instance `id` whose budget to show (none: the tenant's)")
	path, code, ok := parseBudget(c, args, inst)
	if !ok {
		return code
	}
	var out llm.BudgetInfo
	return c.call(ctx, false, http.MethodGet, path, nil, &out, func(w io.Writer) { budgetTable(w, out) })
}

func runLLMBudgetsSet(ctx context.Context, args []string, e *env) int {
	c := newLLMCmd("llm budgets set", "--tenant T [--instance I] [--daily-tokens N] [--daily-cost-usd X] [--run-tokens N] [--run-cost-usd X]", llmTenantBudget, e)
	inst := c.fs.String("instance", "", "the instance `id` the budget is for (none: the whole tenant)")
	var req llm.BudgetRequest
	c.fs.Int64Var(&req.DailyTokens, "daily-tokens", 0, "`tokens` a UTC day's calls may use (0: unlimited)")
	c.fs.Float64Var(&req.DailyCostUSD, "daily-cost-usd", 0, "US `dollars` a UTC day's calls may cost (0: unlimited)")
	c.fs.Int64Var(&req.RunTokens, "run-tokens", 0, "`tokens` the calls of one run may use (0: unlimited)")
	c.fs.Float64Var(&req.RunCostUSD, "run-cost-usd", 0, "US `dollars` the calls of one run may cost (0: unlimited)")
	if _, code, ok := parseArgsN(c.fs, args, 0, 0, ""); !ok {
		return code
	}
	if req.DailyTokens < 0 || req.RunTokens < 0 || req.DailyCostUSD < 0 || req.RunCostUSD < 0 {
		return usageError(c.fs, "limits must not be negative (0 is unlimited)")
	}
	path, code, ok := budgetPath(c, *inst)
	if !ok {
		return code
	}
	var out llm.BudgetInfo
	return c.call(ctx, false, http.MethodPut, path, req, &out, func(w io.Writer) { budgetTable(w, out) })
}

func runLLMBudgetsRemove(ctx context.Context, args []string, e *env) int {
	c := newLLMCmd("llm budgets remove", "--tenant T [--instance I]", llmTenantBudget, e)
	inst := c.fs.String("instance", "", "the instance `id` whose budget to remove (none: the tenant's)")
	path, code, ok := parseBudget(c, args, inst)
	if !ok {
		return code
	}
	return c.remove(ctx, false, path, "budget removed")
}

// maxUsagePages bounds the pages llm usage reads.
const maxUsagePages = 100

func runLLMUsage(ctx context.Context, args []string, e *env) int {
	c := newLLMCmd("llm usage", "[--tenant T] [--instance I] [--model M] [--from DAY] [--to DAY]", "tenant `id` whose usage to show (none: every tenant's, for the admin)", e)
	inst := c.fs.String("instance", "", "only this instance `id`'s calls")
	model := c.fs.String("model", "", "only this `model`'s calls")
	from := c.fs.String("from", "", "first `day` (YYYY-MM-DD, UTC)")
	to := c.fs.String("to", "", "last `day` (YYYY-MM-DD, UTC)")
	if _, code, ok := parseArgsN(c.fs, args, 0, 0, ""); !ok {
		return code
	}
	for _, d := range []string{*from, *to} {
		if d != "" && !llm.ValidDay(d) {
			return usageError(c.fs, "--from and --to are days such as 2026-12-31")
		}
	}
	cl, code, ok := c.client(false)
	if !ok {
		return code
	}
	q := neturl.Values{}
	for k, v := range map[string]string{"tenant": *c.tenant, "instance": *inst, "model": *model, "from": *from, "to": *to} {
		if v != "" {
			q.Set(k, v)
		}
	}
	q.Set("pageSize", strconv.Itoa(llm.MaxUsageRows))
	var all llm.UsageList
	for range maxUsagePages {
		var page llm.UsageList
		if err := cl.do(ctx, http.MethodGet, llm.UsagePath+"?"+q.Encode(), nil, &page); err != nil {
			return c.fail(err)
		}
		all.Usage = append(all.Usage, page.Usage...)
		if page.NextPageToken == "" {
			break
		}
		q.Set("pageToken", page.NextPageToken)
	}
	all.Usage = append([]llm.UsageInfo{}, all.Usage...)
	return c.print(all, func(w io.Writer) {
		fmt.Fprintln(w, "DAY\tTENANT\tINSTANCE\tMODEL\tPROVIDER\tCALLS\tFAILED\tINPUT\tOUTPUT\tCOST")
		for _, u := range all.Usage {
			inst := u.InstanceID
			if inst == "" {
				inst = "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", u.Day, u.TenantID, inst, u.Model, u.Provider, u.Calls, u.Failed,
				u.InputTokens, u.OutputTokens, usd(u.CostUSD))
		}
	})
}

// parseArgsN parses args (flags may follow the arguments) and wants lo
// to hi positional arguments, named by what.
func parseArgsN(fs *flag.FlagSet, args []string, lo, hi int, what string) ([]string, int, bool) {
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return nil, code, false
	}
	switch {
	case len(pos) < lo:
		return nil, usageError(fs, "want %s", what), false
	case len(pos) > hi:
		return nil, usageError(fs, "unexpected argument %q", pos[hi]), false
	}
	return pos, 0, true
}
