package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// LLMStore returns the database's store of the LLM gateway (an
// llm.Store). Its writes go through the database's single writer, so a
// lease's check of the budgets and its increment of the counters are one
// step, in this process or another using the file.
func (db *DB) LLMStore() *LLMStore { return &LLMStore{db} }

// LLMStore keeps the LLM gateway's providers, routes, budgets and usage
// ledger in the database (see llm.Store).
type LLMStore struct{ db *DB }

var _ llm.Store = (*LLMStore)(nil)

// put is the compare-and-set of a keyed record: the stored version (0
// when none) must be expect. created is filled with the stored creation
// time.
func (s *LLMStore) put(ctx context.Context, table string, key [2]string, keyCols string, expect int64, created *int64,
	write func(tx *sql.Tx) error) error {
	return s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		var stored, c int64
		q := `SELECT version, 0 FROM ` + table + ` WHERE ` + keyCols
		if created != nil {
			q = `SELECT version, created_us FROM ` + table + ` WHERE ` + keyCols
		}
		err := tx.QueryRow(q, key[0], key[1]).Scan(&stored, &c)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if stored != expect {
			return fmt.Errorf("version %d is not the stored %d: %w", expect, stored, llm.ErrConflict)
		}
		if created != nil && expect > 0 {
			*created = c
		}
		return write(tx)
	})
}

func (s *LLMStore) delete(ctx context.Context, query string, args ...any) error {
	return s.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(query, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return llm.ErrNotFound
		}
		return nil
	})
}

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return llm.ErrNotFound
	}
	return err
}

func (s *LLMStore) PutProvider(ctx context.Context, p llm.Provider, expect int64) (llm.Provider, error) {
	what := fmt.Sprintf("sqlite: put provider %.70q", p.Name)
	if err := llm.PrepareProvider(&p, expect); err != nil {
		return llm.Provider{}, fmt.Errorf("%s: %w", what, err)
	}
	created := sqlstore.Micros(p.CreatedAt)
	err := s.put(ctx, "llm_providers", [2]string{p.TenantID, p.Name}, "tenant = ? AND name = ?", expect, &created, func(tx *sql.Tx) error {
		p.CreatedAt = sqlstore.FromMicros(created)
		args, err := sqlstore.LLMProviderArgs(&p)
		if err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT OR REPLACE INTO llm_providers (`+sqlstore.LLMProviderCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`, args...)
		return err
	})
	if err != nil {
		return llm.Provider{}, fmt.Errorf("%s: %w", what, err)
	}
	p.SealedKey = sqlstore.Raw(p.SealedKey)
	return p, nil
}

func (s *LLMStore) GetProvider(ctx context.Context, tenantID, name string) (llm.Provider, error) {
	p, err := sqlstore.ScanLLMProvider(s.db.queryRow(ctx, `SELECT `+sqlstore.LLMProviderCols+` FROM llm_providers WHERE tenant = ? AND name = ?`, tenantID, name))
	if err != nil {
		return llm.Provider{}, fmt.Errorf("sqlite: get provider %.70q: %w", name, notFound(err))
	}
	return p, nil
}

func (s *LLMStore) ListProviders(ctx context.Context, tenantID string) ([]llm.Provider, error) {
	rows, err := s.db.query(ctx, `SELECT `+sqlstore.LLMProviderCols+` FROM llm_providers WHERE tenant = ? ORDER BY name`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list providers: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanLLMProvider)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list providers: %w", err)
	}
	return out, nil
}

func (s *LLMStore) DeleteProvider(ctx context.Context, tenantID, name string) error {
	if err := s.delete(ctx, `DELETE FROM llm_providers WHERE tenant = ? AND name = ?`, tenantID, name); err != nil {
		return fmt.Errorf("sqlite: delete provider %.70q: %w", name, err)
	}
	return nil
}

