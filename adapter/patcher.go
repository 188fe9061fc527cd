package adapter

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/delivery"
)

// PatchTransport sends a run's patch: the client's patchRun, or a
// gateway's run.update. A refusal matches ErrBaseVersionConflict (with
// the current run, see CurrentRun), ErrRunNotActive or ErrRunInactive,
// or another error of the client.
type PatchTransport interface {
	PatchRun(ctx context.Context, runID string, p delivery.RunPatch) (delivery.RunPatchResult, error)
}

// ErrPatcherStopped is returned by a Patcher whose run has ended: what
// it was asked to send is dropped.
var ErrPatcherStopped = errors.New("adapter: the run has ended; its progress is no longer sent")

// Patcher reports a run's progress. Each setter records the state it
// wants for one path; a later value for the same path replaces an
// earlier one not yet sent. The patcher sends what changed at most once
// per Settings.RunUpdateMinInterval, on the version it last saw, and
// when the run moved on under it (base_version_conflict) it takes the
// current version and sends what is pending again (every path is set,
// not added to, so a second send does what the first would have), up
// to Settings.RetryMaxAttempts rounds. A step added and then updated
// before it was sent goes as one add.
//
// Setters never block on the network: a Patcher sends from its own
// goroutine, started by the adapter for each run. Flush sends at once.
type Patcher struct {
	runID string
	send  PatchTransport
	ctx   context.Context // the run's, bound to its token
	clock Clock
	set   Settings
	log   *slog.Logger

	mu       sync.Mutex
	version  int64
	order    []string // paths in the order first set, for the pending ops
	pending  map[string]delivery.PatchOp
	stepAdds map[string]*delivery.Step // steps added but not yet sent, by id
	stopped  bool
	lastSent time.Time
	dirty    chan struct{}
	sending  sync.Mutex // one send at a time
}

// newPatcher makes the patcher of a run at version.
func newPatcher(ctx context.Context, runID string, version int64, send PatchTransport, clock Clock, set Settings, log *slog.Logger) *Patcher {
	return &Patcher{runID: runID, send: send, ctx: ctx, clock: clock, set: set, log: log, version: version,
		pending: map[string]delivery.PatchOp{}, stepAdds: map[string]*delivery.Step{}, dirty: make(chan struct{}, 1)}
}

// Version is the run's version as the patcher last saw it.
func (p *Patcher) Version() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.version
}

// SetStatusLine shows one line of what the run is doing.
func (p *Patcher) SetStatusLine(s string) error {
	return p.setText("/status_line", s)
}

// ClearStatusLine removes the status line.
func (p *Patcher) ClearStatusLine() error { return p.remove("/status_line") }

// SetLastTextExcerpt shows the end of the text the run produced last.
func (p *Patcher) SetLastTextExcerpt(s string) error {
	if n := utf8.RuneCountInString(s); n > delivery.MaxExcerptChars {
		s = string([]rune(s)[n-delivery.MaxExcerptChars:])
	}
	return p.setText("/last_text_excerpt", s)
}

// SetModel names the model the run uses.
func (p *Patcher) SetModel(model string) error {
	return p.setText("/model", model)
}

// SetMetric sets a named number (tokens, calls, …).
func (p *Patcher) SetMetric(name string, v float64) error {
	return p.put(delivery.PatchOp{Op: "replace", Path: "/metrics/" + name, Value: v})
}

// SetLastAPIRetry says the run waits on a retry of its model's API.
func (p *Patcher) SetLastAPIRetry(r delivery.APIRetry) error {
	return p.put(delivery.PatchOp{Op: "replace", Path: "/last_api_retry", Value: r})
}

// ClearLastAPIRetry says the run no longer waits on one.
func (p *Patcher) ClearLastAPIRetry() error { return p.remove("/last_api_retry") }

// SetCost reports what the run cost so far, an estimate.
func (p *Patcher) SetCost(amountMicros int64, currency string) error {
	return p.put(delivery.PatchOp{Op: "replace", Path: "/cost",
		Value: delivery.Money{AmountMicros: amountMicros, Currency: currency, IsEstimate: true}})
}

// SetPlan shows the run's plan.
func (p *Patcher) SetPlan(items []delivery.PlanItem) error {
	return p.put(delivery.PatchOp{Op: "replace", Path: "/plan", Value: delivery.Plan{Items: items}})
}

// ClearPlan removes the plan.
func (p *Patcher) ClearPlan() error { return p.remove("/plan") }

// AddStep adds a step and returns its id (a UUIDv7); the platform
// numbers it.
func (p *Patcher) AddStep(s delivery.Step) (string, error) {
	if s.ID == "" {
		s.ID = NewID()
	}
	if s.Status == "" {
		s.Status = delivery.StepRunning
	}
	s.Ordinal = 0
	if err := p.check(delivery.PatchOp{Op: "add", Path: "/steps/-", Value: s}); err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return "", ErrPatcherStopped
	}
	step := s
	p.stepAdds[s.ID] = &step
	p.queue("/steps/-/"+s.ID, delivery.PatchOp{Op: "add", Path: "/steps/-", Value: &step})
	return s.ID, nil
}

