package bench_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/internal/bench"
)

// TestDeliveryStamps times what the tracked consumer acknowledges, and
// only that: events of another agent, acknowledgements of another
// consumer and events stored before Track are not counted.
func TestDeliveryStamps(t *testing.T) {
	ctx := t.Context()
	inner := delivery.NewMemStore()
	st := bench.NewDeliveryStamps(inner)
	appendTo := func(s delivery.Store, agent string, n int) {
		t.Helper()
		evs := make([]delivery.StoredEvent, n)
		for i := range evs {
			evs[i] = delivery.StoredEvent{AgentID: agent, TenantID: "t", ID: agent + "-" + strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 10),
				Type: delivery.EventInvocation, Payload: []byte(`{}`)}
		}
		if _, err := s.AppendEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	appendN := func(agent string, n int) { t.Helper(); appendTo(st, agent, n) }
	ack := func(agent, name string, seq int64) {
		t.Helper()
		c, err := st.OpenConsumer(ctx, agent, name, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		c.AckedSeq, c.SentSeq = seq, max(seq, c.SentSeq)
		if _, err := st.UpdateConsumer(ctx, c, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"main", "other"} {
		if _, err := st.OpenConsumer(ctx, "a", name, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	appendN("a", 2) // before Track: acknowledged as far as the stamps go
	ack("a", "main", 2)
	if err := st.Track(ctx, "a", "main"); err != nil {
		t.Fatal(err)
	}
	appendN("a", 5)
	appendN("b", 3)
	ack("a", "other", 7)
	if n, _ := st.Acked(); n != 0 {
		t.Fatalf("%d acknowledged after another consumer's ack, want 0", n)
	}
	ack("a", "main", 4)
	h, unstamped := st.Take()
	if n, _ := st.Acked(); n != 2 || h.Count() != 2 || unstamped != 0 {
		t.Fatalf("after acking 2: %d acknowledged, %d timed, %d unstamped", n, h.Count(), unstamped)
	}
	ack("a", "main", 7)
	h, unstamped = st.Take()
	if n, _ := st.Acked(); n != 5 || h.Count() != 3 || unstamped != 0 {
		t.Fatalf("after acking all: %d acknowledged, %d timed since the last take, %d unstamped", n, h.Count(), unstamped)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := st.WaitAcked(wctx, 5); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- st.WaitAcked(wctx, 6) }()
	appendN("a", 1)
	ack("a", "main", 8)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// An acknowledgement of events whose append the stamps never saw
	// counts them, untimed; stamping them later changes nothing.
	appendTo(inner, "a", 2)
	ack("a", "main", 10)
	appendN("a", 1)
	ack("a", "main", 11)
	h, unstamped = st.Take()
	if n, _ := st.Acked(); n != 9 || h.Count() != 2 || unstamped != 2 {
		t.Fatalf("with 2 appends unseen: %d acknowledged, %d timed, %d unstamped; want 9, 2, 2", n, h.Count(), unstamped)
	}
}
