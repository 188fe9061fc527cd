package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"novaos.dev/novaos/delivery"
)

// Pull delivery's records in the column layout both SQL stores share
// (their 0020_delivery migrations). What a store looks up, orders or
// updates by is a column; the rest of an event or a message is its JSON
// encoding in body, so that a field the wire model gains is kept without
// a migration. Payloads and components, which must read back byte for
// byte, have columns of their own. Each agent's newest sequence is a row
// of delivery_heads, which an append moves on in its transaction.

// DeliveryEventCols are the columns of delivery_events, in
// ScanDeliveryEvent's order.
const DeliveryEventCols = `agent_id, seq, tenant, id, type, run_id, dedupe_key, created_us, payload, body`

// DeliveryEventArgs are e's values in DeliveryEventCols' order.
func DeliveryEventArgs(e *delivery.StoredEvent) ([]any, error) {
	body, err := DeliveryEventBody(e)
	if err != nil {
		return nil, err
	}
	return []any{e.AgentID, e.Seq, e.TenantID, e.ID, e.Type, e.RunID, e.DedupeKey, Micros(e.CreatedAt), Raw(e.Payload), body}, nil
}

// DeliveryEventBody is the body of e: its JSON encoding but for what the
// other columns hold.
func DeliveryEventBody(e *delivery.StoredEvent) ([]byte, error) {
	b := *e
	b.AgentID, b.Seq, b.TenantID, b.ID, b.Type, b.RunID, b.DedupeKey, b.CreatedAt, b.Payload = "", 0, "", "", "", "", "", time.Time{}, nil
	body, err := json.Marshal(&b)
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	return body, nil
}

// ScanDeliveryEvent reads a row of DeliveryEventCols.
func ScanDeliveryEvent(r Scanner) (delivery.StoredEvent, error) {
	var (
		agent, tenant, id, typ, run, key string
		seq, created                     int64
		payload, body                    []byte
	)
	if err := r.Scan(&agent, &seq, &tenant, &id, &typ, &run, &key, &created, &payload, &body); err != nil {
		return delivery.StoredEvent{}, err
	}
	var e delivery.StoredEvent
	if err := json.Unmarshal(body, &e); err != nil {
		return delivery.StoredEvent{}, fmt.Errorf("decode event %s: %w", id, err)
	}
	e.AgentID, e.Seq, e.TenantID, e.ID, e.Type, e.RunID, e.DedupeKey = agent, seq, tenant, id, typ, run, key
	e.CreatedAt, e.Payload = FromMicros(created), Raw(payload)
	return e, nil
}

// AppendPlan is how a batch of prepared events is appended: which events
// are new, and which repeat (by AgentID and DedupeKey) an event stored
// before or one before them in the batch.
type AppendPlan struct {
	// Out is the append's answer in the batch's order: for a repeat the
	// event it repeats, for a new event the event as given, which Number
	// numbers.
	Out []delivery.StoredEvent
	// New are the indexes in Out of the new events, in order.
	New []int
	// Count is how many new events each agent gets.
	Count map[string]int64
	// of is, for each event of Out, the index of the new event it
	// repeats, or -1.
	of []int
}

// PlanAppend plans the append of events, which stored looks up: the
// event stored with an agent's dedupe key, if any.
func PlanAppend(events []delivery.StoredEvent, stored func(agentID, key string) (delivery.StoredEvent, bool, error)) (*AppendPlan, error) {
	p := &AppendPlan{Out: make([]delivery.StoredEvent, len(events)), Count: map[string]int64{}, of: make([]int, len(events))}
	batch := map[[2]string]int{} // agent, key → index of the new event
	for i, e := range events {
		p.of[i] = -1
		if e.DedupeKey != "" {
			k := [2]string{e.AgentID, e.DedupeKey}
			if j, ok := batch[k]; ok {
				p.of[i] = j
				continue
			}
			known, ok, err := stored(e.AgentID, e.DedupeKey)
			if err != nil {
				return nil, err
			}
			if ok {
				p.Out[i] = known
				continue
			}
			batch[k] = i
		}
		p.Out[i] = e
		p.New = append(p.New, i)
		p.Count[e.AgentID]++
	}
	return p, nil
}

