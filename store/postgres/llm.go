package postgres

import (
	"context"
	"errors"
	"fmt"

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
func (db *DB) LLMStore() *LLMStore { return &LLMStore{sqlstore.NewLLMStore(dialect, llmSQL{db})} }

// LLMStore keeps the LLM gateway's providers, routes, budgets and usage
// ledger in the database (see llm.Store).
type LLMStore struct{ *llmStore }

// llmStore is the store both SQL databases share, over llmSQL.
type llmStore = sqlstore.LLMStore

var _ llm.Store = (*LLMStore)(nil)

// llmSQL is the store's statements in this database's dialect.
type llmSQL struct{ db *DB }

// putRecord runs a conditional write: an insert (expect 0) doing nothing
// on a taken key, or an update where the version is expect; no row back
// is a conflict. It returns the stored creation time.
func (s llmSQL) putRecord(ctx context.Context, q string, args []any) (int64, error) {
	var created int64
	err := s.db.pool.QueryRow(ctx, q, args...).Scan(&created)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, llm.ErrConflict
	}
	return created, err
}

func (s llmSQL) PutProvider(ctx context.Context, args []any, expect int64) (int64, error) {
	if expect == 0 {
		return s.putRecord(ctx, `INSERT INTO llm_providers (`+sqlstore.LLMProviderCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (tenant, name) DO NOTHING RETURNING created_us`, args)
	}
	// args are in LLMProviderCols' order: tenant, name, version,
	// created_us, updated_us, sealed_key, body.
	return s.putRecord(ctx, `UPDATE llm_providers SET version = $3, updated_us = $4, sealed_key = $5, body = $6
		WHERE tenant = $1 AND name = $2 AND version = $7 RETURNING created_us`, append(append(args[:3:3], args[4:]...), expect))
}

func (s llmSQL) Provider(ctx context.Context, tenantID, name string) (llm.Provider, error) {
	return sqlstore.ScanLLMProvider(s.db.pool.QueryRow(ctx, `SELECT `+sqlstore.LLMProviderCols+` FROM llm_providers
		WHERE tenant = $1 AND name = $2`, tenantID, name))
}

func (s llmSQL) Providers(ctx context.Context, tenantID string) ([]llm.Provider, error) {
	return queryAll(ctx, s.db.pool, sqlstore.ScanLLMProvider,
		`SELECT `+sqlstore.LLMProviderCols+` FROM llm_providers WHERE tenant = $1 ORDER BY name`, tenantID)
}

func (s llmSQL) DeleteProvider(ctx context.Context, tenantID, name string) (bool, error) {
	return s.db.changeOne(ctx, `DELETE FROM llm_providers WHERE tenant = $1 AND name = $2`, tenantID, name)
}

func (s llmSQL) PutRoute(ctx context.Context, args []any, expect int64) (int64, error) {
	if expect == 0 {
		return s.putRecord(ctx, `INSERT INTO llm_routes (`+sqlstore.LLMRouteCols+`) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (tenant, name) DO NOTHING RETURNING created_us`, args)
	}
	// args: tenant, name, version, created_us, updated_us, body.
	return s.putRecord(ctx, `UPDATE llm_routes SET version = $3, updated_us = $4, body = $5
		WHERE tenant = $1 AND name = $2 AND version = $6 RETURNING created_us`, append(append(args[:3:3], args[4:]...), expect))
}

func (s llmSQL) Route(ctx context.Context, tenantID, name string) (llm.Route, error) {
	return sqlstore.ScanLLMRoute(s.db.pool.QueryRow(ctx, `SELECT `+sqlstore.LLMRouteCols+` FROM llm_routes
		WHERE tenant = $1 AND name = $2`, tenantID, name))
}

func (s llmSQL) Routes(ctx context.Context, tenantID string) ([]llm.Route, error) {
	return queryAll(ctx, s.db.pool, sqlstore.ScanLLMRoute,
		`SELECT `+sqlstore.LLMRouteCols+` FROM llm_routes WHERE tenant = $1 ORDER BY name`, tenantID)
}

func (s llmSQL) DeleteRoute(ctx context.Context, tenantID, name string) (bool, error) {
	return s.db.changeOne(ctx, `DELETE FROM llm_routes WHERE tenant = $1 AND name = $2`, tenantID, name)
}

func (s llmSQL) PutBudget(ctx context.Context, args []any, expect int64) error {
	var err error
	if expect == 0 {
		_, err = s.putRecord(ctx, `INSERT INTO llm_budgets (`+sqlstore.LLMBudgetCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (tenant, instance) DO NOTHING RETURNING 0::bigint`, args)
	} else {
		_, err = s.putRecord(ctx, `UPDATE llm_budgets SET version = $3, updated_us = $4, daily_tokens = $5, daily_cost = $6, run_tokens = $7,
			run_cost = $8 WHERE tenant = $1 AND instance = $2 AND version = $9 RETURNING 0::bigint`, append(args, expect))
	}
	return err
}

func (s llmSQL) Budget(ctx context.Context, tenantID, instanceID string) (llm.Budget, error) {
	return sqlstore.ScanLLMBudget(s.db.pool.QueryRow(ctx, `SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets
		WHERE tenant = $1 AND instance = $2`, tenantID, instanceID))
}

func (s llmSQL) Budgets(ctx context.Context, tenantID string) ([]llm.Budget, error) {
	if tenantID == "" {
		return queryAll(ctx, s.db.pool, sqlstore.ScanLLMBudget, `SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets ORDER BY tenant, instance`)
	}
	return queryAll(ctx, s.db.pool, sqlstore.ScanLLMBudget,
		`SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = $1 ORDER BY instance`, tenantID)
}

func (s llmSQL) DeleteBudget(ctx context.Context, tenantID, instanceID string) (bool, error) {
	return s.db.changeOne(ctx, `DELETE FROM llm_budgets WHERE tenant = $1 AND instance = $2`, tenantID, instanceID)
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

func (s llmSQL) Ledger(ctx context.Context, step func(sqlstore.LedgerTx) error) error {
	return pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		t := ledgerTx{tx: tx, writes: &pgx.Batch{}}
		if err := step(t); err != nil {
			return err
		}
		// The writes go in one round trip.
		return tx.SendBatch(ctx, t.writes).Close()
	})
}

