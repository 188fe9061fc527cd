package llmgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/problem"
)

// The administration's problem types.
const (
	problemInvalid            = httpapi.TypeInvalidRequest
	problemPreconditionFailed = "https://novaos.dev/problems/precondition-failed"
	problemVersionConflict    = "https://novaos.dev/problems/version-conflict"
	maxPutTries               = 3
	maxAPIKeyBytes            = 8 << 10
)

// usagePaging is the usage listing's page-size rule.
var usagePaging = httpapi.Paging{Default: 100, Max: llm.MaxUsageRows}

func (s *Service) api() *httpapi.API {
	return &httpapi.API{Name: "llm", Logger: s.log, MaxBodyBytes: s.o.MaxAdminBodyBytes,
		Auth: httpapi.AdminOrToken(s.deps.AdminToken, s.deps.Tokens.Authenticator()), ProblemFor: problemFor}
}

// adminRoutes serve the administration (see package llm).
func (s *Service) adminRoutes() []httpapi.Route {
	api := s.api()
	route := func(pattern string, m map[string]adminHandler) httpapi.Route {
		methods := httpapi.Methods{}
		for method, h := range m {
			methods[method] = s.admin(h)
		}
		return httpapi.Route{Pattern: pattern, Handler: api.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			api.Route(w, r, methods)
		}))}
	}
	budget := map[string]adminHandler{http.MethodGet: s.serveBudget, http.MethodPut: s.putBudget, http.MethodDelete: s.deleteBudget}
	return []httpapi.Route{
		route(llm.ProvidersPath, map[string]adminHandler{http.MethodGet: s.serveProviders}),
		route(llm.ProvidersPath+"/{name}", map[string]adminHandler{http.MethodGet: s.serveProvider, http.MethodPut: s.putProvider,
			http.MethodDelete: s.deleteProvider}),
		route(llm.ModelsPath, map[string]adminHandler{http.MethodGet: s.serveRoutes}),
		route(llm.ModelsPath+"/{name}", map[string]adminHandler{http.MethodGet: s.serveRoute, http.MethodPut: s.putRoute,
			http.MethodDelete: s.deleteRoute}),
		route(llm.BudgetsPath, map[string]adminHandler{http.MethodGet: s.serveBudgets}),
		route(llm.BudgetsPath+"/{tenant}", budget),
		route(llm.BudgetsPath+"/{tenant}/instances/{instance}", budget),
		route(llm.UsagePath, map[string]adminHandler{http.MethodGet: s.serveUsage}),
	}
}

// adminHandler serves an administration request of pr; an error it
// returns is the answer (a problem, or a store error problemFor maps).
type adminHandler func(w http.ResponseWriter, r *http.Request, pr principal) error

func (s *Service) admin(h adminHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pr, err := principalOf(r)
		if err == nil {
			err = h(w, r, pr)
		}
		if err != nil {
			s.api().Fail(w, r, err)
		}
	}
}

// writeRecord answers with a versioned record's view and its ETag:
// 201 for a PUT that created it, else 200.
func writeRecord(w http.ResponseWriter, r *http.Request, version int64, v any) {
	w.Header().Set("ETag", httpapi.ETag(version))
	status := http.StatusOK
	if r.Method == http.MethodPut && version == 1 {
		status = http.StatusCreated
	}
	httpapi.WriteJSON(w, r, status, v)
}

// orNotFound is err, or the 404 naming what is missing when the store
// found nothing.
func orNotFound(err error, detail string) error {
	if errors.Is(err, llm.ErrNotFound) {
		return notFound(detail)
	}
	return err
}

