package execgw

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
)

func seqEvents(from, to int64) []gateway.Event {
	var out []gateway.Event
	for n := from; n <= to; n++ {
		out = append(out, gateway.Event{RunID: "r", Sequence: n, Type: "message.delta"})
	}
	return out
}

func seqs(events []gateway.Event) []int64 {
	out := []int64{}
	for _, e := range events {
		out = append(out, e.Sequence)
	}
	return out
}

// A tail hands out only events that continue exactly where the stream
// is; anything else sends the stream to the store.
func TestFollowerTake(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kept  [][2]int64 // batches of sequences kept, in arrival order
		after int64
		limit int
		want  []int64
		left  []int64
	}{
		{name: "continues", kept: [][2]int64{{3, 5}}, after: 2, limit: 10, want: []int64{3, 4, 5}, left: nil},
		{name: "drops what was sent", kept: [][2]int64{{1, 5}}, after: 3, limit: 10, want: []int64{4, 5}, left: nil},
		{name: "gap before", kept: [][2]int64{{5, 6}}, after: 3, limit: 10, want: []int64{}, left: []int64{5, 6}},
		{name: "gap inside", kept: [][2]int64{{4, 4}, {6, 7}}, after: 3, limit: 10, want: []int64{4}, left: []int64{6, 7}},
		{name: "out of order", kept: [][2]int64{{5, 5}, {4, 4}}, after: 3, limit: 10, want: []int64{}, left: []int64{5, 4}},
		{name: "limit", kept: [][2]int64{{1, 5}}, after: 0, limit: 2, want: []int64{1, 2}, left: []int64{3, 4, 5}},
		{name: "all sent", kept: [][2]int64{{1, 2}}, after: 9, limit: 10, want: []int64{}, left: nil},
		{name: "empty", after: 0, limit: 10, want: []int64{}, left: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &follower{}
			for _, b := range tc.kept {
				f.keep(seqEvents(b[0], b[1]))
			}
			if got := seqs(f.take(tc.after, tc.limit)); !slices.Equal(got, tc.want) {
				t.Errorf("take(%d) = %v, want %v", tc.after, got, tc.want)
			}
			if got := seqs(f.tail); !slices.Equal(got, tc.left) && !(len(got) == 0 && len(tc.left) == 0) {
				t.Errorf("left %v, want %v", got, tc.left)
			}
		})
	}
}

// A tail that would pass its bound is dropped: the stream is behind and
// reads the store, and the tail starts again from the newest events.
func TestFollowerKeepBound(t *testing.T) {
	f := &follower{}
	f.keep(seqEvents(1, maxTail))
	f.keep(seqEvents(maxTail+1, maxTail+2))
	if got := seqs(f.tail); !slices.Equal(got, []int64{maxTail + 1, maxTail + 2}) {
		t.Fatalf("tail %v", got)
	}
	if got := f.take(0, 10); len(got) != 0 {
		t.Fatalf("take(0) = %v from a tail that does not start at 1", seqs(got))
	}
	f.keep(seqEvents(1, maxTail+1))
	if len(f.tail) != 0 {
		t.Fatalf("a batch over the bound is kept: %d events", len(f.tail))
	}
	// Up to the bound, everything is kept.
	f.keep(seqEvents(1, maxTail))
	if len(f.tail) != maxTail {
		t.Fatalf("a batch of the bound kept %d events", len(f.tail))
	}
	f.tail = nil
	f.keep(seqEvents(1, maxTail-1))
	f.keep(seqEvents(maxTail, maxTail))
	if len(f.tail) != maxTail {
		t.Fatalf("a tail filled to the bound kept %d events", len(f.tail))
	}
	// A batch of the bound after others: the others go, the batch stays.
	f.keep(seqEvents(maxTail+1, 2*maxTail))
	if len(f.tail) != maxTail || f.tail[0].Sequence != maxTail+1 {
		t.Fatalf("a batch of the bound after others: %d events kept", len(f.tail))
	}
}

// The hub holds at most its limit of event streams; a stream that goes
// frees its place, and the gateway's own watchers do not count.
func TestHubStreamLimit(t *testing.T) {
	h := newHub(gateway.NewMemoryStore(), 2, slog.New(slog.DiscardHandler))
	a, ok1 := h.follow("r")
	_, ok2 := h.follow("r")
	w := h.watch("r")
	if !ok1 || !ok2 || h.streams() != 2 {
		t.Fatalf("two streams: %v %v, %d open", ok1, ok2, h.streams())
	}
	if _, ok := h.follow("s"); ok {
		t.Fatal("a third stream was let in")
	}
	h.unfollow(a)
	h.unfollow(w)
	if h.streams() != 1 {
		t.Fatalf("%d open after one went", h.streams())
	}
	if _, ok := h.follow("s"); !ok {
		t.Fatal("a stream was refused with a place free")
	}
	h.close()
	if _, ok := h.follow("t"); ok {
		t.Fatal("a stream was let in after close")
	}
}

