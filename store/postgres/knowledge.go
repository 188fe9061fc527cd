package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/tools"
)

// KnowledgeStore returns the database's store of knowledge collections (a
// tools.KnowledgeStore). Any number of replicas may share it. A tenant's
// limits are checked under a lock on the tenant's row of
// knowledge_tenants, so two replicas cannot both take the last place.
// Claims choose jobs and graphs with FOR UPDATE SKIP LOCKED, so concurrent
// claimers pass over each other's rows instead of leasing them twice.
// Writes that touch a collection and its jobs lock the collection first,
// then the job: a deletion, a job's commit and a new job never deadlock.
func (db *DB) KnowledgeStore() *KnowledgeStore { return &KnowledgeStore{db} }

// KnowledgeStore keeps the tool gateway's knowledge collections in the
// database (see tools.KnowledgeStore).
type KnowledgeStore struct{ db *DB }

var _ tools.KnowledgeStore = (*KnowledgeStore)(nil)

// errKnowledgeText: PostgreSQL text holds neither NUL nor invalid UTF-8.
var errKnowledgeText = errors.New("text with NUL or invalid UTF-8")

const (
	knCollectionSQL = `SELECT ` + sqlstore.CollectionCols + ` FROM knowledge_collections
		WHERE tenant = $1 AND id = $2 AND deleted_us = 0`
	knJobSQL = `SELECT ` + sqlstore.JobCols + ` FROM knowledge_jobs WHERE tenant = $1 AND id = $2`
	// knClaimJobsSQL leases the oldest due jobs, passing over the rows
	// another claimer holds.
	knClaimJobsSQL = `WITH c AS MATERIALIZED (
		SELECT tenant, id FROM knowledge_jobs
		WHERE status IN ` + sqlstore.ActiveJobStatuses + `
			AND (status = 'pending' AND not_before_us <= $1 OR status = 'running' AND lease_until_us <= $1)
		ORDER BY created_us, id, tenant LIMIT $2
		FOR UPDATE SKIP LOCKED
	)
	UPDATE knowledge_jobs SET status = 'running', lease_owner = $3, lease_until_us = $4, attempts = attempts + 1, updated_us = $1
	WHERE (tenant, id) IN (SELECT tenant, id FROM c)
	RETURNING ` + sqlstore.JobCols
	knClaimGraphsSQL = `WITH c AS MATERIALIZED (
		SELECT tenant, id FROM knowledge_collections
		WHERE graph_status IN ` + sqlstore.ClaimableGraphStatuses + ` AND deleted_us = 0
			AND (graph_status = 'pending' OR graph_lease_until_us <= $1)
		ORDER BY graph_requested_us, tenant, id LIMIT $2
		FOR UPDATE SKIP LOCKED
	)
	UPDATE knowledge_collections SET graph_status = 'running', graph_lease_owner = $3, graph_lease_until_us = $4,
		graph_attempts = graph_attempts + 1
	WHERE (tenant, id) IN (SELECT tenant, id FROM c)
	RETURNING ` + sqlstore.CollectionCols
)

// lockKnowledgeTenant takes the lock on the tenant's row, creating it first.
func lockKnowledgeTenant(ctx context.Context, tx pgx.Tx, tenant string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO knowledge_tenants (tenant) VALUES ($1) ON CONFLICT DO NOTHING`, tenant); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `SELECT 1 FROM knowledge_tenants WHERE tenant = $1 FOR UPDATE`, tenant)
	return err
}

// lockCollection locks a live collection's row; ErrKnowledgeNotFound when
// there is none.
func lockCollection(ctx context.Context, tx pgx.Tx, tenant, id string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM knowledge_collections WHERE tenant = $1 AND id = $2 AND deleted_us = 0 FOR UPDATE`,
		tenant, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("collection %s: %w", id, tools.ErrKnowledgeNotFound)
	}
	return err
}

