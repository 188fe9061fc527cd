package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"novaos.dev/novaos/delivery"
)

// TestDeliveryStore runs the delivery.Store contract. newStore must return
// a new, empty store each time it is called.
func TestDeliveryStore(t *testing.T, newStore func(t *testing.T) delivery.Store) {
	t.Run("AppendRoundTrip", func(t *testing.T) { testDlAppendRoundTrip(t, newStore(t)) })
	t.Run("AppendRefused", func(t *testing.T) { testDlAppendRefused(t, newStore(t)) })
	t.Run("AppendDedupe", func(t *testing.T) { testDlDedupe(t, newStore) })
	t.Run("AppendConcurrent", func(t *testing.T) {
		s := newStore(t)
		testDlAppendConcurrent(t, func(int) delivery.Store { return s })
	})
	t.Run("AppendDedupeConcurrent", func(t *testing.T) {
		s := newStore(t)
		testDlDedupeConcurrent(t, func(int) delivery.Store { return s })
	})
	t.Run("ReadEvents", func(t *testing.T) { testDlReadEvents(t, newStore(t)) })
	t.Run("ReadEventsMaxPage", func(t *testing.T) { testDlReadMaxPage(t, newStore(t)) })
	t.Run("WatchEvents", func(t *testing.T) { testDlWatch(t, newStore(t)) })
	t.Run("OpenConsumer", func(t *testing.T) { testDlOpenConsumer(t, newStore(t)) })
	t.Run("OpenConsumerConcurrent", func(t *testing.T) {
		s := newStore(t)
		testDlOpenConcurrent(t, func(int) delivery.Store { return s })
	})
	t.Run("UpdateConsumer", func(t *testing.T) { testDlUpdateConsumer(t, newStore) })
	t.Run("UpdateConsumerConcurrent", func(t *testing.T) {
		s := newStore(t)
		testDlUpdateConcurrent(t, func(int) delivery.Store { return s })
	})
	t.Run("RewindConsumer", func(t *testing.T) { testDlRewind(t, newStore(t)) })
	t.Run("Tokens", func(t *testing.T) { testDlTokens(t, newStore(t)) })
	t.Run("ConsumeToken", func(t *testing.T) { testDlConsumeToken(t, newStore(t)) })
	t.Run("ConsumeTokenConcurrent", func(t *testing.T) {
		s := newStore(t)
		testDlConsumeConcurrent(t, func(int) delivery.Store { return s })
	})
	t.Run("RecordProof", func(t *testing.T) { testDlRecordProof(t, newStore(t)) })
	t.Run("RecordProofConcurrent", func(t *testing.T) {
		s := newStore(t)
		testDlProofConcurrent(t, func(int) delivery.Store { return s })
	})
	t.Run("PruneProofs", func(t *testing.T) { testDlPruneProofs(t, newStore(t)) })
	t.Run("PruneUsedTokens", func(t *testing.T) { testDlPruneUsed(t, newStore(t)) })
	t.Run("PruneUsedTokensConcurrent", func(t *testing.T) {
		s := newStore(t)
		testDlPruneUsedConcurrent(t, func(int) delivery.Store { return s })
	})
	t.Run("APITokens", func(t *testing.T) { testDlAPITokens(t, newStore(t)) })
	t.Run("Requests", func(t *testing.T) { testDlRequests(t, newStore(t)) })
	t.Run("PruneRequests", func(t *testing.T) { testDlPrune(t, newStore(t)) })
	t.Run("BeginRequestConcurrent", func(t *testing.T) {
		s := newStore(t)
		testDlBeginConcurrent(t, func(int) delivery.Store { return s })
	})
	t.Run("Messages", func(t *testing.T) { testDlMessages(t, newStore(t)) })
	t.Run("ThreadMessages", func(t *testing.T) { testDlThreadMessages(t, newStore(t)) })
	t.Run("CreateMessageConcurrent", func(t *testing.T) {
		s := newStore(t)
		testDlMessageConcurrent(t, func(int) delivery.Store { return s })
	})
}

// TestDeliveryReplicas runs the races of the delivery.Store contract
// across handles of one database, as replicas of a server have:
// newDatabase makes a database and returns a function that opens another
// handle on it at every call. With watch, a handle's WatchEvents also
// reports the others' appends (a store shared by processes).
func TestDeliveryReplicas(t *testing.T, newDatabase func(t *testing.T) (newReplica func() delivery.Store), watch bool) {
	pick := func(t *testing.T) func(i int) delivery.Store {
		newReplica := newDatabase(t)
		replicas := []delivery.Store{newReplica(), newReplica(), newReplica()}
		return func(i int) delivery.Store { return replicas[i%len(replicas)] }
	}
	t.Run("AppendConcurrent", func(t *testing.T) { testDlAppendConcurrent(t, pick(t)) })
	t.Run("AppendDedupeConcurrent", func(t *testing.T) { testDlDedupeConcurrent(t, pick(t)) })
	t.Run("OpenConsumerConcurrent", func(t *testing.T) { testDlOpenConcurrent(t, pick(t)) })
	t.Run("UpdateConsumerConcurrent", func(t *testing.T) { testDlUpdateConcurrent(t, pick(t)) })
	t.Run("ConsumeTokenConcurrent", func(t *testing.T) { testDlConsumeConcurrent(t, pick(t)) })
	t.Run("RecordProofConcurrent", func(t *testing.T) { testDlProofConcurrent(t, pick(t)) })
	t.Run("PruneUsedTokensConcurrent", func(t *testing.T) { testDlPruneUsedConcurrent(t, pick(t)) })
	t.Run("BeginRequestConcurrent", func(t *testing.T) { testDlBeginConcurrent(t, pick(t)) })
	t.Run("CreateMessageConcurrent", func(t *testing.T) { testDlMessageConcurrent(t, pick(t)) })
	if !watch {
		return
	}
	t.Run("WatchEvents", func(t *testing.T) {
		newReplica := newDatabase(t)
		a, b := newReplica(), newReplica()
		log := newWatchLog()
		if err := b.WatchEvents(ctxT(t), log.fn); err != nil {
			t.Fatal(err)
		}
		dlAppend(t, a, dlEvent("agent-1", "e1", ""), dlEvent("agent-1", "e2", ""), dlEvent("agent-2", "e3", ""))
		log.waitFor(t, "agent-1", 2)
		log.waitFor(t, "agent-2", 1)
		dlAppend(t, b, dlEvent("agent-1", "e4", ""))
		log.waitFor(t, "agent-1", 3)
	})
}

