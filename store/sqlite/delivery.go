package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// DeliveryStore returns the database's store of pull delivery (a
// delivery.Store): agents' event streams, consumers, invocation and API
// tokens, DPoP proofs, Idempotency-Keys and messages. Its writes go through the
// database's single writer, whose transactions take the file's write lock
// first: an append reads the agent's head, looks its dedupe keys up,
// stores its events and moves the head on in one step, so sequences have
// no gap and a key names one event, in this process or another using the
// file. Appends of concurrent callers commit group-wise: one commit, and
// one wait for the disk, for all of them.
//
// WatchEvents reports the appends of this handle only (a file shared with
// another process is not watched): fn is called after each AppendEvents
// that stored new events, once per agent, once they have committed.
// Concurrent appends may be reported out of order; head is how far the
// agent's events reached at least.
func (db *DB) DeliveryStore() *DeliveryStore {
	return &DeliveryStore{sqlstore.NewDeliveryStore(dialect, deliverySQL{db}, &db.deliveryWatchers)}
}

// DeliveryStore keeps pull delivery's records in the database (see
// delivery.Store).
type DeliveryStore struct{ *deliveryStore }

// deliveryStore is the store both SQL databases share, over deliverySQL.
type deliveryStore = sqlstore.DeliveryStore

var _ delivery.Store = (*DeliveryStore)(nil)

// deliverySQL is the store's statements in this database's dialect.
type deliverySQL struct{ db *DB }

// The statements of delivery's writes, prepared once on the write
// connection (writer.exec, writer.queryRow).
const (
	dedupedEventSQL = `SELECT ` + sqlstore.DeliveryEventCols + ` FROM delivery_events
		WHERE agent_id = ? AND dedupe_key = ? AND dedupe_key <> ''`
	deliveryHeadSQL        = `SELECT head FROM delivery_heads WHERE agent_id = ?`
	insertDeliveryEventSQL = `INSERT INTO delivery_events (` + sqlstore.DeliveryEventCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	putDeliveryHeadSQL     = `INSERT INTO delivery_heads (agent_id, head) VALUES (?, ?) ON CONFLICT (agent_id) DO UPDATE SET head = excluded.head`
	insertConsumerSQL      = `INSERT INTO delivery_consumers (` + sqlstore.ConsumerCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`
	putConsumerSQL = `UPDATE delivery_consumers SET acked_seq = ?, sent_seq = ?, sent_us = ?, session_id = ?, version = ?, updated_us = ?
		WHERE agent_id = ? AND name = ? AND version = ?`
	putTokenSQL = `INSERT INTO delivery_run_tokens (` + sqlstore.RunTokenCols + `) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id) DO UPDATE SET jti = excluded.jti, event_id = excluded.event_id, consumer = excluded.consumer,
			issued_us = excluded.issued_us, expires_us = excluded.expires_us, seq = excluded.seq`
	useTokenSQL = `INSERT INTO delivery_used_tokens (jti, until_us) VALUES (?, ?) ON CONFLICT DO NOTHING`
	useProofSQL = `INSERT INTO delivery_proofs (id, until_us) VALUES (?, ?)
		ON CONFLICT (id) DO UPDATE SET until_us = excluded.until_us WHERE delivery_proofs.until_us <= ?`
	claimRequestSQL = `INSERT INTO delivery_requests (` + sqlstore.RequestCols + `) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`
	getRequestSQL = `SELECT ` + sqlstore.RequestCols + ` FROM delivery_requests WHERE scope = ? AND idem_key = ?`
)

// deliveryWrites are the statements Open prepares for the delivery store.
var deliveryWrites = []string{dedupedEventSQL, deliveryHeadSQL, insertDeliveryEventSQL, putDeliveryHeadSQL, insertConsumerSQL, putConsumerSQL,
	putTokenSQL, useTokenSQL, useProofSQL, claimRequestSQL, getRequestSQL}

// The delivery store's hot reads, prepared once per handle (DB.stmt).
const (
	deliveryEventsSQL = `SELECT ` + sqlstore.DeliveryEventCols + ` FROM delivery_events
		WHERE agent_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	getConsumerSQL = `SELECT ` + sqlstore.ConsumerCols + `, coalesce((SELECT head FROM delivery_heads WHERE agent_id = ?), 0)
		FROM delivery_consumers WHERE agent_id = ? AND name = ?`
	newestTokenSQL    = `SELECT ` + sqlstore.RunTokenCols + ` FROM delivery_run_tokens WHERE run_id = ?`
	findAPITokenSQL   = `SELECT ` + sqlstore.APITokenCols + ` FROM delivery_api_tokens WHERE hash = ?`
	threadMessagesSQL = `SELECT ` + sqlstore.MessageCols + ` FROM delivery_messages
		WHERE tenant = ? AND thread_id = ? ORDER BY seq DESC LIMIT ?`
)

