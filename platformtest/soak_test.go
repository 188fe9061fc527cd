package platformtest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/platformtest"
)

// The soak's sizes: at least this many runs and this many faults that
// went off, whichever takes longer.
const (
	soakMinRuns   = 220
	soakMinFaults = 1000
	// soakInFlight bounds the runs not ended yet.
	soakInFlight = 12
	// soakJumpEvery is how many triggers go between two clock jumps.
	soakJumpEvery = 15
	// soakSpeedUp is how much faster than real time the adapters sleep.
	soakSpeedUp = 100
	// soakQuiet is how long, in real time, the soak lets the platform and
	// the adapters be without any progress before it lets platform time
	// pass (an event whose delivery a fault lost comes again only after
	// the ack timeout). It decides when time passes, never the outcome.
	soakQuiet = 1500 * time.Millisecond
)

// soakREST are the operations an adapter calls while it works runs;
// soakFrames the gateway frames of both sides.
var (
	soakREST = []string{"pollAgentEvents", "ackAgentEvents", "sendHeartbeat", "getJwks", "getRun", "getRunContext",
		"patchRun", "startRun", "resumeRun", "renewInvocationToken", "awaitRunInput", "finishRun", "createMessage",
		platformtest.GatewayUpgrade}
	soakFrames = []string{delivery.OpHello, delivery.OpIdentify, delivery.OpReady, delivery.OpResume, delivery.OpResumed,
		delivery.OpEvent, delivery.OpAck, delivery.OpHeartbeat, delivery.OpHeartbeatAck, delivery.OpCatchupComplete}
)

// soakMode is what the handler does with a run.
type soakMode int

const (
	soakPlain  soakMode = iota // reply, complete
	soakAsk                    // reply, wait for input; the answer resumes it: reply, complete
	soakCancel                 // reply, work until the person cancels
)

// soakHandler is the agent of the soak: it counts what it executes and
// keeps the client message ids of its replies.
type soakHandler struct {
	mu       sync.Mutex
	modes    map[string]soakMode
	executes map[string]int      // run id + "#" + turn
	replies  map[string][]string // run id -> client_msg_ids
	blocked  map[string]bool     // cancel-mode executions waiting now
}

func newSoakHandler() *soakHandler {
	return &soakHandler{modes: map[string]soakMode{}, executes: map[string]int{}, replies: map[string][]string{},
		blocked: map[string]bool{}}
}

func (h *soakHandler) setMode(runID string, m soakMode) {
	h.mu.Lock()
	h.modes[runID] = m
	h.mu.Unlock()
}

func (h *soakHandler) Prepare(context.Context, *adapter.Invocation) error { return nil }

func (h *soakHandler) Execute(ctx context.Context, run *adapter.Run) error {
	turn := "1"
	if run.Invocation.Type != delivery.EventInvocation {
		turn = "2"
	}
	h.mu.Lock()
	h.executes[run.ID+"#"+turn]++
	mode := h.modes[run.ID]
	h.mu.Unlock()

	_ = run.Patch().SetStatusLine("turn " + turn)
	_ = run.Patch().SetMetric("turn", float64(len(turn)))
	if _, err := run.LoadContext(ctx); err != nil && ctx.Err() != nil {
		return err
	}
	id, err := run.Reply(ctx, "reply to turn "+turn)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.replies[run.ID] = append(h.replies[run.ID], id)
	h.mu.Unlock()
	switch {
	case mode == soakAsk && turn == "1":
		// An agent asks again when the platform could not be reached for
		// a while: the question is the same.
		for {
			err := run.AwaitInput(ctx, "which one?")
			if err == nil || !adapter.IsTransient(err) || ctx.Err() != nil {
				return err
			}
		}
	case mode == soakCancel:
		h.mu.Lock()
		h.blocked[run.ID] = true
		h.mu.Unlock()
		<-run.Done()
		h.mu.Lock()
		delete(h.blocked, run.ID)
		h.mu.Unlock()
	}
	return nil
}

func (h *soakHandler) executed(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.executes[key]
}

func (h *soakHandler) repliesOf(runID string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.replies[runID])
}

// warnCounter counts an adapter's warnings by message, and keeps the
// first errors of each, for the log. (Errors never carry secrets.)
type warnCounter struct {
	mu   sync.Mutex
	n    map[string]int
	errs map[string][]string
}

func (w *warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnCounter) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n, w.errs = map[string]int{}, map[string][]string{}
	}
	w.n[r.Message]++
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" && len(w.errs[r.Message]) < 3 {
			w.errs[r.Message] = append(w.errs[r.Message], a.Value.String())
		}
		return true
	})
	return nil
}
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCounter) WithGroup(string) slog.Handler      { return w }