// TestDeliveryReopen checks durability across restarts: every kind of
// record written through one handle reads back unchanged through a new
// handle on the same database, and an agent's sequence goes on where it
// stopped. open must return a fresh handle on the same database at every
// call, and the function that closes it.
func TestDeliveryReopen(t *testing.T, open func(t *testing.T) (delivery.Store, func())) {
	ctx := ctxT(t)
	s, closeDB := open(t)
	evs := dlAppend(t, s, dlFullEvent("agent-1", "e1"), dlEvent("agent-1", "e2", "k2"))
	if _, err := s.OpenConsumer(ctx, "agent-1", "main", dlT0); err != nil {
		t.Fatal(err)
	}
	c, err := s.RewindConsumer(ctx, "agent-1", "main", 1, dlAt(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tok := dlToken("run-1", "jti-1")
	if err := s.RecordTokens(ctx, []delivery.TokenRecord{tok}); err != nil {
		t.Fatal(err)
	}
	if err := s.ConsumeToken(ctx, "jti-0", dlAt(time.Hour)); err != nil {
		t.Fatal(err)
	}
	api := dlAPIToken("tok-1", "agent-1", "hash-1")
	if err := s.CreateAPIToken(ctx, api); err != nil {
		t.Fatal(err)
	}
	req, _, err := s.BeginRequest(ctx, dlRequest("agent-1", "key-1"))
	if err != nil {
		t.Fatal(err)
	}
	req.Done, req.Status, req.Body = true, 201, []byte(`{"id":"m1"}`)
	if err := s.FinishRequest(ctx, req); err != nil {
		t.Fatal(err)
	}
	msg, _, err := s.CreateMessage(ctx, dlMessage("m1", "agent-1", "thread-1", "c1"))
	if err != nil {
		t.Fatal(err)
	}
	closeDB()

	for i := range 2 {
		s, closeDB := open(t)
		check := func(what string, want, got any, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("reopen %d: %s: %v", i, what, err)
			}
			if d := gocmp.Diff(want, got); d != "" {
				t.Errorf("reopen %d: %s (-want +got):\n%s", i, what, d)
			}
		}
		got, err := s.ReadEvents(ctx, "agent-1", 0, 0)
		check("events", evs, got, err)
		gotC, err := s.GetConsumer(ctx, "agent-1", "main")
		check("consumer", c, gotC, err)
		gotTok, err := s.NewestToken(ctx, "run-1")
		check("newest token", dlStoredToken(tok), gotTok, err)
		if err := s.ConsumeToken(ctx, "jti-0", dlAt(time.Hour)); !errors.Is(err, delivery.ErrExists) {
			t.Errorf("reopen %d: a consumed token consumed again = %v, want ErrExists", i, err)
		}
		gotAPI, err := s.FindAPIToken(ctx, []byte("hash-1"))
		check("API token", dlStoredAPIToken(api), gotAPI, err)
		gotReq, fresh, err := s.BeginRequest(ctx, dlRequest("agent-1", "key-1"))
		check("request", req, gotReq, err)
		if fresh {
			t.Errorf("reopen %d: a finished request began afresh", i)
		}
		gotMsgs, err := s.ThreadMessages(ctx, "acme", "thread-1", 0)
		check("messages", []delivery.StoredMessage{msg}, gotMsgs, err)
		// The sequence goes on after the reopen.
		more := dlAppend(t, s, dlEvent("agent-1", fmt.Sprintf("more-%d", i), ""))
		evs = append(evs, more...)
		if more[0].Seq != int64(len(evs)) {
			t.Errorf("reopen %d: the next event has sequence %d, want %d", i, more[0].Seq, len(evs))
		}
		closeDB()
	}
}

// dlT0 is the suite's clock: its times carry nanoseconds, which stores
// drop (they keep microseconds), in a zone other than UTC, which reads
// back as UTC.
var dlT0 = time.Date(2026, 7, 1, 9, 0, 0, 123456789, time.UTC).In(gateZone)

func dlAt(d time.Duration) time.Time { return dlT0.Add(d) }

// dlStored is t as a store returns it.
func dlStored(t time.Time) time.Time { return gwStored(t) }

// dlEvent is an event of agent with only what a store requires and a
// payload, deduplicated by key unless key is "".
func dlEvent(agent, id, key string) delivery.StoredEvent {
	return delivery.StoredEvent{AgentID: agent, TenantID: "acme", ID: id, Type: delivery.EventRunStateChanged, DedupeKey: key,
		Payload: json.RawMessage(`{"run_id":"r1","state":"running","version":1}`), CreatedAt: dlT0}
}

// dlFullEvent is an event with every field set: its payload is JSON laid
// out as a service might write it (spaces, characters encoding/json would
// escape), which the store keeps byte for byte.
func dlFullEvent(agent, id string) delivery.StoredEvent {
	return delivery.StoredEvent{
		AgentID: agent, TenantID: "acme", Seq: 99, ID: id, Type: delivery.EventInvocation, RunID: "run-1",
		DedupeKey:    "invocation:run-1:" + id,
		Payload:      json.RawMessage(`{ "trigger_kind" : "message", "run_id":"run-1", "note": "<b> & \u00e9" }`),
		TraceContext: &delivery.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "k=v"},
		Grant: &delivery.Claims{Issuer: "https://novaos.example.com", Audience: agent, Subject: "user-alex", IssuedAt: 1,
			ExpiresAt: 2, ID: "jti-x", TenantID: "acme", RunID: "run-1", ThreadID: "thread-1", EventID: id,
			TriggerKind: delivery.TriggerMessage, MessageID: "msg-1", InteractionID: "int-1", CommandID: "cmd-1",
			BillingMode: delivery.BillingPlatform, ToolClass: delivery.ToolScoped, PermissionVersion: 7},
		CreatedAt: dlAt(time.Second + 777),
	}
}

// dlWant is what a store returns for e stored at seq.
func dlWant(e delivery.StoredEvent, seq int64) delivery.StoredEvent {
	e.Seq, e.CreatedAt = seq, dlStored(e.CreatedAt)
	if len(e.Payload) == 0 {
		e.Payload = nil
	}
	return e
}

func dlAppend(t *testing.T, s delivery.Store, evs ...delivery.StoredEvent) []delivery.StoredEvent {
	t.Helper()
	got, err := s.AppendEvents(ctxT(t), evs)
	if err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	if len(got) != len(evs) {
		t.Fatalf("AppendEvents of %d events returned %d", len(evs), len(got))
	}
	return got
}

func dlRead(t *testing.T, s delivery.Store, agent string, after int64, limit int) []delivery.StoredEvent {
	t.Helper()
	got, err := s.ReadEvents(ctxT(t), agent, after, limit)
	if err != nil {
		t.Fatalf("ReadEvents(%s, %d, %d): %v", agent, after, limit, err)
	}
	return got
}

func dlHead(t *testing.T, s delivery.Store, agent string) int64 {
	t.Helper()
	h, err := s.HeadSeq(ctxT(t), agent)
	if err != nil {
		t.Fatalf("HeadSeq(%s): %v", agent, err)
	}
	return h
}

func dlSeqs(evs []delivery.StoredEvent) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func testDlAppendRoundTrip(t *testing.T, s delivery.Store) {
	full := dlFullEvent("agent-1", "e1")
	checkAllSet(t, "dlFullEvent", full)
	checkAllSet(t, "dlFullEvent's grant", *full.Grant)
	bare := delivery.StoredEvent{AgentID: "agent-1", TenantID: "acme", ID: "e2", Type: "custom.kind"}
	other := dlEvent("agent-2", "e3", "")
	before := time.Now()
	got := dlAppend(t, s, full, bare, other, dlEvent("agent-1", "e4", ""))
	after := time.Now()

	// An event without a time takes the append's, to the microsecond.
	if at := got[1].CreatedAt; at.Before(dlStored(before).Add(-time.Microsecond)) || at.After(after) || at.Location() != time.UTC ||
		at.Nanosecond()%1000 != 0 {
		t.Errorf("an event without a time was stored at %v, want the append's time in UTC (%v to %v)", at, before, after)
	}
	bare.CreatedAt = got[1].CreatedAt
	want := []delivery.StoredEvent{dlWant(dlFullEvent("agent-1", "e1"), 1), dlWant(bare, 2), dlWant(other, 1),
		dlWant(dlEvent("agent-1", "e4", ""), 3)}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("AppendEvents (-want +got):\n%s", d)
	}
	// The payload is kept byte for byte.
	if string(got[0].Payload) != string(full.Payload) {
		t.Errorf("payload %s, want %s byte for byte", got[0].Payload, full.Payload)
	}
	read := dlRead(t, s, "agent-1", 0, 0)
	if d := gocmp.Diff([]delivery.StoredEvent{want[0], want[1], want[3]}, read); d != "" {
		t.Errorf("ReadEvents (-want +got):\n%s", d)
	}
	if d := gocmp.Diff(want[2:3], dlRead(t, s, "agent-2", 0, 0)); d != "" {
		t.Errorf("ReadEvents of the other agent (-want +got):\n%s", d)
	}
	for agent, head := range map[string]int64{"agent-1": 3, "agent-2": 1, "agent-3": 0, "": 0} {
		if got := dlHead(t, s, agent); got != head {
			t.Errorf("HeadSeq(%q) = %d, want %d", agent, got, head)
		}
	}

	// What a store returns and what it was given are the caller's.
	full.Payload[3], full.TraceContext.Tracestate, full.Grant.Subject = 'X', "changed", "changed"
	got[0].Payload[3], got[0].TraceContext.Tracestate, got[0].Grant.Subject = 'Y', "changed", "changed"
	read[0].Payload[3], read[0].Grant.RunID = 'Z', "changed"
	if d := gocmp.Diff(want[0], dlRead(t, s, "agent-1", 0, 1)[0]); d != "" {
		t.Errorf("changing events given, returned or read changed the stored one (-want +got):\n%s", d)
	}

	// An empty append appends nothing.
	if evs, err := s.AppendEvents(ctxT(t), nil); err != nil || len(evs) != 0 {
		t.Errorf("AppendEvents(nil) = %v, %v", evs, err)
	}
	if got := dlHead(t, s, "agent-1"); got != 3 {
		t.Errorf("HeadSeq after an empty append = %d, want 3", got)
	}
}

func testDlAppendRefused(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	ok := dlEvent("agent-1", "ok", "")
	for _, c := range []struct {
		name string
		e    delivery.StoredEvent
	}{
		{"no agent", delivery.StoredEvent{TenantID: "acme", ID: "e", Type: "t"}},
		{"no tenant", delivery.StoredEvent{AgentID: "agent-1", ID: "e", Type: "t"}},
		{"no id", delivery.StoredEvent{AgentID: "agent-1", TenantID: "acme", Type: "t"}},
		{"no type", delivery.StoredEvent{AgentID: "agent-1", TenantID: "acme", ID: "e"}},
		{"a payload that is not JSON", delivery.StoredEvent{AgentID: "agent-1", TenantID: "acme", ID: "e", Type: "t",
			Payload: json.RawMessage(`{"a":`)}},
	} {
		// The batch is refused whole: the valid event before it is not
		// stored either.
		if evs, err := s.AppendEvents(ctx, []delivery.StoredEvent{ok, c.e}); err == nil {
			t.Errorf("%s: AppendEvents = %v, want a refusal", c.name, evs)
		}
	}
	if got := dlHead(t, s, "agent-1"); got != 0 {
		t.Errorf("refused appends left the head at %d, want 0", got)
	}
	if got := dlRead(t, s, "agent-1", 0, 0); len(got) != 0 {
		t.Errorf("refused appends stored %v", got)
	}
}

