package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"novaos.dev/novaos/store/internal/sqlstore"
	"novaos.dev/novaos/tools"
)

// KnowledgeStore returns the database's store of knowledge collections (a
// tools.KnowledgeStore). Its writes go through the database's single
// writer, so each check and the write it guards (a name, a limit, a claim,
// a lease) are one step, in this process or another using the file.
func (db *DB) KnowledgeStore() *KnowledgeStore { return &KnowledgeStore{db} }

// KnowledgeStore keeps the tool gateway's knowledge collections in the
// database (see tools.KnowledgeStore).
type KnowledgeStore struct{ db *DB }

var _ tools.KnowledgeStore = (*KnowledgeStore)(nil)

const (
	knCollectionSQL = `SELECT ` + sqlstore.CollectionCols + ` FROM knowledge_collections
		WHERE tenant = ? AND id = ? AND deleted_us = 0`
	knCollectionByNameSQL = `SELECT ` + sqlstore.CollectionCols + ` FROM knowledge_collections
		WHERE tenant = ? AND name = ? AND deleted_us = 0`
	knJobSQL       = `SELECT ` + sqlstore.JobCols + ` FROM knowledge_jobs WHERE tenant = ? AND id = ?`
	knDocByHashSQL = `SELECT ` + sqlstore.DocumentCols + ` FROM knowledge_documents WHERE tenant = ? AND collection_id = ? AND sha256 = ?`
	knClaimJobsSQL = `UPDATE knowledge_jobs SET status = 'running', lease_owner = ?, lease_until_us = ?, attempts = attempts + 1, updated_us = ?
		WHERE rowid IN (SELECT rowid FROM knowledge_jobs WHERE status IN ` + sqlstore.ActiveJobStatuses + `
			AND (status = 'pending' AND not_before_us <= ? OR status = 'running' AND lease_until_us <= ?)
			ORDER BY created_us, id, tenant LIMIT ?)
		RETURNING ` + sqlstore.JobCols
	knClaimGraphsSQL = `UPDATE knowledge_collections SET graph_status = 'running', graph_lease_owner = ?, graph_lease_until_us = ?,
			graph_attempts = graph_attempts + 1
		WHERE rowid IN (SELECT rowid FROM knowledge_collections WHERE graph_status IN ` + sqlstore.ClaimableGraphStatuses + `
			AND deleted_us = 0 AND (graph_status = 'pending' OR graph_lease_until_us <= ?)
			ORDER BY graph_requested_us, tenant, id LIMIT ?)
		RETURNING ` + sqlstore.CollectionCols
)

func (k *KnowledgeStore) CreateCollection(ctx context.Context, tenant string, c tools.Collection, max int) error {
	err := k.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		var n int
		err := tx.QueryRow(`SELECT count(*) FROM knowledge_collections WHERE tenant = ? AND (id = ? OR name = ? AND deleted_us = 0)`,
			tenant, c.ID, c.Name).Scan(&n)
		if err != nil {
			return err
		}
		if n > 0 {
			return tools.ErrKnowledgeExists
		}
		if err := tx.QueryRow(`SELECT count(*) FROM knowledge_collections WHERE tenant = ? AND deleted_us = 0`, tenant).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return fmt.Errorf("%d collections: %w", n, tools.ErrKnowledgeLimit)
		}
		_, err = tx.Exec(`INSERT INTO knowledge_collections (tenant, id, name, description, created_us) VALUES (?, ?, ?, ?, ?)`,
			tenant, c.ID, c.Name, c.Description, sqlstore.Micros(c.CreatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: create knowledge collection %q: %w", c.Name, err)
	}
	return nil
}

func (k *KnowledgeStore) collection(ctx context.Context, query, tenant, key string) (tools.Collection, error) {
	c, err := sqlstore.ScanCollection(k.db.queryRow(ctx, query, tenant, key))
	if errors.Is(err, sql.ErrNoRows) {
		err = tools.ErrKnowledgeNotFound
	}
	if err != nil {
		return tools.Collection{}, fmt.Errorf("sqlite: knowledge collection %q: %w", key, err)
	}
	return c, nil
}

