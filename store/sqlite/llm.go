package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// LLMStore returns the database's store of the LLM gateway (an
// llm.Store). Its writes go through the database's single writer, so a
// lease's check of the budgets and its increment of the counters are one
// step, in this process or another using the file.
func (db *DB) LLMStore() *LLMStore { return &LLMStore{sqlstore.NewLLMStore(dialect, llmSQL{db})} }

// LLMStore keeps the LLM gateway's providers, routes, budgets and usage
// ledger in the database (see llm.Store).
type LLMStore struct{ *llmStore }

// llmStore is the store both SQL databases share, over llmSQL.
type llmStore = sqlstore.LLMStore

var _ llm.Store = (*LLMStore)(nil)

// llmSQL is the store's statements in this database's dialect.
type llmSQL struct{ db *DB }

// createdArg is created_us's place in LLMProviderCols and LLMRouteCols.
const createdArg = 3

// put writes args with insert (INSERT OR REPLACE) if the version stored
// under the key args[0], args[1] in table is expect (0: none). With
// created, a replace keeps the stored creation time (args[createdArg]),
// and put returns the row's.
func (s llmSQL) put(ctx context.Context, table, keyCols, insert string, args []any, expect int64, created bool) (int64, error) {
	var createdUS int64
	err := s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		var stored, c int64
		q := `SELECT version, 0 FROM ` + table + ` WHERE ` + keyCols
		if created {
			q = `SELECT version, created_us FROM ` + table + ` WHERE ` + keyCols
		}
		err := tx.QueryRow(q, args[0], args[1]).Scan(&stored, &c)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if stored != expect {
			return fmt.Errorf("version %d is not the stored %d: %w", expect, stored, llm.ErrConflict)
		}
		if created {
			if expect > 0 {
				args[createdArg] = c
			}
			createdUS = args[createdArg].(int64)
		}
		_, err = tx.Exec(insert, args...)
		return err
	})
	return createdUS, err
}