func testDlDedupe(t *testing.T, newStore func(t *testing.T) delivery.Store) {
	type batch []delivery.StoredEvent
	e := dlEvent
	for _, c := range []struct {
		name    string
		batches []batch
		// seqs are the sequences of each batch's answer; ids their ids.
		seqs [][]int64
		ids  [][]string
		head map[string]int64
	}{
		{
			name:    "across batches the stored event answers",
			batches: []batch{{e("a1", "x", "k")}, {e("a1", "y", "k")}},
			seqs:    [][]int64{{1}, {1}}, ids: [][]string{{"x"}, {"x"}},
			head: map[string]int64{"a1": 1},
		},
		{
			name:    "within a batch the first answers",
			batches: []batch{{e("a1", "x", "k"), e("a1", "y", "k"), e("a1", "z", "")}},
			seqs:    [][]int64{{1, 1, 2}}, ids: [][]string{{"x", "x", "z"}},
			head: map[string]int64{"a1": 2},
		},
		{
			name:    "a repeat between new events leaves no gap",
			batches: []batch{{e("a1", "x", "k1")}, {e("a1", "y", ""), e("a1", "x2", "k1"), e("a1", "z", "k2"), e("a1", "z2", "k2")}},
			seqs:    [][]int64{{1}, {2, 1, 3, 3}}, ids: [][]string{{"x"}, {"y", "x", "z", "z"}},
			head: map[string]int64{"a1": 3},
		},
		{
			name:    "keys are the agent's own",
			batches: []batch{{e("a1", "x", "k")}, {e("a2", "y", "k"), e("a1", "z", "k")}},
			seqs:    [][]int64{{1}, {1, 1}}, ids: [][]string{{"x"}, {"y", "x"}},
			head: map[string]int64{"a1": 1, "a2": 1},
		},
		{
			name:    "an empty key never deduplicates",
			batches: []batch{{e("a1", "x", ""), e("a1", "x", "")}, {e("a1", "x", "")}},
			seqs:    [][]int64{{1, 2}, {3}}, ids: [][]string{{"x", "x"}, {"x"}},
			head: map[string]int64{"a1": 3},
		},
		{
			name:    "only repeats append nothing",
			batches: []batch{{e("a1", "x", "k"), e("a2", "y", "k")}, {e("a2", "y2", "k"), e("a1", "x2", "k")}},
			seqs:    [][]int64{{1, 1}, {1, 1}}, ids: [][]string{{"x", "y"}, {"y", "x"}},
			head: map[string]int64{"a1": 1, "a2": 1},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			var answers []delivery.StoredEvent
			for i, b := range c.batches {
				got := dlAppend(t, s, b...)
				answers = append(answers, got...)
				ids := make([]string, len(got))
				for j, ev := range got {
					ids[j] = ev.ID
				}
				if d := gocmp.Diff(c.seqs[i], dlSeqs(got)); d != "" {
					t.Errorf("batch %d: sequences (-want +got):\n%s", i, d)
				}
				if d := gocmp.Diff(c.ids[i], ids); d != "" {
					t.Errorf("batch %d: ids (-want +got):\n%s", i, d)
				}
			}
			stored := map[string][]delivery.StoredEvent{}
			for agent, head := range c.head {
				if got := dlHead(t, s, agent); got != head {
					t.Errorf("HeadSeq(%s) = %d, want %d", agent, got, head)
				}
				evs := dlRead(t, s, agent, 0, 0)
				if len(evs) != int(head) {
					t.Errorf("%s has %d events stored, want %d: %v", agent, len(evs), head, dlSeqs(evs))
				}
				for i, ev := range evs {
					if ev.Seq != int64(i)+1 {
						t.Errorf("%s's event %d has sequence %d", agent, i, ev.Seq)
					}
				}
				stored[agent] = evs
			}
			// Every answer, a repeat's too, is the event as stored.
			for i, a := range answers {
				evs := stored[a.AgentID]
				if a.Seq < 1 || a.Seq > int64(len(evs)) {
					t.Errorf("answer %d has sequence %d, which %s does not have", i, a.Seq, a.AgentID)
					continue
				}
				if d := gocmp.Diff(evs[a.Seq-1], a); d != "" {
					t.Errorf("answer %d is not the event stored (-stored +answer):\n%s", i, d)
				}
			}
		})
	}
}

// Appenders racing on one agent, on store(i), each get their own
// sequences: 1..n with no gap and no duplicate, every event stored once.
func testDlAppendConcurrent(t *testing.T, store func(i int) delivery.Store) {
	const workers, appends = 8, 50
	ctx := ctxT(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seqs = map[int64]string{}
		errs []error
	)
	for w := range workers {
		wg.Go(func() {
			s := store(w)
			for i := range appends {
				id := fmt.Sprintf("w%d-%d", w, i)
				evs := []delivery.StoredEvent{dlEvent("agent-1", id, "")}
				if i%10 == 9 {
					// Every tenth append holds a second agent's event too.
					evs = append(evs, dlEvent("agent-2", id, ""))
				}
				got, err := s.AppendEvents(ctx, evs)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("worker %d, append %d: %w", w, i, err))
					mu.Unlock()
					return
				}
				if other, dup := seqs[got[0].Seq]; dup {
					errs = append(errs, fmt.Errorf("sequence %d was returned for %s and %s", got[0].Seq, other, id))
				}
				seqs[got[0].Seq] = id
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i == 10 {
			t.Fatalf("and %d more", len(errs)-i)
		}
		t.Error(err)
	}
	s := store(0)
	const n = workers * appends
	if got := dlHead(t, s, "agent-1"); got != n {
		t.Errorf("HeadSeq = %d, want %d", got, n)
	}
	var all []delivery.StoredEvent
	for after := int64(0); ; {
		page := dlRead(t, s, "agent-1", after, 64)
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
	if len(all) != n {
		t.Fatalf("read %d events, want %d", len(all), n)
	}
	ids := map[string]bool{}
	for i, e := range all {
		if e.Seq != int64(i)+1 {
			t.Fatalf("event %d has sequence %d: a gap or a duplicate", i, e.Seq)
		}
		if ids[e.ID] {
			t.Fatalf("event %s is stored twice", e.ID)
		}
		ids[e.ID] = true
		if seqs[e.Seq] != e.ID {
			t.Errorf("sequence %d holds %s, but was returned for %s", e.Seq, e.ID, seqs[e.Seq])
		}
	}
	if got := dlHead(t, s, "agent-2"); got != workers*appends/10 {
		t.Errorf("HeadSeq of the second agent = %d, want %d", got, workers*appends/10)
	}
}

// Appenders racing with one DedupeKey store it once, and each is answered
// with the one stored event.
func testDlDedupeConcurrent(t *testing.T, store func(i int) delivery.Store) {
	const workers = 8
	ctx := ctxT(t)
	answers := make([]delivery.StoredEvent, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			var got []delivery.StoredEvent
			got, errs[w] = store(w).AppendEvents(ctx, []delivery.StoredEvent{
				dlEvent("agent-1", fmt.Sprintf("own-%d", w), ""),
				dlEvent("agent-1", fmt.Sprintf("e-%d", w), "invocation:run-1:1"),
			})
			if errs[w] == nil {
				answers[w] = got[1]
			}
		})
	}
	close(start)
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
	}
	for w, a := range answers[1:] {
		if d := gocmp.Diff(answers[0], a); d != "" {
			t.Errorf("worker %d was answered with another event than worker 0 (-0 +%d):\n%s", w+1, w+1, d)
		}
	}
	s := store(0)
	evs := dlRead(t, s, "agent-1", 0, 0)
	if len(evs) != workers+1 {
		t.Fatalf("%d events stored, want %d (one per worker and the deduplicated one)", len(evs), workers+1)
	}
	keyed := 0
	for i, e := range evs {
		if e.Seq != int64(i)+1 {
			t.Errorf("event %d has sequence %d", i, e.Seq)
		}
		if e.DedupeKey != "" {
			keyed++
			if d := gocmp.Diff(answers[0], e); d != "" {
				t.Errorf("the stored event differs from the answer (-answer +stored):\n%s", d)
			}
		}
	}
	if keyed != 1 {
		t.Errorf("the deduplicated event is stored %d times", keyed)
	}
}

