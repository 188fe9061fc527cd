package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// DeliveryStore returns the database's store of pull delivery (a
// delivery.Store): agents' event streams, consumers, invocation and API
// tokens, DPoP proofs, Idempotency-Keys and messages. Any number of
// replicas may share it. An append is one statement that moves each
// agent's head on by its new events with an upsert, whose row lock
// orders the agent's appends on every replica until they commit, stores
// the events numbered after the head it returns, and sends the
// notification of the append: all committed together or not at all.
// Appends and consumer updates commit group-wise through the database's
// writer, with the task and gateway stores' writes.
//
// An append looks its dedupe keys up before it writes. When another
// append stored one of them in between, the unique index on the agent's
// keys refuses the write whole, and the append looks them up again: of
// appends racing with one key exactly one stores its event, and the
// others are answered with it.
//
// WatchEvents reports every replica's appends. An append that stored new
// events calls this handle's watchers once it has committed and sends a
// notification on the channel novaos_delivery in its transaction, which
// the other replicas' listeners (the connection TaskFeed listens on)
// hand to their watchers. When the listening connection comes back after
// it broke, every watcher is called with ("", 0).
//
// RecordProof is one upsert: of replicas racing with one proof id, the
// first inserts it and the others wait for its commit and find it kept.
// PruneProofs and PruneUsedTokens pass over the rows another replica is
// pruning (SKIP LOCKED): replicas pruning at once do not wait for each
// other.
func (db *DB) DeliveryStore() *DeliveryStore {
	return &DeliveryStore{sqlstore.NewDeliveryStore(dialect, deliverySQL{db}, &db.feed.agents)}
}

// DeliveryStore keeps pull delivery's records in the database (see
// delivery.Store).
type DeliveryStore struct{ *deliveryStore }

// deliveryStore is the store both SQL databases share, over deliverySQL.
type deliveryStore = sqlstore.DeliveryStore

var _ delivery.Store = (*DeliveryStore)(nil)

// deliverySQL is the store's statements in this database's dialect.
type deliverySQL struct{ db *DB }

// deliveryChannel is the channel delivery appends are announced on, as
// "<head>:<origin>:<agent id>" (decodeAppendNotification).
const deliveryChannel = "novaos_delivery"

// dedupeIndex is the unique index of an agent's dedupe keys.
const dedupeIndex = "delivery_events_dedupe"

// knownEventsSQL reads the events stored with the agents' dedupe keys
// ($1, $2: the agents and keys, pairwise).
const knownEventsSQL = `SELECT ` + sqlstore.DeliveryEventCols + ` FROM delivery_events
	WHERE dedupe_key <> '' AND (agent_id, dedupe_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`

// appendEventsSQL appends the new events of an append ($1–$10: their
// columns as arrays, each event's rank among its agent's new events in
// $2) and returns the agents and their heads after it; $11 is this
// replica's origin in the notifications. The upsert takes the heads in
// the agents' byte order, so that appends to several agents do not
// deadlock.
var appendEventsSQL = `WITH u AS (
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::bigint[], $9::bytea[], $10::bytea[])
			AS u(agent_id, rank, tenant, id, type, run_id, dedupe_key, created_us, payload, body)
	), c AS (
		SELECT agent_id, count(*) AS n FROM u GROUP BY agent_id
	), h AS (
		INSERT INTO delivery_heads AS d (agent_id, head) SELECT agent_id, n FROM c ORDER BY agent_id COLLATE "C"
		ON CONFLICT (agent_id) DO UPDATE SET head = d.head + EXCLUDED.head
		RETURNING d.agent_id, d.head
	), e AS (
		INSERT INTO delivery_events (` + sqlstore.DeliveryEventCols + `)
		SELECT u.agent_id, h.head - c.n + u.rank, u.tenant, u.id, u.type, u.run_id, u.dedupe_key, u.created_us, u.payload, u.body
		FROM u JOIN c ON c.agent_id = u.agent_id JOIN h ON h.agent_id = u.agent_id
	)
	SELECT array_agg(h.agent_id::text), array_agg(h.head),
		coalesce(bool_and(pg_notify('` + deliveryChannel + `', h.head || ':' || $11 || ':' ||
			CASE WHEN octet_length(h.agent_id) <= ` + strconv.Itoa(maxNotifyRunID) + ` THEN h.agent_id ELSE '' END) IS NOT NULL), true)
	FROM h`