func (k *KnowledgeStore) CreateCollection(ctx context.Context, tenant string, c tools.Collection, max int) error {
	what := fmt.Sprintf("postgres: create knowledge collection %q", c.Name)
	if !a2astore.ValidText(tenant, c.ID, c.Name, c.Description) {
		return fmt.Errorf("%s: %w", what, errKnowledgeText)
	}
	err := pgx.BeginFunc(ctx, k.db.pool, func(tx pgx.Tx) error {
		if err := lockKnowledgeTenant(ctx, tx, tenant); err != nil {
			return err
		}
		var taken, live int
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE id = $2 OR name = $3 AND deleted_us = 0), count(*) FILTER (WHERE deleted_us = 0)
			FROM knowledge_collections WHERE tenant = $1`, tenant, c.ID, c.Name).Scan(&taken, &live); err != nil {
			return err
		}
		if taken > 0 {
			return tools.ErrKnowledgeExists
		}
		if live >= max {
			return fmt.Errorf("%d collections: %w", live, tools.ErrKnowledgeLimit)
		}
		_, err := tx.Exec(ctx, `INSERT INTO knowledge_collections (tenant, id, name, description, created_us) VALUES ($1, $2, $3, $4, $5)`,
			tenant, c.ID, c.Name, c.Description, sqlstore.Micros(c.CreatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (k *KnowledgeStore) collection(ctx context.Context, query, tenant, key string) (tools.Collection, error) {
	if !a2astore.ValidText(tenant, key) {
		return tools.Collection{}, fmt.Errorf("postgres: knowledge collection: %w", tools.ErrKnowledgeNotFound)
	}
	c, err := sqlstore.ScanCollection(k.db.pool.QueryRow(ctx, query, tenant, key))
	if errors.Is(err, pgx.ErrNoRows) {
		err = tools.ErrKnowledgeNotFound
	}
	if err != nil {
		return tools.Collection{}, fmt.Errorf("postgres: knowledge collection %q: %w", key, err)
	}
	return c, nil
}

func (k *KnowledgeStore) Collection(ctx context.Context, tenant, id string) (tools.Collection, error) {
	return k.collection(ctx, knCollectionSQL, tenant, id)
}

func (k *KnowledgeStore) CollectionByName(ctx context.Context, tenant, name string) (tools.Collection, error) {
	return k.collection(ctx, `SELECT `+sqlstore.CollectionCols+` FROM knowledge_collections
		WHERE tenant = $1 AND name = $2 AND deleted_us = 0`, tenant, name)
}

func (k *KnowledgeStore) ListCollections(ctx context.Context, tenant, afterName string, limit int) ([]tools.Collection, error) {
	if !a2astore.ValidText(tenant, afterName) {
		return nil, nil
	}
	rows, err := k.db.pool.Query(ctx, `SELECT `+sqlstore.CollectionCols+` FROM knowledge_collections
		WHERE tenant = $1 AND deleted_us = 0 AND name > $2 ORDER BY name LIMIT $3`, tenant, afterName, sqlstore.Limit(limit, tools.MaxKnowledgePage))
	if err != nil {
		return nil, fmt.Errorf("postgres: list knowledge collections: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanCollection)
	if err != nil {
		return nil, fmt.Errorf("postgres: list knowledge collections: %w", err)
	}
	return out, nil
}

func (k *KnowledgeStore) DeleteCollection(ctx context.Context, tenant, id string, now time.Time) (int, error) {
	if !a2astore.ValidText(tenant, id) {
		return 0, fmt.Errorf("postgres: delete knowledge collection: %w", tools.ErrKnowledgeNotFound)
	}
	var cancelled int64
	err := pgx.BeginFunc(ctx, k.db.pool, func(tx pgx.Tx) error {
		at := sqlstore.Micros(now)
		tag, err := tx.Exec(ctx, `UPDATE knowledge_collections SET deleted_us = $1 WHERE tenant = $2 AND id = $3 AND deleted_us = 0`, at, tenant, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return tools.ErrKnowledgeNotFound
		}
		// A statement of its own sees the jobs committed while the
		// collection's row lock was awaited.
		tag, err = tx.Exec(ctx, `UPDATE knowledge_jobs SET status = 'cancelled', content = '', lease_owner = '', lease_until_us = 0, updated_us = $1
			WHERE tenant = $2 AND collection_id = $3 AND status IN `+sqlstore.ActiveJobStatuses, at, tenant, id)
		cancelled = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: delete knowledge collection %s: %w", id, err)
	}
	return int(cancelled), nil
}

func (k *KnowledgeStore) PendingPurges(ctx context.Context, due time.Time, limit int) ([]tools.Collection, error) {
	rows, err := k.db.pool.Query(ctx, `SELECT `+sqlstore.CollectionCols+` FROM knowledge_collections
		WHERE deleted_us > 0 AND deleted_us <= $1 ORDER BY deleted_us, tenant, id LIMIT $2`,
		sqlstore.Micros(due), sqlstore.Limit(limit, tools.MaxKnowledgePage))
	if err != nil {
		return nil, fmt.Errorf("postgres: knowledge purges: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanCollection)
	if err != nil {
		return nil, fmt.Errorf("postgres: knowledge purges: %w", err)
	}
	return out, nil
}

func (k *KnowledgeStore) FinishPurge(ctx context.Context, tenant, id string) error {
	if !a2astore.ValidText(tenant, id) {
		return fmt.Errorf("postgres: purge knowledge collection: %w", tools.ErrKnowledgeNotFound)
	}
	err := pgx.BeginFunc(ctx, k.db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM knowledge_collections WHERE tenant = $1 AND id = $2 AND deleted_us > 0`, tenant, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return tools.ErrKnowledgeNotFound
		}
		if _, err := tx.Exec(ctx, `DELETE FROM knowledge_documents WHERE tenant = $1 AND collection_id = $2`, tenant, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM knowledge_graphs WHERE tenant = $1 AND collection_id = $2`, tenant, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: purge knowledge collection %s: %w", id, err)
	}
	return nil
}

func jobText(tenant string, j *tools.Job) bool {
	return a2astore.ValidText(tenant, j.ID, j.CollectionID, j.Error, j.DocumentID, j.DuplicateOf, j.Content, j.SHA256,
		j.Filename, j.SourceURL, j.LeaseOwner)
}

func (k *KnowledgeStore) CreateJob(ctx context.Context, tenant string, j tools.Job, maxActive int) error {
	what := "postgres: create knowledge job " + j.ID
	if !jobText(tenant, &j) {
		return fmt.Errorf("%s: %w", what, errKnowledgeText)
	}
	err := pgx.BeginFunc(ctx, k.db.pool, func(tx pgx.Tx) error {
		// The collection first, as everywhere: a deletion waits for this
		// job, and then cancels it.
		if err := lockCollection(ctx, tx, tenant, j.CollectionID); err != nil {
			return err
		}
		if !j.Status.Ended() {
			if err := lockKnowledgeTenant(ctx, tx, tenant); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM knowledge_jobs WHERE tenant = $1 AND status IN `+sqlstore.ActiveJobStatuses,
				tenant).Scan(&n); err != nil {
				return err
			}
			if n >= maxActive {
				return fmt.Errorf("%d active jobs: %w", n, tools.ErrKnowledgeLimit)
			}
		}
		tag, err := tx.Exec(ctx, `INSERT INTO knowledge_jobs (`+sqlstore.JobCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) ON CONFLICT DO NOTHING`,
			sqlstore.JobArgs(tenant, &j)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return tools.ErrKnowledgeExists
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (k *KnowledgeStore) Job(ctx context.Context, tenant, id string) (tools.Job, error) {
	if !a2astore.ValidText(tenant, id) {
		return tools.Job{}, fmt.Errorf("postgres: knowledge job: %w", tools.ErrKnowledgeNotFound)
	}
	j, err := sqlstore.ScanJob(k.db.pool.QueryRow(ctx, knJobSQL, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = tools.ErrKnowledgeNotFound
	}
	if err != nil {
		return tools.Job{}, fmt.Errorf("postgres: knowledge job %s: %w", id, err)
	}
	return j, nil
}

func (k *KnowledgeStore) ClaimJobs(ctx context.Context, owner string, now, until time.Time, limit int) ([]tools.Job, error) {
	if owner == "" || !a2astore.ValidText(owner) {
		return nil, errors.New("postgres: claim knowledge jobs: the owner is empty or not valid text")
	}
	rows, err := k.db.pool.Query(ctx, knClaimJobsSQL, sqlstore.Micros(now), sqlstore.Limit(limit, tools.MaxKnowledgePage), owner, sqlstore.Micros(until))
	if err != nil {
		return nil, fmt.Errorf("postgres: claim knowledge jobs: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanJob)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim knowledge jobs: %w", err)
	}
	sqlstore.SortClaimedJobs(out)
	return out, nil
}

func (k *KnowledgeStore) ExtendJob(ctx context.Context, tenant, id, owner string, attempt int, until time.Time) error {
	if !a2astore.ValidText(tenant, id, owner) {
		return fmt.Errorf("postgres: extend knowledge job: %w", tools.ErrKnowledgeNotFound)
	}
	tag, err := k.db.pool.Exec(ctx, `UPDATE knowledge_jobs SET lease_until_us = $1
		WHERE tenant = $2 AND id = $3 AND status = 'running' AND lease_owner = $4 AND attempts = $5`,
		sqlstore.Micros(until), tenant, id, owner, attempt)
	if err != nil {
		return fmt.Errorf("postgres: extend knowledge job %s: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	if _, err := k.Job(ctx, tenant, id); err != nil {
		return fmt.Errorf("postgres: extend knowledge job %s: %w", id, err)
	}
	return fmt.Errorf("postgres: extend knowledge job %s: %w", id, tools.ErrKnowledgeConflict)
}

func (k *KnowledgeStore) FinishJob(ctx context.Context, tenant, id, owner string, attempt int, o tools.JobOutcome) (tools.Job, error) {
	what := "postgres: finish knowledge job " + id
	if !a2astore.ValidText(tenant, id, owner, o.Error, o.DuplicateOf) {
		return tools.Job{}, fmt.Errorf("%s: %w", what, errKnowledgeText)
	}
	if d := o.Document; d != nil && !a2astore.ValidText(d.ID, d.JobID, d.SHA256, d.Filename, d.SourceURL) {
		return tools.Job{}, fmt.Errorf("%s: %w", what, errKnowledgeText)
	}
	// The job's collection never changes: read it, then lock the
	// collection before the job, in the order every writer takes them.
	first, err := k.Job(ctx, tenant, id)
	if err != nil {
		return tools.Job{}, fmt.Errorf("%s: %w", what, err)
	}
	var out tools.Job
	err = pgx.BeginFunc(ctx, k.db.pool, func(tx pgx.Tx) error {
		// A deleted collection is no error here: its jobs are cancelled,
		// which the job's own check reports.
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM knowledge_collections WHERE tenant = $1 AND id = $2 FOR UPDATE`,
			tenant, first.CollectionID).Scan(&one); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		j, err := sqlstore.ScanJob(tx.QueryRow(ctx, knJobSQL+` FOR UPDATE`, tenant, id))
		if err != nil {
			return err
		}
		out = j
		if j.Status != tools.JobRunning || j.LeaseOwner != owner || j.Attempts != attempt {
			return tools.ErrKnowledgeConflict
		}
		if err := finishJob(&j, o, func(d *tools.Document) (string, error) { return commitDocument(ctx, tx, tenant, j.CollectionID, d) }); err != nil {
			return err
		}
		out, err = sqlstore.ScanJob(tx.QueryRow(ctx, `UPDATE knowledge_jobs SET (`+sqlstore.JobCols+`)
			= ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
			WHERE tenant = $19 AND id = $20 RETURNING `+sqlstore.JobCols, append(sqlstore.JobArgs(tenant, &j), tenant, id)...))
		return err
	})
	if err != nil {
		return out, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// finishJob applies o to j, committing o's document with commit, which
// returns the id of the collection's document of that content (the new
// one, or the one that was there).
func finishJob(j *tools.Job, o tools.JobOutcome, commit func(d *tools.Document) (string, error)) error {
	switch o.Status {
	case tools.JobPending:
		j.Error, j.NotBefore = o.Error, o.NotBefore
	case tools.JobFailed, tools.JobDeadLetter:
		j.Error = o.Error
	case tools.JobCompleted:
		j.Error = ""
		if o.Document == nil {
			j.DocumentID, j.DuplicateOf = o.DuplicateOf, o.DuplicateOf
			break
		}
		doc, err := commit(o.Document)
		if err != nil {
			return err
		}
		j.DocumentID, j.DuplicateOf = doc, ""
		if doc != o.Document.ID {
			j.DuplicateOf = doc
		}
	default:
		return fmt.Errorf("outcome %q is not one a job can end in", o.Status)
	}
	j.Status, j.LeaseOwner, j.LeaseUntil, j.UpdatedAt = o.Status, "", time.Time{}, o.Now
	return nil
}

// commitDocument stores d in tx, which holds the collection's lock, unless
// the collection holds a document of its content, and returns the id of
// the one it holds.
func commitDocument(ctx context.Context, tx pgx.Tx, tenant, collection string, d *tools.Document) (string, error) {
	var live int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM knowledge_collections WHERE tenant = $1 AND id = $2 AND deleted_us = 0`,
		tenant, collection).Scan(&live); err != nil {
		return "", err
	}
	if live == 0 {
		return "", fmt.Errorf("collection %s: %w", collection, tools.ErrKnowledgeConflict)
	}
	var have string
	err := tx.QueryRow(ctx, `SELECT id FROM knowledge_documents WHERE tenant = $1 AND collection_id = $2 AND sha256 = $3`,
		tenant, collection, d.SHA256).Scan(&have)
	if err == nil {
		return have, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO knowledge_documents (`+sqlstore.DocumentCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`, sqlstore.DocumentArgs(tenant, collection, d)...)
	if err != nil {
		return "", err
	}
	if tag.RowsAffected() == 0 {
		return "", fmt.Errorf("document %s: %w", d.ID, tools.ErrKnowledgeExists)
	}
	_, err = tx.Exec(ctx, `UPDATE knowledge_collections SET documents = documents + 1, chunks = chunks + $1 WHERE tenant = $2 AND id = $3`,
		d.Chunks, tenant, collection)
	return d.ID, err
}

func (k *KnowledgeStore) SweepJobs(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := k.db.pool.Exec(ctx, `DELETE FROM knowledge_jobs WHERE (tenant, id) IN (SELECT tenant, id FROM knowledge_jobs
		WHERE status IN `+sqlstore.EndedJobStatuses+` AND updated_us < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
		sqlstore.Micros(before), sqlstore.Limit(limit, tools.MaxKnowledgePage))
	if err != nil {
		return 0, fmt.Errorf("postgres: sweep knowledge jobs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

func (k *KnowledgeStore) DocumentByHash(ctx context.Context, tenant, collection, sha256 string) (tools.Document, error) {
	if !a2astore.ValidText(tenant, collection, sha256) {
		return tools.Document{}, fmt.Errorf("postgres: knowledge document by hash: %w", tools.ErrKnowledgeNotFound)
	}
	d, err := sqlstore.ScanDocument(k.db.pool.QueryRow(ctx, `SELECT `+sqlstore.DocumentCols+` FROM knowledge_documents
		WHERE tenant = $1 AND collection_id = $2 AND sha256 = $3`, tenant, collection, sha256))
	if errors.Is(err, pgx.ErrNoRows) {
		err = tools.ErrKnowledgeNotFound
	}
	if err != nil {
		return tools.Document{}, fmt.Errorf("postgres: knowledge document by hash: %w", err)
	}
	return d, nil
}

func (k *KnowledgeStore) Documents(ctx context.Context, tenant, collection string, ids []string) ([]tools.Document, error) {
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if a2astore.ValidText(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 || !a2astore.ValidText(tenant, collection) {
		return nil, nil
	}
	rows, err := k.db.pool.Query(ctx, `SELECT `+sqlstore.DocumentCols+` FROM knowledge_documents
		WHERE tenant = $1 AND collection_id = $2 AND id = ANY($3)`, tenant, collection, valid)
	if err != nil {
		return nil, fmt.Errorf("postgres: knowledge documents: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanDocument)
	if err != nil {
		return nil, fmt.Errorf("postgres: knowledge documents: %w", err)
	}
	return out, nil
}

func (k *KnowledgeStore) ListDocuments(ctx context.Context, tenant, collection, afterID string, limit int) ([]tools.Document, error) {
	if !a2astore.ValidText(tenant, collection, afterID) {
		return nil, nil
	}
	rows, err := k.db.pool.Query(ctx, `SELECT `+sqlstore.DocumentCols+` FROM knowledge_documents
		WHERE tenant = $1 AND collection_id = $2 AND id > $3 ORDER BY id LIMIT $4`, tenant, collection, afterID, sqlstore.Limit(limit, tools.MaxKnowledgePage))
	if err != nil {
		return nil, fmt.Errorf("postgres: list knowledge documents: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanDocument)
	if err != nil {
		return nil, fmt.Errorf("postgres: list knowledge documents: %w", err)
	}
	return out, nil
}

func (k *KnowledgeStore) RequestGraph(ctx context.Context, tenant, collection string, now time.Time) (tools.Collection, error) {
	if !a2astore.ValidText(tenant, collection) {
		return tools.Collection{}, fmt.Errorf("postgres: request knowledge graph: %w", tools.ErrKnowledgeNotFound)
	}
	c, err := sqlstore.ScanCollection(k.db.pool.QueryRow(ctx, `UPDATE knowledge_collections SET graph_status = 'pending', graph_error = '',
		graph_entities = 0, graph_relationships = 0, graph_communities = 0, graph_requested_us = $1, graph_attempts = 0,
		graph_lease_owner = '', graph_lease_until_us = 0
		WHERE tenant = $2 AND id = $3 AND deleted_us = 0 RETURNING `+sqlstore.CollectionCols, sqlstore.Micros(now), tenant, collection))
	if errors.Is(err, pgx.ErrNoRows) {
		err = tools.ErrKnowledgeNotFound
	}
	if err != nil {
		return tools.Collection{}, fmt.Errorf("postgres: request knowledge graph of %s: %w", collection, err)
	}
	return c, nil
}

func (k *KnowledgeStore) ClaimGraphs(ctx context.Context, owner string, now, until time.Time, limit int) ([]tools.Collection, error) {
	if owner == "" || !a2astore.ValidText(owner) {
		return nil, errors.New("postgres: claim knowledge graphs: the owner is empty or not valid text")
	}
	rows, err := k.db.pool.Query(ctx, knClaimGraphsSQL, sqlstore.Micros(now), sqlstore.Limit(limit, tools.MaxKnowledgePage), owner, sqlstore.Micros(until))
	if err != nil {
		return nil, fmt.Errorf("postgres: claim knowledge graphs: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanCollection)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim knowledge graphs: %w", err)
	}
	sqlstore.SortClaimedGraphs(out)
	return out, nil
}

func (k *KnowledgeStore) FinishGraph(ctx context.Context, tenant, collection, owner string, attempt int, r tools.GraphResult) error {
	what := "postgres: finish knowledge graph of " + collection
	if !a2astore.ValidText(tenant, collection, owner, r.Error) {
		return fmt.Errorf("%s: %w", what, errKnowledgeText)
	}
	err := pgx.BeginFunc(ctx, k.db.pool, func(tx pgx.Tx) error {
		c, err := sqlstore.ScanCollection(tx.QueryRow(ctx, knCollectionSQL+` FOR UPDATE`, tenant, collection))
		if errors.Is(err, pgx.ErrNoRows) {
			return tools.ErrKnowledgeConflict
		}
		if err != nil {
			return err
		}
		if g := c.Graph; g.Status != tools.GraphRunning || g.LeaseOwner != owner || g.Attempts != attempt {
			return tools.ErrKnowledgeConflict
		}
		switch r.Status {
		case tools.GraphCompleted:
			data := r.Data
			if data == nil {
				data = []byte{}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO knowledge_graphs (tenant, collection_id, data) VALUES ($1, $2, $3)
				ON CONFLICT (tenant, collection_id) DO UPDATE SET data = excluded.data`, tenant, collection, data); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE knowledge_collections SET graph_status = 'completed', graph_error = '', graph_entities = $1,
				graph_relationships = $2, graph_communities = $3, graph_built_us = $4, graph_lease_owner = '', graph_lease_until_us = 0
				WHERE tenant = $5 AND id = $6`, r.Entities, r.Relationships, r.Communities, sqlstore.Micros(r.Now), tenant, collection)
			return err
		case tools.GraphFailed:
			_, err = tx.Exec(ctx, `UPDATE knowledge_collections SET graph_status = 'failed', graph_error = $1, graph_entities = 0,
				graph_relationships = 0, graph_communities = 0, graph_lease_owner = '', graph_lease_until_us = 0
				WHERE tenant = $2 AND id = $3`, r.Error, tenant, collection)
			return err
		}
		return fmt.Errorf("status %q is not one a build ends in", r.Status)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (k *KnowledgeStore) GraphData(ctx context.Context, tenant, collection string) ([]byte, error) {
	if !a2astore.ValidText(tenant, collection) {
		return nil, fmt.Errorf("postgres: knowledge graph: %w", tools.ErrKnowledgeNotFound)
	}
	var data []byte
	err := k.db.pool.QueryRow(ctx, `SELECT g.data FROM knowledge_graphs g JOIN knowledge_collections c
		ON c.tenant = g.tenant AND c.id = g.collection_id AND c.deleted_us = 0
		WHERE g.tenant = $1 AND g.collection_id = $2`, tenant, collection).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		err = tools.ErrKnowledgeNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: knowledge graph of %s: %w", collection, err)
	}
	return data, nil
}