// Ranks are the new events' places among their agent's new events,
// 1, 2, …, in the order of New.
func (p *AppendPlan) Ranks() []int64 {
	seen := make(map[string]int64, len(p.Count))
	ranks := make([]int64, len(p.New))
	for k, i := range p.New {
		a := p.Out[i].AgentID
		seen[a]++
		ranks[k] = seen[a]
	}
	return ranks
}

// Agents are the agents that get new events, in byte order: the order an
// append takes their heads in, so that appends to several agents do not
// deadlock.
func (p *AppendPlan) Agents() []string {
	agents := make([]string, 0, len(p.Count))
	for a := range p.Count {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	return agents
}

// Number gives the new events their sequences after their agents' heads
// before the append, before(agent), and the repeats within the batch the
// event they repeat, and returns each agent's head after the append.
func (p *AppendPlan) Number(before func(agentID string) (int64, error)) (map[string]int64, error) {
	heads := make(map[string]int64, len(p.Count))
	for _, a := range p.Agents() {
		h, err := before(a)
		if err != nil {
			return nil, err
		}
		heads[a] = h
	}
	for _, i := range p.New {
		e := &p.Out[i]
		heads[e.AgentID]++
		e.Seq = heads[e.AgentID]
	}
	for i, j := range p.of {
		if j >= 0 {
			p.Out[i] = copyEvent(p.Out[j])
		}
	}
	return heads, nil
}

// copyEvent returns a copy of e that shares nothing with it: two answers
// of one append are their caller's to change apart.
func copyEvent(e delivery.StoredEvent) delivery.StoredEvent {
	if e.Payload != nil {
		e.Payload = slices.Clone(e.Payload)
	}
	if e.TraceContext != nil {
		tc := *e.TraceContext
		e.TraceContext = &tc
	}
	if e.Grant != nil {
		g := *e.Grant
		e.Grant = &g
	}
	return e
}

// ConsumerCols are the columns of delivery_consumers, in ScanConsumer's
// order.
const ConsumerCols = `agent_id, name, acked_seq, sent_seq, sent_us, session_id, version, created_us, updated_us`

// ConsumerArgs are c's values in ConsumerCols' order.
func ConsumerArgs(c *delivery.Consumer) []any {
	return []any{c.AgentID, c.Name, c.AckedSeq, c.SentSeq, Micros(c.SentAt), c.SessionID, c.Version, Micros(c.CreatedAt), Micros(c.UpdatedAt)}
}

// ScanConsumer reads a row of ConsumerCols, and as many more columns as
// more holds.
func ScanConsumer(r Scanner, more ...any) (delivery.Consumer, error) {
	var (
		c                     delivery.Consumer
		sent, created, update int64
	)
	if err := r.Scan(append([]any{&c.AgentID, &c.Name, &c.AckedSeq, &c.SentSeq, &sent, &c.SessionID, &c.Version, &created, &update},
		more...)...); err != nil {
		return delivery.Consumer{}, err
	}
	c.SentAt, c.CreatedAt, c.UpdatedAt = FromMicros(sent), FromMicros(created), FromMicros(update)
	return c, nil
}

// RunTokenCols are the columns of delivery_run_tokens, in ScanRunToken's
// order.
const RunTokenCols = `run_id, jti, event_id, consumer, issued_us, expires_us, seq`

// RunTokenArgs are r's values in RunTokenCols' order.
func RunTokenArgs(r *delivery.TokenRecord) []any {
	return []any{r.RunID, r.JTI, r.EventID, r.Consumer, Micros(r.IssuedAt), Micros(r.ExpiresAt), r.Seq}
}

// ScanRunToken reads a row of RunTokenCols.
func ScanRunToken(s Scanner) (delivery.TokenRecord, error) {
	var (
		r               delivery.TokenRecord
		issued, expires int64
	)
	if err := s.Scan(&r.RunID, &r.JTI, &r.EventID, &r.Consumer, &issued, &expires, &r.Seq); err != nil {
		return delivery.TokenRecord{}, err
	}
	r.IssuedAt, r.ExpiresAt = FromMicros(issued), FromMicros(expires)
	return r, nil
}

// APITokenCols are the columns of delivery_api_tokens, in ScanAPIToken's
// order.
const APITokenCols = `id, tenant, agent_id, hash, dpop_jkt, name, created_us, revoked_us`

// APITokenArgs are t's values in APITokenCols' order.
func APITokenArgs(t *delivery.APIToken) []any {
	return []any{t.ID, t.TenantID, t.AgentID, t.Hash, t.DPoPJKT, t.Name, Micros(t.CreatedAt), Micros(t.RevokedAt)}
}

// ScanAPIToken reads a row of APITokenCols.
func ScanAPIToken(s Scanner) (delivery.APIToken, error) {
	var (
		t                delivery.APIToken
		created, revoked int64
	)
	if err := s.Scan(&t.ID, &t.TenantID, &t.AgentID, &t.Hash, &t.DPoPJKT, &t.Name, &created, &revoked); err != nil {
		return delivery.APIToken{}, err
	}
	t.Hash, t.CreatedAt, t.RevokedAt = Raw(t.Hash), FromMicros(created), FromMicros(revoked)
	return t, nil
}

// RequestCols are the columns of delivery_requests, in ScanRequest's
// order.
const RequestCols = `scope, idem_key, request_hash, done, status, body, created_us`

// RequestArgs are r's values in RequestCols' order.
func RequestArgs(r *delivery.IdempotentRequest) []any {
	return []any{r.Scope, r.Key, Raw(r.RequestHash), r.Done, r.Status, Raw(r.Body), Micros(r.CreatedAt)}
}

// ScanRequest reads a row of RequestCols.
func ScanRequest(s Scanner) (delivery.IdempotentRequest, error) {
	var (
		r       delivery.IdempotentRequest
		created int64
	)
	if err := s.Scan(&r.Scope, &r.Key, &r.RequestHash, &r.Done, &r.Status, &r.Body, &created); err != nil {
		return delivery.IdempotentRequest{}, err
	}
	r.RequestHash, r.Body, r.CreatedAt = Raw(r.RequestHash), Raw(r.Body), FromMicros(created)
	return r, nil
}

// MessageCols are the columns of delivery_messages a store writes and
// reads, in ScanMessage's order; the table's seq, which the database
// assigns, is the order messages were stored in.
const MessageCols = `id, tenant, agent_id, thread_id, client_msg_id, created_us, components, body`

// MessageArgs are m's values in MessageCols' order.
func MessageArgs(m *delivery.StoredMessage) ([]any, error) {
	b := *m
	b.ID, b.TenantID, b.AgentID, b.ThreadID, b.ClientMsgID, b.CreatedAt, b.Components = "", "", "", "", "", time.Time{}, nil
	body, err := json.Marshal(&b)
	if err != nil {
		return nil, fmt.Errorf("encode message %s: %w", m.ID, err)
	}
	return []any{m.ID, m.TenantID, m.AgentID, m.ThreadID, m.ClientMsgID, Micros(m.CreatedAt), Raw(m.Components), body}, nil
}

// ScanMessage reads a row of MessageCols.
func ScanMessage(s Scanner) (delivery.StoredMessage, error) {
	var (
		id, tenant, agent, thread, client string
		created                           int64
		components, body                  []byte
	)
	if err := s.Scan(&id, &tenant, &agent, &thread, &client, &created, &components, &body); err != nil {
		return delivery.StoredMessage{}, err
	}
	var m delivery.StoredMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return delivery.StoredMessage{}, fmt.Errorf("decode message %s: %w", id, err)
	}
	m.ID, m.TenantID, m.AgentID, m.ThreadID, m.ClientMsgID = id, tenant, agent, thread, client
	m.CreatedAt, m.Components = FromMicros(created), Raw(components)
	return m, nil
}