func (w *warnCounter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var lines []string
	for m, n := range w.n {
		line := fmt.Sprintf("%6d %s", n, m)
		for _, e := range w.errs[m] {
			line += "\n         e.g. " + e
		}
		lines = append(lines, line)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// soakAdapter runs an adapter of consumer on clock until the test ends.
// Its inbox is opened here, in its state directory, to be read when the
// soak fails.
func soakAdapter(t *testing.T, f *platformtest.FakeServer, consumer string, polling bool, h adapter.Handler,
	clock adapter.Clock, warns *warnCounter) (*adapter.Adapter, adapter.InboxStore) {
	t.Helper()
	cfg := f.Config(consumer)
	cfg.StateDir = t.TempDir()
	in, err := adapter.OpenSQLiteInbox(filepath.Join(cfg.StateDir, "inbox.sqlite3"), &adapter.InboxOptions{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Polling = polling
	set := adapter.DefaultSettings()
	if polling {
		// A short attempt: a try answered late is given up and sent
		// again while the first is still being served.
		set.HTTPTimeout = 2 * time.Second
	}
	cfg.Settings = &set
	a, err := adapter.New(cfg, h, &adapter.Options{Clock: clock, Logger: slog.New(warns), Inbox: in,
		Rand: rand.New(rand.NewPCG(uint64(len(consumer)), 24))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(ctx)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the adapter of %s ended with %v", consumer, err)
		}
		_ = a.Close()
		_ = in.Close()
	})
	return a, in
}

// faultPlan injects the soak's faults: one pending per target at most,
// the four kinds in turn.
type faultPlan struct {
	f    *platformtest.FakeServer
	rnd  *rand.Rand
	next map[string]int
}

func (p *faultPlan) topUp() {
	for _, target := range soakREST {
		p.add(target, true)
	}
	for _, op := range soakFrames {
		p.add(platformtest.GatewayFrame(op), false)
	}
}

func (p *faultPlan) add(target string, rest bool) {
	if p.f.Pending(target) > 0 {
		return
	}
	i := p.next[target]
	p.next[target]++
	var fault platformtest.Fault
	switch i % 4 {
	case 0:
		fault = platformtest.StoredThen502()
	case 1:
		d := time.Duration(1+p.rnd.IntN(15)) * time.Millisecond
		if rest && i%16 == 5 {
			// Longer than the polling adapter's attempt.
			d = 2500 * time.Millisecond
		}
		fault = platformtest.StoredLate(d)
	case 2:
		fault = platformtest.RateLimited(time.Second)
	default:
		fault = platformtest.Disconnect()
	}
	p.f.Inject(target, fault, 1)
}

// TestSoakFaults drives runs through two adapters of one agent, one
// polling and one on the gateway (so each run is delivered to both and
// started by one), while faults of all four kinds go off on every
// operation they use and on every gateway frame, and the platform's
// clock jumps past the ack timeout and the token lifetime. Every run must
// end, none may be started or executed twice, and every reply must be on
// the platform once.
func TestSoakFaults(t *testing.T) {
	// The clock jumps stand for time passing for tokens and
	// acknowledgements while the adapters live; the stale window is
	// longer than the longest, so that a jump ends no run stale (one
	// that lands before the next heartbeat would).
	f := platformtest.NewFakeServer(t, &platformtest.Options{Timing: platformtest.Timing{RunStaleAfter: time.Hour}})
	clock := platformtest.SpedUpClock{Base: f.Clock(), Factor: soakSpeedUp}
	h := newSoakHandler()
	pollWarns, gwWarns := &warnCounter{}, &warnCounter{}
	consumers := []string{"soak-poll", "soak-gw"}
	pollA, pollIn := soakAdapter(t, f, consumers[0], true, h, clock, pollWarns)
	gwA, gwIn := soakAdapter(t, f, consumers[1], false, h, clock, gwWarns)
	adapters, inboxes := []*adapter.Adapter{pollA, gwA}, []adapter.InboxStore{pollIn, gwIn}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	for _, c := range consumers {
		if err := f.WaitConsumer(ctx, c); err != nil {
			t.Fatalf("consumer %s: %v", c, err)
		}
	}
	tm := f.Timing()
	jumps := []time.Duration{tm.AckTimeout + time.Second, tm.TokenTTL + tm.ClockLeeway + time.Second}
	var jumped, quietJumps int
	jump := func(d time.Duration) {
		f.PassTime(ctx, d)
		jumped++
	}

	var (
		mu    sync.Mutex
		runs  []platformtest.Triggered
		final = map[string]delivery.Run{}
		errs  []error
	)
	ended := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(final)
	}
	// progress is what moves while the soak is not stuck.
	progress := func() int64 {
		n := int64(ended())
		for _, c := range consumers {
			if cs, err := f.ConsumerState(ctx, c); err == nil {
				n += cs.AckedSeq
			}
		}
		return n
	}
	fired := func() int {
		n := 0
		for _, k := range f.FiredByKind() {
			n += k
		}
		return n
	}
	// dump tells what is not done, when the soak fails.
	dump := func() {
		mu.Lock()
		defer mu.Unlock()
		t.Logf("soak: %d runs triggered, %d ended, %d faults fired, %d jumps, %d requests", len(runs), len(final), fired(), jumped, len(f.Requests()))
		for _, tr := range runs {
			h.mu.Lock()
			blocked := h.blocked[tr.RunID]
			h.mu.Unlock()
			if _, ok := final[tr.RunID]; ok && !blocked {
				continue
			}
			r, err := f.RunState(context.Background(), tr.RunID)
			t.Logf("soak: run %s is %s (%s), %d starts, executed %d+%d times (%v)", tr.RunID, r.State, r.StateReason, r.Starts,
				h.executed(tr.RunID+"#1"), h.executed(tr.RunID+"#2"), err)
			if rec, err := f.NewestToken(context.Background(), tr.RunID); err == nil {
				t.Logf("soak:   newest token %s, delivered to %s with %s at %s", rec.JTI, rec.Consumer, rec.EventID, rec.IssuedAt.Format(time.TimeOnly))
			}
			for i, in := range inboxes {
				entries, err := in.ByRun(context.Background(), tr.RunID)
				for _, e := range entries {
					t.Logf("soak:   %s: %s token %s of %s closed %q (%v)", consumers[i], e, e.Token.JTI, e.Token.IssuedAt.Format(time.TimeOnly), e.CloseReason, err)
				}
			}
			for _, req := range f.Requests() {
				if strings.Contains(req.Path, tr.RunID) {
					t.Logf("soak:   %s %d token %s", req.Operation, req.Status, req.Token)
				}
			}
		}
		for _, c := range consumers {
			cs, err := f.ConsumerState(context.Background(), c)
			t.Logf("soak: consumer %s: %+v (%v)", c, cs, err)
		}
		t.Logf("soak: warnings of the polling adapter:\n%s", pollWarns)
		t.Logf("soak: warnings of the gateway adapter:\n%s", gwWarns)
		buf := make([]byte, 64<<20)
		buf = buf[:runtime.Stack(buf, true)]
		path := filepath.Join(os.TempDir(), fmt.Sprintf("soak-stacks-%d.txt", os.Getpid()))
		if os.WriteFile(path, buf, 0o600) == nil {
			t.Logf("soak: the goroutines are in %s", path)
		}
	}
	// await waits until cond holds, letting platform time pass whenever
	// nothing moved for soakQuiet.
	await := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			before := progress()
			wctx, wcancel := context.WithTimeout(ctx, soakQuiet)
			_ = waitCond(wctx, func() bool { return cond() || progress() != before })
			wcancel()
			if ctx.Err() != nil {
				dump()
				t.Fatalf("%s: %v", what, ctx.Err())
			}
			if !cond() && progress() == before {
				quietJumps++
				jump(tm.AckTimeout + time.Second)
			}
		}
	}

	// follow sees a run to its end: answers it when it waits for input,
	// cancels it once it runs when that is its mode.
	follow := func(tr platformtest.Triggered, mode soakMode) {
		for {
			r, err := f.WaitRun(ctx, tr.RunID, func(r delivery.Run) bool {
				return r.State.Ended() || r.State == delivery.RunWaiting || mode == soakCancel && r.State == delivery.RunRunning
			})
			if err == nil && r.State == delivery.RunWaiting {
				err = f.Reply(ctx, tr.RunID, "the second one")
			} else if err == nil && !r.State.Ended() {
				err = f.Cancel(ctx, tr.RunID)
				mode = soakPlain
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("run %s: %w", tr.RunID, err))
				mu.Unlock()
				return
			}
			if r.State.Ended() {
				mu.Lock()
				final[tr.RunID] = r
				mu.Unlock()
				return
			}
			mode = soakPlain
		}
	}

	plan := &faultPlan{f: f, rnd: rand.New(rand.NewPCG(7, 24)), next: map[string]int{}}
	var wg sync.WaitGroup
	for i := 0; i < soakMinRuns || fired() < soakMinFaults; i++ {
		if i > 4*soakMinRuns {
			t.Fatalf("only %d faults went off in %d runs", fired(), i)
		}
		await("a free slot", func() bool { return i-ended() < soakInFlight })
		plan.topUp()
		if i > 0 && i%soakJumpEvery == 0 {
			jump(jumps[(i/soakJumpEvery)%2])
		}
		mode := soakPlain
		switch {
		case i%20 == 7:
			mode = soakCancel
		case i%10 == 3:
			mode = soakAsk
		}
		tr, err := f.Trigger(ctx, fmt.Sprintf("run %d", i))
		if err != nil {
			t.Fatal(err)
		}
		h.setMode(tr.RunID, mode)
		mu.Lock()
		runs = append(runs, tr)
		mu.Unlock()
		wg.Go(func() { follow(tr, mode) })
	}
	firedByKind := f.FiredByKind()
	firedTotal := fired()
	f.ClearFaults()
	await("every run ended", func() bool { return ended() == len(runs) })
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}

	// Every reply reaches the platform once; every event is acknowledged.
	missing := func() int {
		n := 0
		for _, tr := range runs {
			msgs, err := f.Messages(ctx, tr.ThreadID)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range h.repliesOf(tr.RunID) {
				if !slices.ContainsFunc(msgs, func(m delivery.StoredMessage) bool { return m.ClientMsgID == id }) {
					n++
				}
			}
		}
		return n
	}
	await("every reply sent", func() bool { return missing() == 0 })
	await("every event acknowledged", func() bool {
		for _, c := range consumers {
			cs, err := f.ConsumerState(ctx, c)
			if err != nil || cs.AckedSeq < cs.HeadSeq {
				return false
			}
		}
		return true
	})

	states := map[string]int{}
	var failedRuns []string
	replies := 0
	for _, tr := range runs {
		r := final[tr.RunID]
		states[string(r.State)+" ("+r.StateReason+")"]++
		if r.State == delivery.RunFailed {
			failedRuns = append(failedRuns, tr.RunID+": "+r.StateReason)
		}
		if r.Starts > 1 {
			t.Errorf("run %s was started %d times", tr.RunID, r.Starts)
		}
		for _, turn := range []string{"1", "2"} {
			if n := h.executed(tr.RunID + "#" + turn); n > 1 {
				t.Errorf("run %s: turn %s was executed %d times", tr.RunID, turn, n)
			}
		}
		if r.State == delivery.RunCompleted && h.executed(tr.RunID+"#1") != 1 {
			t.Errorf("run %s completed without its execution", tr.RunID)
		}
		msgs, err := f.Messages(ctx, tr.ThreadID)
		if err != nil {
			t.Fatal(err)
		}
		sent := h.repliesOf(tr.RunID)
		replies += len(sent)
		var got []string
		for _, m := range msgs {
			got = append(got, m.ClientMsgID)
		}
		slices.Sort(got)
		slices.Sort(sent)
		if !slices.Equal(got, sent) {
			t.Errorf("run %s: the platform has the messages %v; the handler sent %v", tr.RunID, got, sent)
		}
	}
	for i, a := range adapters {
		failed, err := a.Outbox().Failed(ctx)
		if err != nil || len(failed) > 0 {
			t.Errorf("the outbox of %s holds %d failed entries (%v)", consumers[i], len(failed), err)
		}
	}
	// A cancelled run's execution heard of its cancel.
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	err := waitCond(wctx, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.blocked) == 0
	})
	wcancel()
	if err != nil {
		h.mu.Lock()
		t.Errorf("executions of cancelled runs never heard of their cancel: %v", h.blocked)
		h.mu.Unlock()
		dump()
	}

	t.Logf("soak: %d runs, %d replies, %d faults fired (%v), %d clock jumps (%d after quiet), %d requests",
		len(runs), replies, firedTotal, firedByKind, jumped, quietJumps, len(f.Requests()))
	var perTarget []string
	for _, target := range soakREST {
		perTarget = append(perTarget, fmt.Sprintf("%s=%d", target, f.Fired(target)))
	}
	for _, op := range soakFrames {
		perTarget = append(perTarget, fmt.Sprintf("%s=%d", platformtest.GatewayFrame(op), f.Fired(platformtest.GatewayFrame(op))))
	}
	t.Logf("soak: faults by target: %s", strings.Join(perTarget, " "))
	t.Logf("soak: run ends: %v", states)
	if len(failedRuns) > 0 {
		t.Logf("soak: failed runs: %v", failedRuns)
	}
	t.Logf("soak: warnings of the polling adapter:\n%s", pollWarns)
	t.Logf("soak: warnings of the gateway adapter:\n%s", gwWarns)
	if firedTotal < soakMinFaults {
		t.Errorf("%d faults went off; want at least %d", firedTotal, soakMinFaults)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("the soak ran out of time")
	}
}