// removed answers a DELETE whose store call returned err: 404 with
// missing when there was nothing to remove; else 204, the configuration
// read again from now on and the removal logged (msg, args).
func (s *Service) removed(w http.ResponseWriter, r *http.Request, err error, missing, msg string, args ...any) error {
	if err != nil {
		return orNotFound(err, missing)
	}
	s.cache.clear()
	s.log.InfoContext(r.Context(), msg, args...)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// infos are the wire views of a listing's records.
func infos[T, I any](list []T, info func(*T) I) []I {
	out := make([]I, 0, len(list))
	for i := range list {
		out = append(out, info(&list[i]))
	}
	return out
}

// principal is who calls the administration: the operator, or a token's
// bearer acting on its tenant.
type principal struct {
	operator bool
	tenant   string // the token's tenant; for the operator, what TenantHeader names ("" the platform)
	subject  string
}

// principalOf authenticates an administration caller: the operator,
// naming a tenant with TenantHeader or none (the platform), or a token
// holding llm.ScopeAdmin (a TenantHeader naming another tenant is
// refused).
func principalOf(r *http.Request) (principal, error) {
	c, ok := httpapi.CallerFrom(r.Context())
	if !ok {
		return principal{}, fmt.Errorf("%w: no caller", httpapi.ErrUnauthenticated)
	}
	header := r.Header.Get(llm.TenantHeader)
	if !llm.ValidKey(header) {
		return principal{}, badInput(llm.TenantHeader + " is not a valid tenant id")
	}
	if c.Admin {
		return principal{operator: true, tenant: header, subject: "admin"}, nil
	}
	claims, ok := c.Claims.(*identity.Claims)
	if !ok || claims == nil || claims.TenantID == "" {
		return principal{}, fmt.Errorf("%w: the token names no tenant", httpapi.ErrForbidden)
	}
	if header != "" && header != claims.TenantID {
		return principal{}, forbidden(llm.TenantHeader + " does not match the token's tenant")
	}
	if !claims.HasScope(llm.ScopeAdmin) {
		return principal{}, forbidden("the token lacks the scope " + llm.ScopeAdmin)
	}
	subject := claims.Subject
	if subject == "" {
		subject = claims.AgentID
	}
	return principal{tenant: claims.TenantID, subject: subject}, nil
}

func badInput(detail string) *problem.Problem {
	return &problem.Problem{Type: problemInvalid, Status: http.StatusBadRequest, Title: "Bad Request", Detail: detail}
}

func unprocessable(detail string) *problem.Problem {
	return &problem.Problem{Type: problemInvalid, Status: http.StatusUnprocessableEntity, Title: "Unprocessable Content", Detail: detail}
}

func forbidden(detail string) *problem.Problem {
	return &problem.Problem{Type: problem.TypeForbidden, Status: http.StatusForbidden, Title: "Forbidden", Detail: detail}
}

func notFound(detail string) *problem.Problem {
	return &problem.Problem{Type: problem.TypeNotFound, Status: http.StatusNotFound, Title: "Not Found", Detail: detail}
}

func preconditionFailed(detail string) *problem.Problem {
	return &problem.Problem{Type: problemPreconditionFailed, Status: http.StatusPreconditionFailed, Title: "Precondition Failed", Detail: detail}
}

// problemFor maps the store's errors to problems.
func problemFor(err error) *problem.Problem {
	switch {
	case errors.Is(err, llm.ErrConflict):
		return &problem.Problem{Type: problemVersionConflict, Status: http.StatusConflict, Title: "Conflict",
			Detail: "it changed meanwhile; read it again and retry"}
	case errors.Is(err, llm.ErrInvalid):
		// The message is the check's own, naming the rule broken.
		msg := err.Error()
		if i := strings.LastIndex(msg, "llm: invalid: "); i >= 0 {
			msg = msg[i+len("llm: invalid: "):]
		}
		return unprocessable(msg)
	case errors.Is(err, errNoSealer):
		return &problem.Problem{Type: problemInvalid, Status: http.StatusConflict, Title: "Conflict",
			Detail: "this server keeps no sealing key, so it cannot keep an API key: start it with --seal-key-file or a data directory"}
	}
	return nil
}

// putLoop runs a PUT of a versioned record under its conditions: read
// the stored version (llm.ErrNotFound when there is no record), check the
// conditions, write with that version, and try again when another write
// came between (without conditions).
func putLoop(ctx context.Context, r *http.Request, what string, read func() (int64, error), write func(expect int64, exists bool) error) error {
	cond, err := httpapi.ParseConditions(r)
	if err != nil {
		return err
	}
	for range maxPutTries {
		version, err := read()
		exists := err == nil
		if errors.Is(err, llm.ErrNotFound) {
			version, err = 0, nil
		}
		if err != nil {
			return err
		}
		switch {
		case cond.Match > 0 && (!exists || version != cond.Match):
			return preconditionFailed(fmt.Sprintf("the %s is not at version %d", what, cond.Match))
		case cond.CreateOnly && exists:
			return preconditionFailed("the " + what + " exists")
		}
		err = write(version, exists)
		if !errors.Is(err, llm.ErrConflict) || cond.Any() {
			if errors.Is(err, llm.ErrConflict) {
				return preconditionFailed("the " + what + " changed meanwhile")
			}
			return err
		}
	}
	return fmt.Errorf("the %s keeps changing: %w", what, llm.ErrConflict)
}

func (s *Service) serveProviders(w http.ResponseWriter, r *http.Request, pr principal) error {
	list, err := s.deps.Store.ListProviders(r.Context(), pr.tenant)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, r, http.StatusOK, llm.ProviderList{Providers: infos(list, (*llm.Provider).Info)})
	return nil
}

