package execgw

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/gateway"
)

// dispatcher delivers runs: it claims QUEUED runs (and RUNNING ones whose
// dispatcher's lease lapsed), calls their agents, and records what the
// agents' streams say.
type dispatcher struct {
	s     *Service
	kickc chan struct{}
	slots chan struct{}
	wg    sync.WaitGroup
	// full is set when a claim stopped for want of a free slot, so runs
	// may be waiting: the next delivery to end asks for a claim at once
	// rather than leave them to the sweep.
	full atomic.Bool
}

func newDispatcher(s *Service) *dispatcher {
	return &dispatcher{s: s, kickc: make(chan struct{}, 1), slots: make(chan struct{}, s.o.MaxConcurrentRuns)}
}

// kick asks for a claim now (a run was queued here).
func (d *dispatcher) kick() {
	select {
	case d.kickc <- struct{}{}:
	default:
	}
}

// run claims and delivers runs until ctx ends, then waits for the
// deliveries in flight to stop.
func (d *dispatcher) run(ctx context.Context) {
	t := time.NewTicker(d.s.o.SweepEvery)
	defer t.Stop()
	defer d.wg.Wait()
	for {
		d.claim(ctx)
		select {
		case <-ctx.Done():
			return
		case <-d.kickc:
		case <-t.C:
		}
	}
}

// claimBatch bounds one ClaimRuns call.
const claimBatch = 32

// claim takes as many runs as there are free delivery slots.
func (d *dispatcher) claim(ctx context.Context) {
	for ctx.Err() == nil {
		free := cap(d.slots) - len(d.slots)
		if free <= 0 {
			d.full.Store(true)
			if cap(d.slots)-len(d.slots) <= 0 {
				return
			}
			continue // a delivery ended before it could see full
		}
		n := min(free, claimBatch)
		now := d.s.o.Now()
		runs, err := d.s.store.ClaimRuns(ctx, d.s.owner, now, now.Add(d.s.o.Lease), n)
		if err != nil {
			if ctx.Err() == nil {
				d.s.log.Error("gateway: claiming runs failed", "err", err)
			}
			return
		}
		for i := range runs {
			d.slots <- struct{}{}
			run := runs[i]
			d.wg.Go(func() {
				defer func() {
					<-d.slots
					if d.full.Swap(false) {
						d.kick()
					}
				}()
				d.deliver(ctx, &run)
			})
		}
		if len(runs) < n {
			return
		}
	}
}

// delivery is one run being delivered by this process.
type delivery struct {
	s      *Service
	mu     sync.Mutex
	run    *gateway.Run // the latest stored copy
	cancel context.CancelCauseFunc
	// news wakes a delivery its debugger holds (park) when follow read
	// the run changed.
	news chan struct{}
}

// write changes the run as change says, unless the run is no longer
// ours to change (it ended, was answered, or another dispatcher took its
// lease), which stops the delivery.
func (dl *delivery) write(ctx context.Context, change func(r *gateway.Run) []gateway.Event) error {
	return dl.try(ctx, func(r *gateway.Run) ([]gateway.Event, error) { return change(r), nil })
}

// try is write with a change that may refuse: errHeld (the debugger
// holds the run) writes nothing and leaves the delivery going; any other
// error stops it.
func (dl *delivery) try(ctx context.Context, change func(r *gateway.Run) ([]gateway.Event, error)) error {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	run, _, err := dl.s.mutate(ctx, dl.run, dl.run.ID, func(r *gateway.Run) ([]gateway.Event, error) {
		if r.LeaseOwner != dl.s.owner || r.Status.Terminal() || r.Status == gateway.StatusWaitingUser {
			return nil, errStop
		}
		return change(r)
	})
	if run != nil {
		dl.run = run
	}
	if err != nil && !errors.Is(err, errHeld) {
		dl.cancel(err)
	}
	return err
}

func (dl *delivery) current() gateway.Run {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	return *dl.run
}

