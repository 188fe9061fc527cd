package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
)

// outboxBackend opens an empty outbox store of one implementation and
// a function that reopens it (memory: the same value).
type outboxBackend struct {
	name string
	open func(t *testing.T, clock adapter.Clock) (adapter.OutboxStore, func() adapter.OutboxStore)
}

var outboxBackends = []outboxBackend{
	{name: "memory", open: func(t *testing.T, clock adapter.Clock) (adapter.OutboxStore, func() adapter.OutboxStore) {
		s := adapter.NewMemoryOutbox(&adapter.OutboxOptions{Clock: clock, MaxBodyBytes: 4096})
		return s, func() adapter.OutboxStore { return s }
	}},
	{name: "sqlite", open: func(t *testing.T, clock adapter.Clock) (adapter.OutboxStore, func() adapter.OutboxStore) {
		path := filepath.Join(t.TempDir(), "outbox.sqlite3")
		opts := &adapter.OutboxOptions{Clock: clock, MaxBodyBytes: 4096}
		cur, err := adapter.OpenSQLiteOutbox(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cur.Close() })
		return cur, func() adapter.OutboxStore {
			if err := cur.Close(); err != nil {
				t.Fatal(err)
			}
			if cur, err = adapter.OpenSQLiteOutbox(path, opts); err != nil {
				t.Fatal(err)
			}
			return cur
		}
	}},
}

// outboxMessage is a message entry: body a MessageCreate with the
// entry's id as client_msg_id.
func outboxMessage(t *testing.T, id, thread, text string) adapter.OutboxEntry {
	t.Helper()
	body, err := json.Marshal(delivery.MessageCreate{ThreadID: thread, ContentMD: text, ClientMsgID: id, Kind: delivery.MessageText})
	if err != nil {
		t.Fatal(err)
	}
	return adapter.OutboxEntry{ID: id, Kind: adapter.OutboxMessage, Thread: thread, RunID: "run-1",
		Request: adapter.OutboxRequest{Method: "POST", Path: delivery.MessagesPath, Body: body}}
}

func outboxCall(id, key string) adapter.OutboxEntry {
	return adapter.OutboxEntry{ID: id, Kind: adapter.OutboxCall, Thread: key,
		Request: adapter.OutboxRequest{Method: "POST", Path: "/v1/commands", Body: json.RawMessage(`{"name":"x"}`)}}
}

// outboxIDs returns a function that lists the ids of what a list call
// returned, failing t on its error.
func outboxIDs(t *testing.T) func([]adapter.OutboxEntry, error) []string {
	return func(es []adapter.OutboxEntry, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
}

// TestOutboxContract runs the contract every OutboxStore keeps against
// each implementation.
func TestOutboxContract(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, s adapter.OutboxStore, reopen func() adapter.OutboxStore, clock *inboxClock)
	}{
		{"put and get", outboxTestPut},
		{"bad entries", outboxTestBad},
		{"fifo per thread", outboxTestFIFO},
		{"state changes", outboxTestStates},
		{"prune", outboxTestPrune},
		{"body limit", outboxTestBodyLimit},
	}
	for _, b := range outboxBackends {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					clock := newInboxClock()
					s, reopen := b.open(t, clock)
					c.run(t, s, reopen, clock)
				})
			}
		})
	}
}