func (s *Service) serveProvider(w http.ResponseWriter, r *http.Request, pr principal) error {
	name := r.PathValue("name")
	p, err := s.deps.Store.GetProvider(r.Context(), pr.tenant, name)
	if err != nil {
		return orNotFound(err, "no provider "+strconv.Quote(cut(name)))
	}
	writeRecord(w, r, p.Version, p.Info())
	return nil
}

func (s *Service) putProvider(w http.ResponseWriter, r *http.Request, pr principal) error {
	name := r.PathValue("name")
	if !llm.ValidName(name) {
		return unprocessable(fmt.Sprintf("a provider's name is 1 to %d of a-z, 0-9, '_' and '-', starting with a letter", llm.MaxNameLen))
	}
	var in llm.ProviderRequest
	if !s.api().Decode(w, r, &in, httpapi.Body{What: "the provider"}) {
		return nil
	}
	if err := s.guard.CheckURL(in.BaseURL); err != nil {
		return unprocessable("base_url: " + strings.TrimPrefix(err.Error(), "netguard: ") +
			" (loopback and private providers need the server's --llm-allow-private)")
	}
	switch {
	case in.TimeoutMS < 0 || time.Duration(in.TimeoutMS)*time.Millisecond > llm.MaxProviderTimeout:
		return unprocessable("timeout_ms is from 0 to " + strconv.FormatInt(llm.MaxProviderTimeout.Milliseconds(), 10))
	case in.APIKey != nil && len(*in.APIKey) > maxAPIKeyBytes:
		return unprocessable("api_key is longer than " + strconv.Itoa(maxAPIKeyBytes) + " bytes")
	}
	ctx := r.Context()
	var stored, cur llm.Provider
	err := putLoop(ctx, r, "provider", func() (int64, error) {
		var err error
		cur, err = s.deps.Store.GetProvider(ctx, pr.tenant, name)
		return cur.Version, err
	}, func(expect int64, exists bool) error {
		p := llm.Provider{TenantID: pr.tenant, Name: name, BaseURL: in.BaseURL, Timeout: time.Duration(in.TimeoutMS) * time.Millisecond,
			Disabled: in.Disabled, UpdatedAt: s.o.Now()}
		switch {
		case in.APIKey == nil && exists:
			p.SealedKey = cur.SealedKey
		case in.APIKey != nil:
			if err := s.sealKey(&p, *in.APIKey); err != nil {
				return err
			}
		}
		var err error
		stored, err = s.deps.Store.PutProvider(ctx, p, expect)
		return err
	})
	if err != nil {
		return err
	}
	s.cache.clear()
	s.log.InfoContext(ctx, "llmgw: provider stored", "tenant_id", pr.tenant, "provider", name, "version", stored.Version, "caller", pr.subject)
	writeRecord(w, r, stored.Version, stored.Info())
	return nil
}