// deliver runs one turn of a claimed run: it calls the agent, records its
// stream, and settles the run as the stream ended.
func (d *dispatcher) deliver(parent context.Context, claimed *gateway.Run) {
	if claimed.Pull != nil {
		if lapsed(claimed) && d.s.deps.Pull != nil {
			d.stale(parent, claimed)
			return
		}
		d.offer(parent, claimed)
		return
	}
	s := d.s
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	dl := &delivery{s: s, run: claimed, cancel: cancel, news: make(chan struct{}, 1)}
	log := s.log.With("run_id", claimed.ID, "tenant_id", claimed.TenantID, "instance_id", claimed.InstanceID)
	ctx, span := s.tel.startDelivery(ctx, claimed)
	defer func() { endDelivery(span, dl.current()) }()

	// Someone else ending the run (a cancel, on any replica) stops the
	// call; so does losing the lease.
	f := s.hub.watch(claimed.ID)
	defer s.hub.unfollow(f)
	go dl.follow(ctx, f)
	go dl.renew(ctx)

	if err := dl.write(ctx, func(r *gateway.Run) []gateway.Event {
		r.Attempt++
		if r.StartedAt.IsZero() {
			r.StartedAt = s.o.Now()
		}
		if r.Attempt > s.o.MaxAttempts {
			return end(r, gateway.StatusFailed, fmt.Sprintf("the agent's stream ended without an ending %d times", r.Attempt-1), s.o.Now())
		}
		reason := ""
		if r.Attempt > 1 {
			reason = fmt.Sprintf("delivering again: attempt %d of %d", r.Attempt, s.o.MaxAttempts)
		}
		r.Status = gateway.StatusRunning
		return []gateway.Event{statusEvent(gateway.StatusRunning, reason)}
	}); err != nil || dl.current().Status.Terminal() {
		return
	}

	target, err := s.target(ctx, dl.current())
	if err != nil {
		dl.settle(ctx, nil, nil, err, log)
		return
	}
	named(span, target.inst.Name)
	req, callOpts, err := s.request(ctx, dl.current(), target)
	if err != nil {
		dl.settle(ctx, nil, nil, err, log)
		return
	}
	t := newTurn(s.o.MaxOutputBytes, dl.current().Artifacts)
	// The agent's frames are read apart from their recording: the frames
	// that arrived while a write was in flight go in the next write, and
	// a turn's last ones in the write of its ending, so a run costs about
	// as many writes as the agent makes pauses, not one a frame.
	callCtx, stopCall := context.WithCancel(ctx)
	frames := pumpFrames(callCtx, target.client.SendStreamingMessage(callCtx, req, callOpts...), s.onQueued)
	hangUp := func() { // idempotent
		stopCall()
		for f := range frames {
			if f.frame != nil {
				t.learnIDs(f.frame) // a cancel must name the agent's task
			}
		}
	}
	defer hangUp()
	var pending []gateway.Event
	var streamErr error
	for f := range frames {
		streamErr = t.take(f, &pending)
		for streamErr == nil && t.end == nil {
			more, ok := waiting(frames)
			if !ok {
				break
			}
			streamErr = t.take(more, &pending)
		}
		if streamErr != nil || t.end != nil {
			break
		}
		// The run's debugger may hold the events back: then the agent's
		// stream is not read until it lets them through.
		if len(pending) > 0 && dl.record(ctx, &pending, t.setTask) != nil {
			if errors.Is(context.Cause(ctx), errStop) || parent.Err() != nil {
				break // stopped while held: tell the agent, or hand the run back
			}
			return
		}
	}
	hangUp()
	if cause := context.Cause(ctx); errors.Is(cause, errStop) {
		// The run was cancelled or taken: tell the agent, best effort.
		if t.taskID != "" {
			cctx, ccancel := context.WithTimeout(context.WithoutCancel(parent), 5*time.Second)
			_, _ = target.client.CancelTask(cctx, &a2a.CancelTaskRequest{ID: t.taskID})
			ccancel()
		}
		return
	}
	if parent.Err() != nil && s.handingBack() {
		// The server stops: hand the run back at once rather than when the
		// lease lapses, without counting the attempt against it.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(parent), 5*time.Second)
		_ = dl.write(rctx, func(r *gateway.Run) []gateway.Event {
			t.setTask(r)
			r.LeaseOwner, r.LeaseUntil, r.NotBefore = "", time.Time{}, time.Time{}
			r.Attempt = max(r.Attempt-1, 0)
			return append(slices.Clone(pending), statusEvent(gateway.StatusRunning, "the server delivering the run is stopping; it will be delivered again"))
		})
		rcancel()
		return
	}
	dl.settle(ctx, t, pending, streamErr, log)
}