func testDlReadEvents(t *testing.T, s delivery.Store) {
	var evs []delivery.StoredEvent
	for i := range 10 {
		evs = append(evs, dlEvent("agent-1", fmt.Sprintf("e%d", i+1), ""))
	}
	dlAppend(t, s, evs...)
	dlAppend(t, s, dlEvent("agent-2", "other", ""))
	seqs := func(from, to int64) []int64 {
		var out []int64
		for i := from; i <= to; i++ {
			out = append(out, i)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		agent string
		after int64
		limit int
		want  []int64
	}{
		{"first page", "agent-1", 0, 3, seqs(1, 3)},
		{"next page", "agent-1", 3, 3, seqs(4, 6)},
		{"last page", "agent-1", 9, 3, seqs(10, 10)},
		{"after the head", "agent-1", 10, 3, nil},
		{"far after the head", "agent-1", 1000, 3, nil},
		{"no limit", "agent-1", 0, 0, seqs(1, 10)},
		{"a negative limit", "agent-1", 4, -1, seqs(5, 10)},
		{"a negative cursor", "agent-1", -5, 2, seqs(1, 2)},
		{"another agent", "agent-2", 0, 0, seqs(1, 1)},
		{"an unknown agent", "agent-9", 0, 0, nil},
	} {
		got := dlRead(t, s, c.agent, c.after, c.limit)
		if d := gocmp.Diff(c.want, dlSeqs(got), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: ReadEvents(%s, %d, %d) (-want +got):\n%s", c.name, c.agent, c.after, c.limit, d)
		}
		for _, e := range got {
			if e.AgentID != c.agent {
				t.Errorf("%s: ReadEvents(%s) returned %s's event", c.name, c.agent, e.AgentID)
			}
		}
		if got == nil {
			t.Errorf("%s: ReadEvents returned nil, want an empty slice", c.name)
		}
	}
}

// A page holds at most delivery.MaxPage events, whatever the limit asked.
func testDlReadMaxPage(t *testing.T, s delivery.Store) {
	n := delivery.MaxPage + 10
	evs := make([]delivery.StoredEvent, n)
	for i := range evs {
		evs[i] = dlEvent("agent-1", fmt.Sprintf("e%d", i+1), "")
	}
	got := dlAppend(t, s, evs...)
	if got[n-1].Seq != int64(n) {
		t.Fatalf("the last of %d events in one append has sequence %d", n, got[n-1].Seq)
	}
	for _, limit := range []int{0, delivery.MaxPage + 1, 10 * n} {
		if got := dlRead(t, s, "agent-1", 0, limit); len(got) != delivery.MaxPage {
			t.Errorf("ReadEvents with limit %d returned %d events, want %d", limit, len(got), delivery.MaxPage)
		}
	}
	if got := dlRead(t, s, "agent-1", int64(delivery.MaxPage), 0); len(got) != 10 || got[0].Seq != int64(delivery.MaxPage)+1 {
		t.Errorf("the page after the first = %v", dlSeqs(got))
	}
}

func testDlWatch(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	log, stopped := newWatchLog(), newWatchLog()
	if err := s.WatchEvents(ctx, log.fn); err != nil {
		t.Fatalf("WatchEvents: %v", err)
	}
	sctx, stop := context.WithCancel(ctx)
	if err := s.WatchEvents(sctx, stopped.fn); err != nil {
		t.Fatalf("WatchEvents: %v", err)
	}
	dlAppend(t, s, dlEvent("agent-1", "e1", "k1"), dlEvent("agent-1", "e2", ""), dlEvent("agent-2", "e3", ""))
	log.waitFor(t, "agent-1", 2)
	log.waitFor(t, "agent-2", 1)
	stopped.waitFor(t, "agent-1", 2)
	stopped.waitFor(t, "agent-2", 1)
	stop()

	// Appends that store nothing new (a refused one, one of repeats) are
	// not reported as a head the agent does not have.
	if _, err := s.AppendEvents(ctx, []delivery.StoredEvent{{AgentID: "agent-1"}}); err == nil {
		t.Fatal("AppendEvents of an invalid event succeeded")
	}
	dlAppend(t, s, dlEvent("agent-1", "e1-again", "k1"))
	dlAppend(t, s, dlEvent("agent-1", "e4", ""))
	log.waitFor(t, "agent-1", 3)
	for _, c := range log.snapshot() {
		if c != (watchCall{"agent-1", 2}) && c != (watchCall{"agent-2", 1}) && c != (watchCall{"agent-1", 3}) {
			t.Errorf("WatchEvents reported %v; only agent-1 at 2 and 3 and agent-2 at 1 were appended", c)
		}
	}
	// The watcher whose context ended heard of nothing after it.
	for _, c := range stopped.snapshot() {
		if c != (watchCall{"agent-1", 2}) && c != (watchCall{"agent-2", 1}) {
			t.Errorf("a watcher whose context ended was told of %v", c)
		}
	}
	if err := s.WatchEvents(ctx, nil); err == nil {
		t.Error("WatchEvents with a nil fn succeeded")
	}
	// A context that ended already is refused, or never called.
	if err := s.WatchEvents(sctx, stopped.fn); err == nil {
		before := len(stopped.snapshot())
		dlAppend(t, s, dlEvent("agent-3", "late", ""))
		log.waitFor(t, "agent-3", 1)
		if got := stopped.snapshot(); len(got) != before {
			t.Errorf("a watch started with an ended context was told of %v", got[before:])
		}
	}
}

func testDlOpenConsumer(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	first, err := s.OpenConsumer(ctx, "agent-1", "main", dlT0)
	if err != nil {
		t.Fatalf("OpenConsumer: %v", err)
	}
	want := delivery.Consumer{AgentID: "agent-1", Name: "main", Version: 1, CreatedAt: dlStored(dlT0), UpdatedAt: dlStored(dlT0)}
	if d := gocmp.Diff(want, first); d != "" {
		t.Errorf("OpenConsumer before any event (-want +got):\n%s", d)
	}
	for i := range 5 {
		dlAppend(t, s, dlEvent("agent-1", fmt.Sprintf("e%d", i), ""))
	}
	second, err := s.OpenConsumer(ctx, "agent-1", "second", dlAt(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want2 := delivery.Consumer{AgentID: "agent-1", Name: "second", AckedSeq: 5, SentSeq: 5, Version: 1,
		CreatedAt: dlStored(dlAt(time.Minute)), UpdatedAt: dlStored(dlAt(time.Minute))}
	if d := gocmp.Diff(want2, second); d != "" {
		t.Errorf("OpenConsumer after 5 events (-want +got):\n%s", d)
	}
	// An existing consumer is returned as it is, not moved to the head.
	again, err := s.OpenConsumer(ctx, "agent-1", "main", dlAt(time.Hour))
	if d := gocmp.Diff(want, again); err != nil || d != "" {
		t.Errorf("OpenConsumer of an existing consumer = %v (-want +got):\n%s", err, d)
	}
	got, err := s.GetConsumer(ctx, "agent-1", "second")
	if d := gocmp.Diff(want2, got); err != nil || d != "" {
		t.Errorf("GetConsumer = %v (-want +got):\n%s", err, d)
	}
	// The same name of another agent is another consumer.
	other, err := s.OpenConsumer(ctx, "agent-2", "main", dlT0)
	if err != nil || other.AckedSeq != 0 || other.AgentID != "agent-2" {
		t.Errorf("OpenConsumer of another agent's main = %+v, %v", other, err)
	}
	for _, k := range [][2]string{{"agent-1", "nope"}, {"agent-3", "main"}, {"", "main"}, {"agent-1", "MAIN"}} {
		if _, err := s.GetConsumer(ctx, k[0], k[1]); !errors.Is(err, delivery.ErrNotFound) {
			t.Errorf("GetConsumer(%q, %q) = %v, want ErrNotFound", k[0], k[1], err)
		}
	}
	for _, k := range [][2]string{{"agent-1", ""}, {"", "main"}} {
		if _, err := s.OpenConsumer(ctx, k[0], k[1], dlT0); err == nil {
			t.Errorf("OpenConsumer(%q, %q) succeeded", k[0], k[1])
		}
	}
}

// Of openers racing for one new consumer one creates it; every one is
// answered with it.
func testDlOpenConcurrent(t *testing.T, store func(i int) delivery.Store) {
	const workers = 8
	ctx := ctxT(t)
	dlAppend(t, store(0), dlEvent("agent-1", "e1", ""), dlEvent("agent-1", "e2", ""))
	got := make([]delivery.Consumer, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			got[w], errs[w] = store(w).OpenConsumer(ctx, "agent-1", "main", dlAt(time.Duration(w)*time.Second))
		})
	}
	close(start)
	wg.Wait()
	for w := range workers {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
		if d := gocmp.Diff(got[0], got[w]); d != "" {
			t.Errorf("worker %d opened another consumer than worker 0 (-0 +%d):\n%s", w, w, d)
		}
	}
	if got[0].Version != 1 || got[0].AckedSeq != 2 || got[0].SentSeq != 2 {
		t.Errorf("the consumer opened = %+v, want version 1 at sequence 2", got[0])
	}
}

func testDlUpdateConsumer(t *testing.T, newStore func(t *testing.T) delivery.Store) {
	// Each case starts from a consumer at version 2 that acknowledged 4
	// and was sent 6, of an agent whose head is 10.
	setup := func(t *testing.T) (delivery.Store, delivery.Consumer) {
		s := newStore(t)
		ctx := ctxT(t)
		if _, err := s.OpenConsumer(ctx, "agent-1", "main", dlT0); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			dlAppend(t, s, dlEvent("agent-1", fmt.Sprintf("e%d", i), ""))
		}
		c, err := s.GetConsumer(ctx, "agent-1", "main")
		if err != nil {
			t.Fatal(err)
		}
		c.AckedSeq, c.SentSeq = 4, 6
		c, err = s.UpdateConsumer(ctx, c, dlAt(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return s, c
	}
	now := dlAt(time.Minute)
	for _, c := range []struct {
		name   string
		change func(c *delivery.Consumer)
		want   func(c *delivery.Consumer) // the consumer after, from the one before; nil when refused
		err    error
	}{
		{
			name: "every field but the key",
			change: func(c *delivery.Consumer) {
				c.AckedSeq, c.SentSeq, c.SentAt, c.SessionID = 6, 9, dlAt(30*time.Second+3), "session-1"
				c.CreatedAt, c.UpdatedAt = dlAt(-time.Hour), dlAt(-time.Hour) // the store's to keep and set
			},
			want: func(c *delivery.Consumer) {
				c.AckedSeq, c.SentSeq, c.SentAt, c.SessionID = 6, 9, dlStored(dlAt(30*time.Second+3)), "session-1"
			},
		},
		{
			name:   "an acknowledgement never moves back",
			change: func(c *delivery.Consumer) { c.AckedSeq, c.SessionID = 2, "session-2" },
			want:   func(c *delivery.Consumer) { c.SessionID = "session-2" },
		},
		{
			name:   "up to the head",
			change: func(c *delivery.Consumer) { c.AckedSeq, c.SentSeq = 10, 10 },
			want:   func(c *delivery.Consumer) { c.AckedSeq, c.SentSeq = 10, 10 },
		},
		{
			name:   "sent is at least acknowledged",
			change: func(c *delivery.Consumer) { c.AckedSeq, c.SentSeq = 8, 3 },
			want:   func(c *delivery.Consumer) { c.AckedSeq, c.SentSeq = 8, 8 },
		},
		{"an acknowledgement past the head", func(c *delivery.Consumer) { c.AckedSeq = 11 }, nil, delivery.ErrInvalidSeq},
		{"sent past the head", func(c *delivery.Consumer) { c.SentSeq = 11 }, nil, delivery.ErrInvalidSeq},
		{"a negative acknowledgement", func(c *delivery.Consumer) { c.AckedSeq = -1 }, nil, delivery.ErrInvalidSeq},
		{"a stale version", func(c *delivery.Consumer) { c.Version--; c.AckedSeq = 5 }, nil, delivery.ErrConflict},
		{"a version ahead", func(c *delivery.Consumer) { c.Version++; c.AckedSeq = 5 }, nil, delivery.ErrConflict},
		{"an unknown consumer", func(c *delivery.Consumer) { c.Name = "other" }, nil, delivery.ErrNotFound},
		{"another agent's", func(c *delivery.Consumer) { c.AgentID = "agent-2" }, nil, delivery.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, before := setup(t)
			ctx := ctxT(t)
			in := before
			c.change(&in)
			got, err := s.UpdateConsumer(ctx, in, now)
			stored, gerr := s.GetConsumer(ctx, "agent-1", "main")
			if gerr != nil {
				t.Fatal(gerr)
			}
			if c.want == nil {
				if !errors.Is(err, c.err) {
					t.Errorf("UpdateConsumer = %+v, %v; want %v", got, err, c.err)
				}
				if d := gocmp.Diff(before, stored); d != "" {
					t.Errorf("a refused update changed the consumer (-before +after):\n%s", d)
				}
				return
			}
			if err != nil {
				t.Fatalf("UpdateConsumer: %v", err)
			}
			want := before
			c.want(&want)
			want.Version, want.UpdatedAt = before.Version+1, dlStored(now)
			if d := gocmp.Diff(want, got); d != "" {
				t.Errorf("UpdateConsumer (-want +got):\n%s", d)
			}
			if d := gocmp.Diff(want, stored); d != "" {
				t.Errorf("GetConsumer after the update (-want +got):\n%s", d)
			}
		})
	}
}

// Of updaters racing with one version exactly one wins; the others are
// told of the conflict, and the acknowledgement is the winner's.
func testDlUpdateConcurrent(t *testing.T, store func(i int) delivery.Store) {
	const workers = 8
	ctx := ctxT(t)
	var evs []delivery.StoredEvent
	for i := range workers {
		evs = append(evs, dlEvent("agent-1", fmt.Sprintf("e%d", i), ""))
	}
	dlAppend(t, store(0), evs...)
	c, err := store(0).OpenConsumer(ctx, "agent-1", "main", dlT0)
	if err != nil {
		t.Fatal(err)
	}
	c, err = store(0).RewindConsumer(ctx, "agent-1", "main", 0, dlT0)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			mine := c
			mine.AckedSeq, mine.SessionID = int64(w)+1, fmt.Sprintf("session-%d", w)
			_, errs[w] = store(w).UpdateConsumer(ctx, mine, dlAt(time.Second))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for w, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("workers %d and %d both updated version %d", winner, w, c.Version)
		case err == nil:
			winner = w
		case !errors.Is(err, delivery.ErrConflict):
			t.Errorf("worker %d: %v, want ErrConflict", w, err)
		}
	}
	if winner < 0 {
		t.Fatal("no update won")
	}
	got, err := store(0).GetConsumer(ctx, "agent-1", "main")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != c.Version+1 || got.AckedSeq != int64(winner)+1 || got.SessionID != fmt.Sprintf("session-%d", winner) {
		t.Errorf("the consumer after the race = %+v, want worker %d's at version %d", got, winner, c.Version+1)
	}
}

