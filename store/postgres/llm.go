package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// LLMStore returns the database's store of the LLM gateway (an
// llm.Store). Any number of replicas may share it: a put is one
// conditional statement, and a lease locks its counters' rows (in one
// order, taken by every writer) before it reads them and the budgets, so
// concurrent leases on any replica queue on the same rows and none passes
// a limit.
func (db *DB) LLMStore() *LLMStore { return &LLMStore{db} }

// LLMStore keeps the LLM gateway's providers, routes, budgets and usage
// ledger in the database (see llm.Store).
type LLMStore struct{ db *DB }

var _ llm.Store = (*LLMStore)(nil)

func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return llm.ErrNotFound
	}
	return err
}

// putRecord runs a conditional write: an insert (expect 0) doing nothing
// on a taken key, or an update where the version is expect; no row back
// is a conflict. It returns the stored creation time.
func (s *LLMStore) putRecord(ctx context.Context, q string, args []any) (int64, error) {
	var created int64
	err := s.db.pool.QueryRow(ctx, q, args...).Scan(&created)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, llm.ErrConflict
	}
	return created, err
}

func (s *LLMStore) deleteRecord(ctx context.Context, query string, args ...any) error {
	for _, a := range args {
		if !llm.ValidKey(a.(string)) {
			return llm.ErrNotFound
		}
	}
	tag, err := s.db.pool.Exec(ctx, query, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return llm.ErrNotFound
	}
	return nil
}