func (s *LLMStore) PutRoute(ctx context.Context, r llm.Route, expect int64) (llm.Route, error) {
	what := fmt.Sprintf("sqlite: put route %.140q", r.Name)
	if err := llm.PrepareRoute(&r, expect); err != nil {
		return llm.Route{}, fmt.Errorf("%s: %w", what, err)
	}
	created := sqlstore.Micros(r.CreatedAt)
	err := s.put(ctx, "llm_routes", [2]string{r.TenantID, r.Name}, "tenant = ? AND name = ?", expect, &created, func(tx *sql.Tx) error {
		r.CreatedAt = sqlstore.FromMicros(created)
		args, err := sqlstore.LLMRouteArgs(&r)
		if err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT OR REPLACE INTO llm_routes (`+sqlstore.LLMRouteCols+`) VALUES (?, ?, ?, ?, ?, ?)`, args...)
		return err
	})
	if err != nil {
		return llm.Route{}, fmt.Errorf("%s: %w", what, err)
	}
	return r, nil
}

func (s *LLMStore) GetRoute(ctx context.Context, tenantID, name string) (llm.Route, error) {
	r, err := sqlstore.ScanLLMRoute(s.db.queryRow(ctx, `SELECT `+sqlstore.LLMRouteCols+` FROM llm_routes WHERE tenant = ? AND name = ?`, tenantID, name))
	if err != nil {
		return llm.Route{}, fmt.Errorf("sqlite: get route %.140q: %w", name, notFound(err))
	}
	return r, nil
}

func (s *LLMStore) ListRoutes(ctx context.Context, tenantID string) ([]llm.Route, error) {
	rows, err := s.db.query(ctx, `SELECT `+sqlstore.LLMRouteCols+` FROM llm_routes WHERE tenant = ? ORDER BY name`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list routes: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanLLMRoute)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list routes: %w", err)
	}
	return out, nil
}

func (s *LLMStore) DeleteRoute(ctx context.Context, tenantID, name string) error {
	if err := s.delete(ctx, `DELETE FROM llm_routes WHERE tenant = ? AND name = ?`, tenantID, name); err != nil {
		return fmt.Errorf("sqlite: delete route %.140q: %w", name, err)
	}
	return nil
}

func (s *LLMStore) PutBudget(ctx context.Context, b llm.Budget, expect int64) (llm.Budget, error) {
	if err := llm.PrepareBudget(&b, expect); err != nil {
		return llm.Budget{}, fmt.Errorf("sqlite: put budget: %w", err)
	}
	err := s.put(ctx, "llm_budgets", [2]string{b.TenantID, b.InstanceID}, "tenant = ? AND instance = ?", expect, nil, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT OR REPLACE INTO llm_budgets (`+sqlstore.LLMBudgetCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, sqlstore.LLMBudgetArgs(&b)...)
		return err
	})
	if err != nil {
		return llm.Budget{}, fmt.Errorf("sqlite: put budget: %w", err)
	}
	return b, nil
}

func (s *LLMStore) GetBudget(ctx context.Context, tenantID, instanceID string) (llm.Budget, error) {
	b, err := sqlstore.ScanLLMBudget(s.db.queryRow(ctx, `SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = ? AND instance = ?`, tenantID, instanceID))
	if err != nil {
		return llm.Budget{}, fmt.Errorf("sqlite: get budget: %w", notFound(err))
	}
	return b, nil
}

func (s *LLMStore) ListBudgets(ctx context.Context, tenantID string) ([]llm.Budget, error) {
	q, args := `SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets ORDER BY tenant, instance`, []any(nil)
	if tenantID != "" {
		q, args = `SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = ? ORDER BY instance`, []any{tenantID}
	}
	rows, err := s.db.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list budgets: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanLLMBudget)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list budgets: %w", err)
	}
	return out, nil
}

func (s *LLMStore) DeleteBudget(ctx context.Context, tenantID, instanceID string) error {
	if err := s.delete(ctx, `DELETE FROM llm_budgets WHERE tenant = ? AND instance = ?`, tenantID, instanceID); err != nil {
		return fmt.Errorf("sqlite: delete budget: %w", err)
	}
	return nil
}

type querier interface {
	Query(string, ...any) (*sql.Rows, error)
	QueryRow(string, ...any) *sql.Row
}

// budgetsIn reads the budgets of the (tenant, instance) pairs.
func budgetsIn(q querier, pairs [][2]string) (map[[2]string]llm.Budget, error) {
	out := map[[2]string]llm.Budget{}
	for _, p := range pairs {
		b, err := sqlstore.ScanLLMBudget(q.QueryRow(`SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = ? AND instance = ?`, p[0], p[1]))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[p] = b
	}
	return out, nil
}