func testDlRewind(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	for i := range 8 {
		dlAppend(t, s, dlEvent("agent-1", fmt.Sprintf("e%d", i), ""))
	}
	c, err := s.OpenConsumer(ctx, "agent-1", "main", dlT0)
	if err != nil {
		t.Fatal(err)
	}
	c.SessionID, c.SentAt = "session-1", dlAt(time.Second)
	if c, err = s.UpdateConsumer(ctx, c, dlAt(time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		agent string
		cname string
		seq   int64
		err   error
	}{
		{"back", "agent-1", "main", 3, nil},
		{"to the start", "agent-1", "main", 0, nil},
		{"forward to the head", "agent-1", "main", 8, nil},
		{"past the head", "agent-1", "main", 9, delivery.ErrInvalidSeq},
		{"negative", "agent-1", "main", -1, delivery.ErrInvalidSeq},
		{"an unknown consumer", "agent-1", "other", 1, delivery.ErrNotFound},
		{"another agent's", "agent-2", "main", 0, delivery.ErrNotFound},
	} {
		at := dlAt(time.Minute + time.Duration(c.Version)*time.Second)
		got, err := s.RewindConsumer(ctx, tc.agent, tc.cname, tc.seq, at)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: RewindConsumer = %+v, %v; want %v", tc.name, got, err, tc.err)
			}
			if stored, _ := s.GetConsumer(ctx, "agent-1", "main"); !gocmp.Equal(c, stored) {
				t.Errorf("%s: a refused rewind changed the consumer to %+v", tc.name, stored)
			}
			continue
		}
		want := c
		want.AckedSeq, want.SentSeq, want.Version, want.UpdatedAt = tc.seq, tc.seq, c.Version+1, dlStored(at)
		if d := gocmp.Diff(want, got); err != nil || d != "" {
			t.Errorf("%s: RewindConsumer = %v (-want +got):\n%s", tc.name, err, d)
		}
		if stored, err := s.GetConsumer(ctx, "agent-1", "main"); err != nil || !gocmp.Equal(want, stored) {
			t.Errorf("%s: GetConsumer after the rewind = %+v, %v", tc.name, stored, err)
		}
		c = want
	}
}

func dlToken(run, jti string) delivery.TokenRecord {
	return delivery.TokenRecord{RunID: run, JTI: jti, EventID: "event-" + jti, Consumer: "main", Seq: 17,
		IssuedAt: dlAt(time.Second + 5), ExpiresAt: dlAt(5*time.Minute + 9)}
}

func dlStoredToken(r delivery.TokenRecord) delivery.TokenRecord {
	r.IssuedAt, r.ExpiresAt = dlStored(r.IssuedAt), dlStored(r.ExpiresAt)
	return r
}