// DeliverySQL runs the statements of a DeliveryStore in one database's
// dialect. A read of one row returns the dialect's NoRows when there is
// none; times are in microseconds (Micros) and limits are bounded
// already.
type DeliverySQL interface {
	// Append stores events, prepared, in one transaction, as PlanAppend
	// plans them with the events stored: each new one at its agent's
	// next sequence. It returns the plan's answer and the head after the
	// append of each agent that got new events.
	Append(ctx context.Context, events []delivery.StoredEvent) ([]delivery.StoredEvent, map[string]int64, error)
	// Events lists up to limit of the agent's events after sequence
	// after, in order.
	Events(ctx context.Context, agentID string, after int64, limit int) ([]delivery.StoredEvent, error)
	// Head is the agent's newest sequence, 0 when it has none.
	Head(ctx context.Context, agentID string) (int64, error)
	// Consumer reads the agent's consumer name and the agent's head.
	Consumer(ctx context.Context, agentID, name string) (delivery.Consumer, int64, error)
	// InsertConsumer inserts c, and reports false when the agent has a
	// consumer of its name.
	InsertConsumer(ctx context.Context, c *delivery.Consumer) (bool, error)
	// PutConsumer writes c's fields but its key and creation time if its
	// row is at version expect, and reports whether it was.
	PutConsumer(ctx context.Context, c *delivery.Consumer, expect int64) (bool, error)
	// PutTokens stores each record, one per run, as its run's newest, in
	// one transaction.
	PutTokens(ctx context.Context, tokens []delivery.TokenRecord) error
	// NewestToken reads the run's newest token record.
	NewestToken(ctx context.Context, runID string) (delivery.TokenRecord, error)
	// UseToken records the token id used, and reports false when it was
	// already.
	UseToken(ctx context.Context, jti string, untilUS int64) (bool, error)
	// PruneUsedTokens deletes up to limit used token ids kept until no
	// later than nowUS, in one statement, and counts them.
	PruneUsedTokens(ctx context.Context, nowUS int64, limit int) (int64, error)
	// UseProof inserts the proof id kept until untilUS, or sets a row
	// of it kept until no later than nowUS to untilUS, in one statement,
	// and reports whether it did either.
	UseProof(ctx context.Context, id []byte, nowUS, untilUS int64) (bool, error)
	// PruneProofs deletes up to limit proof ids kept until no later than
	// nowUS, in one statement, and counts them.
	PruneProofs(ctx context.Context, nowUS int64, limit int) (int64, error)
	// InsertAPIToken inserts t, and reports false when its id or its hash
	// is taken.
	InsertAPIToken(ctx context.Context, t *delivery.APIToken) (bool, error)
	// APIToken reads the API token with the hash.
	APIToken(ctx context.Context, hash []byte) (delivery.APIToken, error)
	// RevokeAPIToken sets the agent's API token id revoked at nowUS
	// unless it is revoked already, and reports false when there is no
	// such token.
	RevokeAPIToken(ctx context.Context, agentID, id string, nowUS int64) (bool, error)
	// ClaimRequest inserts r unless its scope has its key, and returns
	// the row as stored and whether it inserted it; NoRows when the key
	// it found was dropped before it could read it.
	ClaimRequest(ctx context.Context, r *delivery.IdempotentRequest) (delivery.IdempotentRequest, bool, error)
	// FinishRequest stores r's answer, and reports false when its scope
	// has no such key.
	FinishRequest(ctx context.Context, r *delivery.IdempotentRequest) (bool, error)
	// ForgetRequest deletes the scope's key.
	ForgetRequest(ctx context.Context, scope, key string) error
	// PruneRequests deletes the keys created before cutoffUS and counts
	// them.
	PruneRequests(ctx context.Context, cutoffUS int64) (int64, error)
	// InsertMessage inserts a row of MessageArgs' values, and reports
	// false when its id, or its agent's client message id, is taken.
	InsertMessage(ctx context.Context, args []any) (bool, error)
	// ClientMessage reads the agent's message of the client message id.
	ClientMessage(ctx context.Context, agentID, clientMsgID string) (delivery.StoredMessage, error)
	// ThreadMessages lists the newest limit of the tenant's thread's
	// messages, newest first: an index read backwards, where the
	// order they were stored in would need a sort.
	ThreadMessages(ctx context.Context, tenantID, threadID string, limit int) ([]delivery.StoredMessage, error)
}

