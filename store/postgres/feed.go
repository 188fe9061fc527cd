package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/a2astore"
	"novaos.dev/novaos/store/internal/sqlstore"
)

// Replicas on one database learn of each other's task writes through
// LISTEN/NOTIFY (TaskFeed). Every write that moves a live task on (Update,
// Append, a settlement) sends a notification in its own transaction, so it
// is delivered if and only if the write commits, and in commit order. The
// notification carries the write's versions and, when they fit in
// PostgreSQL's 8000-byte payload, its events or the task as written; a
// watcher reads a larger one from the store by version (CatchUp). A task's
// creation is not announced: nobody on another replica can be following a
// task before it exists, and whoever reads it afterwards reads the store.
//
// Each DB keeps one listening connection of its own, outside the pool. It
// checks the connection whenever it has been quiet for feedPing, and
// reconnects when it breaks; once it listens again, every watcher is told
// that notifications may have been lost, and catches up from the store.
// ListenerStatus says whether it is listening now. The same connection
// listens for the gateway's run-event appends (GatewayStore, on
// runsChannel) and delivery's event appends (DeliveryStore, on
// deliveryChannel), whose watchers are told the same way after a
// reconnection.

// feedChannel is the channel task writes are announced on.
const feedChannel = "novaos_tasks"

// maxNotifyPayload keeps a notification within PostgreSQL's limit (8000
// bytes, less than a page) with room to spare.
const maxNotifyPayload = 7900

// Listener timing: how long a quiet connection goes unchecked, how long a
// check may take, and the bounds of the pause between reconnections.
// feedPing is a variable so that tests can make it short.
var feedPing = 5 * time.Second

const (
	feedPingWait   = 5 * time.Second
	feedRetryFirst = 100 * time.Millisecond
	feedRetryMax   = 5 * time.Second
)

// notification is the payload of one announced write.
type notification struct {
	Instance string            `json:"i"`
	Task     string            `json:"t"`
	Prev     int64             `json:"p"`
	Version  int64             `json:"v"`
	Events   []json.RawMessage `json:"e,omitempty"`
	Whole    json.RawMessage   `json:"w,omitempty"`
}

// notifySQL sends a write's notification if the task row is as the write
// left it: written by this instance, at the write's version. It runs after
// the write, in its transaction, so a write that changed nothing sends
// nothing.
const notifySQL = `SELECT pg_notify('` + feedChannel + `', $4) FROM a2a_tasks WHERE id = $1 AND version = $2 AND instance_id = $3`

// announce says how a whole-task write is announced: with the events it
// stores (a compacting append's), else with the task as written; settle
// marks crash recovery's writes, which this replica's own streams must hear
// of too, since no stream of this replica made them.
type announce struct {
	events [][]byte
	settle bool
}

// settledBy is the origin a settlement's notification names.
const settledBy = "recovery"

// notifyArgs are notifySQL's arguments for a write that moved task id from
// prev to next, carrying events (an append's encoded events) or whole (the
// task as written) when they fit. The notification names this replica as
// its origin, so the replica's own listener skips it, unless settle.
func (db *DB) notifyArgs(id string, prev, next a2asrv.Version, events [][]byte, whole []byte, settle bool) []any {
	origin := db.instance
	if settle {
		origin = settledBy
	}
	// The header goes through encoding/json (ids are arbitrary text); the
	// bodies, JSON the store encoded, are spliced in as they are rather
	// than validated again on every write.
	header, _ := json.Marshal(&notification{Instance: origin, Task: id, Prev: int64(prev), Version: int64(next)})
	size := len(header) + len(whole) + len(`,"w":`)
	for _, e := range events {
		size += len(e) + 1
	}
	payload := header
	if size+len(`,"e":[]`) <= maxNotifyPayload && (len(events) > 0 || len(whole) > 0) {
		payload = append(make([]byte, 0, size+len(`,"e":[]`)), header[:len(header)-1]...)
		if len(events) > 0 {
			payload = append(payload, `,"e":[`...)
			for i, e := range events {
				if i > 0 {
					payload = append(payload, ',')
				}
				payload = append(payload, e...)
			}
			payload = append(payload, ']')
		} else {
			payload = append(append(payload, `,"w":`...), whole...)
		}
		payload = append(payload, '}')
	}
	return []any{id, int64(next), db.instance, string(payload)}
}