// deliveryWriteKey is the key of an append's write in the database's
// writer, which orders a batch's writes by key: by the first agent, so
// that the heads of single-agent appends are locked in one order across
// batches, then by an event, so that several appends to one agent may
// share a batch.
func deliveryWriteKey(e *delivery.StoredEvent) string {
	return "delivery\x00" + e.AgentID + "\x00" + e.ID
}

func (d deliverySQL) Append(ctx context.Context, events []delivery.StoredEvent) ([]delivery.StoredEvent, map[string]int64, error) {
	// Each try that the dedupe index refuses found a key stored since
	// its lookup, which the next lookup sees: there are at most as many
	// as the append has keys.
	for try := 0; ; try++ {
		known, err := d.known(ctx, events)
		if err != nil {
			return nil, nil, err
		}
		p, err := sqlstore.PlanAppend(events, func(agentID, key string) (delivery.StoredEvent, bool, error) {
			e, ok := known[[2]string{agentID, key}]
			return e, ok, nil
		})
		if err != nil {
			return nil, nil, err
		}
		if len(p.New) == 0 {
			return p.Out, nil, nil
		}
		args, err := appendArgs(p)
		if err != nil {
			return nil, nil, err
		}
		var (
			agents   []string
			after    []int64
			notified bool
		)
		err = d.db.wr.do(ctx, newWrite(deliveryWriteKey(&p.Out[p.New[0]]), appendEventsSQL, append(args, d.db.instance),
			&agents, &after, &notified))
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == uniqueViolation && pe.ConstraintName == dedupeIndex && try < len(events) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if len(agents) != len(after) || len(agents) != len(p.Count) {
			return nil, nil, fmt.Errorf("an append of %d agents' events moved %d heads", len(p.Count), len(agents))
		}
		heads := make(map[string]int64, len(agents))
		for i, a := range agents {
			heads[a] = after[i]
		}
		// The statement numbered the new events after the heads it found,
		// which are the heads after it less the events it added.
		if _, err := p.Number(func(agentID string) (int64, error) { return heads[agentID] - p.Count[agentID], nil }); err != nil {
			return nil, nil, err
		}
		return p.Out, heads, nil
	}
}