func (s *LLMStore) PutProvider(ctx context.Context, p llm.Provider, expect int64) (llm.Provider, error) {
	what := fmt.Sprintf("postgres: put provider %.70q", p.Name)
	if err := llm.PrepareProvider(&p, expect); err != nil {
		return llm.Provider{}, fmt.Errorf("%s: %w", what, err)
	}
	args, err := sqlstore.LLMProviderArgs(&p)
	if err != nil {
		return llm.Provider{}, fmt.Errorf("%s: %w", what, err)
	}
	var q string
	if expect == 0 {
		q = `INSERT INTO llm_providers (` + sqlstore.LLMProviderCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (tenant, name) DO NOTHING RETURNING created_us`
	} else {
		// args are in LLMProviderCols' order: tenant, name, version,
		// created_us, updated_us, sealed_key, body.
		q = `UPDATE llm_providers SET version = $3, updated_us = $4, sealed_key = $5, body = $6
			WHERE tenant = $1 AND name = $2 AND version = $7 RETURNING created_us`
		args = append(append(args[:3:3], args[4:]...), expect)
	}
	created, err := s.putRecord(ctx, q, args)
	if err != nil {
		return llm.Provider{}, fmt.Errorf("%s: %w", what, err)
	}
	p.CreatedAt, p.SealedKey = sqlstore.FromMicros(created), sqlstore.Raw(p.SealedKey)
	return p, nil
}

func (s *LLMStore) GetProvider(ctx context.Context, tenantID, name string) (llm.Provider, error) {
	if !llm.ValidKey(tenantID) || !llm.ValidKey(name) {
		return llm.Provider{}, fmt.Errorf("postgres: get provider: %w", llm.ErrNotFound)
	}
	p, err := sqlstore.ScanLLMProvider(s.db.pool.QueryRow(ctx, `SELECT `+sqlstore.LLMProviderCols+` FROM llm_providers
		WHERE tenant = $1 AND name = $2`, tenantID, name))
	if err != nil {
		return llm.Provider{}, fmt.Errorf("postgres: get provider %.70q: %w", name, notFound(err))
	}
	return p, nil
}

func (s *LLMStore) ListProviders(ctx context.Context, tenantID string) ([]llm.Provider, error) {
	if !llm.ValidKey(tenantID) {
		return []llm.Provider{}, nil
	}
	rows, err := s.db.pool.Query(ctx, `SELECT `+sqlstore.LLMProviderCols+` FROM llm_providers WHERE tenant = $1 ORDER BY name`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list providers: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanLLMProvider)
	if err != nil {
		return nil, fmt.Errorf("postgres: list providers: %w", err)
	}
	return out, nil
}

func (s *LLMStore) DeleteProvider(ctx context.Context, tenantID, name string) error {
	if err := s.deleteRecord(ctx, `DELETE FROM llm_providers WHERE tenant = $1 AND name = $2`, tenantID, name); err != nil {
		return fmt.Errorf("postgres: delete provider %.70q: %w", name, err)
	}
	return nil
}

func (s *LLMStore) PutRoute(ctx context.Context, r llm.Route, expect int64) (llm.Route, error) {
	what := fmt.Sprintf("postgres: put route %.140q", r.Name)
	if err := llm.PrepareRoute(&r, expect); err != nil {
		return llm.Route{}, fmt.Errorf("%s: %w", what, err)
	}
	args, err := sqlstore.LLMRouteArgs(&r)
	if err != nil {
		return llm.Route{}, fmt.Errorf("%s: %w", what, err)
	}
	var q string
	if expect == 0 {
		q = `INSERT INTO llm_routes (` + sqlstore.LLMRouteCols + `) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (tenant, name) DO NOTHING RETURNING created_us`
	} else {
		// args: tenant, name, version, created_us, updated_us, body.
		q = `UPDATE llm_routes SET version = $3, updated_us = $4, body = $5
			WHERE tenant = $1 AND name = $2 AND version = $6 RETURNING created_us`
		args = append(append(args[:3:3], args[4:]...), expect)
	}
	created, err := s.putRecord(ctx, q, args)
	if err != nil {
		return llm.Route{}, fmt.Errorf("%s: %w", what, err)
	}
	r.CreatedAt = sqlstore.FromMicros(created)
	return r, nil
}

func (s *LLMStore) GetRoute(ctx context.Context, tenantID, name string) (llm.Route, error) {
	if !llm.ValidKey(tenantID) || !llm.ValidKey(name) {
		return llm.Route{}, fmt.Errorf("postgres: get route: %w", llm.ErrNotFound)
	}
	r, err := sqlstore.ScanLLMRoute(s.db.pool.QueryRow(ctx, `SELECT `+sqlstore.LLMRouteCols+` FROM llm_routes
		WHERE tenant = $1 AND name = $2`, tenantID, name))
	if err != nil {
		return llm.Route{}, fmt.Errorf("postgres: get route %.140q: %w", name, notFound(err))
	}
	return r, nil
}

func (s *LLMStore) ListRoutes(ctx context.Context, tenantID string) ([]llm.Route, error) {
	if !llm.ValidKey(tenantID) {
		return []llm.Route{}, nil
	}
	rows, err := s.db.pool.Query(ctx, `SELECT `+sqlstore.LLMRouteCols+` FROM llm_routes WHERE tenant = $1 ORDER BY name`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list routes: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanLLMRoute)
	if err != nil {
		return nil, fmt.Errorf("postgres: list routes: %w", err)
	}
	return out, nil
}

func (s *LLMStore) DeleteRoute(ctx context.Context, tenantID, name string) error {
	if err := s.deleteRecord(ctx, `DELETE FROM llm_routes WHERE tenant = $1 AND name = $2`, tenantID, name); err != nil {
		return fmt.Errorf("postgres: delete route %.140q: %w", name, err)
	}
	return nil
}

func (s *LLMStore) PutBudget(ctx context.Context, b llm.Budget, expect int64) (llm.Budget, error) {
	if err := llm.PrepareBudget(&b, expect); err != nil {
		return llm.Budget{}, fmt.Errorf("postgres: put budget: %w", err)
	}
	args := sqlstore.LLMBudgetArgs(&b)
	var q string
	if expect == 0 {
		q = `INSERT INTO llm_budgets (` + sqlstore.LLMBudgetCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (tenant, instance) DO NOTHING RETURNING 0::bigint`
	} else {
		q = `UPDATE llm_budgets SET version = $3, updated_us = $4, daily_tokens = $5, daily_cost = $6, run_tokens = $7, run_cost = $8
			WHERE tenant = $1 AND instance = $2 AND version = $9 RETURNING 0::bigint`
		args = append(args, expect)
	}
	if _, err := s.putRecord(ctx, q, args); err != nil {
		return llm.Budget{}, fmt.Errorf("postgres: put budget: %w", err)
	}
	return b, nil
}

func (s *LLMStore) GetBudget(ctx context.Context, tenantID, instanceID string) (llm.Budget, error) {
	if !llm.ValidKey(tenantID) || !llm.ValidKey(instanceID) {
		return llm.Budget{}, fmt.Errorf("postgres: get budget: %w", llm.ErrNotFound)
	}
	b, err := sqlstore.ScanLLMBudget(s.db.pool.QueryRow(ctx, `SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets
		WHERE tenant = $1 AND instance = $2`, tenantID, instanceID))
	if err != nil {
		return llm.Budget{}, fmt.Errorf("postgres: get budget: %w", notFound(err))
	}
	return b, nil
}

func (s *LLMStore) ListBudgets(ctx context.Context, tenantID string) ([]llm.Budget, error) {
	if !llm.ValidKey(tenantID) {
		return []llm.Budget{}, nil
	}
	q, args := `SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets ORDER BY tenant, instance`, []any(nil)
	if tenantID != "" {
		q, args = `SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = $1 ORDER BY instance`, []any{tenantID}
	}
	rows, err := s.db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list budgets: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanLLMBudget)
	if err != nil {
		return nil, fmt.Errorf("postgres: list budgets: %w", err)
	}
	return out, nil
}

