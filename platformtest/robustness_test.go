package platformtest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	return runAdapter(t, a, a.Close)
}

// runAdapter runs a until the test ends or stop is called; stop returns
// once Run returned, after calling then when it is not nil.
func runAdapter(t *testing.T, a *adapter.Adapter, then func() error) (stop func()) {
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
			if then != nil {
				_ = then()
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func ended(r delivery.Run) bool { return r.State.Ended() }

// triggerPrepared triggers a run and waits until h prepared it (the
// first run h prepares) and consumer alpha acknowledged it.
func triggerPrepared(ctx context.Context, t *testing.T, f *platformtest.FakeServer, h *platformtest.RecordingHandler, text string) platformtest.Triggered {
	t.Helper()
	tr, err := f.Trigger(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(ctx, func(h *platformtest.RecordingHandler) bool { return len(h.Prepares()) == 1 }); err != nil {
		t.Fatal(err)
	}
	err = waitCond(ctx, func() bool {
		cs, err := f.ConsumerState(ctx, "alpha")
		return err == nil && cs.AckedSeq == cs.HeadSeq
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

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
	// Once a poll without a fault was answered, none with one is under
	// way (the source polls one at a time).
	cleared := len(f.Requests())
	err = waitCond(ctx, func() bool {
		for _, r := range f.Requests()[cleared:] {
			if r.Operation == "pollAgentEvents" && r.Status == http.StatusOK {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}

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

// holdingInbox holds the move of a run's entry to started until release,
// and, when closing is set, the entry's close by a cancel until
// closeRelease; it tells of every close.
type holdingInbox struct {
	adapter.InboxStore
	starting     chan struct{} // closed when the move to started waits
	release      chan struct{}
	closing      chan struct{} // closed when the close by a cancel waits; nil: not held
	closeRelease chan struct{}
	once, once2  sync.Once
	closes       chan string // reasons of moves to closed
}

func (in *holdingInbox) SetState(ctx context.Context, eventID string, from, to adapter.InboxState, reason string) error {
	switch {
	case to == adapter.InboxStarted:
		in.once.Do(func() { close(in.starting) })
		<-in.release
	case to == adapter.InboxClosed && in.closing != nil && strings.HasPrefix(reason, "cancelled:"):
		in.once2.Do(func() { close(in.closing) })
		<-in.closeRelease
	}
	err := in.InboxStore.SetState(ctx, eventID, from, to, reason)
	if to == adapter.InboxClosed {
		in.closes <- reason
	}
	return err
}

// A cancel that comes after the platform started the run and before
// the adapter executes it keeps the execution from happening (the run
// is cancelled on the platform already): a cancel done before the
// execution would begin, and one still under way when it would.
func TestCancelBetweenStartAndExecute(t *testing.T) {
	for _, underway := range []bool{false, true} {
		name := "done"
		if underway {
			name = "under way"
		}
		t.Run(name, func(t *testing.T) {
			f := platformtest.NewFakeServer(t, nil)
			in := &holdingInbox{InboxStore: adapter.NewMemoryInbox(nil), starting: make(chan struct{}), release: make(chan struct{}),
				closes: make(chan string, 16)}
			if underway {
				in.closing, in.closeRelease = make(chan struct{}), make(chan struct{})
			}
			executed := make(chan struct{}, 1)
			h := &platformtest.RecordingHandler{Work: func(ctx context.Context, run *adapter.Run) error {
				executed <- struct{}{}
				<-run.Done()
				return nil
			}}
			stop := runWith(t, f, f.Config("alpha"), h, adapter.Options{Inbox: in, Outbox: adapter.NewMemoryOutbox(nil)})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := f.WaitConsumer(ctx, "alpha"); err != nil {
				t.Fatal(err)
			}
			tr, err := f.Trigger(ctx, "cancel me")
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-in.starting:
			case <-ctx.Done():
				t.Fatal("the run was not started")
			}
			if run, err := f.RunState(ctx, tr.RunID); err != nil || run.State != delivery.RunRunning {
				t.Fatalf("the run is %s (%v); want running", run.State, err)
			}
			if err := f.Cancel(ctx, tr.RunID); err != nil {
				t.Fatal(err)
			}
			if underway {
				// The adapter took the cancel and is closing the run's entry
				// while the start goes on.
				select {
				case <-in.closing:
				case <-ctx.Done():
					t.Fatal("the adapter did not take the cancel")
				}
				close(in.release)
				select {
				case <-executed:
				case reason := <-in.closes:
					if reason != "cancelled before its execution" {
						t.Fatalf("the entry was closed as %q", reason)
					}
				case <-ctx.Done():
					t.Fatal("the run was neither executed nor closed")
				}
				close(in.closeRelease)
			} else {
				select {
				case reason := <-in.closes:
					if !strings.HasPrefix(reason, "cancelled") {
						t.Fatalf("the entry was closed as %q", reason)
					}
				case <-ctx.Done():
					t.Fatal("the adapter did not take the cancel")
				}
				close(in.release)
			}
			stop()
			if n := len(h.Executes()); n != 0 {
				t.Fatalf("a run cancelled before its execution was executed %d times", n)
			}
		})
	}
}

// startHook passes time on the platform before the first start that
// follows a renewal, as a clock that jumped between the two would.
type startHook struct {
	f       *platformtest.FakeServer
	renewed atomic.Bool
	jumps   atomic.Int32
}

func (s *startHook) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/start") && s.renewed.Load() && s.jumps.Add(1) == 1 {
		tm := s.f.Timing()
		s.f.PassTime(r.Context(), tm.TokenTTL+tm.ClockLeeway+time.Second)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && strings.HasSuffix(r.URL.Path, "/token") && resp.StatusCode == http.StatusOK {
		s.renewed.Store(true)
	}
	return resp, err
}

// A token renewed because it expired may expire again before the start
// (the clock jumped): the start refused as expired renews once more and
// starts, rather than leaving the run queued for good.
func TestTokenExpiresAgainAfterRenewal(t *testing.T) {
	f := platformtest.NewFakeServer(t, nil)
	hook := &startHook{f: f}
	h := &platformtest.RecordingHandler{HoldPrepare: make(chan struct{})}
	runWith(t, f, f.Config("alpha"), h, adapter.Options{HTTPClient: &http.Client{Transport: hook}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitConsumer(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	tr := triggerPrepared(ctx, t, f, h, "slow")
	tm := f.Timing()
	f.PassTime(ctx, tm.TokenTTL+tm.ClockLeeway+time.Second)
	close(h.HoldPrepare)
	run, err := f.WaitRun(ctx, tr.RunID, ended)
	if err != nil || run.State != delivery.RunCompleted || len(h.Executes()) != 1 || hook.jumps.Load() < 1 {
		t.Fatalf("the run is %s after %d executions and %d jumps (%v)", run.State, len(h.Executes()), hook.jumps.Load(), err)
	}
}

// closingInbox tells of every close of an entry.
type closingInbox struct {
	adapter.InboxStore
	closes chan string
}

func (in *closingInbox) SetState(ctx context.Context, eventID string, from, to adapter.InboxState, reason string) error {
	err := in.InboxStore.SetState(ctx, eventID, from, to, reason)
	if to == adapter.InboxClosed && err == nil {
		select {
		case in.closes <- reason:
		default:
		}
	}
	return err
}

// Two adapters of one agent both receive a follow-up; the one whose
// delivery came after the other resumed the run is answered 409
// conflict (run_not_waiting): it closes its entry rather than trying
// again for as long as the run runs.
func TestResumedElsewhereClosesTheEntry(t *testing.T) {
	f := platformtest.NewFakeServer(t, nil)
	hold := make(chan struct{})
	turn2 := make(chan struct{}, 1)
	work := func(ctx context.Context, run *adapter.Run) error {
		if run.Invocation.Type == delivery.EventInvocation {
			return run.AwaitInput(ctx, "which one?")
		}
		turn2 <- struct{}{}
		select {
		case <-hold:
		case <-run.Done():
		}
		return nil
	}
	gw := &platformtest.RecordingHandler{Work: work}
	runWith(t, f, f.Config("first"), gw, adapter.Options{})
	polled := &platformtest.RecordingHandler{Work: work}
	pollIn := &closingInbox{InboxStore: adapter.NewMemoryInbox(nil), closes: make(chan string, 64)}
	cfg := f.Config("second")
	cfg.Polling = true
	set := adapter.DefaultSettings()
	set.HTTPTimeout = time.Second // polls answered at once, no long poll
	cfg.Settings = &set
	runWith(t, f, cfg, polled, adapter.Options{Inbox: pollIn, Outbox: adapter.NewMemoryOutbox(nil)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, c := range []string{"first", "second"} {
		if err := f.WaitConsumer(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := f.Trigger(ctx, "ask me")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WaitRun(ctx, tr.RunID, func(r delivery.Run) bool { return r.State == delivery.RunWaiting }); err != nil {
		t.Fatal(err)
	}
	// The polling adapter hears nothing until the gateway's resumed: once
	// a poll met the faults, none is under way without them.
	f.Inject("pollAgentEvents", platformtest.Disconnect(), 1_000_000)
	if err := waitCond(ctx, func() bool { return f.Fired("pollAgentEvents") > 0 }); err != nil {
		t.Fatal(err)
	}
	if err := f.Reply(ctx, tr.RunID, "the second"); err != nil {
		t.Fatal(err)
	}
	resumes := func() (n int) {
		for _, r := range f.Requests() {
			if r.Operation == "resumeRun" && r.Status == http.StatusConflict {
				n++
			}
		}
		return n
	}
	select {
	case <-turn2:
	case <-ctx.Done():
		t.Fatal("the run was not resumed")
	}
	if len(polled.Executes()) > 1 {
		t.Fatal("the polling adapter resumed the run")
	}
	for len(pollIn.closes) > 0 {
		<-pollIn.closes // its first turn's entry
	}
	f.ClearFaults()
	closed := false
	err = waitCond(ctx, func() bool {
		for len(pollIn.closes) > 0 {
			reason := <-pollIn.closes
			closed = closed || strings.HasPrefix(reason, "not started")
		}
		return closed || resumes() > 1
	})
	if !closed {
		t.Fatalf("the polling adapter's entry stayed open after %d resumes answered 409 (%v)", resumes(), err)
	}
	close(hold)
	run, err := f.WaitRun(ctx, tr.RunID, ended)
	if err != nil || run.State != delivery.RunCompleted || resumes() != 1 {
		t.Fatalf("the run is %s (%v) after %d resumes answered 409", run.State, err, resumes())
	}
}

// A finish the platform refuses for now through every try of the client
// is tried again later: a run whose end is not reported would stay
// running for good.
func TestFinishOutlastsRetries(t *testing.T) {
	f := platformtest.NewFakeServer(t, nil)
	h := &platformtest.RecordingHandler{}
	runWith(t, f, f.Config("alpha"), h, adapter.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitConsumer(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	tries := adapter.DefaultSettings().RetryMaxAttempts
	f.Inject("finishRun", platformtest.RateLimited(time.Second), tries)
	tr, err := f.Trigger(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	run, err := f.WaitRun(ctx, tr.RunID, ended)
	if err != nil || run.State != delivery.RunCompleted || f.Fired("finishRun") != tries {
		t.Fatalf("the run is %s (%v) after %d refused finishes", run.State, err, f.Fired("finishRun"))
	}
}

// waitingInbox holds the move of an entry to waiting (the adapter's own
// note that the run waits, after the platform was told) until release.
type waitingInbox struct {
	adapter.InboxStore
	waiting chan struct{} // closed when the move waits
	release chan struct{}
	once    sync.Once
}

func (in *waitingInbox) SetState(ctx context.Context, eventID string, from, to adapter.InboxState, reason string) error {
	if to == adapter.InboxWaiting {
		in.once.Do(func() { close(in.waiting) })
		<-in.release
	}
	return in.InboxStore.SetState(ctx, eventID, from, to, reason)
}

// The person answers a run that waits for input before the adapter is
// done noting that it waits: the answer resumes the run (it is not a
// follow-up of the execution that asked).
func TestAnswerWhileAwaitInputEnds(t *testing.T) {
	f := platformtest.NewFakeServer(t, nil)
	in := &waitingInbox{InboxStore: adapter.NewMemoryInbox(nil), waiting: make(chan struct{}), release: make(chan struct{})}
	h := &platformtest.RecordingHandler{Work: func(ctx context.Context, run *adapter.Run) error {
		if run.Invocation.Type == delivery.EventInvocation {
			return run.AwaitInput(ctx, "which one?")
		}
		return nil
	}}
	runWith(t, f, f.Config("alpha"), h, adapter.Options{Inbox: in, Outbox: adapter.NewMemoryOutbox(nil)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitConsumer(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	tr, err := f.Trigger(ctx, "ask me")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-in.waiting:
	case <-ctx.Done():
		t.Fatal("the run did not wait")
	}
	if err := f.Reply(ctx, tr.RunID, "the second"); err != nil {
		t.Fatal(err)
	}
	// The answer is stored (and acknowledged) while the execution that
	// asked is still ending.
	err = waitCond(ctx, func() bool {
		cs, err := f.ConsumerState(ctx, "alpha")
		return err == nil && cs.HeadSeq >= 2 && cs.AckedSeq == cs.HeadSeq
	})
	if err != nil {
		t.Fatal(err)
	}
	close(in.release)
	run, err := f.WaitRun(ctx, tr.RunID, ended)
	if err != nil || run.State != delivery.RunCompleted || len(h.Executes()) != 2 {
		t.Fatalf("the run is %s (%v) after %d executions; want completed after two", run.State, err, len(h.Executes()))
	}
}

// jumpAt passes the platform's time on before the nth request of an
// operation, as a clock step while the adapter retries would.
type jumpAt struct {
	f  *platformtest.FakeServer
	op string // a path suffix
	n  int32
	d  time.Duration

	seen atomic.Int32
}

func (j *jumpAt) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, j.op) && j.seen.Add(1) == j.n {
		j.f.PassTime(r.Context(), j.d)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// pastTheJump is the timing of tests whose platform clock jumps past
// the token lifetime while a run is started and no heartbeat lists it:
// a stale window longer than the jump keeps the run from ending stale,
// which is not what they test (TestStaleRun does).
var pastTheJump = platformtest.Timing{RunStaleAfter: time.Hour}

// A start or renewal the platform took, whose answer was lost through
// every try of the client, and then the token expired: the adapter asks
// again with the same Idempotency-Key and learns the first answer. A new
// key would find the run started (by itself, never executed) or the
// token superseded (by its own renewal, never received).
func TestAnswerLostThenTokenExpires(t *testing.T) {
	for _, op := range []string{"startRun", "renewInvocationToken"} {
		t.Run(op, func(t *testing.T) {
			f := platformtest.NewFakeServer(t, &platformtest.Options{Timing: pastTheJump})
			tm := f.Timing()
			ttl := tm.TokenTTL + tm.ClockLeeway + time.Second
			tries := int32(adapter.DefaultSettings().RetryMaxAttempts)
			suffix := map[string]string{"startRun": "/start", "renewInvocationToken": "/token"}[op]
			hook := &jumpAt{f: f, op: suffix, n: tries, d: ttl}
			h := &platformtest.RecordingHandler{HoldPrepare: make(chan struct{})}
			cfg := f.Config("alpha")
			cfg.Polling = true
			set := adapter.DefaultSettings()
			set.HTTPTimeout = time.Second // polls answered at once, no long poll
			cfg.Settings = &set
			runWith(t, f, cfg, h, adapter.Options{HTTPClient: &http.Client{Transport: hook}})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := f.WaitConsumer(ctx, "alpha"); err != nil {
				t.Fatal(err)
			}
			tr := triggerPrepared(ctx, t, f, h, "hello")
			if op == "renewInvocationToken" {
				f.PassTime(ctx, ttl) // the start renews first
				// A poll after the step brings the adapter a current DPoP
				// nonce: the first renewal is served.
				after := len(f.Requests())
				err := waitCond(ctx, func() bool {
					for _, r := range f.Requests()[after:] {
						if r.Operation == "pollAgentEvents" && r.Status == http.StatusOK {
							return true
						}
					}
					return false
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			// The first try is taken and answered 502; the others are
			// refused for now, and the last comes after a clock step.
			f.Inject(op, platformtest.StoredThen502(), 1)
			f.Inject(op, platformtest.RateLimited(time.Second), int(tries)-1)
			close(h.HoldPrepare)
			run, err := f.WaitRun(ctx, tr.RunID, ended)
			if err != nil || run.State != delivery.RunCompleted || len(h.Executes()) != 1 || f.Fired(op) != int(tries) {
				t.Fatalf("the run is %s (%v) after %d executions; %d faults fired", run.State, err, len(h.Executes()), f.Fired(op))
			}
		})
	}
}

// A run the adapter was executing when it stopped (killed, or stopped
// for good) is ended by the next adapter on the same state as
// interrupted: never executed again, and never left running.
func TestInterruptedRunEndsAtRestart(t *testing.T) {
	f := platformtest.NewFakeServer(t, nil)
	cfg := f.Config("alpha")
	cfg.StateDir = t.TempDir()
	executing := make(chan struct{}, 1)
	first := &platformtest.RecordingHandler{Work: func(ctx context.Context, run *adapter.Run) error {
		executing <- struct{}{}
		<-run.Done()
		return ctx.Err()
	}}
	stop := runWith(t, f, cfg, first, adapter.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitConsumer(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	tr, err := f.Trigger(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-executing:
	case <-ctx.Done():
		t.Fatal("the run was not executed")
	}
	stop()
	if run, err := f.RunState(ctx, tr.RunID); err != nil || run.State != delivery.RunRunning {
		t.Fatalf("the stopped adapter's run is %s (%v)", run.State, err)
	}
	second := &platformtest.RecordingHandler{}
	runWith(t, f, cfg, second, adapter.Options{})
	run, err := f.WaitRun(ctx, tr.RunID, ended)
	if err != nil || run.State != delivery.RunFailed || run.StateReason != delivery.ReasonInterrupted || len(second.Executes()) != 0 {
		t.Fatalf("the run is %s (%q, %v) after %d executions by the next adapter", run.State, run.StateReason, err, len(second.Executes()))
	}
}

// stallingInbox holds the move of a run's entry to started until die is
// closed, and then does not make it: the process died between the
// start's answer and its note of it.
type stallingInbox struct {
	adapter.InboxStore
	starting, die chan struct{}
	once          sync.Once
}

func (in *stallingInbox) SetState(ctx context.Context, eventID string, from, to adapter.InboxState, reason string) error {
	if to == adapter.InboxStarted {
		in.once.Do(func() { close(in.starting) })
		<-in.die
		return errors.New("platformtest: the process died")
	}
	return in.InboxStore.SetState(ctx, eventID, from, to, reason)
}

// The adapter stopped after the platform started a run and before it
// noted the start; its token expired before the next adapter came. The
// next one asks with the start's key first and learns the start was
// made: it executes the run once (a renewal first would key a new
// start, be refused already_started, and leave the run running).
func TestRestartAfterAnAnsweredStart(t *testing.T) {
	f := platformtest.NewFakeServer(t, &platformtest.Options{Timing: pastTheJump})
	cfg := f.Config("alpha")
	cfg.StateDir = t.TempDir()
	clock := platformtest.SpedUpClock{Base: f.Clock(), Factor: 100}
	db, err := adapter.OpenSQLiteInbox(filepath.Join(cfg.StateDir, "inbox.sqlite3"), &adapter.InboxOptions{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	in := &stallingInbox{InboxStore: db, starting: make(chan struct{}), die: make(chan struct{})}
	var executed atomic.Int32
	h := &platformtest.RecordingHandler{Work: func(ctx context.Context, run *adapter.Run) error {
		executed.Add(1)
		return nil
	}}
	stop := runWith(t, f, cfg, h, adapter.Options{Inbox: in})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitConsumer(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	tr, err := f.Trigger(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-in.starting:
	case <-ctx.Done():
		t.Fatal("the run was not started")
	}
	tm := f.Timing()
	f.PassTime(ctx, tm.TokenTTL+tm.ClockLeeway+time.Second)
	close(in.die)
	stop()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	runWith(t, f, cfg, h, adapter.Options{})
	run, err := f.WaitRun(ctx, tr.RunID, ended)
	if err != nil || run.State != delivery.RunCompleted || executed.Load() != 1 {
		t.Fatalf("the run is %s (%q, %v) after %d executions", run.State, run.StateReason, err, executed.Load())
	}
}

// A run the platform cancelled while it executed is finished cancelled
// with the reason code, not with the platform's words (which no reason
// code may hold): the finish is never refused as malformed.
func TestCancelledRunIsFinishedWithTheReasonCode(t *testing.T) {
	f := platformtest.NewFakeServer(t, nil)
	h := &platformtest.RecordingHandler{Work: func(ctx context.Context, run *adapter.Run) error {
		<-run.Done()
		return nil
	}}
	runWith(t, f, f.Config("alpha"), h, adapter.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitConsumer(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	tr, err := f.Trigger(ctx, "cancel me")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(ctx, func(h *platformtest.RecordingHandler) bool { return len(h.Executes()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := f.Cancel(ctx, tr.RunID); err != nil {
		t.Fatal(err)
	}
	var finish platformtest.Request
	err = waitCond(ctx, func() bool {
		for _, r := range f.Requests() {
			if r.Operation == "finishRun" && r.Status != 0 {
				finish = r
				return true
			}
		}
		return false
	})
	if err != nil || finish.Status == http.StatusBadRequest {
		t.Fatalf("the cancelled run's finish was answered %d (%v)", finish.Status, err)
	}
}

// unknownKid gives a token a key id no key set has: its check is
// UnknownKey, and its event stays unsettled until it comes again.
func unknownKid(tok string) string {
	head, rest, ok := strings.Cut(tok, ".")
	if !ok {
		return tok
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return tok
	}
	var h map[string]any
	if json.Unmarshal(raw, &h) != nil {
		return tok
	}
	h["kid"] = "no-such-key"
	raw, _ = json.Marshal(h)
	return base64.RawURLEncoding.EncodeToString(raw) + "." + rest
}

// An event stored and acknowledged before comes again (the platform had
// not yet taken the acknowledgement when it sent it again) with a token
// that cannot be checked now; meanwhile the platform takes the first
// acknowledgement and sends the event no more. The event was settled
// when it was stored: it must not hold the acknowledgements of every
// later event for good.
func TestStoredEventAgainWithAnUncheckableToken(t *testing.T) {
	f := platformtest.NewFakeServer(t, nil)
	cfg := f.Config("alpha")
	cfg.Polling = true
	set := adapter.DefaultSettings()
	set.HTTPTimeout = time.Second // polls answered at once, no long poll
	cfg.Settings = &set
	c, err := adapter.NewClient(cfg.BaseURL, cfg.Credentials, &adapter.ClientOptions{Settings: &set,
		Clock: platformtest.SpedUpClock{Base: f.Clock(), Factor: 100}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	src, err := adapter.NewPollingSource(c, f.AgentID(), "alpha", nil)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		first    string
		tampered bool
		after    int // Receives since the tampered batch
	)
	tamper := &platformtest.TamperingSource{Source: src, Tamper: func(ev *delivery.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case first == "" && ev.Type == delivery.EventInvocation:
			first = ev.ID
		case ev.ID == first && !tampered:
			tampered = true
			ev.InvocationToken = unknownKid(ev.InvocationToken)
		}
	}}
	counting := &countingSource{Source: tamper, receiving: func() {
		mu.Lock()
		if tampered {
			after++
		}
		mu.Unlock()
	}}
	runWith(t, f, cfg, &platformtest.RecordingHandler{}, adapter.Options{Source: counting, Client: c})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitConsumer(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	acked := func(seq int64) error {
		return waitCond(ctx, func() bool {
			cs, err := f.ConsumerState(ctx, "alpha")
			return err == nil && cs.AckedSeq >= seq && cs.HeadSeq >= seq
		})
	}
	one, err := f.Trigger(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WaitRun(ctx, one.RunID, ended); err != nil {
		t.Fatal(err)
	}
	if err := acked(1); err != nil {
		t.Fatal(err)
	}
	// It comes again, and the adapter is done with that batch: it asks
	// for the next.
	if err := f.Restart(ctx, "alpha", 0); err != nil {
		t.Fatal(err)
	}
	err = waitCond(ctx, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return after > 0
	})
	if err != nil {
		t.Fatal("the event did not come again")
	}
	// The first acknowledgement lands.
	if err := f.Restart(ctx, "alpha", 1); err != nil {
		t.Fatal(err)
	}
	two, err := f.Trigger(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WaitRun(ctx, two.RunID, ended); err != nil {
		t.Fatal(err)
	}
	if err := acked(2); err != nil {
		cs, _ := f.ConsumerState(ctx, "alpha")
		t.Fatalf("the consumer stays at %d of %d", cs.AckedSeq, cs.HeadSeq)
	}
}

// countingSource tells of every Receive before it receives: the
// adapter is done with the batch before.
type countingSource struct {
	adapter.Source
	receiving func()
}

func (s *countingSource) Receive(ctx context.Context) ([]delivery.Event, error) {
	s.receiving()
	return s.Source.Receive(ctx)
}

// stopAtStart stops the adapter as it notes its first started run.
type stopAtStart struct {
	adapter.InboxStore
	stop context.CancelFunc
}

func (in *stopAtStart) SetState(ctx context.Context, eventID string, from, to adapter.InboxState, reason string) error {
	if to == adapter.InboxStarted {
		in.stop()
	}
	return in.InboxStore.SetState(ctx, eventID, from, to, reason)
}

// An adapter stopped as the platform's answer to its start came notes
// the start all the same and executes nothing: the next adapter ends
// the run as interrupted. (Without the note, the stopping adapter
// executed it on its way out, and the next started it again from the
// start's key and executed it once more.)
func TestStopWhileStarting(t *testing.T) {
	f := platformtest.NewFakeServer(t, nil)
	cfg := f.Config("alpha")
	cfg.StateDir = t.TempDir()
	db, err := adapter.OpenSQLiteInbox(filepath.Join(cfg.StateDir, "inbox.sqlite3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	first := &platformtest.RecordingHandler{}
	a, err := adapter.New(cfg, first, &adapter.Options{Inbox: &stopAtStart{InboxStore: db, stop: stop},
		Clock: platformtest.SpedUpClock{Base: f.Clock(), Factor: 100}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = a.Run(runCtx)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitConsumer(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	tr, err := f.Trigger(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the adapter did not stop")
	}
	_ = a.Close()
	if n := len(first.Executes()); n != 0 {
		t.Fatalf("the stopping adapter executed the run %d times", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	second := &platformtest.RecordingHandler{}
	runWith(t, f, cfg, second, adapter.Options{})
	run, err := f.WaitRun(ctx, tr.RunID, ended)
	if err != nil || run.State != delivery.RunFailed || run.StateReason != delivery.ReasonInterrupted || len(second.Executes()) != 0 {
		t.Fatalf("the run is %s (%q, %v) after %d executions by the next adapter", run.State, run.StateReason, err, len(second.Executes()))
	}
}

// silentInbox hides the started and waiting entries from the
// heartbeat's listing: the adapter's heartbeats list no active run, as
// when they are lost on the way.
type silentInbox struct {
	adapter.InboxStore
}

func (in silentInbox) List(ctx context.Context, states ...adapter.InboxState) ([]adapter.InboxEntry, error) {
	entries, err := in.InboxStore.List(ctx, states...)
	return slices.DeleteFunc(entries, func(e adapter.InboxEntry) bool {
		return e.State == adapter.InboxStarted || e.State == adapter.InboxWaiting
	}), err
}

// A run whose agent gave no sign of life of it for the stale window
// ends failed, reason stale; an adapter that is still there hears of it
// as of a cancel, stops the run's work, is answered run_inactive once
// when it ends the run, and goes on with the next run.
func TestStaleRun(t *testing.T) {
	f := platformtest.NewFakeServer(t, nil)
	in := silentInbox{adapter.NewMemoryInbox(&adapter.InboxOptions{Clock: f.Clock()})}
	executing := make(chan string, 2)
	var works atomic.Int32
	h := &platformtest.RecordingHandler{Work: func(ctx context.Context, run *adapter.Run) error {
		executing <- run.ID
		if works.Add(1) > 1 {
			return nil // the next run completes at once
		}
		<-run.Done()
		return ctx.Err()
	}}
	runWith(t, f, f.Config("alpha"), h, adapter.Options{Inbox: in})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitConsumer(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	tr, err := f.Trigger(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-executing:
	case <-ctx.Done():
		t.Fatal("the run was not executed")
	}
	f.PassTime(ctx, f.Timing().RunStaleAfter+time.Second)
	run, err := f.WaitRun(ctx, tr.RunID, ended)
	if err != nil || run.State != delivery.RunFailed || run.StateReason != delivery.ReasonStale {
		t.Fatalf("the run is %s (%q, %v); want failed, %s", run.State, run.StateReason, err, delivery.ReasonStale)
	}
	// The adapter ends its work and the run once, refused as ended.
	finished := func() (n, inactive int) {
		for _, r := range f.Requests() {
			if r.Operation == "finishRun" && strings.Contains(r.Path, tr.RunID) && r.Status != 0 && r.Status != http.StatusUnauthorized {
				n++
				if r.Status == http.StatusForbidden {
					inactive++
				}
			}
		}
		return n, inactive
	}
	if err := waitCond(ctx, func() bool {
		entries, err := in.ByRun(ctx, tr.RunID)
		return err == nil && len(entries) > 0 && entries[0].State == adapter.InboxClosed
	}); err != nil {
		t.Fatal("the adapter did not close the stale run's entry")
	}
	next, err := f.Trigger(ctx, "short")
	if err != nil {
		t.Fatal(err)
	}
	if run, err := f.WaitRun(ctx, next.RunID, ended); err != nil || run.State != delivery.RunCompleted {
		t.Fatalf("the next run is %s (%v)", run.State, err)
	}
	if n, inactive := finished(); n != 1 || inactive != 1 {
		t.Errorf("the adapter ended the stale run %d times, %d refused as inactive; want once, refused", n, inactive)
	}
}