// settle records how a turn ended, after the events of its last frames
// (pending): its ending or pause, or, for a stream that stopped short, a
// retry after a backoff (the run is left for any dispatcher to claim
// again) or, past the last attempt, a failure.
func (dl *delivery) settle(ctx context.Context, t *turn, pending []gateway.Event, err error, log interface {
	Info(string, ...any)
	Warn(string, ...any)
}) {
	s := dl.s
	// What the agent sent before the ending goes first, and the ending
	// (as one event) only when the run's debugger lets it through.
	if dl.record(ctx, &pending, t.setTask) != nil {
		return
	}
	now := s.o.Now()
	if t != nil && t.end != nil {
		final := t.finish()
		// Decided once: the write below may run again on a conflict.
		announce := t.end.pause != nil && (t.end.pause.Type != gateway.EventWriteConfirmationRequired ||
			!s.raised.take(dl.current().ID, t.end.pause.CallID))
		_ = dl.writeHeld(ctx, func(r *gateway.Run) []gateway.Event {
			t.setTask(r)
			events := append(slices.Clone(pending), final...)
			r.Artifacts = mergeArtifacts(r.Artifacts, t.artifacts)
			if out := t.output.String(); out != "" {
				r.Output = out
			}
			if t.end.status == gateway.StatusWaitingUser {
				r.Status, r.Reason = gateway.StatusWaitingUser, t.end.reason
				r.Pause = toJSON(t.end.pause)
				r.PendingInput = nil
				r.LeaseOwner, r.LeaseUntil = "", time.Time{}
				events = append(events, statusEvent(gateway.StatusWaitingUser, t.end.reason))
				if announce {
					events = append(events, gateway.Event{Type: t.end.pause.Type, Payload: t.end.pause.Payload})
				}
				return events
			}
			return append(events, end(r, t.end.status, t.end.reason, now)...)
		})
		log.Info("gateway: turn ended", "status", string(t.end.status))
		return
	}
	var perm *permanent
	if (t == nil || t.frames == 0) && isRefusal(err) {
		perm = &permanent{reason: "the agent refused the request: " + describe(err)}
	}
	if perm != nil || errors.As(err, &perm) {
		_ = dl.writeHeld(ctx, func(r *gateway.Run) []gateway.Event {
			t.setTask(r)
			return append(slices.Clone(pending), end(r, gateway.StatusFailed, perm.reason, now)...)
		})
		log.Warn("gateway: run failed", "reason", perm.reason)
		return
	}
	why := "the agent's stream ended without an ending"
	switch {
	case t != nil && t.frames > 0 && err != nil:
		why += " (" + describe(err) + ")"
	case err != nil:
		why = "the agent could not be reached: " + describe(err)
	}
	_ = dl.writeHeld(ctx, func(r *gateway.Run) []gateway.Event {
		t.setTask(r)
		events := slices.Clone(pending)
		if r.Attempt >= s.o.MaxAttempts {
			return append(events, end(r, gateway.StatusFailed, fmt.Sprintf("%s (attempt %d of %d; giving up)", why, r.Attempt, s.o.MaxAttempts), now)...)
		}
		backoff := s.o.RetryBackoff << (r.Attempt - 1)
		r.LeaseOwner, r.LeaseUntil, r.NotBefore = "", time.Time{}, now.Add(backoff)
		return append(events, statusEvent(gateway.StatusRunning, fmt.Sprintf("%s; retrying in %s (attempt %d of %d)", why, backoff, r.Attempt, s.o.MaxAttempts)))
	})
	log.Warn("gateway: turn stopped short", "reason", why)
}

// streamFrame is one item of an agent's stream: a frame or the error
// that ended it.
type streamFrame struct {
	frame *a2a.StreamResponse
	err   error
}