func (s *LLMStore) DeleteBudget(ctx context.Context, tenantID, instanceID string) error {
	if err := s.deleteRecord(ctx, `DELETE FROM llm_budgets WHERE tenant = $1 AND instance = $2`, tenantID, instanceID); err != nil {
		return fmt.Errorf("postgres: delete budget: %w", err)
	}
	return nil
}

// changeCounterSQL adds $5 tokens and $6 nanodollars (either may be
// negative) to a counter's count, none below zero, as changed at $7.
const changeCounterSQL = `INSERT INTO llm_counters (tenant, scope, id, day, tokens, cost, last_us)
	VALUES ($1, $2, $3, $4, GREATEST($5::bigint, 0), GREATEST($6::bigint, 0), $7)
	ON CONFLICT (tenant, scope, id, day) DO UPDATE SET tokens = GREATEST(llm_counters.tokens + $5::bigint, 0),
	cost = GREATEST(llm_counters.cost + $6::bigint, 0), last_us = GREATEST(llm_counters.last_us, EXCLUDED.last_us)`

// lockCounterSQL makes a counter if there is none, locks its row, and
// returns its count.
const lockCounterSQL = `INSERT INTO llm_counters (tenant, scope, id, day, tokens, cost, last_us) VALUES ($1, $2, $3, $4, 0, 0, $5)
	ON CONFLICT (tenant, scope, id, day) DO UPDATE SET last_us = GREATEST(llm_counters.last_us, EXCLUDED.last_us)
	RETURNING tokens, cost`

// lockLeasesSQL locks the leases of ids ($1) and reads them.
const lockLeasesSQL = `SELECT ` + sqlstore.LLMLeaseCols + ` FROM llm_reservations WHERE id = ANY($1) ORDER BY id FOR UPDATE`

