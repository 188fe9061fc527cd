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
// reservation's check of the budgets and its increment of the counters
// are one step, in this process or another using the file.
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

// budgets reads the budgets that apply to k.
func budgetsIn(q interface {
	Query(string, ...any) (*sql.Rows, error)
}, k llm.Keys) ([2]*llm.Budget, error) {
	var out [2]*llm.Budget
	rows, err := q.Query(`SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = ? AND instance IN ('', ?)`, k.TenantID, k.InstanceID)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	list, err := sqlstore.Collect(rows, sqlstore.ScanLLMBudget)
	if err != nil {
		return out, err
	}
	for i := range list {
		if list[i].InstanceID == "" {
			out[0] = &list[i]
		} else if k.InstanceID != "" {
			out[1] = &list[i]
		}
	}
	return out, nil
}

// spentIn reads k's counters.
func spentIn(q interface {
	QueryRow(string, ...any) *sql.Row
}, k llm.Keys) (llm.Spending, error) {
	var sp llm.Spending
	for _, c := range sqlstore.LLMCounters(k) {
		var tokens, cost int64
		err := q.QueryRow(`SELECT tokens, cost FROM llm_counters WHERE tenant = ? AND scope = ? AND id = ? AND day = ?`,
			c.Tenant, c.Scope, c.ID, c.Day).Scan(&tokens, &cost)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return sp, err
		}
		c.Put(&sp, llm.Amount{Tokens: tokens, Cost: llm.Cost(cost)})
	}
	return sp, nil
}

// addCounters adds a (which may be negative) to k's counters, none
// below zero, as changed at atUS.
func addCounters(tx *sql.Tx, k llm.Keys, a llm.Amount, atUS int64) error {
	for _, c := range sqlstore.LLMCounters(k) {
		_, err := tx.Exec(`INSERT INTO llm_counters (tenant, scope, id, day, tokens, cost, last_us) VALUES (?, ?, ?, ?, max(?, 0), max(?, 0), ?)
			ON CONFLICT (tenant, scope, id, day) DO UPDATE SET tokens = max(tokens + ?, 0),
			cost = max(cost + ?, 0), last_us = max(last_us, excluded.last_us)`,
			c.Tenant, c.Scope, c.ID, c.Day, a.Tokens, int64(a.Cost), atUS, a.Tokens, int64(a.Cost))
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *LLMStore) Reserve(ctx context.Context, k llm.Keys, estimate llm.Amount, at time.Time) (llm.Reservation, error) {
	if err := llm.CheckKeys(k, estimate); err != nil {
		return llm.Reservation{}, fmt.Errorf("sqlite: reserve: %w", err)
	}
	r := llm.Reservation{ID: llm.NewReservationID(), Keys: k, Estimate: estimate, At: sqlstore.FromMicros(sqlstore.Micros(at))}
	var refused *llm.BudgetError
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		// The single writer runs the check and the increments with no
		// other write in between.
		budgets, err := budgetsIn(tx, k)
		if err != nil {
			return err
		}
		sp, err := spentIn(tx, k)
		if err != nil {
			return err
		}
		if refused = llm.Check(budgets, sp, estimate, k.RunID != ""); refused != nil {
			return nil
		}
		if err := addCounters(tx, k, estimate, sqlstore.Micros(at)); err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT INTO llm_reservations (`+sqlstore.LLMReservationCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			sqlstore.LLMReservationArgs(&r)...)
		return err
	})
	switch {
	case err != nil:
		return llm.Reservation{}, fmt.Errorf("sqlite: reserve: %w", err)
	case refused != nil:
		return llm.Reservation{}, refused
	}
	return r, nil
}

func (s *LLMStore) Settle(ctx context.Context, r llm.Reservation, st llm.Settlement) error {
	if err := llm.CheckSettlement(st); err != nil {
		return fmt.Errorf("sqlite: settle: %w", err)
	}
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		held, err := sqlstore.ScanLLMReservation(tx.QueryRow(`DELETE FROM llm_reservations WHERE id = ? RETURNING `+sqlstore.LLMReservationCols, r.ID))
		if err != nil {
			return notFound(err)
		}
		used := st.Used()
		delta := llm.Amount{Tokens: used.Tokens - held.Estimate.Tokens, Cost: used.Cost - held.Estimate.Cost}
		if err := addCounters(tx, held.Keys, delta, sqlstore.Micros(held.At)); err != nil {
			return err
		}
		failed := 0
		if st.Failed {
			failed = 1
		}
		_, err = tx.Exec(`INSERT INTO llm_usage (`+sqlstore.LLMUsageCols+`) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?)
			ON CONFLICT (tenant, day, instance, model, provider) DO UPDATE SET calls = calls + 1, failed = failed + excluded.failed,
			input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
			cost = cost + excluded.cost`,
			held.Keys.TenantID, held.Keys.Day, held.Keys.InstanceID, st.Model, st.Provider, failed, st.Input, st.Output, int64(st.Cost))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: settle reservation %.40q: %w", r.ID, err)
	}
	return nil
}

func (s *LLMStore) Spent(ctx context.Context, k llm.Keys) (llm.Spending, error) {
	sp, err := spentIn(rowQuerier{ctx, s.db}, k)
	if err != nil {
		return sp, fmt.Errorf("sqlite: spent: %w", err)
	}
	return sp, nil
}

// rowQuerier reads one row outside the writer.
type rowQuerier struct {
	ctx context.Context
	db  *DB
}

func (q rowQuerier) QueryRow(query string, args ...any) *sql.Row {
	return q.db.queryRow(q.ctx, query, args...)
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

func (s *LLMStore) Sweep(ctx context.Context, reservedBefore, countersBefore time.Time) error {
	err := s.db.wr.do(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DELETE FROM llm_reservations WHERE at_us < ?`, sqlstore.Micros(reservedBefore)); err != nil {
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
