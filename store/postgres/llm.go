package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// LLMStore returns the database's store of the LLM gateway (an
// llm.Store). Any number of replicas may share it: a put is one
// conditional statement, and a reservation increments its counters
// first, holding their row locks (taken in one order by every writer)
// while it checks the budgets, so concurrent reservations on any replica
// queue on the same rows and none passes a limit.
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

// addCountersSQL adds $5 tokens and $6 nanodollars (either may be
// negative) to a counter, none below zero, as changed at $7, and returns
// what it holds then.
const addCountersSQL = `INSERT INTO llm_counters (tenant, scope, id, day, tokens, cost, last_us)
	VALUES ($1, $2, $3, $4, GREATEST($5::bigint, 0), GREATEST($6::bigint, 0), $7)
	ON CONFLICT (tenant, scope, id, day) DO UPDATE SET tokens = GREATEST(llm_counters.tokens + $5::bigint, 0),
	cost = GREATEST(llm_counters.cost + $6::bigint, 0), last_us = GREATEST(llm_counters.last_us, EXCLUDED.last_us)
	RETURNING tokens, cost`

// addCounters adds a to k's counters, locking their rows in the order
// every writer locks them, and returns what they held before.
func addCounters(ctx context.Context, tx pgx.Tx, k llm.Keys, a llm.Amount, atUS int64) (llm.Spending, error) {
	var before llm.Spending
	for _, c := range sqlstore.LLMCounters(k) {
		var tokens, cost int64
		if err := tx.QueryRow(ctx, addCountersSQL, c.Tenant, c.Scope, c.ID, c.Day, a.Tokens, int64(a.Cost), atUS).Scan(&tokens, &cost); err != nil {
			return before, err
		}
		c.Put(&before, llm.Amount{Tokens: tokens - a.Tokens, Cost: llm.Cost(cost) - a.Cost})
	}
	return before, nil
}

func (s *LLMStore) Reserve(ctx context.Context, k llm.Keys, estimate llm.Amount, at time.Time) (llm.Reservation, error) {
	if err := llm.CheckKeys(k, estimate); err != nil {
		return llm.Reservation{}, fmt.Errorf("postgres: reserve: %w", err)
	}
	r := llm.Reservation{ID: llm.NewReservationID(), Keys: k, Estimate: estimate, At: sqlstore.FromMicros(sqlstore.Micros(at))}
	var refused *llm.BudgetError
	counters := sqlstore.LLMCounters(k)
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		// One round trip: the increments lock the counters first (a
		// concurrent reservation waits there and then sees this one's
		// total), then the budgets are read and the reservation written;
		// a refusal rolls all of it back.
		b := &pgx.Batch{}
		for _, c := range counters {
			b.Queue(addCountersSQL, c.Tenant, c.Scope, c.ID, c.Day, estimate.Tokens, int64(estimate.Cost), sqlstore.Micros(at))
		}
		b.Queue(`SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = $1 AND instance IN ('', $2)`, k.TenantID, k.InstanceID)
		b.Queue(`INSERT INTO llm_reservations (`+sqlstore.LLMReservationCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			sqlstore.LLMReservationArgs(&r)...)
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		var before llm.Spending
		for _, c := range counters {
			var tokens, cost int64
			if err := br.QueryRow().Scan(&tokens, &cost); err != nil {
				return err
			}
			c.Put(&before, llm.Amount{Tokens: tokens - estimate.Tokens, Cost: llm.Cost(cost) - estimate.Cost})
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		list, err := sqlstore.Collect(rows, sqlstore.ScanLLMBudget)
		if err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		var budgets [2]*llm.Budget
		for i := range list {
			if list[i].InstanceID == "" {
				budgets[0] = &list[i]
			} else if k.InstanceID != "" {
				budgets[1] = &list[i]
			}
		}
		if refused = llm.Check(budgets, before, estimate, k.RunID != ""); refused != nil {
			return refused // rolls the increments and the reservation back
		}
		return nil
	})
	switch {
	case refused != nil:
		return llm.Reservation{}, refused
	case err != nil:
		return llm.Reservation{}, fmt.Errorf("postgres: reserve: %w", err)
	}
	return r, nil
}

func (s *LLMStore) Settle(ctx context.Context, r llm.Reservation, st llm.Settlement) error {
	if err := llm.CheckSettlement(st); err != nil {
		return fmt.Errorf("postgres: settle: %w", err)
	}
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		held, err := sqlstore.ScanLLMReservation(tx.QueryRow(ctx, `DELETE FROM llm_reservations WHERE id = $1 RETURNING `+
			sqlstore.LLMReservationCols, r.ID))
		if err != nil {
			return notFound(err)
		}
		used := st.Used()
		delta := llm.Amount{Tokens: used.Tokens - held.Estimate.Tokens, Cost: used.Cost - held.Estimate.Cost}
		if _, err := addCounters(ctx, tx, held.Keys, delta, sqlstore.Micros(held.At)); err != nil {
			return err
		}
		failed := 0
		if st.Failed {
			failed = 1
		}
		_, err = tx.Exec(ctx, `INSERT INTO llm_usage (`+sqlstore.LLMUsageCols+`) VALUES ($1, $2, $3, $4, $5, 1, $6, $7, $8, $9)
			ON CONFLICT (tenant, day, instance, model, provider) DO UPDATE SET calls = llm_usage.calls + 1,
			failed = llm_usage.failed + EXCLUDED.failed, input_tokens = llm_usage.input_tokens + EXCLUDED.input_tokens,
			output_tokens = llm_usage.output_tokens + EXCLUDED.output_tokens, cost = llm_usage.cost + EXCLUDED.cost`,
			held.Keys.TenantID, held.Keys.Day, held.Keys.InstanceID, st.Model, st.Provider, failed, st.Input, st.Output, int64(st.Cost))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: settle reservation %.40q: %w", r.ID, err)
	}
	return nil
}

func (s *LLMStore) Spent(ctx context.Context, k llm.Keys) (llm.Spending, error) {
	var sp llm.Spending
	if !llm.ValidKey(k.TenantID) || !llm.ValidKey(k.InstanceID) || !llm.ValidKey(k.RunID) || !llm.ValidKey(k.Day) {
		return sp, nil
	}
	for _, c := range sqlstore.LLMCounters(k) {
		var tokens, cost int64
		err := s.db.pool.QueryRow(ctx, `SELECT tokens, cost FROM llm_counters WHERE tenant = $1 AND scope = $2 AND id = $3 AND day = $4`,
			c.Tenant, c.Scope, c.ID, c.Day).Scan(&tokens, &cost)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return sp, fmt.Errorf("postgres: spent: %w", err)
		}
		c.Put(&sp, llm.Amount{Tokens: tokens, Cost: llm.Cost(cost)})
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

func (s *LLMStore) Sweep(ctx context.Context, reservedBefore, countersBefore time.Time) error {
	if _, err := s.db.pool.Exec(ctx, `DELETE FROM llm_reservations WHERE at_us < $1`, sqlstore.Micros(reservedBefore)); err != nil {
		return fmt.Errorf("postgres: sweep the LLM ledger: %w", err)
	}
	if _, err := s.db.pool.Exec(ctx, `DELETE FROM llm_counters WHERE last_us < $1`, sqlstore.Micros(countersBefore)); err != nil {
		return fmt.Errorf("postgres: sweep the LLM ledger: %w", err)
	}
	return nil
}