// errDeliveryText: a database whose text holds neither NUL nor invalid
// UTF-8 cannot keep a record with such text in a column.
var errDeliveryText = errors.New("text with NUL or invalid UTF-8")

// DeliveryStore is a delivery.Store on an SQL database: the checks, the
// steps between statements and the errors both SQL stores share, over
// the statements a DeliverySQL runs. It announces its appends to
// watchers, which may hear of other writers' too.
type DeliveryStore struct {
	d        Dialect
	db       DeliverySQL
	watchers *EventWatchers
}

// NewDeliveryStore returns the DeliveryStore of db, whose dialect is d,
// announcing appends to watchers.
func NewDeliveryStore(d Dialect, db DeliverySQL, watchers *EventWatchers) *DeliveryStore {
	return &DeliveryStore{d: d, db: db, watchers: watchers}
}

var _ delivery.Store = (*DeliveryStore)(nil)

func (s *DeliveryStore) AppendEvents(ctx context.Context, events []delivery.StoredEvent) (_ []delivery.StoredEvent, err error) {
	defer s.d.wrap(&err, "append delivery events")
	evs, err := delivery.PrepareEvents(events, time.Time{})
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return []delivery.StoredEvent{}, nil
	}
	for _, e := range evs {
		if !s.d.Holds(e.AgentID, e.TenantID, e.ID, e.Type, e.RunID, e.DedupeKey) {
			return nil, fmt.Errorf("event %.40q: %w", e.ID, errDeliveryText)
		}
	}
	out, heads, err := s.db.Append(ctx, evs)
	if err != nil {
		return nil, err
	}
	agents := make([]string, 0, len(heads))
	for a := range heads {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	for _, a := range agents {
		s.watchers.Announce(a, heads[a])
	}
	return out, nil
}

