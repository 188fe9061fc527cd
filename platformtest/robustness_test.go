package platformtest_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/platformtest"
)

// runWith runs an adapter of consumer with h, its options' clock sped
// up on the platform's, until the test ends. It returns a function that
// stops it and waits for Run to return.
func runWith(t *testing.T, f *platformtest.FakeServer, cfg adapter.Config, h adapter.Handler, opts adapter.Options) (stop func()) {
	t.Helper()
	if cfg.StateDir == "" && (opts.Inbox == nil || opts.Outbox == nil) {
		cfg.StateDir = t.TempDir()
	}
	opts.Clock = platformtest.SpedUpClock{Base: f.Clock(), Factor: 100}
	opts.Logger = slog.New(slog.DiscardHandler)
	a, err := adapter.New(cfg, h, &opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = a.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			_ = a.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

func ended(r delivery.Run) bool { return r.State.Ended() }

// A page of events whose answer is lost (served, then 502) was sent:
// the platform sends it again only after the ack timeout. A later page
// must not acknowledge it meanwhile (acknowledgements are cumulative):
// the events of the lost page are waited for, and their run completes.
func TestLostPollPageIsNotAcknowledged(t *testing.T) {
	f := platformtest.NewFakeServer(t, nil)
	cfg := f.Config("alpha")
	cfg.Polling = true
	set := adapter.DefaultSettings()
	set.HTTPTimeout = time.Second // polls answered at once, no long poll
	cfg.Settings = &set
	runWith(t, f, cfg, &platformtest.RecordingHandler{}, adapter.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitConsumer(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	polled := func(after int) (n int) {
		for _, r := range f.Requests()[after:] {
			if r.Operation == "pollAgentEvents" && r.Status != 0 {
				n++
			}
		}
		return n
	}

	// Every poll's answer is lost while the run's event is delivered.
	f.Inject("pollAgentEvents", platformtest.StoredThen502(), 1_000_000)
	two, err := f.Trigger(ctx, "lost")
	if err != nil {
		t.Fatal(err)
	}
	var lostSeq int64
	if err := waitCond(ctx, func() bool {
		cs, err := f.ConsumerState(ctx, "alpha")
		lostSeq = cs.HeadSeq
		return err == nil && lostSeq > 0
	}); err != nil {
		t.Fatal(err)
	}
	// A poll that came after the event was stored took it, or one before.
	lost := len(f.Requests())
	if err := waitCond(ctx, func() bool { return polled(lost) > 0 }); err != nil {
		t.Fatal(err)
	}
	f.ClearFaults()

	three, err := f.Trigger(ctx, "after")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WaitRun(ctx, three.RunID, ended); err != nil {
		t.Fatal(err)
	}
	// Two polls after it: the first one's page was acknowledged, as far
	// as the adapter acknowledges, before the second was sent.
	after := len(f.Requests())
	if err := waitCond(ctx, func() bool { return polled(after) >= 2 }); err != nil {
		t.Fatal(err)
	}
	if cs, err := f.ConsumerState(ctx, "alpha"); err != nil || cs.AckedSeq >= lostSeq {
		t.Fatalf("the consumer is acknowledged to %d (%v); the lost event %d never arrived", cs.AckedSeq, err, lostSeq)
	}
	f.PassTime(ctx, f.Timing().AckTimeout+time.Second)
	run, err := f.WaitRun(ctx, two.RunID, ended)
	if err != nil || run.State != delivery.RunCompleted {
		t.Fatalf("the run of the lost page is %s (%v)", run.State, err)
	}
	err = waitCond(ctx, func() bool {
		cs, err := f.ConsumerState(ctx, "alpha")
		return err == nil && cs.AckedSeq == cs.HeadSeq
	})
	if err != nil {
		t.Fatal("the consumer did not reach the head")
	}
}