// StepUpdate changes a step; zero fields are left as they are.
type StepUpdate struct {
	Status     delivery.StepStatus
	Title      string
	Detail     string
	FinishedAt time.Time
}

// UpdateStep changes a step AddStep added.
func (p *Patcher) UpdateStep(id string, u StepUpdate) error {
	p.mu.Lock()
	if add, ok := p.stepAdds[id]; ok && !p.stopped {
		// Not sent yet: change the add itself, so it goes as one.
		next := *add
		merge(&next, u)
		p.mu.Unlock()
		if err := p.check(delivery.PatchOp{Op: "add", Path: "/steps/-", Value: next}); err != nil {
			return err
		}
		p.mu.Lock()
		if add, ok := p.stepAdds[id]; ok {
			*add = next
		}
		p.mu.Unlock()
		p.wake()
		return nil
	}
	p.mu.Unlock()
	base := "/steps/" + id + "/"
	var ops []delivery.PatchOp
	if u.Status != "" {
		ops = append(ops, delivery.PatchOp{Op: "replace", Path: base + "status", Value: u.Status})
	}
	if u.Title != "" {
		ops = append(ops, delivery.PatchOp{Op: "replace", Path: base + "title", Value: u.Title})
	}
	if u.Detail != "" {
		ops = append(ops, delivery.PatchOp{Op: "replace", Path: base + "detail", Value: u.Detail})
	}
	if !u.FinishedAt.IsZero() {
		ops = append(ops, delivery.PatchOp{Op: "replace", Path: base + "finished_at", Value: u.FinishedAt})
	}
	for _, op := range ops {
		if err := p.put(op); err != nil {
			return err
		}
	}
	return nil
}

func merge(s *delivery.Step, u StepUpdate) {
	if u.Status != "" {
		s.Status = u.Status
	}
	if u.Title != "" {
		s.Title = u.Title
	}
	if u.Detail != "" {
		s.Detail = u.Detail
	}
	if !u.FinishedAt.IsZero() {
		s.FinishedAt = u.FinishedAt
	}
}

// FollowupDelivered says a follow-up message reached the runtime.
func (p *Patcher) FollowupDelivered(messageID string) error {
	return p.followup(messageID, delivery.FollowupDelivered)
}

// FollowupAbsorbed says the run took a follow-up into its work.
func (p *Patcher) FollowupAbsorbed(messageID string) error {
	return p.followup(messageID, delivery.FollowupAbsorbed)
}

func (p *Patcher) followup(id string, st delivery.FollowupState) error {
	p.mu.Lock()
	if op, ok := p.pending["/followups/"+id]; ok && op.Value == delivery.FollowupAbsorbed {
		p.mu.Unlock()
		return nil // forward only
	}
	p.mu.Unlock()
	return p.put(delivery.PatchOp{Op: "replace", Path: "/followups/" + id, Value: st})
}

func (p *Patcher) setText(path, s string) error {
	return p.put(delivery.PatchOp{Op: "replace", Path: path, Value: s})
}

func (p *Patcher) remove(path string) error { return p.put(delivery.PatchOp{Op: "remove", Path: path}) }

// check refuses an operation the platform would refuse, before anything
// is sent: a path or operation not allowed, or a value of the wrong
// shape.
func (p *Patcher) check(op delivery.PatchOp) error {
	var scratch delivery.Progress
	if seg := strings.Split(op.Path, "/"); len(seg) == 4 && seg[1] == "steps" {
		// A step update: check it on a step of that id.
		scratch.Steps = []delivery.Step{{ID: seg[2], Kind: "check", Status: delivery.StepRunning}}
	}
	if errs := delivery.ApplyPatch(&scratch, []delivery.PatchOp{op}); errs != nil {
		return &PatchRefusedError{Errors: errs}
	}
	return nil
}

// PatchRefusedError is a patch refused before it was sent.
type PatchRefusedError struct{ Errors []delivery.FieldError }

func (e *PatchRefusedError) Error() string {
	if len(e.Errors) == 0 {
		return "adapter: patch refused"
	}
	return "adapter: patch refused: " + e.Errors[0].Code + " at " + e.Errors[0].Pointer + ": " + e.Errors[0].Detail
}

// put records op as the wanted state of its path.
func (p *Patcher) put(op delivery.PatchOp) error {
	if err := p.check(op); err != nil {
		return err
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return ErrPatcherStopped
	}
	p.queue(op.Path, op)
	p.mu.Unlock()
	return nil
}

// queue sets key's pending op and wakes the sender; p.mu is held.
func (p *Patcher) queue(key string, op delivery.PatchOp) {
	if _, ok := p.pending[key]; !ok {
		p.order = append(p.order, key)
	}
	p.pending[key] = op
	p.wake()
}