func (k *KnowledgeStore) Collection(ctx context.Context, tenant, id string) (tools.Collection, error) {
	return k.collection(ctx, knCollectionSQL, tenant, id)
}

func (k *KnowledgeStore) CollectionByName(ctx context.Context, tenant, name string) (tools.Collection, error) {
	return k.collection(ctx, knCollectionByNameSQL, tenant, name)
}

func (k *KnowledgeStore) ListCollections(ctx context.Context, tenant, afterName string, limit int) ([]tools.Collection, error) {
	rows, err := k.db.query(ctx, `SELECT `+sqlstore.CollectionCols+` FROM knowledge_collections
		WHERE tenant = ? AND deleted_us = 0 AND name > ? ORDER BY name LIMIT ?`, tenant, afterName, sqlstore.Limit(limit, tools.MaxKnowledgePage))
	if err != nil {
		return nil, fmt.Errorf("sqlite: list knowledge collections: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanCollection)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list knowledge collections: %w", err)
	}
	return out, nil
}

func (k *KnowledgeStore) DeleteCollection(ctx context.Context, tenant, id string, now time.Time) (int, error) {
	var cancelled int64
	err := k.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		at := sqlstore.Micros(now)
		res, err := tx.Exec(`UPDATE knowledge_collections SET deleted_us = ? WHERE tenant = ? AND id = ? AND deleted_us = 0`, at, tenant, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return orSentinel(err, tools.ErrKnowledgeNotFound)
		}
		res, err = tx.Exec(`UPDATE knowledge_jobs SET status = 'cancelled', content = '', lease_owner = '', lease_until_us = 0, updated_us = ?
			WHERE tenant = ? AND collection_id = ? AND status IN `+sqlstore.ActiveJobStatuses, at, tenant, id)
		if err != nil {
			return err
		}
		cancelled, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete knowledge collection %s: %w", id, err)
	}
	return int(cancelled), nil
}