// ledgerTx is a lease's or a commit's transaction; it queues the writes.
type ledgerTx struct {
	tx     pgx.Tx
	writes *pgx.Batch
}

// Lock runs, in one round trip, what a lease and a commit begin with: it
// locks the counters (sorted: every writer locks them in that order, then
// the leases, so that none waits for another in a circle, and a holder's
// lease and commit of one lease never both read it before either writes
// it), reads their counts, and locks and reads the leases of ids; then
// reads the budgets of pairs.
func (t ledgerTx) Lock(ctx context.Context, counters []llm.Counter, ids []string, pairs [][2]string, atUS int64) (sqlstore.LedgerRead, error) {
	b := &pgx.Batch{}
	for _, c := range counters {
		b.Queue(lockCounterSQL, c.TenantID, c.Scope, c.ID, c.Day, atUS)
	}
	b.Queue(lockLeasesSQL, ids)
	for _, p := range pairs {
		b.Queue(`SELECT `+sqlstore.LLMBudgetCols+` FROM llm_budgets WHERE tenant = $1 AND instance = $2`, p[0], p[1])
	}
	br := t.tx.SendBatch(ctx, b)
	defer br.Close()
	got := sqlstore.LedgerRead{Counts: map[llm.Counter]llm.Amount{}, Held: map[string]llm.HeldLease{}, Budgets: map[[2]string]llm.Budget{}}
	for _, c := range counters {
		var tokens, cost int64
		if err := br.QueryRow().Scan(&tokens, &cost); err != nil {
			return sqlstore.LedgerRead{}, err
		}
		got.Counts[c] = llm.Amount{Tokens: tokens, Cost: llm.Cost(cost)}
	}
	rows, err := br.Query()
	if err != nil {
		return sqlstore.LedgerRead{}, err
	}
	for rows.Next() {
		id, l, err := sqlstore.ScanLLMLease(rows)
		if err != nil {
			rows.Close()
			return sqlstore.LedgerRead{}, err
		}
		got.Held[id] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sqlstore.LedgerRead{}, err
	}
	for _, p := range pairs {
		bud, err := sqlstore.ScanLLMBudget(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return sqlstore.LedgerRead{}, err
		}
		got.Budgets[p] = bud
	}
	return got, br.Close()
}