func (p *Patcher) wake() {
	select {
	case p.dirty <- struct{}{}:
	default:
	}
}

// take removes and returns the pending ops in order; p.mu is held.
func (p *Patcher) take() []delivery.PatchOp {
	ops := make([]delivery.PatchOp, 0, len(p.order))
	for _, k := range p.order {
		op := p.pending[k]
		if s, ok := op.Value.(*delivery.Step); ok {
			op.Value = *s
		}
		ops = append(ops, op)
	}
	p.order, p.pending, p.stepAdds = nil, map[string]delivery.PatchOp{}, map[string]*delivery.Step{}
	return ops
}

// restore puts ops that could not be sent back in front of anything set
// since, which wins for its path.
func (p *Patcher) restore(ops []delivery.PatchOp) {
	p.mu.Lock()
	defer p.mu.Unlock()
	order, pending := p.order, p.pending
	p.order, p.pending = nil, map[string]delivery.PatchOp{}
	for _, op := range ops {
		key := op.Path
		if op.Path == "/steps/-" {
			s := op.Value.(delivery.Step)
			key = "/steps/-/" + s.ID
			if _, newer := pending[key]; !newer {
				step := s
				p.stepAdds[s.ID] = &step
				op.Value = &step
			}
		}
		if _, newer := pending[key]; newer {
			continue
		}
		p.order = append(p.order, key)
		p.pending[key] = op
	}
	for _, k := range order {
		if _, ok := p.pending[k]; !ok {
			p.order = append(p.order, k)
		}
		p.pending[k] = pending[k]
	}
}

// SendOps sends raw patch operations now, refusing before any request an
// operation on a path the platform does not allow.
func (p *Patcher) SendOps(ctx context.Context, ops []delivery.PatchOp) error {
	if errs := delivery.CheckPatch(ops); errs != nil {
		return &PatchRefusedError{Errors: errs}
	}
	p.sending.Lock()
	defer p.sending.Unlock()
	return p.sendLocked(ctx, ops)
}

// Flush sends what is pending now, whatever the throttle says.
func (p *Patcher) Flush(ctx context.Context) error {
	p.sending.Lock()
	defer p.sending.Unlock()
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return ErrPatcherStopped
	}
	ops := p.take()
	p.mu.Unlock()
	if len(ops) == 0 {
		return nil
	}
	err := p.sendLocked(ctx, ops)
	if err != nil && !errors.Is(err, ErrPatcherStopped) {
		p.restore(ops)
	}
	return err
}

// sendLocked sends ops on the current version, rebasing on conflict;
// p.sending is held.
func (p *Patcher) sendLocked(ctx context.Context, ops []delivery.PatchOp) error {
	attempts := max(p.set.RetryMaxAttempts, 1)
	for round := 1; ; round++ {
		base := p.Version()
		res, err := p.send.PatchRun(ctx, p.runID, delivery.RunPatch{BaseVersion: base, Ops: ops})
		p.mu.Lock()
		p.lastSent = p.clock.Now()
		p.mu.Unlock()
		switch {
		case err == nil:
			p.mu.Lock()
			p.version = max(p.version, res.Version)
			p.mu.Unlock()
			return nil
		case errors.Is(err, ErrBaseVersionConflict) && round < attempts:
			if cur, ok := patchCurrentRun(err); ok {
				p.mu.Lock()
				p.version = cur.Version
				p.mu.Unlock()
				continue
			}
			return err
		case errors.Is(err, ErrRunNotActive) || errors.Is(err, ErrRunInactive):
			p.stop()
			return ErrPatcherStopped
		default:
			return err
		}
	}
}

func (p *Patcher) stop() {
	p.mu.Lock()
	p.stopped = true
	p.order, p.pending, p.stepAdds = nil, map[string]delivery.PatchOp{}, map[string]*delivery.Step{}
	p.mu.Unlock()
}

// loop sends what is set, at most once per Settings.RunUpdateMinInterval,
// until ctx ends; a failed send is tried again at the next change or
// interval.
func (p *Patcher) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.dirty:
		}
		p.mu.Lock()
		wait := p.set.RunUpdateMinInterval - p.clock.Now().Sub(p.lastSent)
		p.mu.Unlock()
		if wait > 0 && p.clock.Sleep(ctx, wait) != nil {
			return
		}
		if err := p.Flush(p.ctx); err != nil {
			if errors.Is(err, ErrPatcherStopped) {
				return
			}
			p.log.Warn("adapter: sending a run's progress failed; trying again", "run_id", p.runID, "err", err)
			if p.clock.Sleep(ctx, p.set.RunUpdateMinInterval) != nil {
				return
			}
			p.wake()
		}
	}
}

// patchCurrentRun is the run a base_version_conflict carried, from the
// client's problem or a gateway's error frame.
func patchCurrentRun(err error) (delivery.Run, bool) {
	var c interface{ CurrentRun() (delivery.Run, bool) }
	if errors.As(err, &c) {
		return c.CurrentRun()
	}
	return delivery.Run{}, false
}
