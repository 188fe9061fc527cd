package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/secret"
)

// inboxClock is a clock tests move by hand.
type inboxClock struct {
	mu  sync.Mutex
	now time.Time
}

func newInboxClock() *inboxClock {
	return &inboxClock{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
}

func (c *inboxClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *inboxClock) Sleep(ctx context.Context, d time.Duration) error {
	c.advance(d)
	return ctx.Err()
}

func (c *inboxClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// inboxBackend opens an empty inbox of one implementation.
type inboxBackend struct {
	name string
	open func(t *testing.T, clock adapter.Clock) adapter.InboxStore
}

var inboxBackends = []inboxBackend{
	{"memory", func(t *testing.T, clock adapter.Clock) adapter.InboxStore {
		return adapter.NewMemoryInbox(&adapter.InboxOptions{Clock: clock, MaxEnvelopeBytes: 4096})
	}},
	{"sqlite", func(t *testing.T, clock adapter.Clock) adapter.InboxStore {
		in, err := adapter.OpenSQLiteInbox(filepath.Join(t.TempDir(), "inbox.sqlite3"),
			&adapter.InboxOptions{Clock: clock, MaxEnvelopeBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := in.Close(); err != nil {
				t.Error(err)
			}
		})
		return in
	}},
}

// inboxDelivery is a delivery of event id for run with token tok issued
// at iat (Unix seconds).
func inboxDelivery(id string, seq int64, run, tok string, iat int64) adapter.InboxAccept {
	return adapter.InboxAccept{
		Event: delivery.Event{
			ID: id, Seq: seq, Type: delivery.EventInvocation, CreatedAt: time.Unix(1000, 0).UTC(),
			Payload:         json.RawMessage(`{"trigger_kind":"message","run_id":"` + run + `"}`),
			InvocationToken: tok,
		},
		RunID: run,
		Token: adapter.InboxToken{JTI: "jti-" + tok, IssuedAt: time.Unix(iat, 0), ExpiresAt: time.Unix(iat+300, 0)},
	}
}

func inboxAcceptOne(t *testing.T, in adapter.InboxStore, a adapter.InboxAccept) adapter.InboxResult {
	t.Helper()
	res, err := in.Accept(context.Background(), []adapter.InboxAccept{a})
	if err != nil {
		t.Fatalf("accept %s: %v", a.Event.ID, err)
	}
	if len(res) != 1 {
		t.Fatalf("accept %s: %d results, want 1", a.Event.ID, len(res))
	}
	return res[0]
}

func inboxGet(t *testing.T, in adapter.InboxStore, id string) adapter.InboxEntry {
	t.Helper()
	e, err := in.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return e
}

// TestInboxContract runs the contract every InboxStore keeps against
// each implementation.
func TestInboxContract(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, in adapter.InboxStore, clock *inboxClock)
	}{
		{"token replacement", inboxTestTokenReplacement},
		{"delivery count", inboxTestDeliveryCount},
		{"stored entry", inboxTestStoredEntry},
		{"state moves", inboxTestStateMoves},
		{"replace token", inboxTestReplaceToken},
		{"jti expiry", inboxTestJTI},
		{"list, by run and prune", inboxTestListPrune},
		{"bad batches store nothing", inboxTestBadBatch},
		{"envelope limit", inboxTestEnvelopeLimit},
		{"canceled context", inboxTestCanceled},
	}
	for _, b := range inboxBackends {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					clock := newInboxClock()
					c.run(t, b.open(t, clock), clock)
				})
			}
		})
	}
}