func (s *DeliveryStore) ReadEvents(ctx context.Context, agentID string, after int64, limit int) (_ []delivery.StoredEvent, err error) {
	defer s.d.wrap(&err, "read delivery events of agent %.40q", agentID)
	if !s.d.Holds(agentID) {
		return []delivery.StoredEvent{}, nil
	}
	evs, err := s.db.Events(ctx, agentID, max(after, 0), Limit(limit, delivery.MaxPage))
	if evs == nil && err == nil {
		evs = []delivery.StoredEvent{}
	}
	return evs, err
}

func (s *DeliveryStore) HeadSeq(ctx context.Context, agentID string) (_ int64, err error) {
	defer s.d.wrap(&err, "delivery head of agent %.40q", agentID)
	if !s.d.Holds(agentID) {
		return 0, nil
	}
	return s.db.Head(ctx, agentID)
}

func (s *DeliveryStore) WatchEvents(ctx context.Context, fn func(agentID string, head int64)) (err error) {
	defer s.d.wrap(&err, "watch delivery events")
	return s.watchers.Watch(ctx, fn)
}

func (s *DeliveryStore) OpenConsumer(ctx context.Context, agentID, name string, now time.Time) (_ delivery.Consumer, err error) {
	defer s.d.wrap(&err, "open consumer %.40q of agent %.40q", name, agentID)
	if _, err := delivery.NewConsumer(agentID, name, 0, now); err != nil {
		return delivery.Consumer{}, err
	}
	if !s.d.Holds(agentID, name) {
		return delivery.Consumer{}, errDeliveryText
	}
	for {
		c, _, err := s.db.Consumer(ctx, agentID, name)
		if !errors.Is(err, s.d.NoRows) {
			return c, err
		}
		head, err := s.db.Head(ctx, agentID)
		if err != nil {
			return delivery.Consumer{}, err
		}
		if c, err = delivery.NewConsumer(agentID, name, head, now); err != nil {
			return delivery.Consumer{}, err
		}
		switch created, err := s.db.InsertConsumer(ctx, &c); {
		case err != nil:
			return delivery.Consumer{}, err
		case created:
			return c, nil
		}
		// Another opener created it first: read theirs. No consumer is
		// ever deleted, so the next read finds it.
	}
}