// framesAhead bounds the frames read ahead of their recording.
const framesAhead = 64

// pumpFrames reads stream into a channel, closed when the stream ends or
// ctx does: the reader takes what has arrived without waiting for more.
// queued, when set, hears of each item put in the channel.
func pumpFrames(ctx context.Context, stream iter.Seq2[*a2a.StreamResponse, error], queued func()) <-chan streamFrame {
	out := make(chan streamFrame, framesAhead)
	go func() {
		defer close(out)
		for f, err := range stream {
			select {
			case out <- streamFrame{f, err}:
			case <-ctx.Done():
				return
			}
			if queued != nil {
				queued()
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// waiting returns a frame that has already arrived, if any.
func waiting(frames <-chan streamFrame) (streamFrame, bool) {
	select {
	case f, ok := <-frames:
		return f, ok
	default:
		return streamFrame{}, false
	}
}

// mergeArtifacts adds a turn's artifacts to the run's: one that continues
// an artifact of an earlier turn (the same id) adds its parts to it.
func mergeArtifacts(run, turn []gateway.Artifact) []gateway.Artifact {
	out := slices.Clone(run)
	for _, a := range turn {
		i := slices.IndexFunc(out, func(b gateway.Artifact) bool { return b.ArtifactID == a.ArtifactID })
		if i < 0 {
			out = append(out, a)
			continue
		}
		b := &out[i]
		b.Parts = append(slices.Clone(b.Parts), a.Parts...)
		b.Name, b.Description = cmp.Or(a.Name, b.Name), cmp.Or(a.Description, b.Description)
		if a.Metadata != nil {
			b.Metadata = a.Metadata
		}
		if a.SkillMetadata != nil {
			m := maps.Clone(b.SkillMetadata)
			if m == nil {
				m = map[string]any{}
			}
			maps.Copy(m, a.SkillMetadata)
			b.SkillMetadata = m
		}
	}
	return out
}

// follow stops the delivery when the run is ended or taken by someone
// else.
func (dl *delivery) follow(ctx context.Context, f *follower) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		}
		// A wake-up for events the delivery wrote itself is no news.
		if !f.lost.Swap(false) && f.last.Load() <= dl.current().LastSequence {
			continue
		}
		r, err := dl.s.store.GetRun(ctx, "", dl.current().ID)
		if err != nil {
			continue
		}
		if r.Status.Terminal() || r.LeaseOwner != dl.s.owner {
			dl.cancel(errStop)
			return
		}
		dl.learn(&r)
	}
}

// renew keeps the delivery's lease alive.
func (dl *delivery) renew(ctx context.Context) {
	t := time.NewTicker(dl.s.o.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if dl.write(ctx, func(r *gateway.Run) []gateway.Event {
			r.LeaseUntil = dl.s.o.Now().Add(dl.s.o.Lease)
			return nil
		}) != nil {
			return
		}
	}
}

// permanent is a failure no retry can mend: the run fails with reason.
type permanent struct{ reason string }

func (p *permanent) Error() string { return p.reason }

func permanentf(format string, args ...any) error {
	return &permanent{reason: fmt.Sprintf(format, args...)}
}

// describe says what went wrong with a call, in words fit for a run's
// reason: never a token or a header value.
func describe(err error) string {
	var ce *a2aclient.CallError
	if errors.As(err, &ce) {
		return "the agent answered " + ce.Err.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timed out"
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return "connection failed (" + oe.Op + ")"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}

// isRefusal reports whether the agent answered the call with an error
// that a retry would meet again: an A2A or JSON-RPC error other than an
// internal one, or a refused credential.
func isRefusal(err error) bool {
	var ce *a2aclient.CallError
	if errors.As(err, &ce) {
		return ce.Err.Code != a2a.CodeInternalError
	}
	return errors.Is(err, a2aclient.ErrUnauthenticated) || errors.Is(err, a2aclient.ErrForbidden) ||
		errors.Is(err, a2aclient.ErrInvalidResponse) || errors.Is(err, a2aclient.ErrNoInterface)
}