// The store's news of a commit this process is still writing waits for
// the write's own, which brings the events; news from elsewhere during a
// write is not lost.
func TestHubWritesCarryEvents(t *testing.T) {
	h := newHub(gateway.NewMemoryStore(), 10, slog.New(slog.DiscardHandler))
	f, ok := h.follow("r")
	if !ok {
		t.Fatal("follow refused")
	}
	woken := func() bool {
		select {
		case <-f.wake:
			return true
		default:
			return false
		}
	}

	h.writeBegins("r")
	h.notify("r", 3) // the store announces the commit before the write returns
	if woken() {
		t.Fatal("woken before the write ended")
	}
	h.writeEnds("r", seqEvents(2, 3))
	if !woken() || f.last.Load() != 3 || !slices.Equal(seqs(f.take(1, 10)), []int64{2, 3}) {
		t.Fatalf("after the write: last %d", f.last.Load())
	}

	// Another replica commits during a write of ours that then fails.
	h.writeBegins("r")
	h.notify("r", 5)
	h.writeEnds("r", nil)
	if !woken() || f.last.Load() != 5 || len(f.take(3, 10)) != 0 {
		t.Fatalf("news from elsewhere: last %d", f.last.Load())
	}

	// Two writes at once: news waits for the last to end.
	h.writeBegins("r")
	h.writeBegins("r")
	h.notify("r", 6)
	h.writeEnds("r", seqEvents(6, 6))
	if !woken() || f.last.Load() != 6 {
		t.Fatal("the first write's events did not wake the follower")
	}
	h.notify("r", 7)
	if woken() {
		t.Fatal("news woke the follower while a write was in flight")
	}
	h.writeEnds("r", nil)
	if !woken() || f.last.Load() != 7 {
		t.Fatalf("last %d after both writes", f.last.Load())
	}
	if len(h.writing) != 0 {
		t.Fatalf("writes left in flight: %v", h.writing)
	}
	// With no write in flight, news wakes at once; lost news is said.
	h.notify("r", 8)
	if !woken() || f.last.Load() != 8 {
		t.Fatal("news of another replica did not wake")
	}
	h.notify("", -1)
	if !woken() || !f.lost.Load() {
		t.Fatal("lost news not said")
	}
}