func (k *KnowledgeStore) PendingPurges(ctx context.Context, due time.Time, limit int) ([]tools.Collection, error) {
	rows, err := k.db.query(ctx, `SELECT `+sqlstore.CollectionCols+` FROM knowledge_collections
		WHERE deleted_us > 0 AND deleted_us <= ? ORDER BY deleted_us, tenant, id LIMIT ?`,
		sqlstore.Micros(due), sqlstore.Limit(limit, tools.MaxKnowledgePage))
	if err != nil {
		return nil, fmt.Errorf("sqlite: knowledge purges: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanCollection)
	if err != nil {
		return nil, fmt.Errorf("sqlite: knowledge purges: %w", err)
	}
	return out, nil
}

func (k *KnowledgeStore) FinishPurge(ctx context.Context, tenant, id string) error {
	err := k.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM knowledge_collections WHERE tenant = ? AND id = ? AND deleted_us > 0`, tenant, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return orSentinel(err, tools.ErrKnowledgeNotFound)
		}
		if _, err := tx.Exec(`DELETE FROM knowledge_documents WHERE tenant = ? AND collection_id = ?`, tenant, id); err != nil {
			return err
		}
		_, err = tx.Exec(`DELETE FROM knowledge_graphs WHERE tenant = ? AND collection_id = ?`, tenant, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: purge knowledge collection %s: %w", id, err)
	}
	return nil
}

func (k *KnowledgeStore) CreateJob(ctx context.Context, tenant string, j tools.Job, maxActive int) error {
	err := k.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		var n int
		err := tx.QueryRow(`SELECT count(*) FROM knowledge_collections WHERE tenant = ? AND id = ? AND deleted_us = 0`, tenant, j.CollectionID).Scan(&n)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("collection %s: %w", j.CollectionID, tools.ErrKnowledgeNotFound)
		}
		if !j.Status.Ended() {
			if err := tx.QueryRow(`SELECT count(*) FROM knowledge_jobs WHERE tenant = ? AND status IN `+sqlstore.ActiveJobStatuses, tenant).Scan(&n); err != nil {
				return err
			}
			if n >= maxActive {
				return fmt.Errorf("%d active jobs: %w", n, tools.ErrKnowledgeLimit)
			}
		}
		res, err := tx.Exec(`INSERT INTO knowledge_jobs (`+sqlstore.JobCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, sqlstore.JobArgs(tenant, &j)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return orSentinel(err, tools.ErrKnowledgeExists)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: create knowledge job %s: %w", j.ID, err)
	}
	return nil
}

func (k *KnowledgeStore) Job(ctx context.Context, tenant, id string) (tools.Job, error) {
	j, err := sqlstore.ScanJob(k.db.queryRow(ctx, knJobSQL, tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = tools.ErrKnowledgeNotFound
	}
	if err != nil {
		return tools.Job{}, fmt.Errorf("sqlite: knowledge job %s: %w", id, err)
	}
	return j, nil
}

func (k *KnowledgeStore) ClaimJobs(ctx context.Context, owner string, now, until time.Time, limit int) ([]tools.Job, error) {
	var out []tools.Job
	err := k.db.wr.do(ctx, func(tx *sql.Tx) error {
		at := sqlstore.Micros(now)
		rows, err := tx.Query(knClaimJobsSQL, owner, sqlstore.Micros(until), at, at, at, sqlstore.Limit(limit, tools.MaxKnowledgePage))
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = sqlstore.Collect(rows, sqlstore.ScanJob)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim knowledge jobs: %w", err)
	}
	sqlstore.SortClaimedJobs(out)
	return out, nil
}

// heldJob reads a job in tx and checks that the claim of owner at attempt
// still holds it: ErrKnowledgeConflict, with the job, when not.
func heldJob(tx *sql.Tx, tenant, id, owner string, attempt int) (tools.Job, error) {
	j, err := sqlstore.ScanJob(tx.QueryRow(knJobSQL, tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		return tools.Job{}, tools.ErrKnowledgeNotFound
	}
	if err != nil {
		return tools.Job{}, err
	}
	if j.Status != tools.JobRunning || j.LeaseOwner != owner || j.Attempts != attempt {
		return j, tools.ErrKnowledgeConflict
	}
	return j, nil
}

func (k *KnowledgeStore) ExtendJob(ctx context.Context, tenant, id, owner string, attempt int, until time.Time) error {
	err := k.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		if _, err := heldJob(tx, tenant, id, owner, attempt); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE knowledge_jobs SET lease_until_us = ? WHERE tenant = ? AND id = ?`, sqlstore.Micros(until), tenant, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: extend knowledge job %s: %w", id, err)
	}
	return nil
}

func (k *KnowledgeStore) FinishJob(ctx context.Context, tenant, id, owner string, attempt int, o tools.JobOutcome) (tools.Job, error) {
	var out tools.Job
	err := k.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		j, err := heldJob(tx, tenant, id, owner, attempt)
		out = j
		if err != nil {
			return err
		}
		if err := finishJob(&j, o, func(d *tools.Document) (string, error) { return commitDocument(tx, tenant, j.CollectionID, d) }); err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE knowledge_jobs SET (`+sqlstore.JobCols+`) = (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			WHERE tenant = ? AND id = ?`, append(sqlstore.JobArgs(tenant, &j), tenant, id)...); err != nil {
			return err
		}
		out, err = sqlstore.ScanJob(tx.QueryRow(knJobSQL, tenant, id))
		return err
	})
	if err != nil {
		return out, fmt.Errorf("sqlite: finish knowledge job %s: %w", id, err)
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

// commitDocument stores d in tx unless the collection holds a document of
// its content, and returns the id of the one it holds.
func commitDocument(tx *sql.Tx, tenant, collection string, d *tools.Document) (string, error) {
	var live int
	if err := tx.QueryRow(`SELECT count(*) FROM knowledge_collections WHERE tenant = ? AND id = ? AND deleted_us = 0`, tenant, collection).Scan(&live); err != nil {
		return "", err
	}
	if live == 0 {
		return "", fmt.Errorf("collection %s: %w", collection, tools.ErrKnowledgeConflict)
	}
	var have string
	err := tx.QueryRow(`SELECT id FROM knowledge_documents WHERE tenant = ? AND collection_id = ? AND sha256 = ?`, tenant, collection, d.SHA256).Scan(&have)
	if err == nil {
		return have, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	res, err := tx.Exec(`INSERT INTO knowledge_documents (`+sqlstore.DocumentCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, sqlstore.DocumentArgs(tenant, collection, d)...)
	if err != nil {
		return "", err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return "", orSentinel(err, fmt.Errorf("document %s: %w", d.ID, tools.ErrKnowledgeExists))
	}
	_, err = tx.Exec(`UPDATE knowledge_collections SET documents = documents + 1, chunks = chunks + ? WHERE tenant = ? AND id = ?`,
		d.Chunks, tenant, collection)
	return d.ID, err
}

func (k *KnowledgeStore) SweepJobs(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int64
	err := k.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM knowledge_jobs WHERE rowid IN (SELECT rowid FROM knowledge_jobs
			WHERE status IN `+sqlstore.EndedJobStatuses+` AND updated_us < ? LIMIT ?)`, sqlstore.Micros(before), sqlstore.Limit(limit, tools.MaxKnowledgePage))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: sweep knowledge jobs: %w", err)
	}
	return int(n), nil
}

func (k *KnowledgeStore) DocumentByHash(ctx context.Context, tenant, collection, sha256 string) (tools.Document, error) {
	d, err := sqlstore.ScanDocument(k.db.queryRow(ctx, knDocByHashSQL, tenant, collection, sha256))
	if errors.Is(err, sql.ErrNoRows) {
		err = tools.ErrKnowledgeNotFound
	}
	if err != nil {
		return tools.Document{}, fmt.Errorf("sqlite: knowledge document by hash: %w", err)
	}
	return d, nil
}

func (k *KnowledgeStore) Documents(ctx context.Context, tenant, collection string, ids []string) ([]tools.Document, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []tools.Document
	// SQLite bounds a statement's parameters; ask in batches well under.
	for batch := range slices.Chunk(ids, 500) {
		args := make([]any, 0, len(batch)+2)
		args = append(args, tenant, collection)
		for _, id := range batch {
			args = append(args, id)
		}
		rows, err := k.db.r.QueryContext(ctx, `SELECT `+sqlstore.DocumentCols+` FROM knowledge_documents
			WHERE tenant = ? AND collection_id = ? AND id IN (?`+strings.Repeat(", ?", len(batch)-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: knowledge documents: %w", err)
		}
		ds, err := sqlstore.Collect(rows, sqlstore.ScanDocument)
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("sqlite: knowledge documents: %w", err)
		}
		out = append(out, ds...)
	}
	return out, nil
}

func (k *KnowledgeStore) ListDocuments(ctx context.Context, tenant, collection, afterID string, limit int) ([]tools.Document, error) {
	rows, err := k.db.query(ctx, `SELECT `+sqlstore.DocumentCols+` FROM knowledge_documents
		WHERE tenant = ? AND collection_id = ? AND id > ? ORDER BY id LIMIT ?`, tenant, collection, afterID, sqlstore.Limit(limit, tools.MaxKnowledgePage))
	if err != nil {
		return nil, fmt.Errorf("sqlite: list knowledge documents: %w", err)
	}
	defer rows.Close()
	out, err := sqlstore.Collect(rows, sqlstore.ScanDocument)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list knowledge documents: %w", err)
	}
	return out, nil
}

func (k *KnowledgeStore) RequestGraph(ctx context.Context, tenant, collection string, now time.Time) (tools.Collection, error) {
	var out tools.Collection
	err := k.db.wr.do(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = sqlstore.ScanCollection(tx.QueryRow(`UPDATE knowledge_collections SET graph_status = 'pending', graph_error = '',
			graph_entities = 0, graph_relationships = 0, graph_communities = 0, graph_requested_us = ?, graph_attempts = 0,
			graph_lease_owner = '', graph_lease_until_us = 0
			WHERE tenant = ? AND id = ? AND deleted_us = 0 RETURNING `+sqlstore.CollectionCols, sqlstore.Micros(now), tenant, collection))
		if errors.Is(err, sql.ErrNoRows) {
			return tools.ErrKnowledgeNotFound
		}
		return err
	})
	if err != nil {
		return tools.Collection{}, fmt.Errorf("sqlite: request knowledge graph of %s: %w", collection, err)
	}
	return out, nil
}