func outboxTestPut(t *testing.T, s adapter.OutboxStore, reopen func() adapter.OutboxStore, clock *inboxClock) {
	ctx := context.Background()
	m := outboxMessage(t, adapter.NewID(), "th-1", "hello")
	m.State, m.Attempts, m.Problem = adapter.OutboxSent, 9, "x" // ignored: a new entry is pending
	if err := s.Put(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, m); !errors.Is(err, adapter.ErrOutboxExists) {
		t.Errorf("second put: %v, want ErrOutboxExists", err)
	}
	s = reopen()
	got, err := s.Get(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != m.ID || got.Kind != adapter.OutboxMessage || got.Thread != "th-1" || got.RunID != "run-1" ||
		got.Request.Method != "POST" || got.Request.Path != delivery.MessagesPath || string(got.Request.Body) != string(m.Request.Body) ||
		got.State != adapter.OutboxPending || got.Attempts != 0 || got.Problem != "" ||
		!got.CreatedAt.Equal(clock.Now()) || !got.UpdatedAt.Equal(clock.Now()) {
		t.Errorf("stored %+v", got)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, adapter.ErrOutboxNotFound) {
		t.Errorf("get unknown: %v, want ErrOutboxNotFound", err)
	}
	// Neither String nor a log line shows the content.
	if strings.Contains(fmt.Sprintf("%v %+v %#v", got, got, got), "hello") {
		t.Error("an entry's rendering shows its body")
	}
}

func outboxTestBad(t *testing.T, s adapter.OutboxStore, _ func() adapter.OutboxStore, _ *inboxClock) {
	with := func(f func(e *adapter.OutboxEntry)) adapter.OutboxEntry {
		e := outboxMessage(t, "id-1", "th", "secret content")
		f(&e)
		return e
	}
	cases := []struct {
		name string
		e    adapter.OutboxEntry
	}{
		{"no id", with(func(e *adapter.OutboxEntry) { e.ID = "" })},
		{"no thread", with(func(e *adapter.OutboxEntry) { e.Thread = "" })},
		{"no method", with(func(e *adapter.OutboxEntry) { e.Request.Method = "" })},
		{"no path", with(func(e *adapter.OutboxEntry) { e.Request.Path = "" })},
		{"unknown kind", with(func(e *adapter.OutboxEntry) { e.Kind = "email" })},
		{"body not JSON", with(func(e *adapter.OutboxEntry) { e.Request.Body = json.RawMessage(`{"secret content`) })},
		{"body too long", with(func(e *adapter.OutboxEntry) {
			e.Request.Body = json.RawMessage(`"` + strings.Repeat("x", 5000) + `"`)
		})},
		{"call body not JSON", func() adapter.OutboxEntry {
			e := outboxCall("id-1", "calls")
			e.Request.Body = json.RawMessage(`{"secret content`)
			return e
		}()},
		{"message body not a message", with(func(e *adapter.OutboxEntry) { e.Request.Body = json.RawMessage(`{"thread_id":5}`) })},
		{"client_msg_id is another id", with(func(e *adapter.OutboxEntry) { e.ID = "id-2" })},
		{"message's thread is another", with(func(e *adapter.OutboxEntry) { e.Thread = "th-other" })},
	}
	for _, c := range cases {
		err := s.Put(context.Background(), c.e)
		if err == nil {
			t.Errorf("%s: stored", c.name)
			continue
		}
		if strings.Contains(err.Error(), "secret content") {
			t.Errorf("%s: the error shows the body", c.name)
		}
	}
	if ths, err := s.Threads(context.Background()); err != nil || len(ths) != 0 {
		t.Errorf("refused entries left threads %v (%v)", ths, err)
	}
}

func outboxTestFIFO(t *testing.T, s adapter.OutboxStore, reopen func() adapter.OutboxStore, clock *inboxClock) {
	ctx := context.Background()
	// Ids that sort against the order of Put: the order is Put's.
	puts := []adapter.OutboxEntry{
		outboxMessage(t, "z-1", "th-b", "1"),
		outboxMessage(t, "y-2", "th-a", "2"),
		outboxCall("x-3", "calls"),
		outboxMessage(t, "w-4", "th-b", "4"),
		outboxMessage(t, "v-5", "th-a", "5"),
		outboxMessage(t, "u-6", "th-b", "6"),
	}
	for _, e := range puts {
		clock.advance(time.Second)
		if err := s.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, wantThreads []string, want map[string][]string) {
		t.Helper()
		ths, err := s.Threads(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ths, wantThreads) {
			t.Errorf("%s: threads %v, want %v", step, ths, wantThreads)
		}
		for th, ids := range want {
			if got := outboxIDs(t)(s.Pending(ctx, th)); !slices.Equal(got, ids) {
				t.Errorf("%s: pending in %s %v, want %v", step, th, got, ids)
			}
		}
	}
	check("put", []string{"th-b", "th-a", "calls"},
		map[string][]string{"th-a": {"y-2", "v-5"}, "th-b": {"z-1", "w-4", "u-6"}, "calls": {"x-3"}, "none": nil})
	s = reopen()
	check("reopened", []string{"th-b", "th-a", "calls"}, map[string][]string{"th-a": {"y-2", "v-5"}, "th-b": {"z-1", "w-4", "u-6"}})
	for _, id := range []string{"z-1", "x-3"} {
		if err := s.MarkSent(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// th-a now holds the oldest pending entry.
	check("sent", []string{"th-a", "th-b"}, map[string][]string{"th-b": {"w-4", "u-6"}, "calls": nil})
	if err := s.MarkFailed(ctx, "y-2", "validation_failed"); err != nil {
		t.Fatal(err)
	}
	check("failed", []string{"th-b", "th-a"}, map[string][]string{"th-a": {"v-5"}})
}

func outboxTestStates(t *testing.T, s adapter.OutboxStore, _ func() adapter.OutboxStore, clock *inboxClock) {
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Put(ctx, outboxMessage(t, id, "th", id)); err != nil {
			t.Fatal(err)
		}
	}
	type op struct {
		name     string
		do       func() error
		conflict bool
		notFound bool
	}
	ops := []op{
		{"a fails for now", func() error { return s.RecordAttempt(ctx, "a", "unavailable") }, false, false},
		{"a fails for now again", func() error { return s.RecordAttempt(ctx, "a", "rate_limited") }, false, false},
		{"a sent", func() error { return s.MarkSent(ctx, "a") }, false, false},
		{"a sent twice", func() error { return s.MarkSent(ctx, "a") }, true, false},
		{"a cannot fail once sent", func() error { return s.MarkFailed(ctx, "a", "gone") }, true, false},
		{"b fails for good", func() error { return s.MarkFailed(ctx, "b", "validation_failed") }, false, false},
		{"b is not retried", func() error { return s.RecordAttempt(ctx, "b", "unavailable") }, true, false},
		{"b is not sent", func() error { return s.MarkSent(ctx, "b") }, true, false},
		{"unknown", func() error { return s.MarkSent(ctx, "nope") }, false, true},
	}
	for _, o := range ops {
		clock.advance(time.Second)
		err := o.do()
		switch {
		case o.conflict:
			if !errors.Is(err, adapter.ErrOutboxStateConflict) {
				t.Errorf("%s: %v, want ErrOutboxStateConflict", o.name, err)
			}
		case o.notFound:
			if !errors.Is(err, adapter.ErrOutboxNotFound) {
				t.Errorf("%s: %v, want ErrOutboxNotFound", o.name, err)
			}
		case err != nil:
			t.Errorf("%s: %v", o.name, err)
		}
	}
	want := map[string]struct {
		state    adapter.OutboxState
		attempts int
		problem  string
	}{
		"a": {adapter.OutboxSent, 3, "rate_limited"},
		"b": {adapter.OutboxFailed, 1, "validation_failed"},
		"c": {adapter.OutboxPending, 0, ""},
	}
	for id, w := range want {
		got, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != w.state || got.Attempts != w.attempts || got.Problem != w.problem {
			t.Errorf("%s: %s after %d attempts (%q), want %s after %d (%q)", id, got.State, got.Attempts, got.Problem, w.state, w.attempts, w.problem)
		}
	}
	if got := outboxIDs(t)(s.Failed(ctx)); !slices.Equal(got, []string{"b"}) {
		t.Errorf("failed: %v, want [b]", got)
	}
}

func outboxTestPrune(t *testing.T, s adapter.OutboxStore, _ func() adapter.OutboxStore, clock *inboxClock) {
	ctx := context.Background()
	for _, id := range []string{"old-sent", "old-failed", "pending", "new-sent"} {
		if err := s.Put(ctx, outboxMessage(t, id, "th", id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MarkSent(ctx, "old-sent"); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkFailed(ctx, "old-failed", "gone"); err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Hour)
	cutoff := clock.Now()
	if err := s.MarkSent(ctx, "new-sent"); err != nil {
		t.Fatal(err)
	}
	n, err := s.Prune(ctx, cutoff)
	if err != nil || n != 1 {
		t.Fatalf("prune: %d, %v; want 1", n, err)
	}
	for id, kept := range map[string]bool{"old-sent": false, "old-failed": true, "pending": true, "new-sent": true} {
		_, err := s.Get(ctx, id)
		if kept != (err == nil) {
			t.Errorf("%s: kept %v (%v)", id, err == nil, err)
		}
	}
	// An entry put after a prune still goes after the older ones.
	if err := s.Put(ctx, outboxMessage(t, "later", "th", "x")); err != nil {
		t.Fatal(err)
	}
	if got := outboxIDs(t)(s.Pending(ctx, "th")); !slices.Equal(got, []string{"pending", "later"}) {
		t.Errorf("pending after prune: %v", got)
	}
}

// outboxTestBodyLimit: a body of exactly the limit (4096 bytes) is
// stored, one byte more is refused, and a call may have no body.
func outboxTestBodyLimit(t *testing.T, s adapter.OutboxStore, _ func() adapter.OutboxStore, _ *inboxClock) {
	ctx := context.Background()
	cases := []struct {
		name  string
		size  int // -1: no body
		store bool
	}{
		{"no body", -1, true},
		{"one under", 4095, true},
		{"at the limit", 4096, true},
		{"one over", 4097, false},
	}
	for _, c := range cases {
		e := outboxCall(c.name, "calls")
		e.Request.Body = nil
		if c.size >= 0 {
			e.Request.Body = json.RawMessage(`"` + strings.Repeat("x", c.size-2) + `"`)
		}
		if err := s.Put(ctx, e); (err == nil) != c.store {
			t.Errorf("%s: put: %v, want stored %v", c.name, err, c.store)
		}
		got, err := s.Get(ctx, c.name)
		if (err == nil) != c.store {
			t.Errorf("%s: get: %v, want stored %v", c.name, err, c.store)
		} else if err == nil && string(got.Request.Body) != string(e.Request.Body) {
			t.Errorf("%s: stored a body of %d bytes, want %d", c.name, len(got.Request.Body), len(e.Request.Body))
		}
	}
}