// lockLedger runs, in one round trip of tx, what a lease and a commit
// begin with: it locks counters (sorted: every writer locks them in
// that order, then the leases, so that none waits for another in a
// circle, and a holder's lease and commit of one lease never both read
// it before either writes it), reads their counts, and locks and reads
// the leases of ids; then reads the budgets of pairs.
func lockLedger(ctx context.Context, tx pgx.Tx, counters []llm.Counter, ids []string, pairs [][2]string, atUS int64) (
	map[llm.Counter]llm.Amount, map[string]llm.HeldLease, map[[2]string]llm.Budget, error) {
	b := &pgx.Batch{}
	for _, c := range counters {
		b.Queue(lockCounterSQL, c.TenantID, c.Scope, c.ID, c.Day, atUS)
	}
	b.Queue(lockLeasesSQL, ids)
	for _, p := range pairs {
		b.Queue(`SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = $1 AND instance = $2`, p[0], p[1])
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	counts := map[llm.Counter]llm.Amount{}
	for _, c := range counters {
		var tokens, cost int64
		if err := br.QueryRow().Scan(&tokens, &cost); err != nil {
			return nil, nil, nil, err
		}
		counts[c] = llm.Amount{Tokens: tokens, Cost: llm.Cost(cost)}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, nil, err
	}
	held := map[string]llm.HeldLease{}
	for rows.Next() {
		id, l, err := sqlstore.ScanLLMLease(rows)
		if err != nil {
			rows.Close()
			return nil, nil, nil, err
		}
		held[id] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, nil, err
	}
	budgets := map[[2]string]llm.Budget{}
	for _, p := range pairs {
		bud, err := sqlstore.ScanLLMBudget(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		budgets[p] = bud
	}
	return counts, held, budgets, br.Close()
}

// queueChanges queues changes to the counters, as made at atUS.
func queueChanges(b *pgx.Batch, changes []llm.CounterChange, atUS int64) {
	for _, c := range changes {
		b.Queue(changeCounterSQL, c.Counter.TenantID, c.Counter.Scope, c.Counter.ID, c.Counter.Day, c.Tokens, c.Cost, atUS)
	}
}

func (s *LLMStore) Lease(ctx context.Context, r llm.LeaseRequest) ([]llm.Grant, error) {
	if err := llm.CheckLeaseRequest(r); err != nil {
		return nil, fmt.Errorf("postgres: lease: %w", err)
	}
	at := sqlstore.Micros(r.At)
	var plan llm.LeasePlan
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		counts, held, budgets, err := lockLedger(ctx, tx, sqlstore.LLMAskCounters(r), sqlstore.LLMLeaseIDs(r), sqlstore.LLMBudgetPairs(r), at)
		if err != nil {
			return err
		}
		if plan, err = llm.PlanLease(r, counts, held, sqlstore.LLMBudgetsOf(budgets)); err != nil {
			return err // a refusal rolls the locking back
		}
		b := &pgx.Batch{}
		for i, a := range r.Asks {
			g := plan.Grants[i]
			switch {
			case g.Gone || g.Refused != nil:
			case a.New:
				b.Queue(`INSERT INTO llm_reservations (`+sqlstore.LLMLeaseCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
					sqlstore.LLMLeaseArgs(a.ID, a.Counter, g.Granted, r.Expires)...)
			default:
				b.Queue(`UPDATE llm_reservations SET tokens = tokens + $2, cost = cost + $3 WHERE id = $1`, a.ID, g.Granted.Tokens, int64(g.Granted.Cost))
			}
		}
		queueChanges(b, plan.Counters, at)
		return tx.SendBatch(ctx, b).Close()
	})
	var be *llm.BudgetError
	switch {
	case errors.As(err, &be):
		return nil, be
	case err != nil:
		return nil, fmt.Errorf("postgres: lease: %w", err)
	}
	return plan.Grants, nil
}