// A stream source takes what its tail holds, skips the store when woken
// for news it has sent, and reads the store otherwise.
func TestRunSourceReads(t *testing.T) {
	st := &countingStore{Store: gateway.NewMemoryStore()}
	ctx := context.Background()
	run, _, err := st.CreateRun(ctx, gateway.RunWrite{Run: gateway.Run{ID: "r", TenantID: "t", InstanceID: "i", Status: gateway.StatusQueued},
		Events: []gateway.Event{{Type: gateway.EventStatus, Payload: []byte(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{store: st}
	f := &follower{stream: true}
	rs := &runSource{s: s, id: run.ID, f: f}
	step := func(after int64, wantSeqs []int64, wantReads int) {
		t.Helper()
		events, err := rs.Events(ctx, after, 10)
		if err != nil || !slices.Equal(seqs(events), wantSeqs) || st.reads != wantReads {
			t.Fatalf("Events(%d) = %v, %v with %d reads; want %v with %d", after, seqs(events), err, st.reads, wantSeqs, wantReads)
		}
	}
	step(0, []int64{1}, 1) // the first read catches up from the store
	f.keep([]gateway.Event{{RunID: "r", Sequence: 2}})
	f.last.Store(2)
	step(1, []int64{2}, 1) // from the tail
	step(2, []int64{}, 1)  // the store's echo of that commit: nothing new
	if ended, err := rs.Ended(ctx, 2); ended || err != nil || st.reads != 1 {
		t.Fatalf("Ended = %v, %v with %d reads", ended, err, st.reads)
	}
	f.last.Store(3) // another replica committed 3: read the store
	step(2, []int64{}, 2)
	f.lost.Store(true)
	step(2, []int64{}, 3)
	if ended, err := rs.Ended(ctx, 2); ended || err != nil || st.runReads != 1 {
		t.Fatalf("Ended of a live run after a read of the store: %v, %v, %d run reads", ended, err, st.runReads)
	}

	// The run ends with a record that is not followed by done (a record
	// written by hand, say): a stream caught up with it ends, one behind
	// it does not.
	cur, err := st.GetRun(ctx, "", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	next := cur
	next.Status = gateway.StatusCompleted
	if _, _, err := st.WriteRun(ctx, gateway.RunWrite{Run: next, ExpectVersion: cur.Version,
		Events: []gateway.Event{{Type: gateway.EventStatus, Payload: []byte(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	for after, want := range map[int64]bool{1: false, 2: true} {
		if ended, err := rs.Ended(ctx, after); ended != want || err != nil {
			t.Errorf("Ended(%d) of an ended run = %v, %v", after, ended, err)
		}
	}
	// A run that had ended when its stream opened: the store is read each
	// time (no news will come), and a read with nothing more ends it.
	ended := &runSource{s: s, id: run.ID, f: &follower{stream: true}, ended: true, caughtUp: true}
	reads, runReads := st.reads, st.runReads
	if events, err := ended.Events(ctx, 2, 10); len(events) != 0 || err != nil || st.reads != reads+1 {
		t.Fatalf("Events past the end of an ended run: %v, %v, %d reads", seqs(events), err, st.reads-reads)
	}
	if e, err := ended.Ended(ctx, 2); !e || err != nil || st.runReads != runReads {
		t.Fatalf("Ended of a run ended at the start: %v, %v", e, err)
	}
}

// countingStore counts reads of events and runs.
type countingStore struct {
	gateway.Store
	reads, runReads int
}

func (c *countingStore) Events(ctx context.Context, run string, after int64, limit int) ([]gateway.Event, error) {
	c.reads++
	return c.Store.Events(ctx, run, after, limit)
}

func (c *countingStore) GetRun(ctx context.Context, tenant, id string) (gateway.Run, error) {
	c.runReads++
	return c.Store.GetRun(ctx, tenant, id)
}

// mutate reads the run when it has no copy, and again after a conflict;
// each write it starts is ended, whether it took or not.
func TestMutate(t *testing.T) {
	ctx := context.Background()
	st := gateway.NewMemoryStore()
	s := New(st, Deps{Tokens: noTokens{}}, nil)
	run, _, err := st.CreateRun(ctx, gateway.RunWrite{Run: gateway.Run{ID: "r", TenantID: "t", InstanceID: "i", Status: gateway.StatusQueued},
		Events: []gateway.Event{{Type: gateway.EventStatus, Payload: []byte(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	addInput := func(text string) func(r *gateway.Run) ([]gateway.Event, error) {
		return func(r *gateway.Run) ([]gateway.Event, error) {
			r.Input += text
			return []gateway.Event{{Type: gateway.EventStatus, Payload: []byte(`{}`)}}, nil
		}
	}
	got, _, err := s.mutate(ctx, nil, run.ID, addInput("a"))
	if err != nil || got.Input != "a" || got.Version != run.Version+1 {
		t.Fatalf("mutate with no copy: %+v, %v", got, err)
	}
	// run is now a stale copy: the write conflicts, and is retried on
	// the run read again.
	got, written, err := s.mutate(ctx, &run, run.ID, addInput("b"))
	if err != nil || got.Input != "ab" || len(written) != 1 || written[0].Sequence != 3 {
		t.Fatalf("mutate with a stale copy: %+v, %v, %v", got, written, err)
	}
	if _, _, err := s.mutate(ctx, nil, "nope", addInput("c")); !errors.Is(err, gateway.ErrNotFound) {
		t.Fatalf("mutate of no run: %v", err)
	}
	ghost := gateway.Run{ID: "ghost", TenantID: "t", InstanceID: "i", Status: gateway.StatusQueued, Version: 1}
	if _, _, err := s.mutate(ctx, &ghost, ghost.ID, addInput("c")); !errors.Is(err, gateway.ErrNotFound) {
		t.Fatalf("mutate of a copy of no run: %v", err)
	}
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if len(s.hub.writing) != 0 {
		t.Fatalf("writes left in flight: %v", s.hub.writing)
	}
}

// noTokens is a Tokens for tests that neither authenticate nor deliver.
type noTokens struct{}

var errNoTokens = errors.New("no tokens here")

func (noTokens) Authenticator() httpapi.Authenticator {
	return httpapi.AuthenticatorFunc(func(*http.Request) (*httpapi.Caller, error) { return nil, httpapi.ErrUnauthenticated })
}
func (noTokens) Verify(context.Context, string) (*identity.Claims, error) { return nil, errNoTokens }
func (noTokens) Mint(context.Context, identity.Claims, time.Duration) (string, error) {
	return "", errNoTokens
}
func (noTokens) MintAs(context.Context, string, identity.Claims, time.Duration) (string, error) {
	return "", errNoTokens
}
