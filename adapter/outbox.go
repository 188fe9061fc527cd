package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"novaos.dev/novaos/delivery"
)

// Outbox sends the adapter's messages and writes so that each reaches
// the platform once: an entry is stored, with its id (a message's
// client_msg_id, a write's Idempotency-Key), before its first try, and
// every try sends that id. Entries of one thread go one after another in
// the order they were made; threads go in parallel. A failure that may
// pass leaves the entry pending, tried again at the next flush; a
// refusal (400, 404, 409, 410, 413 or 422) fails it for good, kept and
// listed by Failed, and reported to OnFailed.
type Outbox struct {
	store   OutboxStore
	api     *Client
	clock   Clock
	set     Settings
	log     *slog.Logger
	tokenOf func(runID string) string
	kick    chan struct{}

	mu       sync.Mutex
	onFailed func(OutboxEntry)
	// sending holds a lock per thread being sent: a thread is sent by
	// one flush at a time, so its order holds, and a second flush of it
	// waits for the first and then sends what is left.
	sending map[string]*threadLock
}

// threadLock is one thread's lock, counted so the map keeps only the
// threads being sent or waited for.
type threadLock struct {
	mu    sync.Mutex
	users int
}

func newOutbox(store OutboxStore, api *Client, clock Clock, set Settings, log *slog.Logger, tokenOf func(string) string) *Outbox {
	return &Outbox{store: store, api: api, clock: clock, set: set, log: log, tokenOf: tokenOf,
		kick: make(chan struct{}, 1), sending: map[string]*threadLock{}}
}

// OnFailed sets the function told of each entry the platform refused.
func (o *Outbox) OnFailed(f func(OutboxEntry)) {
	o.mu.Lock()
	o.onFailed = f
	o.mu.Unlock()
}

// SendMessage stores a message and sends it; it returns its
// client_msg_id (m's own, or a new UUIDv7) once it is stored. The send
// itself happens in the background.
func (o *Outbox) SendMessage(ctx context.Context, m delivery.MessageCreate) (string, error) {
	if m.ClientMsgID == "" {
		m.ClientMsgID = NewID()
	}
	if m.Kind == "" {
		m.Kind = delivery.MessageText
	}
	if m.ThreadID == "" {
		return "", errors.New("adapter: a message needs a thread")
	}
	body, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("adapter: message: %w", err)
	}
	e := OutboxEntry{ID: m.ClientMsgID, Kind: OutboxMessage, Thread: m.ThreadID, RunID: m.RunID,
		Request: OutboxRequest{Method: http.MethodPost, Path: delivery.MessagesPath, Body: body}}
	if err := o.store.Put(ctx, e); err != nil {
		return "", err
	}
	o.wake()
	return m.ClientMsgID, nil
}

// Call stores a write (method, path, JSON body) under a new
// Idempotency-Key, ordered with the others of key, and sends it.
func (o *Outbox) Call(ctx context.Context, key, runID, method, path string, body any) (string, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("adapter: call body: %w", err)
	}
	id := NewID()
	if err := o.store.Put(ctx, OutboxEntry{ID: id, Kind: OutboxCall, Thread: "call:" + key, RunID: runID,
		Request: OutboxRequest{Method: method, Path: path, Body: raw}}); err != nil {
		return "", err
	}
	o.wake()
	return id, nil
}

// Failed lists the entries the platform refused.
func (o *Outbox) Failed(ctx context.Context) ([]OutboxEntry, error) { return o.store.Failed(ctx) }

func (o *Outbox) wake() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// Flush tries every pending entry now, thread by thread, and returns the
// first failure that left an entry pending.
func (o *Outbox) Flush(ctx context.Context) error {
	threads, err := o.store.Threads(ctx)
	if err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for _, th := range threads {
		wg.Go(func() {
			if err := o.flushThread(ctx, th); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// flushThread sends a thread's pending entries in order, stopping at one
// that stays pending; it waits for a flush of the thread under way.
func (o *Outbox) flushThread(ctx context.Context, thread string) error {
	o.mu.Lock()
	l := o.sending[thread]
	if l == nil {
		l = &threadLock{}
		o.sending[thread] = l
	}
	l.users++
	o.mu.Unlock()
	l.mu.Lock()
	defer func() {
		l.mu.Unlock()
		o.mu.Lock()
		if l.users--; l.users == 0 {
			delete(o.sending, thread)
		}
		o.mu.Unlock()
	}()
	pending, err := o.store.Pending(ctx, thread)
	if err != nil {
		return err
	}
	for _, e := range pending {
		err := o.send(ctx, e)
		switch {
		case err == nil:
			if err := o.store.MarkSent(ctx, e.ID); err != nil && !errors.Is(err, ErrOutboxStateConflict) {
				return err
			}
		case permanent(err):
			code := problemCode(err)
			if err := o.store.MarkFailed(ctx, e.ID, code); err != nil && !errors.Is(err, ErrOutboxStateConflict) {
				return err
			}
			o.log.Warn("adapter: the platform refused an outbox entry; it is kept as failed", "entry", e, "code", code)
			o.mu.Lock()
			f := o.onFailed
			o.mu.Unlock()
			if f != nil {
				if got, gerr := o.store.Get(ctx, e.ID); gerr == nil {
					f(got)
				}
			}
		default:
			_ = o.store.RecordAttempt(ctx, e.ID, problemCode(err))
			return err
		}
	}
	return nil
}

// send tries one entry with its id.
func (o *Outbox) send(ctx context.Context, e OutboxEntry) error {
	if e.RunID != "" {
		ctx = WithRun(ctx, e.RunID, func() string { return o.tokenOf(e.RunID) })
	}
	if e.Kind == OutboxCall {
		ctx = WithIdempotencyKey(ctx, e.ID)
	}
	return o.api.Do(ctx, e.Request.Method, e.Request.Path, json.RawMessage(e.Request.Body), nil)
}

// permanent reports whether the platform refused for good.
func permanent(err error) bool {
	var pe *ProblemError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.HTTPStatus() {
	case 400, 404, 409, 410, 413, 422:
		return !errors.Is(err, ErrRequestInProgress)
	}
	// A run that ended takes nothing more: trying again would not help.
	return errors.Is(err, ErrRunInactive)
}

// run sends what is put, and tries what is pending again every
// Settings.RetryBackoffCap, until ctx ends.
func (o *Outbox) run(ctx context.Context) {
	for {
		if err := o.Flush(ctx); err != nil && ctx.Err() == nil {
			o.log.Warn("adapter: the outbox could not send everything; it tries again", "err", err)
		}
		wait := make(chan struct{})
		go func() {
			_ = o.clock.Sleep(ctx, o.set.RetryBackoffCap)
			close(wait)
		}()
		select {
		case <-ctx.Done():
			<-wait
			return
		case <-o.kick:
		case <-wait:
		}
	}
}