func (t ledgerTx) NewLease(_ context.Context, args []any) error {
	t.writes.Queue(`INSERT INTO llm_reservations (`+sqlstore.LLMLeaseCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, args...)
	return nil
}

func (t ledgerTx) GrowLease(_ context.Context, id string, by llm.Amount) error {
	t.writes.Queue(`UPDATE llm_reservations SET tokens = tokens + $2, cost = cost + $3 WHERE id = $1`, id, by.Tokens, int64(by.Cost))
	return nil
}

func (t ledgerTx) SetLease(_ context.Context, id string, left llm.Amount, expiresUS int64) error {
	t.writes.Queue(`UPDATE llm_reservations SET tokens = $2, cost = $3, at_us = $4 WHERE id = $1`, id, left.Tokens, int64(left.Cost), expiresUS)
	return nil
}

func (t ledgerTx) EndLease(_ context.Context, id string) error {
	t.writes.Queue(`DELETE FROM llm_reservations WHERE id = $1`, id)
	return nil
}

func (t ledgerTx) Change(_ context.Context, changes []llm.CounterChange, atUS int64) error {
	for _, c := range changes {
		t.writes.Queue(changeCounterSQL, c.Counter.TenantID, c.Counter.Scope, c.Counter.ID, c.Counter.Day, c.Tokens, c.Cost, atUS)
	}
	return nil
}

func (t ledgerTx) AddUsage(_ context.Context, u *llm.UsageRow) error {
	t.writes.Queue(`INSERT INTO llm_usage (`+sqlstore.LLMUsageCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (tenant, day, instance, model, provider) DO UPDATE SET calls = llm_usage.calls + EXCLUDED.calls,
		failed = llm_usage.failed + EXCLUDED.failed, input_tokens = llm_usage.input_tokens + EXCLUDED.input_tokens,
		output_tokens = llm_usage.output_tokens + EXCLUDED.output_tokens, cost = llm_usage.cost + EXCLUDED.cost`,
		u.TenantID, u.Day, u.InstanceID, u.Model, u.Provider, u.Calls, u.Failed, u.Input, u.Output, int64(u.Cost))
	return nil
}

func (s llmSQL) Spent(ctx context.Context, c llm.Counter) (llm.Amount, llm.Amount, error) {
	inst, run := sqlstore.LLMLeaseKey(c)
	var count, held [2]int64
	err := s.db.pool.QueryRow(ctx, `SELECT
		coalesce((SELECT tokens FROM llm_counters WHERE tenant = $1 AND scope = $2 AND id = $3 AND day = $4), 0),
		coalesce((SELECT cost FROM llm_counters WHERE tenant = $1 AND scope = $2 AND id = $3 AND day = $4), 0),
		coalesce((SELECT sum(tokens) FROM llm_reservations WHERE tenant = $1 AND instance = $5 AND run = $6 AND day = $4), 0)::bigint,
		coalesce((SELECT sum(cost) FROM llm_reservations WHERE tenant = $1 AND instance = $5 AND run = $6 AND day = $4), 0)::bigint`,
		c.TenantID, c.Scope, c.ID, c.Day, inst, run).Scan(&count[0], &count[1], &held[0], &held[1])
	return llm.Amount{Tokens: count[0], Cost: llm.Cost(count[1])}, llm.Amount{Tokens: held[0], Cost: llm.Cost(held[1])}, err
}

func (s llmSQL) Usage(ctx context.Context, q llm.UsageQuery, limit int) ([]llm.UsageRow, error) {
	query, args := sqlstore.LLMUsageQuery(q, limit, func(n int) string { return fmt.Sprintf("$%d", n) })
	return queryAll(ctx, s.db.pool, sqlstore.ScanLLMUsage, query, args...)
}

func (s llmSQL) Sweep(ctx context.Context, nowUS, countersUS int64) error {
	if _, err := s.db.pool.Exec(ctx, `DELETE FROM llm_reservations WHERE at_us < $1`, nowUS); err != nil {
		return err
	}
	_, err := s.db.pool.Exec(ctx, `DELETE FROM llm_counters WHERE last_us < $1`, countersUS)
	return err
}