func (s *LLMStore) Commit(ctx context.Context, b llm.Batch) ([]llm.LeaseResult, error) {
	if err := llm.CheckBatch(b); err != nil {
		return nil, fmt.Errorf("postgres: commit: %w", err)
	}
	at := sqlstore.Micros(b.At)
	var counters []llm.Counter
	for _, u := range b.Leases {
		counters = append(counters, u.Counter)
	}
	for _, u := range b.Unleased {
		counters = append(counters, u.Counter)
	}
	slices.SortFunc(counters, llm.CompareCounters)
	counters = slices.Compact(counters)
	usage := slices.Clone(b.Usage)
	// Usage rows are locked in key order too.
	slices.SortFunc(usage, func(x, y llm.UsageRow) int { return x.Compare(y.UsageKey) })
	var plan llm.CommitPlan
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		_, held, _, err := lockLedger(ctx, tx, counters, sqlstore.LLMBatchIDs(b), nil, at)
		if err != nil {
			return err
		}
		plan = llm.PlanCommit(b, held)
		batch := &pgx.Batch{}
		queueChanges(batch, plan.Counters, at)
		for _, l := range plan.Leases {
			if l.End {
				batch.Queue(`DELETE FROM llm_reservations WHERE id = $1`, l.ID)
			} else {
				batch.Queue(`UPDATE llm_reservations SET tokens = $2, cost = $3, at_us = $4 WHERE id = $1`,
					l.ID, l.Left.Tokens, int64(l.Left.Cost), sqlstore.Micros(b.Expires))
			}
		}
		for _, u := range usage {
			batch.Queue(`INSERT INTO llm_usage (`+sqlstore.LLMUsageCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
				ON CONFLICT (tenant, day, instance, model, provider) DO UPDATE SET calls = llm_usage.calls + EXCLUDED.calls,
				failed = llm_usage.failed + EXCLUDED.failed, input_tokens = llm_usage.input_tokens + EXCLUDED.input_tokens,
				output_tokens = llm_usage.output_tokens + EXCLUDED.output_tokens, cost = llm_usage.cost + EXCLUDED.cost`,
				u.TenantID, u.Day, u.InstanceID, u.Model, u.Provider, u.Calls, u.Failed, u.Input, u.Output, int64(u.Cost))
		}
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: commit: %w", err)
	}
	return plan.Results, nil
}

func (s *LLMStore) Spent(ctx context.Context, k llm.Keys) (llm.Spending, error) {
	var sp llm.Spending
	if !llm.ValidKey(k.TenantID) || !llm.ValidKey(k.InstanceID) || !llm.ValidKey(k.RunID) || !llm.ValidKey(k.Day) {
		return sp, nil
	}
	for _, c := range llm.CountersOf(k) {
		inst, run := sqlstore.LLMLeaseKey(c)
		var count, held [2]int64
		err := s.db.pool.QueryRow(ctx, `SELECT
			coalesce((SELECT tokens FROM llm_counters WHERE tenant = $1 AND scope = $2 AND id = $3 AND day = $4), 0),
			coalesce((SELECT cost FROM llm_counters WHERE tenant = $1 AND scope = $2 AND id = $3 AND day = $4), 0),
			coalesce((SELECT sum(tokens) FROM llm_reservations WHERE tenant = $1 AND instance = $5 AND run = $6 AND day = $4), 0)::bigint,
			coalesce((SELECT sum(cost) FROM llm_reservations WHERE tenant = $1 AND instance = $5 AND run = $6 AND day = $4), 0)::bigint`,
			c.TenantID, c.Scope, c.ID, c.Day, inst, run).Scan(&count[0], &count[1], &held[0], &held[1])
		if err != nil {
			return sp, fmt.Errorf("postgres: spent: %w", err)
		}
		sp.Held.Put(c, llm.Amount{Tokens: held[0], Cost: llm.Cost(held[1])})
		sp.Used.Put(c, llm.Amount{Tokens: max(count[0]-held[0], 0), Cost: llm.Cost(max(count[1]-held[1], 0))})
	}
	return sp, nil
}

func (s *LLMStore) Usage(ctx context.Context, q llm.UsageQuery) ([]llm.UsageRow, error) {
	limit, err := llm.CheckUsageQuery(q)
	if err != nil {
		return nil, fmt.Errorf("postgres: usage: %w", err)
	}
	if !llm.ValidKey(q.TenantID) || !llm.ValidKey(q.InstanceID) || !llm.ValidKey(q.Model) ||
		q.After != nil && !llm.ValidKey(q.After.TenantID+q.After.InstanceID+q.After.Model+q.After.Provider) {
		return []llm.UsageRow{}, nil
	}
	query, args := sqlstore.LLMUsageQuery(q, limit, func(n int) string { return fmt.Sprintf("$%d", n) })
	rows, err := s.db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: usage: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanLLMUsage)
	if err != nil {
		return nil, fmt.Errorf("postgres: usage: %w", err)
	}
	return out, nil
}

func (s *LLMStore) Sweep(ctx context.Context, now, countersBefore time.Time) error {
	// An expired lease's allowance stays in its counter's count: used.
	if _, err := s.db.pool.Exec(ctx, `DELETE FROM llm_reservations WHERE at_us < $1`, sqlstore.Micros(now)); err != nil {
		return fmt.Errorf("postgres: sweep the LLM ledger: %w", err)
	}
	if _, err := s.db.pool.Exec(ctx, `DELETE FROM llm_counters WHERE last_us < $1`, sqlstore.Micros(countersBefore)); err != nil {
		return fmt.Errorf("postgres: sweep the LLM ledger: %w", err)
	}
	return nil
}