func (s *DeliveryStore) GetConsumer(ctx context.Context, agentID, name string) (_ delivery.Consumer, err error) {
	defer s.d.wrap(&err, "get consumer %.40q of agent %.40q", name, agentID)
	if !s.d.Holds(agentID, name) {
		return delivery.Consumer{}, delivery.ErrNotFound
	}
	c, _, err := s.db.Consumer(ctx, agentID, name)
	return c, s.d.Missing(err, delivery.ErrNotFound)
}

func (s *DeliveryStore) UpdateConsumer(ctx context.Context, c delivery.Consumer, now time.Time) (_ delivery.Consumer, err error) {
	defer s.d.wrap(&err, "update consumer %.40q of agent %.40q", c.Name, c.AgentID)
	if !s.d.Holds(c.SessionID) {
		return delivery.Consumer{}, errDeliveryText
	}
	return s.changeConsumer(ctx, c.AgentID, c.Name, func(stored delivery.Consumer, head int64) (delivery.Consumer, error) {
		return delivery.UpdatedConsumer(stored, c, head, now)
	})
}

func (s *DeliveryStore) RewindConsumer(ctx context.Context, agentID, name string, seq int64, now time.Time) (_ delivery.Consumer, err error) {
	defer s.d.wrap(&err, "rewind consumer %.40q of agent %.40q", name, agentID)
	return s.changeConsumer(ctx, agentID, name, func(stored delivery.Consumer, head int64) (delivery.Consumer, error) {
		return delivery.RewoundConsumer(stored, seq, head, now)
	})
}

// changeConsumer replaces a stored consumer by what change makes of it
// and the agent's head, read together; the write is a compare-and-set of
// the version read, tried again on a newer one, which an update with a
// version of its own then refuses.
func (s *DeliveryStore) changeConsumer(ctx context.Context, agentID, name string,
	change func(stored delivery.Consumer, head int64) (delivery.Consumer, error)) (delivery.Consumer, error) {
	if !s.d.Holds(agentID, name) {
		return delivery.Consumer{}, delivery.ErrNotFound
	}
	for {
		if err := ctx.Err(); err != nil {
			return delivery.Consumer{}, err
		}
		stored, head, err := s.db.Consumer(ctx, agentID, name)
		if err != nil {
			return delivery.Consumer{}, s.d.Missing(err, delivery.ErrNotFound)
		}
		next, err := change(stored, head)
		if err != nil {
			return delivery.Consumer{}, err
		}
		switch ok, err := s.db.PutConsumer(ctx, &next, stored.Version); {
		case err != nil:
			return delivery.Consumer{}, err
		case ok:
			return next, nil
		}
	}
}