func inboxTestTokenReplacement(t *testing.T, in adapter.InboxStore, _ *inboxClock) {
	// A step delivers a token (tok, iat) or, with move set, moves the
	// entry's state first.
	type step struct {
		tok  string
		iat  int64
		move [2]adapter.InboxState
		want adapter.InboxOutcome
	}
	deliver := func(tok string, iat int64, want adapter.InboxOutcome) step {
		return step{tok: tok, iat: iat, want: want}
	}
	move := func(from, to adapter.InboxState) step { return step{move: [2]adapter.InboxState{from, to}} }
	cases := []struct {
		name      string
		steps     []step
		wantToken string
	}{
		{"newer iat replaces", []step{deliver("a", 100, adapter.InboxNew), deliver("b", 200, adapter.InboxTokenReplaced)}, "b"},
		{"older iat is ignored", []step{deliver("a", 200, adapter.InboxNew), deliver("b", 100, adapter.InboxDuplicate)}, "a"},
		{"equal iat: later arrival wins", []step{deliver("a", 100, adapter.InboxNew), deliver("b", 100, adapter.InboxTokenReplaced),
			deliver("c", 100, adapter.InboxTokenReplaced)}, "c"},
		{"started keeps its token", []step{deliver("a", 100, adapter.InboxNew), move(adapter.InboxAccepted, adapter.InboxStarted),
			deliver("b", 200, adapter.InboxDuplicate)}, "a"},
		{"waiting keeps its token", []step{deliver("a", 100, adapter.InboxNew), move(adapter.InboxAccepted, adapter.InboxStarted),
			move(adapter.InboxStarted, adapter.InboxWaiting), deliver("b", 200, adapter.InboxDuplicate)}, "a"},
		{"closed keeps its token", []step{deliver("a", 100, adapter.InboxNew), move(adapter.InboxAccepted, adapter.InboxClosed),
			deliver("b", 200, adapter.InboxDuplicate)}, "a"},
	}
	for i, c := range cases {
		id := fmt.Sprintf("ev-%d", i)
		var last adapter.InboxResult
		for j, s := range c.steps {
			if s.move[0] != "" {
				if err := in.SetState(context.Background(), id, s.move[0], s.move[1], ""); err != nil {
					t.Fatalf("%s: step %d: %v", c.name, j, err)
				}
				continue
			}
			last = inboxAcceptOne(t, in, inboxDelivery(id, int64(i+1), "run-1", "tok-"+s.tok, s.iat))
			if last.Outcome != s.want {
				t.Errorf("%s: step %d: outcome %s, want %s", c.name, j, last.Outcome, s.want)
			}
		}
		got := inboxGet(t, in, id)
		// Compare labels, never print token values.
		if got.Token.Value.Reveal() != "tok-"+c.wantToken || got.Token.JTI != "jti-tok-"+c.wantToken {
			t.Errorf("%s: stored token is not token %q's (jti %s)", c.name, c.wantToken, got.Token.JTI)
		}
		if last.Entry.Token.Value.Reveal() != got.Token.Value.Reveal() || last.Entry.Token.JTI != got.Token.JTI {
			t.Errorf("%s: the last result's entry has another token than the stored one", c.name)
		}
	}

	// Two deliveries of one event in one batch: the second is a
	// redelivery of the first.
	res, err := in.Accept(context.Background(), []adapter.InboxAccept{
		inboxDelivery("ev-batch", 99, "run-2", "tok-x", 100), inboxDelivery("ev-batch", 99, "run-2", "tok-y", 200),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != adapter.InboxNew || res[1].Outcome != adapter.InboxTokenReplaced || res[1].Entry.Deliveries != 2 {
		t.Errorf("one batch: outcomes %s, %s and %d deliveries; want new, token_replaced and 2",
			res[0].Outcome, res[1].Outcome, res[1].Entry.Deliveries)
	}
}

func inboxTestDeliveryCount(t *testing.T, in adapter.InboxStore, clock *inboxClock) {
	for n := 1; n <= 4; n++ {
		if n == 3 {
			if err := in.SetState(context.Background(), "ev", adapter.InboxAccepted, adapter.InboxStarted, ""); err != nil {
				t.Fatal(err)
			}
		}
		clock.advance(time.Second)
		r := inboxAcceptOne(t, in, inboxDelivery("ev", 7, "run", fmt.Sprintf("t%d", n), int64(n)))
		if r.Entry.Deliveries != n {
			t.Errorf("delivery %d: result counts %d", n, r.Entry.Deliveries)
		}
		if got := inboxGet(t, in, "ev"); got.Deliveries != n || !got.UpdatedAt.Equal(clock.Now()) {
			t.Errorf("delivery %d: stored count %d, updated at %v; want %d at %v", n, got.Deliveries, got.UpdatedAt, n, clock.Now())
		}
	}
}

func inboxTestStoredEntry(t *testing.T, in adapter.InboxStore, clock *inboxClock) {
	a := inboxDelivery("ev-1", 42, "run-9", "tok-secret-1", 1700)
	a.Event.Redelivered = true
	r := inboxAcceptOne(t, in, a)
	if r.Outcome != adapter.InboxNew {
		t.Fatalf("outcome %s, want new", r.Outcome)
	}
	got := inboxGet(t, in, "ev-1")
	if got.EventID != "ev-1" || got.Seq != 42 || got.Type != delivery.EventInvocation || got.RunID != "run-9" ||
		got.State != adapter.InboxAccepted || got.Deliveries != 1 || got.CloseReason != "" {
		t.Errorf("stored %v", got)
	}
	if !got.AcceptedAt.Equal(clock.Now()) || !got.UpdatedAt.Equal(clock.Now()) || !got.ClosedAt.IsZero() {
		t.Errorf("times: accepted %v updated %v closed %v; want %v, %v, zero", got.AcceptedAt, got.UpdatedAt, got.ClosedAt, clock.Now(), clock.Now())
	}
	if !got.Token.IssuedAt.Equal(time.Unix(1700, 0)) || !got.Token.ExpiresAt.Equal(time.Unix(2000, 0)) || got.Token.JTI != "jti-tok-secret-1" {
		t.Errorf("token claims: iat %v exp %v jti %s", got.Token.IssuedAt, got.Token.ExpiresAt, got.Token.JTI)
	}
	// The token came from the event, and is kept apart from the envelope.
	if got.Token.Value.Reveal() != "tok-secret-1" {
		t.Error("the stored token is not the delivered event's")
	}
	if bytes.Contains(got.Envelope, []byte("tok-secret-1")) || bytes.Contains(got.Envelope, []byte("invocation_token")) {
		t.Error("the stored envelope holds the token")
	}
	ev, err := got.Event()
	if err != nil {
		t.Fatal(err)
	}
	want := a.Event
	want.InvocationToken = ""
	if ev.ID != want.ID || ev.Seq != want.Seq || ev.Type != want.Type || !ev.CreatedAt.Equal(want.CreatedAt) ||
		!ev.Redelivered || string(ev.Payload) != string(want.Payload) || ev.InvocationToken != "" {
		t.Errorf("envelope decodes to %v, want %v", ev, want)
	}

	// An event refused at once is stored closed with its reason, so a
	// redelivery is a duplicate.
	c := inboxDelivery("ev-2", 43, "run-10", "tok-bad", 1700)
	c.State, c.CloseReason = adapter.InboxClosed, "invalid_invocation_token"
	if r := inboxAcceptOne(t, in, c); r.Outcome != adapter.InboxNew || r.Entry.State != adapter.InboxClosed {
		t.Errorf("closed accept: %s %s", r.Outcome, r.Entry.State)
	}
	got = inboxGet(t, in, "ev-2")
	if got.State != adapter.InboxClosed || got.CloseReason != "invalid_invocation_token" || !got.ClosedAt.Equal(clock.Now()) {
		t.Errorf("closed accept stored as %v, reason %q, closed at %v", got, got.CloseReason, got.ClosedAt)
	}

	// A token given apart wins over the event's.
	d := inboxDelivery("ev-3", 44, "run-11", "tok-in-event", 1700)
	d.Token.Value = secret.New("tok-apart")
	inboxAcceptOne(t, in, d)
	if got := inboxGet(t, in, "ev-3"); got.Token.Value.Reveal() != "tok-apart" {
		t.Error("Token.Value given apart was not stored")
	}

	if _, err := in.Get(context.Background(), "nope"); !errors.Is(err, adapter.ErrInboxNotFound) {
		t.Errorf("get of an unknown event: %v, want ErrInboxNotFound", err)
	}
}

func inboxTestStateMoves(t *testing.T, in adapter.InboxStore, clock *inboxClock) {
	const (
		acc = adapter.InboxAccepted
		sta = adapter.InboxStarted
		wai = adapter.InboxWaiting
		clo = adapter.InboxClosed
	)
	type move struct{ from, to adapter.InboxState }
	cases := []struct {
		name     string
		before   []move // applied first, each must succeed
		try      move
		conflict bool // the try fails with ErrInboxStateConflict
		bad      bool // the try is not a move at all
	}{
		{"accepted to started", nil, move{acc, sta}, false, false},
		{"accepted to closed", nil, move{acc, clo}, false, false},
		{"started to waiting", []move{{acc, sta}}, move{sta, wai}, false, false},
		{"waiting to started", []move{{acc, sta}, {sta, wai}}, move{wai, sta}, false, false},
		{"started to closed", []move{{acc, sta}}, move{sta, clo}, false, false},
		{"waiting to closed", []move{{acc, sta}, {sta, wai}}, move{wai, clo}, false, false},
		{"a second start loses", []move{{acc, sta}}, move{acc, sta}, true, false},
		{"closing twice loses", []move{{acc, clo}}, move{acc, clo}, true, false},
		{"closed never starts", []move{{acc, clo}}, move{wai, sta}, true, false},
		{"accepted to waiting is no move", nil, move{acc, wai}, false, true},
		{"closed to started is no move", []move{{acc, clo}}, move{clo, sta}, false, true},
		{"started to accepted is no move", []move{{acc, sta}}, move{sta, acc}, false, true},
		{"unknown state", nil, move{acc, "done"}, false, true},
	}
	for i, c := range cases {
		id := fmt.Sprintf("ev-%d", i)
		inboxAcceptOne(t, in, inboxDelivery(id, int64(i), "run", "t", 1))
		for _, m := range c.before {
			if err := in.SetState(context.Background(), id, m.from, m.to, "earlier"); err != nil {
				t.Fatalf("%s: %s to %s: %v", c.name, m.from, m.to, err)
			}
		}
		before := inboxGet(t, in, id)
		clock.advance(time.Minute)
		err := in.SetState(context.Background(), id, c.try.from, c.try.to, "why")
		got := inboxGet(t, in, id)
		switch {
		case c.conflict || c.bad:
			if err == nil || errors.Is(err, adapter.ErrInboxStateConflict) != c.conflict {
				t.Errorf("%s: err %v, want conflict %v", c.name, err, c.conflict)
			}
			if got.State != before.State || !got.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("%s: a refused move changed the entry to %s", c.name, got.State)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		default:
			if got.State != c.try.to || !got.UpdatedAt.Equal(clock.Now()) {
				t.Errorf("%s: state %s updated %v, want %s at %v", c.name, got.State, got.UpdatedAt, c.try.to, clock.Now())
			}
			if c.try.to == clo && (got.CloseReason != "why" || !got.ClosedAt.Equal(clock.Now())) {
				t.Errorf("%s: close reason %q at %v", c.name, got.CloseReason, got.ClosedAt)
			}
			if c.try.to != clo && (got.CloseReason != "" || !got.ClosedAt.IsZero()) {
				t.Errorf("%s: not closed but reason %q at %v", c.name, got.CloseReason, got.ClosedAt)
			}
		}
	}
	if err := in.SetState(context.Background(), "nope", acc, sta, ""); !errors.Is(err, adapter.ErrInboxNotFound) {
		t.Errorf("move of an unknown event: %v, want ErrInboxNotFound", err)
	}
}

func inboxTestReplaceToken(t *testing.T, in adapter.InboxStore, _ *inboxClock) {
	tok := func(v string, iat int64) adapter.InboxToken {
		return adapter.InboxToken{Value: secret.New(v), JTI: "jti-" + v, IssuedAt: time.Unix(iat, 0), ExpiresAt: time.Unix(iat+60, 0)}
	}
	ctx := context.Background()
	inboxAcceptOne(t, in, inboxDelivery("ev", 1, "run", "first", 100))
	cases := []struct {
		name      string
		move      [2]adapter.InboxState
		tok       adapter.InboxToken
		replaced  bool
		conflict  bool
		wantToken string
	}{
		{"newer replaces", [2]adapter.InboxState{}, tok("renewed", 200), true, false, "renewed"},
		{"older is ignored", [2]adapter.InboxState{}, tok("stale", 150), false, false, "renewed"},
		{"equal replaces", [2]adapter.InboxState{}, tok("same-iat", 200), true, false, "same-iat"},
		{"a started run renews", [2]adapter.InboxState{adapter.InboxAccepted, adapter.InboxStarted}, tok("running", 300), true, false, "running"},
		{"closed keeps its token", [2]adapter.InboxState{adapter.InboxStarted, adapter.InboxClosed}, tok("late", 400), false, true, "running"},
	}
	for _, c := range cases {
		if c.move[0] != "" {
			if err := in.SetState(ctx, "ev", c.move[0], c.move[1], ""); err != nil {
				t.Fatal(err)
			}
		}
		replaced, err := in.ReplaceToken(ctx, "ev", c.tok)
		if replaced != c.replaced || errors.Is(err, adapter.ErrInboxStateConflict) != c.conflict || (err != nil && !c.conflict) {
			t.Errorf("%s: replaced %v, err %v; want %v, conflict %v", c.name, replaced, err, c.replaced, c.conflict)
		}
		if got := inboxGet(t, in, "ev"); got.Token.Value.Reveal() != c.wantToken || got.Token.JTI != "jti-"+c.wantToken {
			t.Errorf("%s: stored token has jti %s, want jti-%s", c.name, got.Token.JTI, c.wantToken)
		}
	}
	if _, err := in.ReplaceToken(ctx, "nope", tok("x", 1)); !errors.Is(err, adapter.ErrInboxNotFound) {
		t.Errorf("replace on an unknown event: %v, want ErrInboxNotFound", err)
	}
	if _, err := in.ReplaceToken(ctx, "ev", adapter.InboxToken{JTI: "j"}); err == nil {
		t.Error("an empty token replaced nothing but raised no error")
	}
}

func inboxTestJTI(t *testing.T, in adapter.InboxStore, clock *inboxClock) {
	ctx := context.Background()
	seen := func(jti string) bool {
		t.Helper()
		a, err := in.SeenJTI(ctx, jti)
		if err != nil {
			t.Fatal(err)
		}
		b, err := in.Seen(ctx, jti)
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatalf("SeenJTI %v and Seen %v disagree on %s", a, b, jti)
		}
		return a
	}
	t0 := clock.Now()
	if err := in.RememberJTI(ctx, "j1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := in.RememberJTI(ctx, "j2", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// An earlier until does not shorten the memory; a later one extends it.
	if err := in.RememberJTI(ctx, "j1", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := in.RememberJTI(ctx, "j2", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Accept remembers in its own transaction.
	a := inboxDelivery("ev", 1, "run", "t3", 1)
	a.RememberUntil = t0.Add(30 * time.Minute)
	inboxAcceptOne(t, in, a)
	if err := in.RememberJTI(ctx, "", t0.Add(time.Hour)); err == nil {
		t.Error("an empty jti was remembered")
	}

	steps := []struct {
		at   time.Duration
		want map[string]bool
	}{
		{0, map[string]bool{"j1": true, "j2": true, "jti-t3": true, "never": false}},
		{30*time.Minute - time.Nanosecond, map[string]bool{"jti-t3": true}},
		{30 * time.Minute, map[string]bool{"jti-t3": false, "j1": true}}, // seen until, not at, its until
		{time.Hour, map[string]bool{"j1": false, "j2": true}},
		{2 * time.Hour, map[string]bool{"j2": false}},
	}
	for _, s := range steps {
		clock.mu.Lock()
		clock.now = t0.Add(s.at)
		clock.mu.Unlock()
		for jti, want := range s.want {
			if got := seen(jti); got != want {
				t.Errorf("at +%v: seen(%s) = %v, want %v", s.at, jti, got, want)
			}
		}
	}
	// Pruning drops what expired, and keeps what is still ahead.
	if err := in.RememberJTI(ctx, "j4", clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Prune(ctx, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if !seen("j4") || seen("j1") {
		t.Error("prune dropped a live token id or revived an expired one")
	}
}

func inboxTestListPrune(t *testing.T, in adapter.InboxStore, clock *inboxClock) {
	ctx := context.Background()
	// Put out of sequence order: lists are by sequence.
	type ent struct {
		id    string
		seq   int64
		run   string
		moves []adapter.InboxState // from accepted, in order
	}
	ents := []ent{
		{"e5", 5, "r1", []adapter.InboxState{adapter.InboxStarted, adapter.InboxWaiting}},
		{"e1", 1, "r1", nil},
		{"e3", 3, "r2", []adapter.InboxState{adapter.InboxStarted}},
		{"e2", 2, "r1", []adapter.InboxState{adapter.InboxClosed}},
		{"e4", 4, "r2", []adapter.InboxState{adapter.InboxClosed}},
	}
	for _, e := range ents {
		clock.advance(time.Minute)
		inboxAcceptOne(t, in, inboxDelivery(e.id, e.seq, e.run, "t-"+e.id, 1))
		from := adapter.InboxAccepted
		for _, to := range e.moves {
			if err := in.SetState(ctx, e.id, from, to, ""); err != nil {
				t.Fatal(err)
			}
			from = to
		}
	}
	ids := func(es []adapter.InboxEntry, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.EventID)
		}
		return out
	}
	lists := []struct {
		name string
		got  []string
		want []string
	}{
		{"all", ids(in.List(ctx)), []string{"e1", "e2", "e3", "e4", "e5"}},
		{"accepted", ids(in.List(ctx, adapter.InboxAccepted)), []string{"e1"}},
		{"active runs", ids(in.List(ctx, adapter.InboxStarted, adapter.InboxWaiting)), []string{"e3", "e5"}},
		{"closed", ids(in.List(ctx, adapter.InboxClosed)), []string{"e2", "e4"}},
		{"run r1", ids(in.ByRun(ctx, "r1")), []string{"e1", "e2", "e5"}},
		{"run r2", ids(in.ByRun(ctx, "r2")), []string{"e3", "e4"}},
		{"no such run", ids(in.ByRun(ctx, "r3")), nil},
	}
	for _, l := range lists {
		if !slices.Equal(l.got, l.want) {
			t.Errorf("%s: %v, want %v", l.name, l.got, l.want)
		}
	}
	if _, err := in.List(ctx, "done"); err == nil {
		t.Error("listing an unknown state raised no error")
	}
	// e2 closed at +4m, e4 at +5m: a cutoff between them prunes e2 only.
	e2 := inboxGet(t, in, "e2")
	n, err := in.Prune(ctx, e2.ClosedAt.Add(time.Second))
	if err != nil || n != 1 {
		t.Fatalf("prune: %d, %v; want 1", n, err)
	}
	if got := ids(in.List(ctx)); !slices.Equal(got, []string{"e1", "e3", "e4", "e5"}) {
		t.Errorf("after prune: %v", got)
	}
}

func inboxTestBadBatch(t *testing.T, in adapter.InboxStore, _ *inboxClock) {
	good := inboxDelivery("ok", 1, "run", "t", 1)
	bad := func(f func(a *adapter.InboxAccept)) adapter.InboxAccept {
		a := inboxDelivery("bad", 2, "run", "tok-never-printed", 1)
		f(&a)
		return a
	}
	cases := []struct {
		name string
		a    adapter.InboxAccept
	}{
		{"no event id", bad(func(a *adapter.InboxAccept) { a.Event.ID = "" })},
		{"no type", bad(func(a *adapter.InboxAccept) { a.Event.Type = "" })},
		{"new entry started", bad(func(a *adapter.InboxAccept) { a.State = adapter.InboxStarted })},
		{"unknown state", bad(func(a *adapter.InboxAccept) { a.State = "done" })},
		{"reason without close", bad(func(a *adapter.InboxAccept) { a.CloseReason = "x" })},
		{"remember without jti", bad(func(a *adapter.InboxAccept) { a.Token.JTI = ""; a.RememberUntil = time.Unix(5, 0) })},
		{"envelope too long", bad(func(a *adapter.InboxAccept) {
			a.Event.Payload = json.RawMessage(`"` + strings.Repeat("x", 5000) + `"`)
		})},
	}
	for _, c := range cases {
		_, err := in.Accept(context.Background(), []adapter.InboxAccept{good, c.a})
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if strings.Contains(err.Error(), "tok-never-printed") {
			t.Errorf("%s: the error shows the token", c.name)
		}
		if _, err := in.Get(context.Background(), "ok"); !errors.Is(err, adapter.ErrInboxNotFound) {
			t.Errorf("%s: the good delivery of a refused batch was stored (%v)", c.name, err)
		}
	}
	if res, err := in.Accept(context.Background(), nil); err != nil || len(res) != 0 {
		t.Errorf("empty batch: %v, %v", res, err)
	}
}

// inboxTestEnvelopeLimit: an envelope of exactly the limit (4096 bytes,
// the token left out) is stored; one byte more is refused.
func inboxTestEnvelopeLimit(t *testing.T, in adapter.InboxStore, _ *inboxClock) {
	sized := func(id string, n int) adapter.InboxAccept {
		t.Helper()
		a := inboxDelivery(id, 1, "run", "tok-not-counted", 1)
		a.Event.Payload = json.RawMessage(`""`)
		ev := a.Event
		ev.InvocationToken = ""
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		a.Event.Payload = json.RawMessage(`"` + strings.Repeat("x", n-len(b)) + `"`)
		return a
	}
	cases := []struct {
		name  string
		size  int
		store bool
	}{
		{"one under", 4095, true},
		{"at the limit", 4096, true},
		{"one over", 4097, false},
	}
	for _, c := range cases {
		_, err := in.Accept(context.Background(), []adapter.InboxAccept{sized(c.name, c.size)})
		if (err == nil) != c.store {
			t.Errorf("%s: envelope of %d bytes: err %v, want stored %v", c.name, c.size, err, c.store)
		}
		if _, err := in.Get(context.Background(), c.name); (err == nil) != c.store {
			t.Errorf("%s: get: %v, want stored %v", c.name, err, c.store)
		}
	}
}

// inboxTestCanceled: every call with an ended context fails with its
// error and changes nothing.
func inboxTestCanceled(t *testing.T, in adapter.InboxStore, clock *inboxClock) {
	inboxAcceptOne(t, in, inboxDelivery("ev", 1, "run", "tok-a", 100))
	if err := in.RememberJTI(context.Background(), "j", clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"accept", func() error {
			_, err := in.Accept(ctx, []adapter.InboxAccept{inboxDelivery("ev", 1, "run", "tok-b", 200), inboxDelivery("new", 2, "run", "t", 1)})
			return err
		}},
		{"get", func() error { _, err := in.Get(ctx, "ev"); return err }},
		{"by run", func() error { _, err := in.ByRun(ctx, "run"); return err }},
		{"list", func() error { _, err := in.List(ctx); return err }},
		{"list accepted", func() error { _, err := in.List(ctx, adapter.InboxAccepted); return err }},
		{"set state", func() error { return in.SetState(ctx, "ev", adapter.InboxAccepted, adapter.InboxStarted, "") }},
		{"replace token", func() error {
			_, err := in.ReplaceToken(ctx, "ev", adapter.InboxToken{Value: secret.New("tok-c"), JTI: "jti-tok-c", IssuedAt: time.Unix(300, 0)})
			return err
		}},
		{"remember", func() error { return in.RememberJTI(ctx, "j2", clock.Now().Add(time.Hour)) }},
		{"seen jti", func() error { _, err := in.SeenJTI(ctx, "j"); return err }},
		{"seen", func() error { _, err := in.Seen(ctx, "j"); return err }},
		{"prune", func() error { _, err := in.Prune(ctx, clock.Now().Add(time.Hour)); return err }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", c.name, err)
		}
	}
	got := inboxGet(t, in, "ev")
	if got.State != adapter.InboxAccepted || got.Deliveries != 1 || got.Token.JTI != "jti-tok-a" {
		t.Errorf("after the canceled calls: %s with %d deliveries and token %s; want accepted, 1, jti-tok-a", got.State, got.Deliveries, got.Token.JTI)
	}
	if _, err := in.Get(context.Background(), "new"); !errors.Is(err, adapter.ErrInboxNotFound) {
		t.Errorf("a canceled accept stored an event (%v)", err)
	}
	for jti, want := range map[string]bool{"j": true, "j2": false} {
		if seen, err := in.SeenJTI(context.Background(), jti); err != nil || seen != want {
			t.Errorf("after the canceled calls: seen(%s) %v, %v; want %v", jti, seen, err, want)
		}
	}
}

// TestInboxNeverShowsToken: no rendering of an entry, result or
// delivery shows its token.
func TestInboxNeverShowsToken(t *testing.T) {
	const tok = "eyJ.secret-token-value.sig"
	for _, b := range inboxBackends {
		t.Run(b.name, func(t *testing.T) {
			in := b.open(t, newInboxClock())
			a := inboxDelivery("ev", 1, "run", tok, 1)
			a.Token.JTI = "jti-1" // the helper's would contain the token
			r := inboxAcceptOne(t, in, a)
			e := inboxGet(t, in, "ev")
			var logs bytes.Buffer
			slog.New(slog.NewJSONHandler(&logs, nil)).Info("m", "entry", e, "result", r, "accept", a)
			slog.New(slog.NewTextHandler(&logs, nil)).Info("m", "entry", e, "token", e.Token)
			renders := []string{logs.String()}
			for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
				renders = append(renders, fmt.Sprintf(verb, e), fmt.Sprintf(verb, r), fmt.Sprintf(verb, a),
					fmt.Sprintf(verb, []adapter.InboxEntry{e}), fmt.Sprintf(verb, e.Token))
			}
			for i, s := range renders {
				if strings.Contains(s, tok) || strings.Contains(s, "secret-token-value") {
					t.Errorf("rendering %d shows the token", i)
				}
			}
		})
	}
}

// An adapter stores each delivery before it acknowledges it, and starts
// the run from the stored entry with its newest token.
func ExampleOpenSQLiteInbox() {
	dir, err := os.MkdirTemp("", "adapter-state")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	in, err := adapter.OpenSQLiteInbox(filepath.Join(dir, "inbox.sqlite3"), nil)
	if err != nil {
		panic(err)
	}
	defer in.Close()
	ctx := context.Background()

	first := delivery.Event{ID: "ev-1", Seq: 7, Type: delivery.EventInvocation,
		Payload: json.RawMessage(`{"run_id":"run-1"}`), InvocationToken: "token-1"}
	again := first
	again.InvocationToken, again.Redelivered = "token-2", true
	res, err := in.Accept(ctx, []adapter.InboxAccept{
		{Event: first, RunID: "run-1", Token: adapter.InboxToken{JTI: "jti-1", IssuedAt: time.Unix(100, 0)}},
		{Event: again, RunID: "run-1", Token: adapter.InboxToken{JTI: "jti-2", IssuedAt: time.Unix(160, 0)}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res[0].Outcome, res[1].Outcome)
	// Both are durable now: acknowledge seq 7, then start the run.

	e, err := in.Get(ctx, "ev-1")
	if err != nil {
		panic(err)
	}
	fmt.Println(e.State, e.Deliveries, e.Token.JTI, e.Token.Value)
	if err := in.SetState(ctx, "ev-1", adapter.InboxAccepted, adapter.InboxStarted, ""); err != nil {
		panic(err)
	}
	err = in.SetState(ctx, "ev-1", adapter.InboxAccepted, adapter.InboxStarted, "")
	fmt.Println(errors.Is(err, adapter.ErrInboxStateConflict))
	// Output:
	// new token_replaced
	// accepted 2 jti-2 [REDACTED]
	// true
}