func (s *Service) deleteProvider(w http.ResponseWriter, r *http.Request, pr principal) error {
	name := r.PathValue("name")
	err := s.deps.Store.DeleteProvider(r.Context(), pr.tenant, name)
	return s.removed(w, r, err, "no provider "+strconv.Quote(cut(name)),
		"llmgw: provider removed", "tenant_id", pr.tenant, "provider", name, "caller", pr.subject)
}

func (s *Service) serveRoutes(w http.ResponseWriter, r *http.Request, pr principal) error {
	list, err := s.deps.Store.ListRoutes(r.Context(), pr.tenant)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, r, http.StatusOK, llm.RouteList{Models: infos(list, (*llm.Route).Info)})
	return nil
}

func (s *Service) serveRoute(w http.ResponseWriter, r *http.Request, pr principal) error {
	name := r.PathValue("name")
	rt, err := s.deps.Store.GetRoute(r.Context(), pr.tenant, name)
	if err != nil {
		return orNotFound(err, "no model "+strconv.Quote(cut(name)))
	}
	writeRecord(w, r, rt.Version, rt.Info())
	return nil
}

func (s *Service) putRoute(w http.ResponseWriter, r *http.Request, pr principal) error {
	name := r.PathValue("name")
	if !llm.ValidModelName(name) {
		return unprocessable(fmt.Sprintf("a model's name is at most %d letters, digits, '-', '_' and '.', in segments joined by ':'",
			llm.MaxModelNameLen))
	}
	var in llm.RouteRequest
	if !s.api().Decode(w, r, &in, httpapi.Body{What: "the model"}) {
		return nil
	}
	ctx := r.Context()
	// A route names its own tenant's providers: a tenant's calls are
	// never priced by a route it wrote onto the platform's keys.
	for i, t := range in.Targets {
		if !llm.ValidName(t.Provider) {
			continue // the store names the rule
		}
		if _, err := s.deps.Store.GetProvider(ctx, pr.tenant, t.Provider); errors.Is(err, llm.ErrNotFound) {
			return unprocessable(fmt.Sprintf("targets[%d]: no provider %q (register it first)", i, t.Provider))
		} else if err != nil {
			return err
		}
	}
	var stored llm.Route
	err := putLoop(ctx, r, "model", func() (int64, error) {
		cur, err := s.deps.Store.GetRoute(ctx, pr.tenant, name)
		return cur.Version, err
	}, func(expect int64, _ bool) error {
		var err error
		stored, err = s.deps.Store.PutRoute(ctx, llm.Route{TenantID: pr.tenant, Name: name, Targets: in.Targets,
			InputUSDPerMillion: in.InputUSDPerMillion, OutputUSDPerMillion: in.OutputUSDPerMillion, UpdatedAt: s.o.Now()}, expect)
		return err
	})
	if err != nil {
		return err
	}
	s.cache.clear()
	s.log.InfoContext(ctx, "llmgw: model stored", "tenant_id", pr.tenant, "model", name, "version", stored.Version, "caller", pr.subject)
	writeRecord(w, r, stored.Version, stored.Info())
	return nil
}

func (s *Service) deleteRoute(w http.ResponseWriter, r *http.Request, pr principal) error {
	name := r.PathValue("name")
	err := s.deps.Store.DeleteRoute(r.Context(), pr.tenant, name)
	return s.removed(w, r, err, "no model "+strconv.Quote(cut(name)),
		"llmgw: model removed", "tenant_id", pr.tenant, "model", name, "caller", pr.subject)
}