func (s llmSQL) PutProvider(ctx context.Context, args []any, expect int64) (int64, error) {
	return s.put(ctx, "llm_providers", "tenant = ? AND name = ?",
		`INSERT OR REPLACE INTO llm_providers (`+sqlstore.LLMProviderCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`, args, expect, true)
}

func (s llmSQL) Provider(ctx context.Context, tenantID, name string) (llm.Provider, error) {
	return sqlstore.ScanLLMProvider(s.db.queryRow(ctx, `SELECT `+sqlstore.LLMProviderCols+` FROM llm_providers WHERE tenant = ? AND name = ?`, tenantID, name))
}

func (s llmSQL) Providers(ctx context.Context, tenantID string) ([]llm.Provider, error) {
	return queryAll(ctx, s.db.query, sqlstore.ScanLLMProvider,
		`SELECT `+sqlstore.LLMProviderCols+` FROM llm_providers WHERE tenant = ? ORDER BY name`, tenantID)
}

func (s llmSQL) DeleteProvider(ctx context.Context, tenantID, name string) (bool, error) {
	return s.db.changeOne(ctx, `DELETE FROM llm_providers WHERE tenant = ? AND name = ?`, tenantID, name)
}

func (s llmSQL) PutRoute(ctx context.Context, args []any, expect int64) (int64, error) {
	return s.put(ctx, "llm_routes", "tenant = ? AND name = ?",
		`INSERT OR REPLACE INTO llm_routes (`+sqlstore.LLMRouteCols+`) VALUES (?, ?, ?, ?, ?, ?)`, args, expect, true)
}

func (s llmSQL) Route(ctx context.Context, tenantID, name string) (llm.Route, error) {
	return sqlstore.ScanLLMRoute(s.db.queryRow(ctx, `SELECT `+sqlstore.LLMRouteCols+` FROM llm_routes WHERE tenant = ? AND name = ?`, tenantID, name))
}

func (s llmSQL) Routes(ctx context.Context, tenantID string) ([]llm.Route, error) {
	return queryAll(ctx, s.db.query, sqlstore.ScanLLMRoute,
		`SELECT `+sqlstore.LLMRouteCols+` FROM llm_routes WHERE tenant = ? ORDER BY name`, tenantID)
}

func (s llmSQL) DeleteRoute(ctx context.Context, tenantID, name string) (bool, error) {
	return s.db.changeOne(ctx, `DELETE FROM llm_routes WHERE tenant = ? AND name = ?`, tenantID, name)
}

func (s llmSQL) PutBudget(ctx context.Context, args []any, expect int64) error {
	_, err := s.put(ctx, "llm_budgets", "tenant = ? AND instance = ?",
		`INSERT OR REPLACE INTO llm_budgets (`+sqlstore.LLMBudgetCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, args, expect, false)
	return err
}

func (s llmSQL) Budget(ctx context.Context, tenantID, instanceID string) (llm.Budget, error) {
	return sqlstore.ScanLLMBudget(s.db.queryRow(ctx, `SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = ? AND instance = ?`, tenantID, instanceID))
}

func (s llmSQL) Budgets(ctx context.Context, tenantID string) ([]llm.Budget, error) {
	if tenantID == "" {
		return queryAll(ctx, s.db.query, sqlstore.ScanLLMBudget, `SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets ORDER BY tenant, instance`)
	}
	return queryAll(ctx, s.db.query, sqlstore.ScanLLMBudget,
		`SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = ? ORDER BY instance`, tenantID)
}

func (s llmSQL) DeleteBudget(ctx context.Context, tenantID, instanceID string) (bool, error) {
	return s.db.changeOne(ctx, `DELETE FROM llm_budgets WHERE tenant = ? AND instance = ?`, tenantID, instanceID)
}

// rowReader is a transaction, or reads outside the writer (rowQuerier).
type rowReader interface {
	QueryRow(string, ...any) *sql.Row
}

// countOf reads counter c's count.
func countOf(q rowReader, c llm.Counter) (llm.Amount, error) {
	var tokens, cost int64
	err := q.QueryRow(`SELECT tokens, cost FROM llm_counters WHERE tenant = ? AND scope = ? AND id = ? AND day = ?`,
		c.TenantID, c.Scope, c.ID, c.Day).Scan(&tokens, &cost)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return llm.Amount{}, err
	}
	return llm.Amount{Tokens: tokens, Cost: llm.Cost(cost)}, nil
}

func (s llmSQL) Ledger(ctx context.Context, step func(sqlstore.LedgerTx) error) error {
	// The single writer reads, decides and writes with no other write in
	// between.
	return s.db.wr.doAtomic(ctx, func(tx *sql.Tx) error { return step(ledgerTx{tx}) })
}

// ledgerTx is a lease's or a commit's transaction.
type ledgerTx struct{ tx *sql.Tx }

func (t ledgerTx) Lock(_ context.Context, counters []llm.Counter, ids []string, pairs [][2]string, _ int64) (sqlstore.LedgerRead, error) {
	got := sqlstore.LedgerRead{Counts: map[llm.Counter]llm.Amount{}, Held: map[string]llm.HeldLease{}, Budgets: map[[2]string]llm.Budget{}}
	for _, c := range counters {
		n, err := countOf(t.tx, c)
		if err != nil {
			return sqlstore.LedgerRead{}, err
		}
		got.Counts[c] = n
	}
	for _, id := range ids {
		held, l, err := sqlstore.ScanLLMLease(t.tx.QueryRow(`SELECT `+sqlstore.LLMLeaseCols+` FROM llm_reservations WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return sqlstore.LedgerRead{}, err
		}
		got.Held[held] = l
	}
	for _, p := range pairs {
		b, err := sqlstore.ScanLLMBudget(t.tx.QueryRow(`SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = ? AND instance = ?`, p[0], p[1]))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return sqlstore.LedgerRead{}, err
		}
		got.Budgets[p] = b
	}
	return got, nil
}

func (t ledgerTx) NewLease(_ context.Context, args []any) error {
	_, err := t.tx.Exec(`INSERT INTO llm_reservations (`+sqlstore.LLMLeaseCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, args...)
	return err
}

