package delivery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
)

// maxConsumerTries bounds the compare-and-set retries of one consumer
// change: a consumer has one reader at a time, so more conflicts than
// this mean something is wrong.
const maxConsumerTries = 16

// consumerName is the form of a consumer's name.
var consumerName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

func checkConsumer(name string) error {
	if !consumerName.MatchString(name) {
		return validationFailed("a consumer name is 1 to 64 of a-z 0-9 . _ -, starting with a letter or digit",
			delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/consumer"})
	}
	return nil
}

// Batch says what NextEvents takes.
type Batch struct {
	// Limit bounds the events (Options.PollLimit when zero, at most
	// delivery.MaxPage).
	Limit int
	// Resend sends the events sent but not acknowledged again now,
	// whatever the ack timeout: the first batch of a new gateway session,
	// whose predecessor's deliveries may be lost with it.
	Resend bool
}

// OpenConsumer returns the agent's consumer name, creating it at the
// agent's newest event when there is none.
func (s *Service) OpenConsumer(ctx context.Context, a Agent, name string) (delivery.ConsumerState, error) {
	if err := checkConsumer(name); err != nil {
		return delivery.ConsumerState{}, err
	}
	c, err := s.store.OpenConsumer(ctx, a.ID, name, s.o.Now())
	if err != nil {
		return delivery.ConsumerState{}, err
	}
	head, err := s.store.HeadSeq(ctx, a.ID)
	if err != nil {
		return delivery.ConsumerState{}, err
	}
	return stateOf(c, head), nil
}

// ConsumerState returns a consumer's cursor, 404 for one never opened.
func (s *Service) ConsumerState(ctx context.Context, a Agent, name string) (delivery.ConsumerState, error) {
	if err := checkConsumer(name); err != nil {
		return delivery.ConsumerState{}, err
	}
	c, err := s.store.GetConsumer(ctx, a.ID, name)
	if errors.Is(err, delivery.ErrNotFound) {
		return delivery.ConsumerState{}, notFound("no consumer " + strconv.Quote(name) + " of this agent")
	}
	if err != nil {
		return delivery.ConsumerState{}, err
	}
	head, err := s.store.HeadSeq(ctx, a.ID)
	if err != nil {
		return delivery.ConsumerState{}, err
	}
	return stateOf(c, head), nil
}

func stateOf(c delivery.Consumer, head int64) delivery.ConsumerState {
	return delivery.ConsumerState{Consumer: c.Name, AckedSeq: c.AckedSeq, HeadSeq: head, UpdatedAt: c.UpdatedAt}
}

// NextEvents takes the consumer's next events: those sent but not
// acknowledged within Options.AckTimeout again (redelivered), then new
// ones, up to the batch's limit, each token-bearing one with a fresh
// invocation token that becomes its run's newest (unless its run moved
// past it: see deliver). Claiming the events
// (the consumer's SentSeq) is one compare-and-set, so two readers of one
// consumer never take the same new events.
func (s *Service) NextEvents(ctx context.Context, a Agent, name string, b Batch) (delivery.EventPage, error) {
	page, _, err := s.next(ctx, a, name, b)
	return page, err
}

// next is NextEvents, also returning when the consumer's outstanding
// events fall due for redelivery (zero when none are outstanding).
func (s *Service) next(ctx context.Context, a Agent, name string, b Batch) (delivery.EventPage, time.Time, error) {
	if err := checkConsumer(name); err != nil {
		return delivery.EventPage{}, time.Time{}, err
	}
	limit := b.Limit
	if limit <= 0 {
		limit = s.o.PollLimit
	}
	limit = min(limit, delivery.MaxPage)
	for range maxConsumerTries {
		now := s.o.Now()
		c, err := s.store.OpenConsumer(ctx, a.ID, name, now)
		if err != nil {
			return delivery.EventPage{}, time.Time{}, err
		}
		from, due := c.SentSeq, time.Time{}
		if c.SentSeq > c.AckedSeq {
			due = c.SentAt.Add(s.o.AckTimeout)
			if b.Resend || !now.Before(due) {
				from, due = c.AckedSeq, time.Time{}
			}
		}
		head, err := s.store.HeadSeq(ctx, a.ID)
		if err != nil {
			return delivery.EventPage{}, time.Time{}, err
		}
		stored, err := s.store.ReadEvents(ctx, a.ID, from, limit)
		if err != nil {
			return delivery.EventPage{}, time.Time{}, err
		}
		if len(stored) == 0 {
			return delivery.EventPage{Events: []delivery.Event{}, HeadSeq: head}, due, nil
		}
		last := stored[len(stored)-1].Seq
		next := c
		next.SentSeq = max(c.SentSeq, last)
		// The timer runs from the oldest outstanding send: a consumer that
		// keeps polling without acknowledging still gets its events again.
		if from < c.SentSeq || c.SentSeq <= c.AckedSeq {
			next.SentAt = now
		}
		if _, err := s.store.UpdateConsumer(ctx, next, now); errors.Is(err, delivery.ErrConflict) {
			continue
		} else if err != nil {
			return delivery.EventPage{}, time.Time{}, err
		}
		events, err := s.deliver(ctx, name, stored, c.SentSeq, now)
		if err != nil {
			return delivery.EventPage{}, time.Time{}, err
		}
		return delivery.EventPage{Events: events, HeadSeq: max(head, last)}, time.Time{}, nil
	}
	return delivery.EventPage{}, time.Time{}, fmt.Errorf("delivery: consumer %s of %s: %w after %d tries", name, a.ID, delivery.ErrConflict, maxConsumerTries)
}

// deliver turns stored events into deliveries to consumer: each
// token-bearing one with a fresh token, recorded (in one write) as its
// run's newest before any is handed out, but the token of a message its
// run has moved past (the invocation of a run on a later turn, sent
// again or late to another consumer): that one starts nothing, and as
// the newest it would supersede the token of the run's current turn.
// Redelivered marks those sent to the consumer before (up to sentSeq).
func (s *Service) deliver(ctx context.Context, consumer string, stored []delivery.StoredEvent, sentSeq int64, now time.Time) ([]delivery.Event, error) {
	out := make([]delivery.Event, 0, len(stored))
	var records []delivery.TokenRecord
	turns := map[string]int{} // run id -> its turn, read once per batch
	for _, e := range stored {
		if delivery.Ephemeral(e.Type) {
			continue
		}
		ev := delivery.Event{ID: e.ID, Seq: e.Seq, Type: e.Type, CreatedAt: e.CreatedAt, Payload: e.Payload,
			Redelivered: e.Seq <= sentSeq, TraceContext: e.TraceContext}
		if e.Grant != nil && delivery.TokenBearing(e.Type) {
			tok, c, err := s.mint(ctx, *e.Grant, now)
			if err != nil {
				return nil, err
			}
			ev.InvocationToken = tok
			stale, err := s.stale(ctx, e, turns)
			if err != nil {
				return nil, err
			}
			if !stale {
				records = append(records, delivery.TokenRecord{RunID: c.RunID, JTI: c.ID, EventID: e.ID, Consumer: consumer,
					Seq: e.Seq, IssuedAt: time.Unix(c.IssuedAt, 0), ExpiresAt: time.Unix(c.ExpiresAt, 0)})
			}
		}
		out = append(out, ev)
	}
	if len(records) > 0 {
		if err := s.store.RecordTokens(ctx, records); err != nil {
			return nil, fmt.Errorf("delivery: record the delivered tokens: %w", err)
		}
	}
	for _, e := range out {
		kind := sentFirst
		if e.Redelivered {
			kind = sentAgain
		}
		s.tel.sent.WithLabelValues(kind).Inc()
	}
	return out, nil
}

// stale reports whether e's grant names a message of an earlier turn
// than its run's (turns caches the runs' turns).
func (s *Service) stale(ctx context.Context, e delivery.StoredEvent, turns map[string]int) (bool, error) {
	g := e.Grant
	prefix := g.RunID + "/"
	if g.MessageID == "" || !strings.HasPrefix(g.MessageID, prefix) {
		return false, nil
	}
	turn, err := strconv.Atoi(g.MessageID[len(prefix):])
	if err != nil {
		return false, nil
	}
	cur, ok := turns[g.RunID]
	if !ok {
		run, err := s.runs.GetRun(ctx, e.TenantID, g.RunID)
		if errors.Is(err, gateway.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		cur = max(run.Turn, 1)
		turns[g.RunID] = cur
	}
	return turn < cur, nil
}

// Poll is NextEvents that, finding nothing, waits up to wait (at most
// Options.MaxPollWait) for the agent's next event or for its outstanding
// events to fall due, and takes again.
func (s *Service) Poll(ctx context.Context, a Agent, name string, b Batch, wait time.Duration) (delivery.EventPage, error) {
	wait = min(wait, s.o.MaxPollWait)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// How long a request is held is real time; when outstanding events
	// fall due is the service's clock.
	deadline := time.Now().Add(wait)
	for {
		woken := s.watch.wait(a.ID)
		page, due, err := s.next(ctx, a, name, b)
		if err != nil || len(page.Events) > 0 || wait <= 0 {
			return page, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return page, nil
		}
		if !due.IsZero() {
			d := due.Sub(s.o.Now())
			if d <= 0 {
				continue // the outstanding events fell due: take them
			}
			left = min(left, d)
		}
		if timer == nil {
			timer = time.NewTimer(left)
		} else {
			timer.Reset(left)
		}
		select {
		case <-ctx.Done():
			return page, nil
		case <-s.closing:
			return page, nil
		case <-woken:
		case <-timer.C:
		}
	}
}

// Ack acknowledges every event of the consumer up to and including seq
// (cumulative): an older seq changes nothing, one beyond the agent's
// newest event is refused (400).
func (s *Service) Ack(ctx context.Context, a Agent, name string, seq int64) (delivery.ConsumerState, error) {
	if err := checkConsumer(name); err != nil {
		return delivery.ConsumerState{}, err
	}
	if seq < 0 {
		return delivery.ConsumerState{}, validationFailed("seq is not negative", delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/seq"})
	}
	for range maxConsumerTries {
		now := s.o.Now()
		c, err := s.store.OpenConsumer(ctx, a.ID, name, now)
		if err != nil {
			return delivery.ConsumerState{}, err
		}
		head, err := s.store.HeadSeq(ctx, a.ID)
		if err != nil {
			return delivery.ConsumerState{}, err
		}
		if seq > head {
			return delivery.ConsumerState{}, validationFailed("seq "+strconv.FormatInt(seq, 10)+" is beyond the agent's newest event "+strconv.FormatInt(head, 10),
				delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/seq"})
		}
		if seq <= c.AckedSeq {
			return stateOf(c, head), nil
		}
		next := c
		next.AckedSeq = seq
		stored, err := s.store.UpdateConsumer(ctx, next, now)
		switch {
		case errors.Is(err, delivery.ErrConflict):
			continue
		case errors.Is(err, delivery.ErrInvalidSeq):
			return delivery.ConsumerState{}, validationFailed("seq is beyond the agent's newest event",
				delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/seq"})
		case err != nil:
			return delivery.ConsumerState{}, err
		}
		return stateOf(stored, head), nil
	}
	return delivery.ConsumerState{}, fmt.Errorf("delivery: consumer %s of %s: %w after %d tries", name, a.ID, delivery.ErrConflict, maxConsumerTries)
}

// pollParams reads a poll's limit and wait (seconds) query parameters.
func (s *Service) pollParams(r *http.Request) (int, time.Duration, error) {
	q := r.URL.Query()
	limit := 0
	if v := q.Get(delivery.PollLimitParam); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > delivery.MaxPage {
			return 0, 0, validationFailed("limit is 1 to "+strconv.Itoa(delivery.MaxPage), delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/limit"})
		}
		limit = n
	}
	var wait time.Duration
	if v := q.Get(delivery.PollWaitParam); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 3600 {
			return 0, 0, validationFailed("wait is whole seconds, 0 to "+strconv.Itoa(int(s.o.MaxPollWait/time.Second))+" (more is cut to that)",
				delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/wait"})
		}
		wait = time.Duration(n) * time.Second
	}
	return limit, wait, nil
}