func testDlTokens(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	checkAllSet(t, "dlToken", dlToken("run-1", "jti-1"))
	newest := func(run string) (delivery.TokenRecord, error) { return s.NewestToken(ctx, run) }
	if _, err := newest("run-1"); !errors.Is(err, delivery.ErrNotFound) {
		t.Errorf("NewestToken before any = %v, want ErrNotFound", err)
	}
	for _, step := range []struct {
		name   string
		tokens []delivery.TokenRecord
		want   map[string]string // run → newest jti
	}{
		{"one call, the later of a run wins", []delivery.TokenRecord{dlToken("run-1", "j1"), dlToken("run-2", "j2"), dlToken("run-1", "j3")},
			map[string]string{"run-1": "j3", "run-2": "j2"}},
		{"a newer token replaces the older", []delivery.TokenRecord{dlToken("run-1", "j4")},
			map[string]string{"run-1": "j4", "run-2": "j2"}},
		{"none changes nothing", nil, map[string]string{"run-1": "j4", "run-2": "j2"}},
	} {
		if err := s.RecordTokens(ctx, step.tokens); err != nil {
			t.Fatalf("%s: RecordTokens: %v", step.name, err)
		}
		for run, jti := range step.want {
			got, err := newest(run)
			if d := gocmp.Diff(dlStoredToken(dlToken(run, jti)), got); err != nil || d != "" {
				t.Errorf("%s: NewestToken(%s) = %v (-want +got):\n%s", step.name, run, err, d)
			}
		}
	}
	// A call with an invalid record stores none of its records.
	for name, bad := range map[string]delivery.TokenRecord{
		"no run": {JTI: "j9"},
		"no id":  {RunID: "run-3"},
	} {
		if err := s.RecordTokens(ctx, []delivery.TokenRecord{dlToken("run-3", "j5"), bad}); err == nil {
			t.Errorf("RecordTokens with %s succeeded", name)
		}
	}
	if _, err := newest("run-3"); !errors.Is(err, delivery.ErrNotFound) {
		t.Errorf("a refused call stored a token: %v", err)
	}
}

func testDlConsumeToken(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	for _, c := range []struct {
		jti string
		err error
	}{
		{"jti-1", nil},
		{"jti-1", delivery.ErrExists},
		{"jti-2", nil},
		{"jti-1", delivery.ErrExists},
		{"JTI-1", nil},
	} {
		if err := s.ConsumeToken(ctx, c.jti, dlAt(time.Hour)); !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
			t.Errorf("ConsumeToken(%s) = %v, want %v", c.jti, err, c.err)
		}
	}
	if err := s.ConsumeToken(ctx, "", dlAt(time.Hour)); err == nil {
		t.Error("ConsumeToken without an id succeeded")
	}
}

func testDlRecordProof(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	long := make([]byte, delivery.MaxProofIDBytes)
	for i := range long {
		long[i] = byte(i)
	}
	for _, c := range []struct {
		name  string
		id    []byte
		now   time.Duration
		until time.Duration
		fresh bool
	}{
		{"first", []byte("proof-1"), 0, time.Minute, true},
		{"again", []byte("proof-1"), time.Second, time.Hour, false},
		{"another", []byte("proof-2"), time.Second, time.Minute, true},
		{"bytes, not text", []byte("PROOF-1"), time.Second, time.Minute, true},
		{"binary", []byte{0, 0xff, 0, 0xfe}, time.Second, time.Minute, true},
		{"binary again", []byte{0, 0xff, 0, 0xfe}, time.Second, time.Minute, false},
		{"longest", long, time.Second, time.Minute, true},
		// A kept id is refused until its time, not at it: then it is
		// recorded again, with the new time.
		{"just before its time", []byte("proof-1"), time.Minute - time.Microsecond, 2 * time.Minute, false},
		{"at its time", []byte("proof-1"), time.Minute, 2 * time.Minute, true},
		{"kept again", []byte("proof-1"), time.Minute + time.Second, 3 * time.Minute, false},
		{"kept to the new time", []byte("proof-1"), 2*time.Minute - time.Microsecond, 3 * time.Minute, false},
		{"after it", []byte("proof-2"), time.Hour, 2 * time.Hour, true},
	} {
		fresh, err := s.RecordProof(ctx, c.id, dlAt(c.now), dlAt(c.until))
		if err != nil || fresh != c.fresh {
			t.Errorf("%s: RecordProof = %v, %v; want %v", c.name, fresh, err, c.fresh)
		}
	}
	for _, bad := range [][]byte{nil, {}, append(long, 0)} {
		if _, err := s.RecordProof(ctx, bad, dlT0, dlAt(time.Minute)); err == nil {
			t.Errorf("RecordProof of a %d-byte id succeeded", len(bad))
		}
	}
}