// budgetKey is the budget a request's path names, which pr may read:
// the operator any, a token its tenant's.
func budgetKey(r *http.Request, pr principal) (tenant, instance string, err error) {
	tenant, instance = r.PathValue("tenant"), r.PathValue("instance")
	if !llm.ValidKey(tenant) || !llm.ValidKey(instance) || tenant == "" {
		return "", "", badInput("the path names a tenant (and an instance) as text of at most " + strconv.Itoa(llm.MaxKeyBytes) + " bytes")
	}
	if !pr.operator && tenant != pr.tenant {
		return "", "", forbidden("a token reads its own tenant's budgets")
	}
	return tenant, instance, nil
}

// budgetInfo is b with its day's counter.
func (s *Service) budgetInfo(ctx context.Context, b *llm.Budget) (llm.BudgetInfo, error) {
	day := llm.DayOf(s.o.Now())
	sp, err := s.deps.Store.Spent(ctx, llm.Keys{TenantID: b.TenantID, InstanceID: b.InstanceID, Day: day})
	if err != nil {
		return llm.BudgetInfo{}, err
	}
	if b.InstanceID != "" {
		return b.Info(day, sp.Used.InstanceDay, sp.Held.InstanceDay), nil
	}
	return b.Info(day, sp.Used.TenantDay, sp.Held.TenantDay), nil
}

// writeUsage writes what this replica's calls used and it has not
// written yet, so that a budget or usage read here shows them. A failure
// leaves them for the next batch, and the read shows what is written.
func (s *Service) writeUsage(ctx context.Context) {
	if err := s.ledger.flush(ctx, false); err != nil {
		s.log.WarnContext(ctx, "llmgw: write the calls' usage", "err", err)
	}
}

func (s *Service) serveBudgets(w http.ResponseWriter, r *http.Request, pr principal) error {
	tenant := r.URL.Query().Get("tenant")
	if !pr.operator {
		if tenant != "" && tenant != pr.tenant {
			return forbidden("a token reads its own tenant's budgets")
		}
		tenant = pr.tenant
	}
	if !llm.ValidKey(tenant) {
		return httpapi.BadQuery("tenant is not a valid tenant id")
	}
	s.writeUsage(r.Context())
	list, err := s.deps.Store.ListBudgets(r.Context(), tenant)
	if err != nil {
		return err
	}
	out := llm.BudgetList{Budgets: make([]llm.BudgetInfo, 0, len(list))}
	for i := range list {
		info, err := s.budgetInfo(r.Context(), &list[i])
		if err != nil {
			return err
		}
		out.Budgets = append(out.Budgets, info)
	}
	httpapi.WriteJSON(w, r, http.StatusOK, out)
	return nil
}

func (s *Service) serveBudget(w http.ResponseWriter, r *http.Request, pr principal) error {
	tenant, instance, err := budgetKey(r, pr)
	if err != nil {
		return err
	}
	s.writeUsage(r.Context())
	b, err := s.deps.Store.GetBudget(r.Context(), tenant, instance)
	if err != nil {
		return orNotFound(err, "no such budget: the "+scopeName(instance)+" is unlimited")
	}
	info, err := s.budgetInfo(r.Context(), &b)
	if err != nil {
		return err
	}
	writeRecord(w, r, b.Version, info)
	return nil
}

func scopeName(instance string) string {
	if instance == "" {
		return "tenant"
	}
	return "instance"
}

// operatorBudgetKey is the budget a request's path names, which only the
// operator sets.
func operatorBudgetKey(r *http.Request, pr principal) (tenant, instance string, err error) {
	if !pr.operator {
		return "", "", forbidden("budgets are set by the operator")
	}
	return budgetKey(r, pr)
}