// decodeNotification reads a payload; the events and task it carries are
// decoded by change, once per watcher.
func decodeNotification(payload string) (*notification, error) {
	var n notification
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		return nil, fmt.Errorf("postgres: task notification: %w", err)
	}
	if n.Task == "" || n.Version <= n.Prev || n.Prev < 0 {
		return nil, errors.New("postgres: task notification: no task or versions out of order")
	}
	if len(n.Events) > 0 && n.Version-n.Prev != int64(len(n.Events)) {
		return nil, errors.New("postgres: task notification: events do not match the versions")
	}
	return &n, nil
}

// change is the TaskChange n reports; what it carries and cannot be decoded
// is left out, so the watcher catches up from the store.
func (n *notification) change() a2asrv.TaskChange {
	c := a2asrv.TaskChange{ID: n.Task, Prev: a2asrv.Version(n.Prev), Version: a2asrv.Version(n.Version)}
	switch {
	case len(n.Events) > 0:
		evs := make([]*a2a.StreamResponse, len(n.Events))
		for i, b := range n.Events {
			ev, err := a2astore.DecodeEvent(b)
			if err != nil {
				return c
			}
			evs[i] = ev
		}
		c.Events = evs
	case len(n.Whole) > 0:
		if t, err := a2astore.DecodeTask(n.Whole); err == nil && t.ID == n.Task {
			c.Task = t
		}
	}
	return c
}

// TaskFeed returns the database's a2asrv.TaskFeed: the task writes of the
// other replicas on the database.
func (db *DB) TaskFeed() a2asrv.TaskFeed { return db.feed }

// ListenerStatus reports whether the feed's notification connection is
// listening: nil when it is, otherwise why not. While it is down, streams
// on this replica miss the other replicas' writes until it reconnects and
// catches up.
func (db *DB) ListenerStatus() error { return db.feed.status() }

type feed struct {
	db       *DB
	watchers a2asrv.Watchers
	runs     sqlstore.EventWatchers // GatewayStore.WatchEvents' (gateway.go)
	agents   sqlstore.EventWatchers // DeliveryStore.WatchEvents' (delivery.go)
	ping     time.Duration          // feedPing when the DB opened
	pings    atomic.Int64           // quiet spells checked with a ping, for tests

	mu      sync.Mutex
	err     error // why the listener is not listening; nil when it is
	conn    *pgx.Conn
	stopped bool

	cancel context.CancelFunc
	done   chan struct{}
}