func (s *DeliveryStore) RecordTokens(ctx context.Context, tokens []delivery.TokenRecord) (err error) {
	defer s.d.wrap(&err, "record invocation tokens")
	recs, err := delivery.PrepareTokens(tokens)
	if err != nil || len(recs) == 0 {
		return err
	}
	for _, r := range recs {
		if !s.d.Holds(r.RunID, r.JTI, r.EventID, r.Consumer) {
			return fmt.Errorf("run %.40q: %w", r.RunID, errDeliveryText)
		}
	}
	return s.db.PutTokens(ctx, recs)
}

func (s *DeliveryStore) NewestToken(ctx context.Context, runID string) (_ delivery.TokenRecord, err error) {
	defer s.d.wrap(&err, "newest invocation token of run %.40q", runID)
	if !s.d.Holds(runID) {
		return delivery.TokenRecord{}, delivery.ErrNotFound
	}
	r, err := s.db.NewestToken(ctx, runID)
	return r, s.d.Missing(err, delivery.ErrNotFound)
}

func (s *DeliveryStore) ConsumeToken(ctx context.Context, jti string, until time.Time) (err error) {
	defer s.d.wrap(&err, "consume invocation token")
	switch {
	case jti == "":
		return errors.New("no token id")
	case !s.d.Holds(jti):
		return errDeliveryText
	}
	switch used, err := s.db.UseToken(ctx, jti, Micros(until)); {
	case err != nil:
		return err
	case !used:
		return delivery.ErrExists
	}
	return nil
}

func (s *DeliveryStore) RecordProof(ctx context.Context, id []byte, now, until time.Time) (_ bool, err error) {
	defer s.d.wrap(&err, "record proof")
	if err := delivery.CheckProofID(id); err != nil {
		return false, err
	}
	return s.db.UseProof(ctx, id, Micros(now), Micros(until))
}

func (s *DeliveryStore) PruneProofs(ctx context.Context, now time.Time, limit int) (_ int64, err error) {
	defer s.d.wrap(&err, "prune proofs")
	return s.db.PruneProofs(ctx, Micros(now), Limit(limit, delivery.MaxProofPrune))
}

func (s *DeliveryStore) PruneUsedTokens(ctx context.Context, now time.Time, limit int) (_ int64, err error) {
	defer s.d.wrap(&err, "prune used invocation tokens")
	return s.db.PruneUsedTokens(ctx, Micros(now), Limit(limit, delivery.MaxUsedTokenPrune))
}

func (s *DeliveryStore) CreateAPIToken(ctx context.Context, t delivery.APIToken) (err error) {
	defer s.d.wrap(&err, "create API token %.40q", t.ID)
	if err := delivery.PrepareAPIToken(&t, time.Time{}); err != nil {
		return err
	}
	if !s.d.Holds(t.ID, t.TenantID, t.AgentID, t.DPoPJKT, t.Name) {
		return errDeliveryText
	}
	switch created, err := s.db.InsertAPIToken(ctx, &t); {
	case err != nil:
		return err
	case !created:
		return fmt.Errorf("its id or hash: %w", delivery.ErrExists)
	}
	return nil
}

func (s *DeliveryStore) FindAPIToken(ctx context.Context, hash []byte) (_ delivery.APIToken, err error) {
	defer s.d.wrap(&err, "find API token")
	if len(hash) == 0 {
		return delivery.APIToken{}, delivery.ErrNotFound
	}
	t, err := s.db.APIToken(ctx, hash)
	return t, s.d.Missing(err, delivery.ErrNotFound)
}

func (s *DeliveryStore) RevokeAPIToken(ctx context.Context, agentID, id string, now time.Time) (err error) {
	defer s.d.wrap(&err, "revoke API token %.40q", id)
	if now.IsZero() {
		now = time.Now()
	}
	if !s.d.Holds(agentID, id) {
		return delivery.ErrNotFound
	}
	switch found, err := s.db.RevokeAPIToken(ctx, agentID, id, Micros(now)); {
	case err != nil:
		return err
	case !found:
		return delivery.ErrNotFound
	}
	return nil
}