// countOf reads counter c's count.
func countOf(q querier, c llm.Counter) (llm.Amount, error) {
	var tokens, cost int64
	err := q.QueryRow(`SELECT tokens, cost FROM llm_counters WHERE tenant = ? AND scope = ? AND id = ? AND day = ?`,
		c.TenantID, c.Scope, c.ID, c.Day).Scan(&tokens, &cost)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return llm.Amount{}, err
	}
	return llm.Amount{Tokens: tokens, Cost: llm.Cost(cost)}, nil
}

// leasesIn reads the leases of ids that are held.
func leasesIn(q querier, ids []string) (map[string]llm.HeldLease, error) {
	out := map[string]llm.HeldLease{}
	for _, id := range ids {
		got, l, err := sqlstore.ScanLLMLease(q.QueryRow(`SELECT `+sqlstore.LLMLeaseCols+` FROM llm_reservations WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[got] = l
	}
	return out, nil
}

// changeCounters applies changes to the counters, none below zero, as
// made at atUS.
func changeCounters(tx *sql.Tx, changes []llm.CounterChange, atUS int64) error {
	for _, c := range changes {
		_, err := tx.Exec(`INSERT INTO llm_counters (tenant, scope, id, day, tokens, cost, last_us) VALUES (?, ?, ?, ?, max(?, 0), max(?, 0), ?)
			ON CONFLICT (tenant, scope, id, day) DO UPDATE SET tokens = max(tokens + ?, 0),
			cost = max(cost + ?, 0), last_us = max(last_us, excluded.last_us)`,
			c.Counter.TenantID, c.Counter.Scope, c.Counter.ID, c.Counter.Day, c.Tokens, c.Cost, atUS, c.Tokens, c.Cost)
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *LLMStore) Lease(ctx context.Context, r llm.LeaseRequest) ([]llm.Grant, error) {
	if err := llm.CheckLeaseRequest(r); err != nil {
		return nil, fmt.Errorf("sqlite: lease: %w", err)
	}
	var plan llm.LeasePlan
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		// The single writer reads, decides and writes with no other write
		// in between.
		counts := map[llm.Counter]llm.Amount{}
		for _, c := range sqlstore.LLMAskCounters(r) {
			n, err := countOf(tx, c)
			if err != nil {
				return err
			}
			counts[c] = n
		}
		held, err := leasesIn(tx, sqlstore.LLMLeaseIDs(r))
		if err != nil {
			return err
		}
		budgets, err := budgetsIn(tx, sqlstore.LLMBudgetPairs(r))
		if err != nil {
			return err
		}
		if plan, err = llm.PlanLease(r, counts, held, sqlstore.LLMBudgetsOf(budgets)); err != nil {
			return err
		}
		for i, a := range r.Asks {
			g := plan.Grants[i]
			switch {
			case g.Gone || g.Refused != nil:
				continue
			case a.New:
				_, err = tx.Exec(`INSERT INTO llm_reservations (`+sqlstore.LLMLeaseCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
					sqlstore.LLMLeaseArgs(a.ID, a.Counter, g.Granted, r.Expires)...)
			default:
				_, err = tx.Exec(`UPDATE llm_reservations SET tokens = tokens + ?, cost = cost + ? WHERE id = ?`,
					g.Granted.Tokens, int64(g.Granted.Cost), a.ID)
			}
			if err != nil {
				return err
			}
		}
		return changeCounters(tx, plan.Counters, sqlstore.Micros(r.At))
	})
	var be *llm.BudgetError
	switch {
	case errors.As(err, &be):
		return nil, be
	case err != nil:
		return nil, fmt.Errorf("sqlite: lease: %w", err)
	}
	return plan.Grants, nil
}

func (s *LLMStore) Commit(ctx context.Context, b llm.Batch) ([]llm.LeaseResult, error) {
	if err := llm.CheckBatch(b); err != nil {
		return nil, fmt.Errorf("sqlite: commit: %w", err)
	}
	var plan llm.CommitPlan
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		held, err := leasesIn(tx, sqlstore.LLMBatchIDs(b))
		if err != nil {
			return err
		}
		plan = llm.PlanCommit(b, held)
		if err := changeCounters(tx, plan.Counters, sqlstore.Micros(b.At)); err != nil {
			return err
		}
		for _, l := range plan.Leases {
			if l.End {
				_, err = tx.Exec(`DELETE FROM llm_reservations WHERE id = ?`, l.ID)
			} else {
				_, err = tx.Exec(`UPDATE llm_reservations SET tokens = ?, cost = ?, at_us = ? WHERE id = ?`,
					l.Left.Tokens, int64(l.Left.Cost), sqlstore.Micros(b.Expires), l.ID)
			}
			if err != nil {
				return err
			}
		}
		for _, u := range b.Usage {
			_, err := tx.Exec(`INSERT INTO llm_usage (`+sqlstore.LLMUsageCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (tenant, day, instance, model, provider) DO UPDATE SET calls = calls + excluded.calls,
				failed = failed + excluded.failed, input_tokens = input_tokens + excluded.input_tokens,
				output_tokens = output_tokens + excluded.output_tokens, cost = cost + excluded.cost`,
				u.TenantID, u.Day, u.InstanceID, u.Model, u.Provider, u.Calls, u.Failed, u.Input, u.Output, int64(u.Cost))
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: commit: %w", err)
	}
	return plan.Results, nil
}

func (s *LLMStore) Spent(ctx context.Context, k llm.Keys) (llm.Spending, error) {
	var sp llm.Spending
	q := rowQuerier{ctx, s.db}
	for _, c := range llm.CountersOf(k) {
		count, err := countOf(q, c)
		if err != nil {
			return llm.Spending{}, fmt.Errorf("sqlite: spent: %w", err)
		}
		inst, run := sqlstore.LLMLeaseKey(c)
		var tokens, cost int64
		if err := q.QueryRow(`SELECT coalesce(sum(tokens), 0), coalesce(sum(cost), 0) FROM llm_reservations
			WHERE tenant = ? AND instance = ? AND run = ? AND day = ?`, c.TenantID, inst, run, c.Day).Scan(&tokens, &cost); err != nil {
			return llm.Spending{}, fmt.Errorf("sqlite: spent: %w", err)
		}
		held := llm.Amount{Tokens: tokens, Cost: llm.Cost(cost)}
		sp.Held.Put(c, held)
		sp.Used.Put(c, llm.Amount{Tokens: max(count.Tokens-held.Tokens, 0), Cost: max(count.Cost-held.Cost, 0)})
	}
	return sp, nil
}

// rowQuerier reads outside the writer.
type rowQuerier struct {
	ctx context.Context
	db  *DB
}

func (q rowQuerier) QueryRow(query string, args ...any) *sql.Row {
	return q.db.queryRow(q.ctx, query, args...)
}

func (q rowQuerier) Query(query string, args ...any) (*sql.Rows, error) {
	return q.db.query(q.ctx, query, args...)
}

func (s *LLMStore) Usage(ctx context.Context, q llm.UsageQuery) ([]llm.UsageRow, error) {
	limit, err := llm.CheckUsageQuery(q)
	if err != nil {
		return nil, fmt.Errorf("sqlite: usage: %w", err)
	}
	query, args := sqlstore.LLMUsageQuery(q, limit, func(int) string { return "?" })
	rows, err := s.db.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: usage: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanLLMUsage)
	if err != nil {
		return nil, fmt.Errorf("sqlite: usage: %w", err)
	}
	return out, nil
}

func (s *LLMStore) Sweep(ctx context.Context, now, countersBefore time.Time) error {
	err := s.db.wr.do(ctx, func(tx *sql.Tx) error {
		// An expired lease's allowance stays in its counter's count: used.
		if _, err := tx.Exec(`DELETE FROM llm_reservations WHERE at_us < ?`, sqlstore.Micros(now)); err != nil {
			return err
		}
		_, err := tx.Exec(`DELETE FROM llm_counters WHERE last_us < ?`, sqlstore.Micros(countersBefore))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: sweep the LLM ledger: %w", err)
	}
	return nil
}