func (f *feed) status() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *feed) setStatus(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func (f *feed) Watch(id string, fn func(a2asrv.TaskChange)) func() { return f.watchers.Watch(id, fn) }

func (f *feed) CatchUp(ctx context.Context, scope a2asrv.Scope, id string, after a2asrv.Version) (a2asrv.TaskChange, error) {
	notFound := fmt.Errorf("postgres: catch up with task %s: %w", id, a2asrv.ErrNotFound)
	if !a2astore.ValidText(id, scope.Tenant, scope.Owner) {
		return a2asrv.TaskChange{}, notFound
	}
	var (
		v      a2asrv.Version
		count  int64
		body   []byte
		events [][]byte
	)
	// Only the events after the version asked for are read; the body
	// only when they do not reach back that far.
	err := f.db.pool.QueryRow(ctx, `
		SELECT t.version, t.events, CASE WHEN t.version - t.events > $4 THEN t.body END,
			(SELECT array_agg(e.body ORDER BY e.version) FROM a2a_task_events e
			 WHERE e.task_id = t.id AND e.version > GREATEST($4, t.version - t.events) AND e.version <= t.version)
		FROM a2a_tasks t WHERE id = $1 AND tenant = $2 AND owner = $3`,
		id, scope.Tenant, scope.Owner, int64(after)).Scan(&v, &count, &body, &events)
	if errors.Is(err, pgx.ErrNoRows) {
		return a2asrv.TaskChange{}, notFound
	}
	if err != nil {
		return a2asrv.TaskChange{}, fmt.Errorf("postgres: catch up with task %s: %w", id, err)
	}
	if body == nil {
		// The events reach back past after: they are exactly the ones
		// after it.
		return a2asrv.CatchUpChange(id, after, v, events, nil)
	}
	return a2asrv.CatchUpChange(id, after, v, nil, func() (*a2a.Task, error) { return decodeTask(body, events) })
}

// startFeed starts the listener. It returns once the first LISTEN is in
// place, or with the error that kept it from being so.
func (db *DB) startFeed(ctx context.Context) error {
	f := &feed{db: db, ping: feedPing, done: make(chan struct{})}
	conn, err := f.listen(ctx)
	if err != nil {
		return fmt.Errorf("postgres: listen for task writes: %w", err)
	}
	bg, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	db.feed = f
	go f.run(bg, conn)
	return nil
}

// stop ends the listener and closes its connection.
func (f *feed) stop() {
	if f == nil || f.cancel == nil {
		return
	}
	f.cancel()
	<-f.done
}

// listen opens the listening connection.
func (f *feed) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, f.db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+feedChannel+`; LISTEN `+runsChannel+`; LISTEN `+deliveryChannel); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	f.mu.Lock()
	f.conn = conn
	f.mu.Unlock()
	return conn, nil
}

// run receives notifications until ctx ends, reconnecting as needed.
func (f *feed) run(ctx context.Context, conn *pgx.Conn) {
	defer close(f.done)
	wait := feedRetryFirst
	for {
		err := f.receive(ctx, conn)
		conn.Close(context.Background())
		if ctx.Err() != nil {
			return
		}
		f.setStatus(fmt.Errorf("postgres: task notifications: %w", err))
		f.db.log.Warn("postgres: the task notification connection broke; reconnecting", "err", err)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			if conn, err = f.listen(ctx); err == nil {
				break
			}
			f.setStatus(fmt.Errorf("postgres: task notifications: reconnect: %w", err))
			wait = min(2*wait, feedRetryMax)
		}
		wait = feedRetryFirst
		f.setStatus(nil)
		f.db.log.Info("postgres: listening for task writes again")
		// Listening again: whatever was committed while nobody listened
		// is read from the store.
		f.watchers.AnnounceLost()
		f.runs.Lost()
		f.agents.Lost()
	}
}

// receive dispatches notifications from conn until it fails or ctx ends.
func (f *feed) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, f.ping)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			// Quiet for a while: make sure the connection still works,
			// since a connection that died silently delivers nothing.
			pctx, cancel := context.WithTimeout(ctx, feedPingWait)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
			f.pings.Add(1)
			continue
		}
		if err != nil {
			return err
		}
		switch n.Channel {
		case runsChannel:
			f.dispatchAppends(&f.runs, n.Payload)
		case deliveryChannel:
			f.dispatchAppends(&f.agents, n.Payload)
		default:
			f.dispatch(n.Payload)
		}
	}
}

// dispatch hands one notification to the watchers of its task.
func (f *feed) dispatch(payload string) {
	n, err := decodeNotification(payload)
	if err != nil {
		f.db.log.Warn("postgres: an unreadable task notification was skipped", "err", err)
		return
	}
	if n.Instance == f.db.instance {
		return
	}
	f.watchers.Announce(n.Task, n.change)
}
