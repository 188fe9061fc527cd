package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
)

// outboxAnswer is one answer of the test platform: 201 when status is 0.
type outboxAnswer struct {
	status       int
	code, reason string
}

// outboxSeen is one request the test platform received.
type outboxSeen struct {
	id, method, path, key, token string
	body                         []byte
}

// outboxPlatform answers the outbox's requests: the requests of one entry
// (its client_msg_id, or its Idempotency-Key for a call) get the answers
// listed for it in turn, 201 once they run out.
type outboxPlatform struct {
	srv *clientTestServer

	mu      sync.Mutex
	answers map[string][]outboxAnswer
	seen    []outboxSeen
	// hold, when set, blocks the answer to the first request until closed.
	hold chan struct{}
}

func newOutboxPlatform(t *testing.T) *outboxPlatform {
	p := &outboxPlatform{answers: map[string][]outboxAnswer{}}
	p.srv = newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, s clientSeen) {
		id := s.Header.Get(delivery.IdempotencyKeyHeader)
		if s.Path == delivery.MessagesPath {
			var m delivery.MessageCreate
			_ = json.Unmarshal(s.Body, &m)
			id = m.ClientMsgID
		}
		p.mu.Lock()
		p.seen = append(p.seen, outboxSeen{id: id, method: s.Method, path: s.Path, key: s.Header.Get(delivery.IdempotencyKeyHeader),
			token: s.Header.Get(delivery.InvocationTokenHeader), body: s.Body})
		var a outboxAnswer
		if q := p.answers[id]; len(q) > 0 {
			a, p.answers[id] = q[0], q[1:]
		}
		hold := p.hold
		p.mu.Unlock()
		if n == 0 && hold != nil {
			<-hold
		}
		if a.status != 0 {
			clientWriteProblem(w, a.status, a.code, a.reason)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	return p
}

func (p *outboxPlatform) answer(id string, as ...outboxAnswer) {
	p.mu.Lock()
	p.answers[id] = append(p.answers[id], as...)
	p.mu.Unlock()
}

// sends counts the requests of entry id.
func (p *outboxPlatform) sends(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.seen {
		if s.id == id {
			n++
		}
	}
	return n
}

func (p *outboxPlatform) requests() []outboxSeen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// outboxBlockingClock is a Clock whose Sleep lasts until ctx ends, so
// that only a put wakes the outbox's loop.
type outboxBlockingClock struct{}

func (outboxBlockingClock) Now() time.Time { return time.Unix(1_800_000_000, 0) }
func (outboxBlockingClock) Sleep(ctx context.Context, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

// newOutboxForTest is an outbox on a memory store that sends to p, each
// request tried once, and the run token tok-<run id> for a run's writes.
func newOutboxForTest(t *testing.T, p *outboxPlatform, clock Clock) (*Outbox, OutboxStore) {
	t.Helper()
	set := DefaultSettings()
	set.RetryMaxAttempts = 1
	api := newClientForTest(t, p.srv.URL, clientBearer(), &ClientOptions{Settings: &set})
	store := NewMemoryOutbox(&OutboxOptions{Clock: clock})
	tokenOf := func(runID string) string { return "tok-" + runID }
	return newOutbox(store, api, clock, set, slog.New(slog.DiscardHandler), tokenOf), store
}

// Each answer of the platform leaves the entry in exactly one state, sent
// once: refusals fail it for good (reported once to OnFailed), anything
// else leaves it pending and holds back the thread's later entries.
func TestOutboxFlushOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		answer  outboxAnswer
		state   OutboxState
		problem string
		flushOK bool // Flush returns nil
	}{
		{"taken", outboxAnswer{}, OutboxSent, "", true},
		{"400 validation_failed", outboxAnswer{400, delivery.CodeValidationFailed, ""}, OutboxFailed, delivery.CodeValidationFailed, true},
		{"404 not_found", outboxAnswer{404, delivery.CodeNotFound, ""}, OutboxFailed, delivery.CodeNotFound, true},
		{"409 conflict", outboxAnswer{409, delivery.CodeConflict, ""}, OutboxFailed, delivery.CodeConflict, true},
		{"410 gone", outboxAnswer{410, delivery.CodeGone, ""}, OutboxFailed, delivery.CodeGone, true},
		{"413 payload_too_large", outboxAnswer{413, delivery.CodePayloadTooLarge, ""}, OutboxFailed, delivery.CodePayloadTooLarge, true},
		{"422 idempotency_key_reused", outboxAnswer{422, delivery.CodeIdempotencyKeyReused, ""}, OutboxFailed, delivery.CodeIdempotencyKeyReused, true},
		{"403 run_inactive", outboxAnswer{403, delivery.CodeInvocationTokenInvalid, delivery.RunInactive}, OutboxFailed, delivery.CodeInvocationTokenInvalid, true},
		{"409 request_in_progress", outboxAnswer{409, delivery.CodeRequestInProgress, ""}, OutboxPending, delivery.CodeRequestInProgress, false},
		{"403 forbidden", outboxAnswer{403, delivery.CodeForbidden, ""}, OutboxPending, delivery.CodeForbidden, false},
		{"403 token superseded", outboxAnswer{403, delivery.CodeInvocationTokenInvalid, delivery.TokenSuperseded}, OutboxPending, delivery.CodeInvocationTokenInvalid, false},
		{"429 rate_limited", outboxAnswer{429, delivery.CodeRateLimited, ""}, OutboxPending, delivery.CodeRateLimited, false},
		{"503 unavailable", outboxAnswer{503, delivery.CodeUnavailable, ""}, OutboxPending, delivery.CodeUnavailable, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := newOutboxPlatform(t)
			o, store := newOutboxForTest(t, p, newClientTestClock(false))
			var failed []OutboxEntry
			o.OnFailed(func(e OutboxEntry) { failed = append(failed, e) })
			first, err := o.SendMessage(ctx, delivery.MessageCreate{ThreadID: "th-1", RunID: "run-1", ContentMD: "one"})
			if err != nil {
				t.Fatal(err)
			}
			second, err := o.SendMessage(ctx, delivery.MessageCreate{ThreadID: "th-1", RunID: "run-1", ContentMD: "two"})
			if err != nil {
				t.Fatal(err)
			}
			p.answer(first, tc.answer)

			if err := o.Flush(ctx); (err == nil) != tc.flushOK {
				t.Fatalf("Flush: %v; want an error %v", err, !tc.flushOK)
			}
			got, err := store.Get(ctx, first)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.state || got.Problem != tc.problem || got.Attempts != 1 {
				t.Errorf("entry %s, problem %q, %d attempts; want %s, %q, 1", got.State, got.Problem, got.Attempts, tc.state, tc.problem)
			}
			if n := p.sends(first); n != 1 {
				t.Errorf("the entry was sent %d times, want 1", n)
			}
			// The thread goes on past an entry sent or failed, and stops
			// at one that stays pending.
			wantNext, wantNextState := 1, OutboxSent
			if tc.state == OutboxPending {
				wantNext, wantNextState = 0, OutboxPending
			}
			if n := p.sends(second); n != wantNext {
				t.Errorf("the thread's next entry was sent %d times, want %d", n, wantNext)
			}
			if next, err := store.Get(ctx, second); err != nil || next.State != wantNextState {
				t.Errorf("the thread's next entry is %s (%v), want %s", next.State, err, wantNextState)
			}
			wantFailed := 0
			if tc.state == OutboxFailed {
				wantFailed = 1
			}
			if len(failed) != wantFailed {
				t.Fatalf("OnFailed told of %d entries, want %d", len(failed), wantFailed)
			}
			if wantFailed == 1 && (failed[0].ID != first || failed[0].State != OutboxFailed || failed[0].Problem != tc.problem) {
				t.Errorf("OnFailed told of %v (problem %q), want the failed entry %s", failed[0], failed[0].Problem, first)
			}
			if list, err := o.Failed(ctx); err != nil || len(list) != wantFailed {
				t.Errorf("Failed lists %d entries (%v), want %d", len(list), err, wantFailed)
			}
			o.mu.Lock()
			left := len(o.sending)
			o.mu.Unlock()
			if left != 0 {
				t.Errorf("%d thread locks left after Flush", left)
			}
		})
	}
}