func (s *Service) putBudget(w http.ResponseWriter, r *http.Request, pr principal) error {
	tenant, instance, err := operatorBudgetKey(r, pr)
	if err != nil {
		return err
	}
	var in llm.BudgetRequest
	if !s.api().Decode(w, r, &in, httpapi.Body{What: "the budget"}) {
		return nil
	}
	dailyCost, ok1 := llm.CostUSD(in.DailyCostUSD)
	runCost, ok2 := llm.CostUSD(in.RunCostUSD)
	if !ok1 || !ok2 || in.DailyTokens < 0 || in.RunTokens < 0 {
		return unprocessable("a budget's limits are not negative (0 is unlimited)")
	}
	ctx := r.Context()
	var stored llm.Budget
	err = putLoop(ctx, r, "budget", func() (int64, error) {
		cur, err := s.deps.Store.GetBudget(ctx, tenant, instance)
		return cur.Version, err
	}, func(expect int64, _ bool) error {
		var err error
		stored, err = s.deps.Store.PutBudget(ctx, llm.Budget{TenantID: tenant, InstanceID: instance, DailyTokens: in.DailyTokens,
			DailyCost: dailyCost, RunTokens: in.RunTokens, RunCost: runCost, UpdatedAt: s.o.Now()}, expect)
		return err
	})
	if err != nil {
		return err
	}
	s.cache.clear()
	s.log.InfoContext(ctx, "llmgw: budget set", "tenant_id", tenant, "instance_id", instance, "version", stored.Version)
	info, err := s.budgetInfo(ctx, &stored)
	if err != nil {
		return err
	}
	writeRecord(w, r, stored.Version, info)
	return nil
}

func (s *Service) deleteBudget(w http.ResponseWriter, r *http.Request, pr principal) error {
	tenant, instance, err := operatorBudgetKey(r, pr)
	if err != nil {
		return err
	}
	err = s.deps.Store.DeleteBudget(r.Context(), tenant, instance)
	return s.removed(w, r, err, "no such budget", "llmgw: budget removed", "tenant_id", tenant, "instance_id", instance)
}

// serveUsage answers GET UsagePath: ?tenant, instance, model, from and
// to (days) filter, pageSize and pageToken page. A token reads its own
// tenant's.
func (s *Service) serveUsage(w http.ResponseWriter, r *http.Request, pr principal) error {
	v := r.URL.Query()
	q := llm.UsageQuery{TenantID: v.Get("tenant"), InstanceID: v.Get("instance"), Model: v.Get("model"), From: v.Get("from"), To: v.Get("to")}
	if !pr.operator {
		if q.TenantID != "" && q.TenantID != pr.tenant {
			return forbidden("a token reads its own tenant's usage")
		}
		q.TenantID = pr.tenant
	}
	for name, d := range map[string]string{"from": q.From, "to": q.To} {
		if d != "" && !llm.ValidDay(d) {
			return httpapi.BadQuery(name + " is a day such as 2026-12-31")
		}
	}
	if !llm.ValidKey(q.TenantID) || !llm.ValidKey(q.InstanceID) || !llm.ValidKey(q.Model) {
		return httpapi.BadQuery("tenant, instance and model are text of at most " + strconv.Itoa(llm.MaxKeyBytes) + " bytes")
	}
	n, err := httpapi.PageSize(v)
	if err != nil {
		return err
	}
	q.Limit = usagePaging.Clamp(n)
	if tok := v.Get("pageToken"); tok != "" {
		var after llm.UsageKey
		if _, err := httpapi.ParsePageToken(tok, func(key string) bool { return json.Unmarshal([]byte(key), &after) == nil }); err != nil {
			return &problem.Problem{Type: problem.TypeInvalidPageToken, Status: http.StatusBadRequest, Title: "Invalid Page Token",
				Detail: "pageToken is not one this listing gave"}
		}
		q.After = &after
	}
	s.writeUsage(r.Context())
	rows, err := s.deps.Store.Usage(r.Context(), q)
	if err != nil {
		return err
	}
	out := llm.UsageList{Usage: infos(rows, (*llm.UsageRow).Info)}
	if len(rows) == q.Limit {
		key, _ := json.Marshal(rows[len(rows)-1].UsageKey)
		out.NextPageToken = httpapi.PageToken(string(key))
	}
	httpapi.WriteJSON(w, r, http.StatusOK, out)
	return nil
}

// cut bounds a name a caller sent, for a message.
func cut(s string) string {
	if len(s) > 140 {
		return s[:140]
	}
	return s
}