// known reads the events stored with the dedupe keys of events, by agent
// and key.
func (d deliverySQL) known(ctx context.Context, events []delivery.StoredEvent) (map[[2]string]delivery.StoredEvent, error) {
	var agents, keys []string
	for _, e := range events {
		if e.DedupeKey != "" {
			agents, keys = append(agents, e.AgentID), append(keys, e.DedupeKey)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	evs, err := queryAll(ctx, d.db.pool, sqlstore.ScanDeliveryEvent, knownEventsSQL, agents, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[[2]string]delivery.StoredEvent, len(evs))
	for _, e := range evs {
		out[[2]string{e.AgentID, e.DedupeKey}] = e
	}
	return out, nil
}

// appendArgs are appendEventsSQL's arrays for the new events of p.
func appendArgs(p *sqlstore.AppendPlan) ([]any, error) {
	n := len(p.New)
	var (
		agents, tenants, ids, types = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		runs, keys                  = make([]string, n), make([]string, n)
		created                     = make([]int64, n)
		payloads, bodies            = make([][]byte, n), make([][]byte, n)
	)
	for k, i := range p.New {
		e := &p.Out[i]
		body, err := sqlstore.DeliveryEventBody(e)
		if err != nil {
			return nil, err
		}
		agents[k], tenants[k], ids[k], types[k], runs[k], keys[k] = e.AgentID, e.TenantID, e.ID, e.Type, e.RunID, e.DedupeKey
		created[k], payloads[k], bodies[k] = sqlstore.Micros(e.CreatedAt), sqlstore.Raw(e.Payload), body
	}
	return []any{agents, p.Ranks(), tenants, ids, types, runs, keys, created, payloads, bodies}, nil
}

func (d deliverySQL) Events(ctx context.Context, agentID string, after int64, limit int) ([]delivery.StoredEvent, error) {
	return queryAll(ctx, d.db.pool, sqlstore.ScanDeliveryEvent, `SELECT `+sqlstore.DeliveryEventCols+` FROM delivery_events
		WHERE agent_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, agentID, after, limit)
}

func (d deliverySQL) Head(ctx context.Context, agentID string) (int64, error) {
	var h int64
	err := d.db.pool.QueryRow(ctx, `SELECT head FROM delivery_heads WHERE agent_id = $1`, agentID).Scan(&h)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return h, err
}

func (d deliverySQL) Consumer(ctx context.Context, agentID, name string) (delivery.Consumer, int64, error) {
	var head int64
	c, err := sqlstore.ScanConsumer(d.db.pool.QueryRow(ctx, `SELECT `+sqlstore.ConsumerCols+`,
		coalesce((SELECT head FROM delivery_heads WHERE agent_id = $1), 0)
		FROM delivery_consumers WHERE agent_id = $1 AND name = $2`, agentID, name), &head)
	return c, head, err
}

func (d deliverySQL) InsertConsumer(ctx context.Context, c *delivery.Consumer) (bool, error) {
	return d.db.changeOne(ctx, `INSERT INTO delivery_consumers (`+sqlstore.ConsumerCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT DO NOTHING`, sqlstore.ConsumerArgs(c)...)
}

// putConsumerSQL writes a consumer if its row is at the version expected,
// and returns how many rows it wrote: one row whatever happened, as the
// writer's batches need.
const putConsumerSQL = `WITH w AS (
		UPDATE delivery_consumers SET acked_seq = $1, sent_seq = $2, sent_us = $3, session_id = $4, version = $5, updated_us = $6
		WHERE agent_id = $7 AND name = $8 AND version = $9 RETURNING 1
	)
	SELECT count(*) FROM w`

func (d deliverySQL) PutConsumer(ctx context.Context, c *delivery.Consumer, expect int64) (bool, error) {
	var n int64
	err := d.db.wr.do(ctx, newWrite("delivery-consumer\x00"+c.AgentID+"\x00"+c.Name, putConsumerSQL,
		[]any{c.AckedSeq, c.SentSeq, sqlstore.Micros(c.SentAt), c.SessionID, c.Version, sqlstore.Micros(c.UpdatedAt), c.AgentID, c.Name, expect},
		&n))
	return n == 1, err
}

func (d deliverySQL) PutTokens(ctx context.Context, tokens []delivery.TokenRecord) error {
	n := len(tokens)
	runs, jtis, events, consumers := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	issued, expires, seqs := make([]int64, n), make([]int64, n), make([]int64, n)
	for i, r := range tokens {
		runs[i], jtis[i], events[i], consumers[i] = r.RunID, r.JTI, r.EventID, r.Consumer
		issued[i], expires[i], seqs[i] = sqlstore.Micros(r.IssuedAt), sqlstore.Micros(r.ExpiresAt), r.Seq
	}
	// tokens holds one record per run (delivery.PrepareTokens): one
	// statement may not upsert a row twice.
	_, err := d.db.pool.Exec(ctx, `INSERT INTO delivery_run_tokens (`+sqlstore.RunTokenCols+`)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[])
		ON CONFLICT (run_id) DO UPDATE SET jti = EXCLUDED.jti, event_id = EXCLUDED.event_id, consumer = EXCLUDED.consumer,
			issued_us = EXCLUDED.issued_us, expires_us = EXCLUDED.expires_us, seq = EXCLUDED.seq`, runs, jtis, events, consumers, issued, expires, seqs)
	return err
}

func (d deliverySQL) NewestToken(ctx context.Context, runID string) (delivery.TokenRecord, error) {
	return sqlstore.ScanRunToken(d.db.pool.QueryRow(ctx, `SELECT `+sqlstore.RunTokenCols+` FROM delivery_run_tokens WHERE run_id = $1`, runID))
}

func (d deliverySQL) UseToken(ctx context.Context, jti string, untilUS int64) (bool, error) {
	return d.db.changeOne(ctx, `INSERT INTO delivery_used_tokens (jti, until_us) VALUES ($1, $2) ON CONFLICT DO NOTHING`, jti, untilUS)
}

func (d deliverySQL) UseProof(ctx context.Context, id []byte, nowUS, untilUS int64) (bool, error) {
	// Of inserts racing with one id, the later ones wait for the first to
	// commit and then find its row kept: exactly one changes a row.
	return d.db.changeOne(ctx, `INSERT INTO delivery_proofs AS p (id, until_us) VALUES ($1, $2)
		ON CONFLICT (id) DO UPDATE SET until_us = EXCLUDED.until_us WHERE p.until_us <= $3`, id, untilUS, nowUS)
}

func (d deliverySQL) PruneProofs(ctx context.Context, nowUS int64, limit int) (int64, error) {
	// As PruneUsedTokens: an array of keys, not an IN subquery.
	tag, err := d.db.pool.Exec(ctx, `DELETE FROM delivery_proofs WHERE id = ANY(ARRAY(
		SELECT id FROM delivery_proofs WHERE until_us <= $1 ORDER BY until_us LIMIT $2 FOR UPDATE SKIP LOCKED))`, nowUS, limit)
	return tag.RowsAffected(), err
}

func (d deliverySQL) PruneUsedTokens(ctx context.Context, nowUS int64, limit int) (int64, error) {
	// Replicas prune side by side: each passes over the rows another is
	// deleting. The ids are an array, not an IN subquery, so that the
	// delete looks each up by its key: a join may scan the whole table
	// for one batch.
	tag, err := d.db.pool.Exec(ctx, `DELETE FROM delivery_used_tokens WHERE jti = ANY(ARRAY(
		SELECT jti FROM delivery_used_tokens WHERE until_us <= $1 ORDER BY until_us LIMIT $2 FOR UPDATE SKIP LOCKED))`, nowUS, limit)
	return tag.RowsAffected(), err
}

func (d deliverySQL) InsertAPIToken(ctx context.Context, t *delivery.APIToken) (bool, error) {
	// Without a target, ON CONFLICT covers the id and the hash alike.
	return d.db.changeOne(ctx, `INSERT INTO delivery_api_tokens (`+sqlstore.APITokenCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT DO NOTHING`, sqlstore.APITokenArgs(t)...)
}

func (d deliverySQL) APIToken(ctx context.Context, hash []byte) (delivery.APIToken, error) {
	return sqlstore.ScanAPIToken(d.db.pool.QueryRow(ctx, `SELECT `+sqlstore.APITokenCols+` FROM delivery_api_tokens WHERE hash = $1`, hash))
}

func (d deliverySQL) RevokeAPIToken(ctx context.Context, agentID, id string, nowUS int64) (bool, error) {
	return d.db.changeOne(ctx, `UPDATE delivery_api_tokens SET revoked_us = CASE WHEN revoked_us = 0 THEN $1 ELSE revoked_us END
		WHERE id = $2 AND agent_id = $3`, nowUS, id, agentID)
}

func (d deliverySQL) ClaimRequest(ctx context.Context, r *delivery.IdempotentRequest) (delivery.IdempotentRequest, bool, error) {
	// A concurrent claim of the key makes the insert wait for it to
	// commit, and then do nothing: the read after it finds its row.
	claimed, err := d.db.changeOne(ctx, `INSERT INTO delivery_requests (`+sqlstore.RequestCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT DO NOTHING`, sqlstore.RequestArgs(r)...)
	if err != nil || claimed {
		return *r, claimed, err
	}
	stored, err := sqlstore.ScanRequest(d.db.pool.QueryRow(ctx, `SELECT `+sqlstore.RequestCols+` FROM delivery_requests
		WHERE scope = $1 AND idem_key = $2`, r.Scope, r.Key))
	return stored, false, err
}

func (d deliverySQL) FinishRequest(ctx context.Context, r *delivery.IdempotentRequest) (bool, error) {
	return d.db.changeOne(ctx, `UPDATE delivery_requests SET done = true, status = $1, body = $2 WHERE scope = $3 AND idem_key = $4`,
		r.Status, sqlstore.Raw(r.Body), r.Scope, r.Key)
}

func (d deliverySQL) ForgetRequest(ctx context.Context, scope, key string) error {
	_, err := d.db.pool.Exec(ctx, `DELETE FROM delivery_requests WHERE scope = $1 AND idem_key = $2`, scope, key)
	return err
}

func (d deliverySQL) PruneRequests(ctx context.Context, cutoffUS int64) (int64, error) {
	tag, err := d.db.pool.Exec(ctx, `DELETE FROM delivery_requests WHERE created_us < $1`, cutoffUS)
	return tag.RowsAffected(), err
}

func (d deliverySQL) InsertMessage(ctx context.Context, args []any) (bool, error) {
	// Without a target, ON CONFLICT covers the id and the client message
	// id alike.
	return d.db.changeOne(ctx, `INSERT INTO delivery_messages (`+sqlstore.MessageCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT DO NOTHING`, args...)
}

func (d deliverySQL) ClientMessage(ctx context.Context, agentID, clientMsgID string) (delivery.StoredMessage, error) {
	return sqlstore.ScanMessage(d.db.pool.QueryRow(ctx, `SELECT `+sqlstore.MessageCols+` FROM delivery_messages
		WHERE agent_id = $1 AND client_msg_id = $2`, agentID, clientMsgID))
}

func (d deliverySQL) ThreadMessages(ctx context.Context, tenantID, threadID string, limit int) ([]delivery.StoredMessage, error) {
	return queryAll(ctx, d.db.pool, sqlstore.ScanMessage, `SELECT `+sqlstore.MessageCols+` FROM delivery_messages
		WHERE tenant = $1 AND thread_id = $2 ORDER BY seq DESC LIMIT $3`, tenantID, threadID, limit)
}