func (d deliverySQL) Append(ctx context.Context, events []delivery.StoredEvent) ([]delivery.StoredEvent, map[string]int64, error) {
	var (
		out   []delivery.StoredEvent
		heads map[string]int64
	)
	err := d.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		// The writer's transaction holds the write lock: nothing appends
		// between these reads and the writes after them.
		p, err := sqlstore.PlanAppend(events, func(agentID, key string) (delivery.StoredEvent, bool, error) {
			e, err := sqlstore.ScanDeliveryEvent(d.db.wr.queryRow(tx, dedupedEventSQL, agentID, key))
			if errors.Is(err, sql.ErrNoRows) {
				return e, false, nil
			}
			return e, err == nil, err
		})
		if err != nil {
			return err
		}
		heads, err = p.Number(func(agentID string) (int64, error) {
			var h int64
			err := d.db.wr.queryRow(tx, deliveryHeadSQL, agentID).Scan(&h)
			if errors.Is(err, sql.ErrNoRows) {
				return 0, nil
			}
			return h, err
		})
		if err != nil {
			return err
		}
		for _, i := range p.New {
			args, err := sqlstore.DeliveryEventArgs(&p.Out[i])
			if err != nil {
				return err
			}
			if _, err := d.db.wr.exec(tx, insertDeliveryEventSQL, args...); err != nil {
				return err
			}
		}
		for _, a := range p.Agents() {
			if _, err := d.db.wr.exec(tx, putDeliveryHeadSQL, a, heads[a]); err != nil {
				return err
			}
		}
		out = p.Out
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, heads, nil
}

func (d deliverySQL) Events(ctx context.Context, agentID string, after int64, limit int) ([]delivery.StoredEvent, error) {
	return queryAll(ctx, d.db.query, sqlstore.ScanDeliveryEvent, deliveryEventsSQL, agentID, after, limit)
}

func (d deliverySQL) Head(ctx context.Context, agentID string) (int64, error) {
	var h int64
	err := d.db.queryRow(ctx, deliveryHeadSQL, agentID).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return h, err
}

func (d deliverySQL) Consumer(ctx context.Context, agentID, name string) (delivery.Consumer, int64, error) {
	var head int64
	c, err := sqlstore.ScanConsumer(d.db.queryRow(ctx, getConsumerSQL, agentID, agentID, name), &head)
	return c, head, err
}

func (d deliverySQL) InsertConsumer(ctx context.Context, c *delivery.Consumer) (bool, error) {
	return d.db.changeOne(ctx, insertConsumerSQL, sqlstore.ConsumerArgs(c)...)
}

func (d deliverySQL) PutConsumer(ctx context.Context, c *delivery.Consumer, expect int64) (bool, error) {
	return d.db.changeOne(ctx, putConsumerSQL, c.AckedSeq, c.SentSeq, sqlstore.Micros(c.SentAt), c.SessionID, c.Version,
		sqlstore.Micros(c.UpdatedAt), c.AgentID, c.Name, expect)
}

func (d deliverySQL) PutTokens(ctx context.Context, tokens []delivery.TokenRecord) error {
	return d.db.wr.doAtomic(ctx, func(tx *sql.Tx) error {
		for i := range tokens {
			if _, err := d.db.wr.exec(tx, putTokenSQL, sqlstore.RunTokenArgs(&tokens[i])...); err != nil {
				return err
			}
		}
		return nil
	})
}

func (d deliverySQL) NewestToken(ctx context.Context, runID string) (delivery.TokenRecord, error) {
	return sqlstore.ScanRunToken(d.db.queryRow(ctx, newestTokenSQL, runID))
}

func (d deliverySQL) UseToken(ctx context.Context, jti string, untilUS int64) (bool, error) {
	return d.db.changeOne(ctx, useTokenSQL, jti, untilUS)
}