func (t ledgerTx) GrowLease(_ context.Context, id string, by llm.Amount) error {
	_, err := t.tx.Exec(`UPDATE llm_reservations SET tokens = tokens + ?, cost = cost + ? WHERE id = ?`, by.Tokens, int64(by.Cost), id)
	return err
}

func (t ledgerTx) SetLease(_ context.Context, id string, left llm.Amount, expiresUS int64) error {
	_, err := t.tx.Exec(`UPDATE llm_reservations SET tokens = ?, cost = ?, at_us = ? WHERE id = ?`, left.Tokens, int64(left.Cost), expiresUS, id)
	return err
}

func (t ledgerTx) EndLease(_ context.Context, id string) error {
	_, err := t.tx.Exec(`DELETE FROM llm_reservations WHERE id = ?`, id)
	return err
}

func (t ledgerTx) Change(_ context.Context, changes []llm.CounterChange, atUS int64) error {
	for _, c := range changes {
		_, err := t.tx.Exec(`INSERT INTO llm_counters (tenant, scope, id, day, tokens, cost, last_us) VALUES (?, ?, ?, ?, max(?, 0), max(?, 0), ?)
			ON CONFLICT (tenant, scope, id, day) DO UPDATE SET tokens = max(tokens + ?, 0),
			cost = max(cost + ?, 0), last_us = max(last_us, excluded.last_us)`,
			c.Counter.TenantID, c.Counter.Scope, c.Counter.ID, c.Counter.Day, c.Tokens, c.Cost, atUS, c.Tokens, c.Cost)
		if err != nil {
			return err
		}
	}
	return nil
}

func (t ledgerTx) AddUsage(_ context.Context, u *llm.UsageRow) error {
	_, err := t.tx.Exec(`INSERT INTO llm_usage (`+sqlstore.LLMUsageCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, day, instance, model, provider) DO UPDATE SET calls = calls + excluded.calls,
		failed = failed + excluded.failed, input_tokens = input_tokens + excluded.input_tokens,
		output_tokens = output_tokens + excluded.output_tokens, cost = cost + excluded.cost`,
		u.TenantID, u.Day, u.InstanceID, u.Model, u.Provider, u.Calls, u.Failed, u.Input, u.Output, int64(u.Cost))
	return err
}

func (s llmSQL) Spent(ctx context.Context, c llm.Counter) (llm.Amount, llm.Amount, error) {
	q := rowQuerier{ctx, s.db}
	count, err := countOf(q, c)
	if err != nil {
		return llm.Amount{}, llm.Amount{}, err
	}
	inst, run := sqlstore.LLMLeaseKey(c)
	var tokens, cost int64
	err = q.QueryRow(`SELECT coalesce(sum(tokens), 0), coalesce(sum(cost), 0) FROM llm_reservations
		WHERE tenant = ? AND instance = ? AND run = ? AND day = ?`, c.TenantID, inst, run, c.Day).Scan(&tokens, &cost)
	return count, llm.Amount{Tokens: tokens, Cost: llm.Cost(cost)}, err
}

// rowQuerier reads outside the writer.
type rowQuerier struct {
	ctx context.Context
	db  *DB
}

func (q rowQuerier) QueryRow(query string, args ...any) *sql.Row {
	return q.db.queryRow(q.ctx, query, args...)
}

func (s llmSQL) Usage(ctx context.Context, q llm.UsageQuery, limit int) ([]llm.UsageRow, error) {
	query, args := sqlstore.LLMUsageQuery(q, limit, func(int) string { return "?" })
	return queryAll(ctx, s.db.query, sqlstore.ScanLLMUsage, query, args...)
}

func (s llmSQL) Sweep(ctx context.Context, nowUS, countersUS int64) error {
	return s.db.wr.do(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DELETE FROM llm_reservations WHERE at_us < ?`, nowUS); err != nil {
			return err
		}
		_, err := tx.Exec(`DELETE FROM llm_counters WHERE last_us < ?`, countersUS)
		return err
	})
}