func (k *KnowledgeStore) ClaimGraphs(ctx context.Context, owner string, now, until time.Time, limit int) ([]tools.Collection, error) {
	var out []tools.Collection
	err := k.db.wr.do(ctx, func(tx *sql.Tx) error {
		rows, err := tx.Query(knClaimGraphsSQL, owner, sqlstore.Micros(until), sqlstore.Micros(now), sqlstore.Limit(limit, tools.MaxKnowledgePage))
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = sqlstore.Collect(rows, sqlstore.ScanCollection)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim knowledge graphs: %w", err)
	}
	sqlstore.SortClaimedGraphs(out)
	return out, nil
}

func (k *KnowledgeStore) FinishGraph(ctx context.Context, tenant, collection, owner string, attempt int, r tools.GraphResult) error {
	err := k.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		c, err := sqlstore.ScanCollection(tx.QueryRow(knCollectionSQL, tenant, collection))
		if errors.Is(err, sql.ErrNoRows) {
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
			if _, err := tx.Exec(`INSERT INTO knowledge_graphs (tenant, collection_id, data) VALUES (?, ?, ?)
				ON CONFLICT (tenant, collection_id) DO UPDATE SET data = excluded.data`, tenant, collection, nonNilBytes(r.Data)); err != nil {
				return err
			}
			_, err = tx.Exec(`UPDATE knowledge_collections SET graph_status = 'completed', graph_error = '', graph_entities = ?,
				graph_relationships = ?, graph_communities = ?, graph_built_us = ?, graph_lease_owner = '', graph_lease_until_us = 0
				WHERE tenant = ? AND id = ?`, r.Entities, r.Relationships, r.Communities, sqlstore.Micros(r.Now), tenant, collection)
			return err
		case tools.GraphFailed:
			_, err = tx.Exec(`UPDATE knowledge_collections SET graph_status = 'failed', graph_error = ?, graph_entities = 0,
				graph_relationships = 0, graph_communities = 0, graph_lease_owner = '', graph_lease_until_us = 0
				WHERE tenant = ? AND id = ?`, r.Error, tenant, collection)
			return err
		}
		return fmt.Errorf("status %q is not one a build ends in", r.Status)
	})
	if err != nil {
		return fmt.Errorf("sqlite: finish knowledge graph of %s: %w", collection, err)
	}
	return nil
}

// nonNilBytes keeps an empty graph from being stored as NULL.
func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (k *KnowledgeStore) GraphData(ctx context.Context, tenant, collection string) ([]byte, error) {
	var data []byte
	err := k.db.queryRow(ctx, `SELECT g.data FROM knowledge_graphs g JOIN knowledge_collections c
		ON c.tenant = g.tenant AND c.id = g.collection_id AND c.deleted_us = 0
		WHERE g.tenant = ? AND g.collection_id = ?`, tenant, collection).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		err = tools.ErrKnowledgeNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: knowledge graph of %s: %w", collection, err)
	}
	return data, nil
}