// Every try of an entry sends its id: a message its client_msg_id, a call
// its Idempotency-Key; a run's write carries the run's token, any other
// none. Once taken, an entry is not sent again.
func TestOutboxSendsTheSameIDOnEveryTry(t *testing.T) {
	ctx := context.Background()
	p := newOutboxPlatform(t)
	o, store := newOutboxForTest(t, p, newClientTestClock(false))
	msg, err := o.SendMessage(ctx, delivery.MessageCreate{ThreadID: "th-1", RunID: "run-7", ContentMD: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := o.SendMessage(ctx, delivery.MessageCreate{ThreadID: "th-2", ClientMsgID: "msg-own-id", Kind: delivery.MessageText, ContentMD: "hi"})
	if err != nil || plain != "msg-own-id" {
		t.Fatalf("SendMessage with an id: %q, %v", plain, err)
	}
	call, err := o.Call(ctx, "k1", "run-7", http.MethodPost, "/v1/commands", map[string]string{"name": "x"})
	if err != nil {
		t.Fatal(err)
	}
	unavailable := outboxAnswer{503, delivery.CodeUnavailable, ""}
	p.answer(msg, unavailable)
	p.answer(call, unavailable)
	if err := o.Flush(ctx); err == nil {
		t.Fatal("the first flush met 503 and returned no error")
	}
	if err := o.Flush(ctx); err != nil {
		t.Fatalf("second flush: %v", err)
	}
	if err := o.Flush(ctx); err != nil {
		t.Fatalf("third flush: %v", err)
	}

	want := map[string]int{msg: 2, call: 2, plain: 1}
	for id, n := range want {
		if got := p.sends(id); got != n {
			t.Errorf("%s sent %d times, want %d", id, got, n)
		}
		e, err := store.Get(ctx, id)
		if err != nil || e.State != OutboxSent || e.Attempts != n {
			t.Errorf("%s: %s after %d attempts (%v), want sent after %d", id, e.State, e.Attempts, err, n)
		}
	}
	var bodies = map[string][]byte{}
	for _, s := range p.requests() {
		switch s.id {
		case msg, plain:
			var m delivery.MessageCreate
			if err := json.Unmarshal(s.body, &m); err != nil || m.Kind != delivery.MessageText || s.method != http.MethodPost {
				t.Errorf("message %s sent as %s %+v (%v)", s.id, s.method, m, err)
			}
		case call:
			if s.key != call || s.path != "/v1/commands" || s.method != http.MethodPost {
				t.Errorf("call sent as %s %s with key %q, want POST /v1/commands with key %s", s.method, s.path, s.key, call)
			}
		default:
			t.Errorf("a request of no entry: %q", s.id)
		}
		wantTok := "tok-run-7"
		if s.id == plain {
			wantTok = ""
		}
		if s.token != wantTok {
			t.Errorf("%s sent with run token %q, want %q", s.id, s.token, wantTok)
		}
		if b, ok := bodies[s.id]; ok && string(b) != string(s.body) {
			t.Errorf("%s: a retry sent another body", s.id)
		}
		bodies[s.id] = s.body
	}
	if e, _ := store.Get(ctx, call); e.Thread != "call:k1" || e.Kind != OutboxCall || e.RunID != "run-7" {
		t.Errorf("call stored as %v in thread %q for run %q", e, e.Thread, e.RunID)
	}
	if _, err := o.SendMessage(ctx, delivery.MessageCreate{ContentMD: "nowhere"}); err == nil {
		t.Error("a message without a thread was stored")
	}
}

// Threads go in parallel and one failing does not hold back another;
// Flush returns the failure.
func TestOutboxThreadsApart(t *testing.T) {
	ctx := context.Background()
	p := newOutboxPlatform(t)
	o, store := newOutboxForTest(t, p, newClientTestClock(false))
	var ids []string
	for _, th := range []string{"th-a", "th-b", "th-a", "th-b"} {
		id, err := o.SendMessage(ctx, delivery.MessageCreate{ThreadID: th, ContentMD: "x"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	p.answer(ids[0], outboxAnswer{503, delivery.CodeUnavailable, ""})
	err := o.Flush(ctx)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Flush: %v, want the thread's ErrUnavailable", err)
	}
	for i, want := range []OutboxState{OutboxPending, OutboxSent, OutboxPending, OutboxSent} {
		if e, err := store.Get(ctx, ids[i]); err != nil || e.State != want {
			t.Errorf("entry %d: %s (%v), want %s", i, e.State, err, want)
		}
	}
}

// Two flushes of one thread at once send each entry once: the second
// waits for the first and finds nothing left.
func TestOutboxConcurrentFlushSendsOnce(t *testing.T) {
	ctx := context.Background()
	p := newOutboxPlatform(t)
	p.hold = make(chan struct{})
	o, store := newOutboxForTest(t, p, newClientTestClock(false))
	var ids []string
	for i := range 3 {
		id, err := o.SendMessage(ctx, delivery.MessageCreate{ThreadID: "th", ContentMD: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	errs := make(chan error, 2)
	go func() { errs <- o.Flush(ctx) }()
	// The first flush's first request is held; the second flush waits
	// for the thread once it counts as the thread's second user.
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	waitUntil(t, waitCtx, "the first flush to send", func() bool { return len(p.requests()) > 0 })
	go func() { errs <- o.Flush(ctx) }()
	waitUntil(t, waitCtx, "the second flush to wait for the thread", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		l := o.sending["th"]
		return l != nil && l.users == 2
	})
	close(p.hold)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if n := p.sends(id); n != 1 {
			t.Errorf("%s sent %d times, want 1", id, n)
		}
		if e, _ := store.Get(ctx, id); e.State != OutboxSent || e.Attempts != 1 {
			t.Errorf("%s: %s after %d attempts, want sent after 1", id, e.State, e.Attempts)
		}
	}
	var order []string
	for _, s := range p.requests() {
		order = append(order, s.id)
	}
	if !slices.Equal(order, ids) {
		t.Errorf("sent in the order %v, want %v", order, ids)
	}
	if len(o.sending) != 0 {
		t.Errorf("%d thread locks left", len(o.sending))
	}
}

// The loop sends what is put without waiting for its next round, and
// returns when ctx ends.
func TestOutboxRunSendsWhatIsPut(t *testing.T) {
	p := newOutboxPlatform(t)
	o, store := newOutboxForTest(t, p, outboxBlockingClock{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { o.run(ctx); close(done) }()
	deadline, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	for i := range 2 {
		id, err := o.SendMessage(ctx, delivery.MessageCreate{ThreadID: "th", ContentMD: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, deadline, fmt.Sprintf("put %d to be sent", i), func() bool {
			e, err := store.Get(ctx, id)
			return err == nil && e.State == OutboxSent
		})
		if n := p.sends(id); n != 1 {
			t.Errorf("put %d sent %d times, want 1", i, n)
		}
	}
	cancel()
	select {
	case <-done:
	case <-deadline.Done():
		t.Fatal("run did not return after ctx ended")
	}
}

// permanent: which refusals fail an entry for good.
func TestOutboxPermanent(t *testing.T) {
	problem := func(status int, code, reason string) error {
		return fmt.Errorf("wrapped: %w", &ProblemError{Status: status, Problem: delivery.Problem{Status: status, Code: code, Reason: reason}})
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"400", problem(400, delivery.CodeValidationFailed, ""), true},
		{"404", problem(404, delivery.CodeNotFound, ""), true},
		{"409", problem(409, delivery.CodeAlreadyStarted, ""), true},
		{"409 request_in_progress", problem(409, delivery.CodeRequestInProgress, ""), false},
		{"410", problem(410, delivery.CodeGone, ""), true},
		{"413", problem(413, delivery.CodePayloadTooLarge, ""), true},
		{"422", problem(422, delivery.CodeIdempotencyKeyReused, ""), true},
		{"401", problem(401, delivery.CodeUnauthenticated, ""), false},
		{"403 forbidden", problem(403, delivery.CodeForbidden, ""), false},
		{"403 run_inactive", problem(403, delivery.CodeInvocationTokenInvalid, delivery.RunInactive), true},
		{"403 expired", problem(403, delivery.CodeInvocationTokenInvalid, delivery.TokenExpired), false},
		{"408", problem(408, "", ""), false},
		{"412", problem(412, delivery.CodePreconditionFailed, ""), false},
		{"429", problem(429, delivery.CodeRateLimited, ""), false},
		{"500", problem(500, delivery.CodeInternal, ""), false},
		{"503", problem(503, delivery.CodeUnavailable, ""), false},
		{"not a problem", errors.New("connection reset"), false},
	}
	for _, tc := range tests {
		if got := permanent(tc.err); got != tc.want {
			t.Errorf("%s: permanent %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Mutants left (scripts/mutate ./adapter outbox.go), equivalent: the two
// conditions of run's warning (err != nil, ctx.Err() == nil) decide only
// whether a failed flush is logged.

// waitUntil checks cond until it holds, failing the test when ctx ends
// first: what the tests wait for has no notification of its own.
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("waited in vain for %s", what)
		}
	}
}