// Of recorders racing with one proof id exactly one finds it fresh.
func testDlProofConcurrent(t *testing.T, store func(i int) delivery.Store) {
	const workers = 16
	ctx := ctxT(t)
	for round, now := range []time.Duration{0, time.Minute} {
		// The second round races over an id kept until its now.
		fresh := make([]bool, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range workers {
			wg.Go(func() {
				<-start
				fresh[w], errs[w] = store(w).RecordProof(ctx, []byte("proof-1"), dlAt(now), dlAt(now+time.Minute))
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for w := range workers {
			if errs[w] != nil {
				t.Errorf("round %d, worker %d: %v", round, w, errs[w])
			}
			if fresh[w] {
				won++
			}
		}
		if won != 1 {
			t.Errorf("round %d: %d of %d concurrent recorders of one proof id found it fresh, want 1", round, won, workers)
		}
	}
}

func testDlPruneProofs(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	kept := map[string]time.Duration{"p1": time.Minute, "p2": time.Minute, "p3": 2 * time.Minute, "p4": time.Hour}
	for id, until := range kept {
		if fresh, err := s.RecordProof(ctx, []byte(id), dlT0, dlAt(until)); err != nil || !fresh {
			t.Fatalf("RecordProof(%s) = %v, %v", id, fresh, err)
		}
	}
	for _, c := range []struct {
		now   time.Duration
		limit int
		n     int64
	}{
		{time.Minute - time.Microsecond, 10, 0},
		{2 * time.Minute, 2, 2}, // bounded: three are due
		{2 * time.Minute, 2, 1},
		{2 * time.Minute, 2, 0},
	} {
		n, err := s.PruneProofs(ctx, dlAt(c.now), c.limit)
		if err != nil || n != c.n {
			t.Errorf("PruneProofs(%v, %d) = %d, %v; want %d", c.now, c.limit, n, err, c.n)
		}
	}
	// The pruned ones are gone (fresh at a time before they were due:
	// only a missing row is), and the one not due is kept.
	for id, fresh := range map[string]bool{"p1": true, "p2": true, "p3": true, "p4": false} {
		if got, err := s.RecordProof(ctx, []byte(id), dlAt(time.Second), dlAt(time.Hour)); err != nil || got != fresh {
			t.Errorf("%s after pruning: fresh %v, %v; want %v", id, got, err, fresh)
		}
	}
}

func testDlConsumeConcurrent(t *testing.T, store func(i int) delivery.Store) {
	const workers = 8
	ctx := ctxT(t)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			errs[w] = store(w).ConsumeToken(ctx, "jti-1", dlAt(time.Hour))
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for w, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, delivery.ErrExists):
			t.Errorf("worker %d: %v, want ErrExists", w, err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent consumptions of one token succeeded, want 1", won, workers)
	}
}

func testDlPruneUsed(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	kept := map[string]time.Duration{"jti-1": time.Minute, "jti-2": time.Minute, "jti-3": 2 * time.Minute, "jti-4": time.Hour}
	for jti, until := range kept {
		if err := s.ConsumeToken(ctx, jti, dlAt(until)); err != nil {
			t.Fatalf("ConsumeToken(%s) = %v", jti, err)
		}
	}
	for _, c := range []struct {
		now   time.Duration
		limit int
		n     int64
	}{
		{time.Minute - time.Microsecond, 10, 0}, // kept until their time, dropped at it
		{2 * time.Minute, 2, 2},                 // bounded: three are due
		{2 * time.Minute, 2, 1},
		{2 * time.Minute, 2, 0},
		{time.Hour - time.Microsecond, 0, 0}, // no limit: the most
	} {
		n, err := s.PruneUsedTokens(ctx, dlAt(c.now), c.limit)
		if err != nil || n != c.n {
			t.Errorf("PruneUsedTokens(%v, %d) = %d, %v; want %d", c.now, c.limit, n, err, c.n)
		}
	}
	// The pruned ones are gone (only a missing row can be consumed
	// again), and the one not due is kept.
	for jti, gone := range map[string]bool{"jti-1": true, "jti-2": true, "jti-3": true, "jti-4": false} {
		err := s.ConsumeToken(ctx, jti, dlAt(time.Hour))
		if gone && err != nil || !gone && !errors.Is(err, delivery.ErrExists) {
			t.Errorf("ConsumeToken(%s) after pruning = %v; pruned %v", jti, err, gone)
		}
	}
}

// Prunes racing over one set of due tokens drop each once, and keep the
// tokens not due.
func testDlPruneUsedConcurrent(t *testing.T, store func(i int) delivery.Store) {
	const (
		workers = 4
		due     = 60
		live    = 10
	)
	ctx := ctxT(t)
	for i := range due + live {
		until := dlAt(time.Minute)
		if i >= due {
			until = dlAt(time.Hour)
		}
		if err := store(i).ConsumeToken(ctx, fmt.Sprintf("jti-%d", i), until); err != nil {
			t.Fatal(err)
		}
	}
	pruned := make([]int64, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			for {
				n, err := store(w).PruneUsedTokens(ctx, dlAt(time.Minute), 7)
				pruned[w] += n
				if err != nil || n == 0 {
					errs[w] = err
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	var total int64
	for w := range workers {
		if errs[w] != nil {
			t.Errorf("worker %d: %v", w, errs[w])
		}
		total += pruned[w]
	}
	if total != due {
		t.Errorf("concurrent prunes dropped %d used tokens, want %d", total, due)
	}
	for i := range due + live {
		err := store(0).ConsumeToken(ctx, fmt.Sprintf("jti-%d", i), dlAt(time.Hour))
		if i < due && err != nil || i >= due && !errors.Is(err, delivery.ErrExists) {
			t.Errorf("jti-%d after pruning: %v", i, err)
		}
	}
}

func dlAPIToken(id, agent, hash string) delivery.APIToken {
	return delivery.APIToken{ID: id, TenantID: "acme", AgentID: agent, Hash: []byte(hash), DPoPJKT: "jkt-" + id, Name: "laptop",
		CreatedAt: dlAt(time.Second + 1)}
}

func dlStoredAPIToken(t delivery.APIToken) delivery.APIToken {
	t.CreatedAt, t.RevokedAt = dlStored(t.CreatedAt), dlStored(t.RevokedAt)
	return t
}

func testDlAPITokens(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	tok := dlAPIToken("tok-1", "agent-1", "\x00hash\xff-1")
	full := tok
	full.RevokedAt = dlT0
	checkAllSet(t, "dlAPIToken", full)
	if err := s.CreateAPIToken(ctx, tok); err != nil {
		t.Fatalf("CreateAPIToken: %v", err)
	}
	tok.Hash[1] = 'X' // the caller's to change
	tok = dlAPIToken("tok-1", "agent-1", "\x00hash\xff-1")
	got, err := s.FindAPIToken(ctx, tok.Hash)
	if d := gocmp.Diff(dlStoredAPIToken(tok), got); err != nil || d != "" {
		t.Errorf("FindAPIToken = %v (-want +got):\n%s", err, d)
	}
	got.Hash[0] = 'Y'
	if again, err := s.FindAPIToken(ctx, tok.Hash); err != nil || string(again.Hash) != string(tok.Hash) {
		t.Errorf("changing a found token changed the stored one: %q, %v", again.Hash, err)
	}
	bare := delivery.APIToken{ID: "tok-2", TenantID: "acme", AgentID: "agent-1", Hash: []byte("hash-2")}
	if err := s.CreateAPIToken(ctx, bare); err != nil {
		t.Fatal(err)
	}
	if got, err := s.FindAPIToken(ctx, bare.Hash); err != nil || got.CreatedAt.IsZero() || got.DPoPJKT != "" || !got.RevokedAt.IsZero() {
		t.Errorf("FindAPIToken of a bare token = %+v, %v; want a creation time and nothing else added", got, err)
	}

	for _, c := range []struct {
		name string
		tok  delivery.APIToken
		err  error
	}{
		{"the same id", dlAPIToken("tok-1", "agent-1", "other-hash"), delivery.ErrExists},
		{"the same id, another agent", dlAPIToken("tok-1", "agent-2", "other-hash"), delivery.ErrExists},
		{"the same hash", dlAPIToken("tok-3", "agent-1", "hash-2"), delivery.ErrExists},
		{"no hash", dlAPIToken("tok-4", "agent-1", ""), nil},
		{"no id", dlAPIToken("", "agent-1", "hash-4"), nil},
		{"no agent", dlAPIToken("tok-4", "", "hash-4"), nil},
	} {
		err := s.CreateAPIToken(ctx, c.tok)
		if err == nil || (c.err != nil && !errors.Is(err, c.err)) {
			t.Errorf("%s: CreateAPIToken = %v, want a refusal (%v)", c.name, err, c.err)
		}
	}
	for _, hash := range [][]byte{nil, []byte("other-hash"), []byte("hash-4"), []byte("HASH-2")} {
		if _, err := s.FindAPIToken(ctx, hash); !errors.Is(err, delivery.ErrNotFound) {
			t.Errorf("FindAPIToken(%q) = %v, want ErrNotFound", hash, err)
		}
	}

	// Revocation: only the agent's own token, kept at its first time.
	for _, c := range [][2]string{{"agent-2", "tok-1"}, {"agent-1", "tok-9"}, {"", "tok-1"}} {
		if err := s.RevokeAPIToken(ctx, c[0], c[1], dlAt(time.Hour)); !errors.Is(err, delivery.ErrNotFound) {
			t.Errorf("RevokeAPIToken(%s, %s) = %v, want ErrNotFound", c[0], c[1], err)
		}
	}
	if err := s.RevokeAPIToken(ctx, "agent-1", "tok-1", dlAt(time.Hour)); err != nil {
		t.Fatalf("RevokeAPIToken: %v", err)
	}
	if err := s.RevokeAPIToken(ctx, "agent-1", "tok-1", dlAt(2*time.Hour)); err != nil {
		t.Errorf("RevokeAPIToken of a revoked token = %v", err)
	}
	want := dlStoredAPIToken(tok)
	want.RevokedAt = dlStored(dlAt(time.Hour))
	got, err = s.FindAPIToken(ctx, tok.Hash)
	if d := gocmp.Diff(want, got); err != nil || d != "" {
		t.Errorf("FindAPIToken of a revoked token = %v (-want +got):\n%s", err, d)
	}
	if got, err := s.FindAPIToken(ctx, bare.Hash); err != nil || !got.RevokedAt.IsZero() {
		t.Errorf("revoking one token touched another: %+v, %v", got, err)
	}
}

func dlRequest(scope, key string) delivery.IdempotentRequest {
	return delivery.IdempotentRequest{Scope: scope, Key: key, RequestHash: []byte("sha256:" + key), CreatedAt: dlAt(time.Second + 3)}
}

func testDlRequests(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	begin := func(r delivery.IdempotentRequest) (delivery.IdempotentRequest, bool) {
		t.Helper()
		got, fresh, err := s.BeginRequest(ctx, r)
		if err != nil {
			t.Fatalf("BeginRequest(%s, %s): %v", r.Scope, r.Key, err)
		}
		return got, fresh
	}
	r := dlRequest("agent-1", "key-1")
	// What a caller claims is stored in progress, whatever it says.
	claim := r
	claim.Done, claim.Status, claim.Body = true, 200, []byte("stale")
	want := r
	want.CreatedAt = dlStored(r.CreatedAt)
	got, fresh := begin(claim)
	if d := gocmp.Diff(want, got); !fresh || d != "" {
		t.Errorf("BeginRequest of a new key: fresh %v (-want +got):\n%s", fresh, d)
	}
	// A repeat (even with another request under the key) finds the claim.
	other := dlRequest("agent-1", "key-1")
	other.RequestHash, other.CreatedAt = []byte("sha256:other"), dlAt(time.Hour)
	for _, rr := range []delivery.IdempotentRequest{r, other} {
		got, fresh = begin(rr)
		if d := gocmp.Diff(want, got); fresh || d != "" {
			t.Errorf("BeginRequest of a claimed key: fresh %v (-want +got):\n%s", fresh, d)
		}
	}
	// The same key in another scope is another key.
	if _, fresh := begin(dlRequest("agent-2", "key-1")); !fresh {
		t.Error("BeginRequest of a key claimed in another scope was not fresh")
	}

	done := want
	done.Done, done.Status, done.Body = true, 201, []byte(`{"id": "m-1"}`)
	if err := s.FinishRequest(ctx, done); err != nil {
		t.Fatalf("FinishRequest: %v", err)
	}
	done.Body[0] = 'X' // the caller's to change
	done.Body = []byte(`{"id": "m-1"}`)
	got, fresh = begin(r)
	if d := gocmp.Diff(done, got); fresh || d != "" {
		t.Errorf("BeginRequest of an answered key: fresh %v (-want +got):\n%s", fresh, d)
	}
	got.Body[0], got.RequestHash[0] = 'Y', 'Y'
	if again, _ := begin(r); !gocmp.Equal(done, again) {
		t.Errorf("changing a returned request changed the stored one: %+v", again)
	}
	if err := s.FinishRequest(ctx, dlRequest("agent-1", "key-9")); !errors.Is(err, delivery.ErrNotFound) {
		t.Errorf("FinishRequest of an unknown key = %v, want ErrNotFound", err)
	}

	// A forgotten key is claimed afresh; forgetting twice is harmless.
	for range 2 {
		if err := s.ForgetRequest(ctx, "agent-1", "key-1"); err != nil {
			t.Fatalf("ForgetRequest: %v", err)
		}
	}
	if _, fresh := begin(r); !fresh {
		t.Error("BeginRequest after ForgetRequest was not fresh")
	}
	if _, fresh := begin(dlRequest("agent-2", "key-1")); fresh {
		t.Error("forgetting a key forgot it in another scope too")
	}
	for name, bad := range map[string]delivery.IdempotentRequest{
		"no scope": {Key: "k"},
		"no key":   {Scope: "agent-1"},
	} {
		if _, _, err := s.BeginRequest(ctx, bad); err == nil {
			t.Errorf("BeginRequest with %s succeeded", name)
		}
	}
}

func testDlPrune(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	for i, at := range []time.Duration{0, time.Hour, time.Hour, 2 * time.Hour} {
		r := dlRequest("agent-1", fmt.Sprintf("key-%d", i))
		r.CreatedAt = dlAt(at)
		if _, _, err := s.BeginRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		cutoff time.Time
		n      int64
	}{
		{dlAt(-time.Hour), 0},
		{dlAt(time.Hour), 1}, // created before the cutoff, not at it
		{dlAt(time.Hour), 0},
		{dlAt(time.Hour + time.Microsecond), 2},
	} {
		n, err := s.PruneRequests(ctx, c.cutoff)
		if err != nil || n != c.n {
			t.Errorf("PruneRequests(%v) = %d, %v; want %d", c.cutoff, n, err, c.n)
		}
	}
	for i, fresh := range []bool{true, true, true, false} {
		if _, got, err := s.BeginRequest(ctx, dlRequest("agent-1", fmt.Sprintf("key-%d", i))); err != nil || got != fresh {
			t.Errorf("key-%d after pruning: fresh %v, %v; want %v", i, got, err, fresh)
		}
	}
}

// Of requests racing with one new key exactly one claims it; the others
// are answered with its claim.
func testDlBeginConcurrent(t *testing.T, store func(i int) delivery.Store) {
	const workers = 8
	ctx := ctxT(t)
	got := make([]delivery.IdempotentRequest, workers)
	fresh := make([]bool, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			r := dlRequest("agent-1", "key-1")
			r.RequestHash = fmt.Appendf(nil, "hash-%d", w)
			got[w], fresh[w], errs[w] = store(w).BeginRequest(ctx, r)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for w := range workers {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
		if fresh[w] {
			if winner >= 0 {
				t.Errorf("workers %d and %d both claimed the key", winner, w)
			}
			winner = w
		}
	}
	if winner < 0 {
		t.Fatal("no worker claimed the key")
	}
	for w := range workers {
		if string(got[w].RequestHash) != fmt.Sprintf("hash-%d", winner) {
			t.Errorf("worker %d was answered with request hash %q, want the claim of worker %d", w, got[w].RequestHash, winner)
		}
	}
}

func dlMessage(id, agent, thread, client string) delivery.StoredMessage {
	return delivery.StoredMessage{ID: id, TenantID: "acme", AgentID: agent, ThreadID: thread, RunID: "run-1", ClientMsgID: client,
		ReplyTo: "msg-0", Kind: "card", ContentMD: "**Done** — see <https://example.com>",
		Components: json.RawMessage(`[ {"type": "button", "custom_id": "approval.once"} ]`), CreatedAt: dlAt(time.Second + 11)}
}

func dlStoredMessage(m delivery.StoredMessage) delivery.StoredMessage {
	m.CreatedAt = dlStored(m.CreatedAt)
	return m
}

func testDlMessages(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	m := dlMessage("m1", "agent-1", "thread-1", "c1")
	checkAllSet(t, "dlMessage", m)
	got, created, err := s.CreateMessage(ctx, m)
	want := dlStoredMessage(dlMessage("m1", "agent-1", "thread-1", "c1"))
	if d := gocmp.Diff(want, got); err != nil || !created || d != "" {
		t.Errorf("CreateMessage = created %v, %v (-want +got):\n%s", created, err, d)
	}
	if string(got.Components) != string(m.Components) {
		t.Errorf("components %s, want %s byte for byte", got.Components, m.Components)
	}
	m.Components[1], got.Components[1] = 'X', 'Y' // the caller's to change

	// A repeat, whatever else it says, is answered with the stored
	// message.
	repeat := dlMessage("m2", "agent-1", "thread-2", "c1")
	repeat.ContentMD = "another text"
	got, created, err = s.CreateMessage(ctx, repeat)
	if d := gocmp.Diff(want, got); err != nil || created || d != "" {
		t.Errorf("CreateMessage of a repeat = created %v, %v (-want +got):\n%s", created, err, d)
	}
	for _, c := range []struct {
		name    string
		m       delivery.StoredMessage
		created bool
		err     error
	}{
		{"the client id of another agent", dlMessage("m3", "agent-2", "thread-1", "c1"), true, nil},
		{"another client id", dlMessage("m4", "agent-1", "thread-1", "c2"), true, nil},
		{"a taken id", dlMessage("m1", "agent-1", "thread-1", "c3"), false, delivery.ErrExists},
		{"no client id", dlMessage("m5", "agent-1", "thread-1", ""), false, errors.New("refused")},
		{"no thread", dlMessage("m5", "agent-1", "", "c5"), false, errors.New("refused")},
		{"no agent", dlMessage("m5", "", "thread-1", "c5"), false, errors.New("refused")},
		{"components that are not JSON", func() delivery.StoredMessage {
			m := dlMessage("m5", "agent-1", "thread-1", "c5")
			m.Components = json.RawMessage(`[`)
			return m
		}(), false, errors.New("refused")},
	} {
		_, created, err := s.CreateMessage(ctx, c.m)
		switch {
		case c.err == nil && (err != nil || created != c.created):
			t.Errorf("%s: CreateMessage = created %v, %v", c.name, created, err)
		case c.err != nil && err == nil:
			t.Errorf("%s: CreateMessage succeeded, want a refusal", c.name)
		case errors.Is(c.err, delivery.ErrExists) && !errors.Is(err, delivery.ErrExists):
			t.Errorf("%s: CreateMessage = %v, want ErrExists", c.name, err)
		}
	}
	msgs, err := s.ThreadMessages(ctx, "acme", "thread-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff([]string{"m1", "m3", "m4"}, dlMessageIDs(msgs)); d != "" {
		t.Errorf("ThreadMessages (-want +got):\n%s", d)
	}
	if d := gocmp.Diff(want, msgs[0]); d != "" {
		t.Errorf("the message read (-want +got):\n%s", d)
	}
}

func dlMessageIDs(ms []delivery.StoredMessage) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

func testDlThreadMessages(t *testing.T, s delivery.Store) {
	ctx := ctxT(t)
	create := func(m delivery.StoredMessage) {
		t.Helper()
		if _, created, err := s.CreateMessage(ctx, m); err != nil || !created {
			t.Fatalf("CreateMessage(%s) = created %v, %v", m.ID, created, err)
		}
	}
	// Stored order, not creation time: each message says it was created
	// a second before the one stored before it.
	for i := range 5 {
		m := dlMessage(fmt.Sprintf("t%d", i), "agent-1", "thread-1", fmt.Sprintf("c%d", i))
		m.CreatedAt = dlAt(-time.Duration(i) * time.Second)
		create(m)
		if i == 2 {
			create(dlMessage("other-thread", "agent-1", "thread-2", "cx"))
			other := dlMessage("other-tenant", "agent-9", "thread-1", "cy")
			other.TenantID = "globex"
			create(other)
		}
	}
	for _, c := range []struct {
		tenant, thread string
		limit          int
		want           []string
	}{
		{"acme", "thread-1", 0, []string{"t0", "t1", "t2", "t3", "t4"}},
		{"acme", "thread-1", 3, []string{"t2", "t3", "t4"}},
		{"acme", "thread-1", 1, []string{"t4"}},
		{"acme", "thread-1", 100, []string{"t0", "t1", "t2", "t3", "t4"}},
		{"acme", "thread-1", -1, []string{"t0", "t1", "t2", "t3", "t4"}},
		{"acme", "thread-2", 0, []string{"other-thread"}},
		{"globex", "thread-1", 0, []string{"other-tenant"}},
		{"globex", "thread-2", 0, []string{}},
		{"acme", "thread-9", 0, []string{}},
	} {
		got, err := s.ThreadMessages(ctx, c.tenant, c.thread, c.limit)
		if err != nil {
			t.Fatalf("ThreadMessages(%s, %s, %d): %v", c.tenant, c.thread, c.limit, err)
		}
		if d := gocmp.Diff(c.want, dlMessageIDs(got)); d != "" {
			t.Errorf("ThreadMessages(%s, %s, %d) (-want +got):\n%s", c.tenant, c.thread, c.limit, d)
		}
	}
}

// Of senders racing with one client message id exactly one creates the
// message; the others are answered with it.
func testDlMessageConcurrent(t *testing.T, store func(i int) delivery.Store) {
	const workers = 8
	ctx := ctxT(t)
	got := make([]delivery.StoredMessage, workers)
	created := make([]bool, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			got[w], created[w], errs[w] = store(w).CreateMessage(ctx, dlMessage(fmt.Sprintf("m%d", w), "agent-1", "thread-1", "c1"))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for w := range workers {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
		if created[w] {
			if winner >= 0 {
				t.Errorf("workers %d and %d both created the message", winner, w)
			}
			winner = w
		}
	}
	if winner < 0 {
		t.Fatal("no worker created the message")
	}
	for w := range workers {
		if got[w].ID != fmt.Sprintf("m%d", winner) {
			t.Errorf("worker %d was answered with message %s, want m%d", w, got[w].ID, winner)
		}
	}
	msgs, err := store(0).ThreadMessages(ctx, "acme", "thread-1", 0)
	if err != nil || len(msgs) != 1 {
		t.Errorf("the thread holds %v, %v; want the one message", dlMessageIDs(msgs), err)
	}
}