func (d deliverySQL) UseProof(ctx context.Context, id []byte, nowUS, untilUS int64) (bool, error) {
	return d.db.changeOne(ctx, useProofSQL, id, untilUS, nowUS)
}

func (d deliverySQL) PruneProofs(ctx context.Context, nowUS int64, limit int) (int64, error) {
	var n int64
	err := d.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM delivery_proofs WHERE id IN
			(SELECT id FROM delivery_proofs WHERE until_us <= ? ORDER BY until_us LIMIT ?)`, nowUS, limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

func (d deliverySQL) PruneUsedTokens(ctx context.Context, nowUS int64, limit int) (int64, error) {
	var n int64
	err := d.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM delivery_used_tokens WHERE jti IN
			(SELECT jti FROM delivery_used_tokens WHERE until_us <= ? ORDER BY until_us LIMIT ?)`, nowUS, limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

func (d deliverySQL) InsertAPIToken(ctx context.Context, t *delivery.APIToken) (bool, error) {
	// Without a target, ON CONFLICT covers the id and the hash alike.
	return d.db.changeOne(ctx, `INSERT INTO delivery_api_tokens (`+sqlstore.APITokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, sqlstore.APITokenArgs(t)...)
}

func (d deliverySQL) APIToken(ctx context.Context, hash []byte) (delivery.APIToken, error) {
	return sqlstore.ScanAPIToken(d.db.queryRow(ctx, findAPITokenSQL, hash))
}

func (d deliverySQL) RevokeAPIToken(ctx context.Context, agentID, id string, nowUS int64) (bool, error) {
	return d.db.changeOne(ctx, `UPDATE delivery_api_tokens SET revoked_us = CASE WHEN revoked_us = 0 THEN ? ELSE revoked_us END
		WHERE id = ? AND agent_id = ?`, nowUS, id, agentID)
}

func (d deliverySQL) ClaimRequest(ctx context.Context, r *delivery.IdempotentRequest) (delivery.IdempotentRequest, bool, error) {
	var (
		stored  delivery.IdempotentRequest
		claimed bool
	)
	err := d.db.wr.do(ctx, func(tx *sql.Tx) (err error) {
		// The writer's transaction holds the write lock: the key read is
		// the one the insert found.
		if claimed, err = affected(d.db.wr.exec(tx, claimRequestSQL, sqlstore.RequestArgs(r)...)); err != nil || claimed {
			return err
		}
		stored, err = sqlstore.ScanRequest(d.db.wr.queryRow(tx, getRequestSQL, r.Scope, r.Key))
		return err
	})
	if claimed {
		stored = *r
	}
	return stored, claimed, err
}

func (d deliverySQL) FinishRequest(ctx context.Context, r *delivery.IdempotentRequest) (bool, error) {
	return d.db.changeOne(ctx, `UPDATE delivery_requests SET done = 1, status = ?, body = ? WHERE scope = ? AND idem_key = ?`,
		r.Status, sqlstore.Raw(r.Body), r.Scope, r.Key)
}

func (d deliverySQL) ForgetRequest(ctx context.Context, scope, key string) error {
	_, err := d.db.changeOne(ctx, `DELETE FROM delivery_requests WHERE scope = ? AND idem_key = ?`, scope, key)
	return err
}

func (d deliverySQL) PruneRequests(ctx context.Context, cutoffUS int64) (int64, error) {
	var n int64
	err := d.db.wr.do(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM delivery_requests WHERE created_us < ?`, cutoffUS)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

func (d deliverySQL) InsertMessage(ctx context.Context, args []any) (bool, error) {
	// Without a target, ON CONFLICT covers the id and the client message
	// id alike.
	return d.db.changeOne(ctx, `INSERT INTO delivery_messages (`+sqlstore.MessageCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, args...)
}

func (d deliverySQL) ClientMessage(ctx context.Context, agentID, clientMsgID string) (delivery.StoredMessage, error) {
	return sqlstore.ScanMessage(d.db.queryRow(ctx, `SELECT `+sqlstore.MessageCols+` FROM delivery_messages
		WHERE agent_id = ? AND client_msg_id = ?`, agentID, clientMsgID))
}

func (d deliverySQL) ThreadMessages(ctx context.Context, tenantID, threadID string, limit int) ([]delivery.StoredMessage, error) {
	return queryAll(ctx, d.db.query, sqlstore.ScanMessage, threadMessagesSQL, tenantID, threadID, limit)
}