func (s *DeliveryStore) BeginRequest(ctx context.Context, r delivery.IdempotentRequest) (_ delivery.IdempotentRequest, _ bool, err error) {
	defer s.d.wrap(&err, "begin request %.40q", r.Key)
	if err := delivery.PrepareRequest(&r, time.Time{}); err != nil {
		return delivery.IdempotentRequest{}, false, err
	}
	if !s.d.Holds(r.Scope, r.Key) {
		return delivery.IdempotentRequest{}, false, errDeliveryText
	}
	for {
		stored, fresh, err := s.db.ClaimRequest(ctx, &r)
		if errors.Is(err, s.d.NoRows) {
			// The key was forgotten between the claim and the read:
			// claim it again.
			if err := ctx.Err(); err != nil {
				return delivery.IdempotentRequest{}, false, err
			}
			continue
		}
		return stored, fresh, err
	}
}

func (s *DeliveryStore) FinishRequest(ctx context.Context, r delivery.IdempotentRequest) (err error) {
	defer s.d.wrap(&err, "finish request %.40q", r.Key)
	if !s.d.Holds(r.Scope, r.Key) {
		return delivery.ErrNotFound
	}
	switch found, err := s.db.FinishRequest(ctx, &r); {
	case err != nil:
		return err
	case !found:
		return delivery.ErrNotFound
	}
	return nil
}

func (s *DeliveryStore) ForgetRequest(ctx context.Context, scope, key string) (err error) {
	defer s.d.wrap(&err, "forget request %.40q", key)
	if !s.d.Holds(scope, key) {
		return nil
	}
	return s.db.ForgetRequest(ctx, scope, key)
}

func (s *DeliveryStore) PruneRequests(ctx context.Context, cutoff time.Time) (_ int64, err error) {
	defer s.d.wrap(&err, "prune requests")
	return s.db.PruneRequests(ctx, Micros(cutoff))
}

func (s *DeliveryStore) CreateMessage(ctx context.Context, m delivery.StoredMessage) (_ delivery.StoredMessage, _ bool, err error) {
	defer s.d.wrap(&err, "create message %.40q", m.ID)
	if err := delivery.PrepareMessage(&m, time.Time{}); err != nil {
		return delivery.StoredMessage{}, false, err
	}
	if !s.d.Holds(m.ID, m.TenantID, m.AgentID, m.ThreadID, m.ClientMsgID) {
		return delivery.StoredMessage{}, false, errDeliveryText
	}
	args, err := MessageArgs(&m)
	if err != nil {
		return delivery.StoredMessage{}, false, err
	}
	switch created, err := s.db.InsertMessage(ctx, args); {
	case err != nil:
		return delivery.StoredMessage{}, false, err
	case created:
		return m, true, nil
	}
	// No message is ever deleted: the one that took the client message id
	// is there, or the id was another message's.
	stored, err := s.db.ClientMessage(ctx, m.AgentID, m.ClientMsgID)
	if errors.Is(err, s.d.NoRows) {
		return delivery.StoredMessage{}, false, delivery.ErrExists
	}
	return stored, false, err
}

func (s *DeliveryStore) ThreadMessages(ctx context.Context, tenantID, threadID string, limit int) (_ []delivery.StoredMessage, err error) {
	defer s.d.wrap(&err, "messages of thread %.40q", threadID)
	if !s.d.Holds(tenantID, threadID) {
		return []delivery.StoredMessage{}, nil
	}
	ms, err := s.db.ThreadMessages(ctx, tenantID, threadID, Limit(limit, delivery.MaxPage))
	if err != nil {
		return nil, err
	}
	if ms == nil {
		return []delivery.StoredMessage{}, nil
	}
	slices.Reverse(ms)
	return ms, nil
}
