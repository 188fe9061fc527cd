package platformtest_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/platformtest"
)

// keyFaults are the ways the platform's key set cannot be had: its
// server fails, or cannot be reached.
var keyFaults = []struct {
	name  string
	fault platformtest.Fault
}{
	{"5xx", platformtest.StoredThen502()},
	{"unreachable", platformtest.Disconnect()},
}

// keysOutage is an adapter on the gateway whose deliveries are recorded.
type keysOutage struct {
	t   *testing.T
	ctx context.Context
	f   *platformtest.FakeServer
	h   *platformtest.RecordingHandler
	rec *platformtest.RecordingSource
	cfg adapter.Config
	in  adapter.InboxStore
	out adapter.OutboxStore
}

func newKeysOutage(t *testing.T) *keysOutage {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	f := platformtest.NewFakeServer(t, nil)
	return &keysOutage{t: t, ctx: ctx, f: f, h: &platformtest.RecordingHandler{}, cfg: f.Config("alpha"),
		in: adapter.NewMemoryInbox(nil), out: adapter.NewMemoryOutbox(nil)}
}

// start runs an adapter with handler h on the outage's stores, and
// waits until it is connected; the function it returns stops it.
func (k *keysOutage) start(h adapter.Handler) (stop func()) {
	k.t.Helper()
	clock := platformtest.SpedUpClock{Base: k.f.Clock(), Factor: 100}
	c, err := adapter.NewClient(k.f.URL(), k.f.Credentials(), &adapter.ClientOptions{Clock: clock,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		k.t.Fatal(err)
	}
	disc, err := c.Discover(k.ctx)
	if err != nil {
		k.t.Fatal(err)
	}
	src, err := adapter.NewGatewaySource(k.f.URL(), disc.Gateway, &adapter.GatewayOptions{AgentID: k.f.AgentID(),
		Consumer: k.cfg.Consumer, Credentials: k.f.Credentials(), Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		k.t.Fatal(err)
	}
	k.rec = &platformtest.RecordingSource{Source: src}
	a, err := adapter.New(k.cfg, h, &adapter.Options{Clock: clock, Logger: slog.New(slog.DiscardHandler), Source: k.rec,
		Client: c, Inbox: k.in, Outbox: k.out})
	if err != nil {
		k.t.Fatal(err)
	}
	stop = runAdapter(k.t, a, nil)
	if err := k.f.WaitConsumer(k.ctx, k.cfg.Consumer); err != nil {
		k.t.Fatal(err)
	}
	return stop
}

// trigger starts a run and returns it with its invocation event.
func (k *keysOutage) trigger() (platformtest.Triggered, delivery.Event) {
	k.t.Helper()
	run, err := k.f.Trigger(k.ctx, "keys")
	if err != nil {
		k.t.Fatal(err)
	}
	var ev delivery.Event
	k.wait("the run's invocation delivered", func() bool {
		for _, r := range k.rec.Events() {
			if r.Event.Type == delivery.EventInvocation && runOfPayload(r.Event) == run.RunID {
				ev = r.Event
				return true
			}
		}
		return false
	})
	return run, ev
}

func (k *keysOutage) wait(what string, cond func() bool) {
	k.t.Helper()
	if err := waitCond(k.ctx, cond); err != nil {
		k.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// deliveries is how often the adapter received the event.
func (k *keysOutage) deliveries(id string) int {
	n := 0
	for _, r := range k.rec.Events() {
		if r.Event.ID == id {
			n++
		}
	}
	return n
}

// handled waits until the adapter received the event n times and
// handled everything it received.
func (k *keysOutage) handled(id string, n int) {
	k.t.Helper()
	k.wait("the deliveries handled", func() bool { return k.deliveries(id) >= n && k.rec.Idle() })
}

// redeliver lets the platform's ack timeout pass: what is not
// acknowledged comes again, with a fresh token.
func (k *keysOutage) redeliver() {
	k.f.PassTime(k.ctx, k.f.Timing().AckTimeout+time.Second)
}

// unacknowledged checks that the adapter did not acknowledge the event.
func (k *keysOutage) unacknowledged(ev delivery.Event) {
	k.t.Helper()
	if acks := k.rec.Acks(); len(acks) > 0 && slices.Max(acks) >= ev.Seq {
		k.t.Errorf("acknowledged to %d, past the event %d whose token could not be checked", slices.Max(acks), ev.Seq)
	}
}

// untouched checks that the adapter neither started, refused nor
// prepared the run.
func (k *keysOutage) untouched(run platformtest.Triggered) {
	k.t.Helper()
	for _, op := range []string{"startRun", "finishRun"} {
		if n := k.f.Calls(op); n > 0 {
			k.t.Errorf("%d calls of %s while the keys could not be had", n, op)
		}
	}
	if p := k.h.Prepares(); len(p) > 0 {
		k.t.Errorf("prepared %v while the keys could not be had", p)
	}
	if r, err := k.f.RunState(k.ctx, run.RunID); err != nil || r.State != delivery.RunQueued {
		k.t.Errorf("the run is %s (%v), want queued", r.State, err)
	}
}

// runOfPayload is the run an event's payload names.
func runOfPayload(ev delivery.Event) string {
	var p struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return ""
	}
	return p.RunID
}

// An event whose token cannot be checked, because the key set cannot
// be fetched, is neither acknowledged nor refused: it comes again, and
// once the keys can be had it is accepted and its run started once.
func TestKeysUnavailableAtDelivery(t *testing.T) {
	for _, kf := range keyFaults {
		t.Run(kf.name, func(t *testing.T) {
			k := newKeysOutage(t)
			k.start(k.h)
			k.f.Inject("getJwks", kf.fault, 1_000_000)
			run, ev := k.trigger()
			k.handled(ev.ID, 1)
			k.unacknowledged(ev)
			k.untouched(run)
			k.redeliver()
			k.handled(ev.ID, 2)
			k.unacknowledged(ev)
			k.untouched(run)
			if n := k.f.Fired("getJwks"); n < 2 {
				t.Errorf("%d key fetches for two deliveries: the second delivery was not checked again", n)
			}

			k.f.ClearFaults()
			k.redeliver()
			r, err := k.f.WaitRun(k.ctx, run.RunID, ended)
			if err != nil || r.State != delivery.RunCompleted || r.Starts != 1 {
				t.Fatalf("the run is %s after %d starts (%v); want completed after one", r.State, r.Starts, err)
			}
			if got := k.h.Executes(); !slices.Equal(got, []string{run.RunID}) {
				t.Errorf("executed %v, want the run once", got)
			}
			k.wait("the event acknowledged", func() bool {
				acks := k.rec.Acks()
				return len(acks) > 0 && slices.Max(acks) >= ev.Seq
			})
		})
	}
}

// Keys that do not come back while the run lives (its person cancels
// it): the event stays unsettled, since refusing it would end a run for
// the adapter's own failure, and the run is never prepared or started;
// the cancel, which comes after it, is not acknowledged past it. Once
// the keys can be had the event settles, and the cancelled run is
// neither started nor refused.
func TestKeysNeverBackAtDelivery(t *testing.T) {
	k := newKeysOutage(t)
	k.start(k.h)
	k.f.Inject("getJwks", platformtest.StoredThen502(), 1_000_000)
	run, ev := k.trigger()
	k.handled(ev.ID, 1)
	if err := k.f.Cancel(k.ctx, run.RunID); err != nil {
		t.Fatal(err)
	}
	var cancelEv delivery.Event
	k.wait("the cancel delivered", func() bool {
		for _, r := range k.rec.Events() {
			if r.Event.Type == delivery.EventCancelRequested {
				cancelEv = r.Event
				return k.rec.Idle()
			}
		}
		return false
	})
	k.redeliver()
	k.handled(ev.ID, 2)
	k.unacknowledged(ev) // nor the cancel after it
	if n := k.f.Calls("startRun") + k.f.Calls("finishRun"); n > 0 {
		t.Errorf("%d starts or ends of the run while the keys could not be had", n)
	}
	if p := k.h.Prepares(); len(p) > 0 {
		t.Errorf("prepared %v while the keys could not be had", p)
	}

	k.f.ClearFaults()
	k.redeliver()
	k.wait("the events acknowledged", func() bool {
		acks := k.rec.Acks()
		return len(acks) > 0 && slices.Max(acks) >= cancelEv.Seq
	})
	r, err := k.f.RunState(k.ctx, run.RunID)
	if err != nil || r.State != delivery.RunCancelled || r.Starts != 0 {
		t.Fatalf("the run is %s after %d starts (%v); want cancelled, never started", r.State, r.Starts, err)
	}
	// The adapter that had no entry of the run when the cancel came may
	// prepare it, and try a start the platform refuses.
	if got := k.h.Executes(); len(got) > 0 || k.f.Calls("finishRun") > 0 {
		t.Errorf("executed %v, %d ends of the run", got, k.f.Calls("finishRun"))
	}
}

// accepted runs an adapter that accepts the run's invocation and stops
// before it starts the run (its prepare held), as a process stopped
// then would: the event is acknowledged and its entry stays accepted.
func (k *keysOutage) accepted() (platformtest.Triggered, delivery.Event) {
	k.t.Helper()
	held := &platformtest.RecordingHandler{HoldPrepare: make(chan struct{})}
	stop := k.start(held)
	run, ev := k.trigger()
	if err := held.Wait(k.ctx, func(h *platformtest.RecordingHandler) bool { return len(h.Prepares()) > 0 }); err != nil {
		k.t.Fatal(err)
	}
	k.wait("the event acknowledged", func() bool {
		acks := k.rec.Acks()
		return len(acks) > 0 && slices.Max(acks) >= ev.Seq
	})
	stop()
	return run, ev
}

// An accepted event whose stored token cannot be read again before the
// start, because the key set cannot be fetched (the next process starts
// during the outage), is checked again after a wait until the keys can
// be had; meanwhile the run is neither prepared, started nor refused,
// and then it is started once.
func TestKeysUnavailableAtStart(t *testing.T) {
	for _, kf := range keyFaults {
		t.Run(kf.name, func(t *testing.T) {
			k := newKeysOutage(t)
			run, ev := k.accepted()
			k.f.Inject("getJwks", kf.fault, 1_000_000)
			k.start(k.h)
			// The check is tried again: at least three fetches failed.
			k.wait("the check tried again", func() bool { return k.f.Fired("getJwks") >= 3 })
			k.untouched(run)

			k.f.ClearFaults()
			r, err := k.f.WaitRun(k.ctx, run.RunID, ended)
			if err != nil || r.State != delivery.RunCompleted || r.Starts != 1 {
				t.Fatalf("the run is %s after %d starts (%v); want completed after one", r.State, r.Starts, err)
			}
			if got := k.h.Executes(); !slices.Equal(got, []string{run.RunID}) {
				t.Errorf("executed %v, want the run once", got)
			}
			k.wait("the entry closed", func() bool {
				e, err := k.in.Get(k.ctx, ev.ID)
				return err == nil && e.State == adapter.InboxClosed
			})
		})
	}
}

// Keys that do not come back before the run of an accepted event is
// cancelled: the cancel closes the entry, and the run is never prepared,
// started or refused; the adapter stops as usual.
func TestKeysNeverBackAtStart(t *testing.T) {
	k := newKeysOutage(t)
	run, ev := k.accepted()
	k.f.Inject("getJwks", platformtest.StoredThen502(), 1_000_000)
	stop := k.start(k.h)
	k.wait("the check tried again", func() bool { return k.f.Fired("getJwks") >= 2 })
	if err := k.f.Cancel(k.ctx, run.RunID); err != nil {
		t.Fatal(err)
	}
	k.wait("the entry closed", func() bool {
		e, err := k.in.Get(k.ctx, ev.ID)
		return err == nil && e.State == adapter.InboxClosed
	})
	stop()
	if n := k.f.Calls("startRun") + k.f.Calls("finishRun"); n > 0 {
		t.Errorf("%d starts or ends of the cancelled run", n)
	}
	if p := k.h.Prepares(); len(p) > 0 {
		t.Errorf("prepared %v while the keys could not be had", p)
	}
	if r, err := k.f.RunState(k.ctx, run.RunID); err != nil || r.State != delivery.RunCancelled {
		t.Errorf("the run is %s (%v), want cancelled", r.State, err)
	}
}
