package a2asrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
)

// RecoveryVersionGap is how far a settling write moves a task's version past
// the stored one. Versions double as stream sequence numbers, and a process
// that coalesces writes may have streamed versions it never stored before it
// died; the gap puts the settled version beyond any number a client can have
// seen, so a client comparing sequence numbers never takes the settling
// frame for one it already has. Chunk coalescing must therefore leave fewer
// than this many versions unstored.
const RecoveryVersionGap Version = 1 << 20

// Texts of the status message a settled task carries (also appended to its
// history). They are stable so that clients and tests can recognise them.
const (
	RestartedText = "the server restarted while this task was running; it was not resumed"
	ShutdownText  = "the server shut down while this task was running; it was not resumed"
)

// OrphanStates are the states in which a task waits for a process: nothing
// but its execution moves it on. A task left in one of them by a process that
// is gone is an orphan. Interrupted tasks (INPUT_REQUIRED, AUTH_REQUIRED) wait
// for the user instead and are never settled.
func OrphanStates() []a2a.TaskState {
	return []a2a.TaskState{a2a.TaskStateUnspecified, a2a.TaskStateSubmitted, a2a.TaskStateWorking}
}

// Orphan is a task whose last writer is gone, as a Recoverer found it.
type Orphan struct {
	Scope   Scope
	Task    *a2a.Task
	Version Version
}

// Recoverer is the store side of crash recovery. A store that can tell which
// process last wrote a task, and whether that process still lives (a lease
// it renews), implements it next to its TaskStore; Recover uses it to settle
// what dead processes left running. Implementations must be safe for
// concurrent use by several processes on one database.
type Recoverer interface {
	// Orphans returns the tasks in one of OrphanStates whose last writer's
	// lease has expired or who has none (written before leases, or by a
	// process that shut down), among the first limit such rows whose ids
	// sort after after (byte order; "" starts at the beginning), in id
	// order. A row the store cannot read back is left out, logged by the
	// store, and still counted, so a page of such rows never hides those
	// behind it. next is the id to pass as after for the following page,
	// or "" when no row is left.
	Orphans(ctx context.Context, after string, limit int) (found []Orphan, next string, err error)
	// Settle replaces an orphan with t, at version prev+RecoveryVersionGap,
	// recording the calling process as its writer, if the task is still at
	// prev and its writer's lease is still expired. Otherwise it changes
	// nothing and returns ErrConcurrentModification (someone else wrote or
	// settled it, or its writer turned out to be alive), or ErrNotFound.
	Settle(ctx context.Context, scope Scope, t *a2a.Task, prev Version) (Version, error)
}

// RecoverOptions tune Recover; nil means the defaults.
type RecoverOptions struct {
	// BatchSize is how many orphans are read at a time (default 100).
	BatchSize int
	// Workers is how many settling writes run at once (default 8), so a
	// store that commits concurrent writes together pays one commit for
	// many orphans.
	Workers int
	Logger  *slog.Logger
	// Now and NewID make the settled tasks reproducible in tests.
	Now   func() time.Time
	NewID func() string
}

// Recover settles every orphan r reports: each becomes FAILED with an agent
// status message saying the server restarted while it ran (RestartedText),
// appended to its history as any status write is, at a version
// RecoveryVersionGap past the stored one. Orphans are not re-run: an
// executor may have had side effects before the crash, and only the agent
// could say whether repeating them is safe. An orphan another process settles
// or writes first is skipped. Recover walks every orphan once: one that
// cannot be settled is logged and passed over (the first such error is
// returned after the walk), and only a failing Orphans read or the end of
// ctx stops it early. Recover returns how many tasks it settled.
func Recover(ctx context.Context, r Recoverer, opts *RecoverOptions) (int, error) {
	var o RecoverOptions
	if opts != nil {
		o = *opts
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 100
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.Logger == nil {
		o.Logger = discardLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = a2a.NewID
	}
	// One walk in id order visits every orphan once: an orphan that
	// cannot be settled is passed over, not read again, so however many
	// there are, they never stand between Recover and the ones behind.
	total, after := 0, ""
	var firstErr error
	for {
		orphans, next, err := r.Orphans(ctx, after, o.BatchSize)
		if err != nil {
			return total, fmt.Errorf("a2asrv: recover: %w", err)
		}
		n, err := settleAll(ctx, r, orphans, &o)
		total += n
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			return total, fmt.Errorf("a2asrv: recover: %w", context.Cause(ctx))
		}
		if next == "" {
			return total, firstErr
		}
		after = next
	}
}

func settleAll(ctx context.Context, r Recoverer, orphans []Orphan, o *RecoverOptions) (int, error) {
	var (
		mu       sync.Mutex
		settled  int
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, o.Workers)
	for _, orph := range orphans {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			t := orph.Task.Clone()
			settleTask(t, RestartedText, o.Now().UTC().Truncate(time.Millisecond), o.NewID())
			_, err := r.Settle(ctx, orph.Scope, t, orph.Version)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				settled++
				o.Logger.DebugContext(ctx, "a2asrv: settled a task left running by a dead process",
					"task_id", t.ID, "version", orph.Version+RecoveryVersionGap)
			case errors.Is(err, ErrConcurrentModification) || errors.Is(err, ErrNotFound):
				// Another process got there first, or the task moved on.
			case ctx.Err() != nil:
				// The sweep was cut short; Recover says so once.
			default:
				// Passed over until the next sweep; Recover reports the
				// first such failure once it has walked every orphan.
				o.Logger.WarnContext(ctx, "a2asrv: could not settle a task left running by a dead process",
					"task_id", t.ID, "err", err)
				if firstErr == nil {
					firstErr = fmt.Errorf("a2asrv: recover task %s: %w", t.ID, err)
				}
			}
		})
	}
	wg.Wait()
	return settled, firstErr
}

// settleTask makes t FAILED with an agent message saying why, appended to
// the history as UpdateStatus appends a status message.
func settleTask(t *a2a.Task, text string, now time.Time, msgID string) {
	msg := a2a.Message{
		MessageID: msgID, Role: a2a.RoleAgent, TaskID: t.ID, ContextID: t.ContextID,
		Parts: []a2a.Part{a2a.TextPart(text)},
	}
	t.Status = a2a.TaskStatus{State: a2a.TaskStateFailed, Message: &msg, Timestamp: now}
	t.History = append(t.History, msg)
}

// CodeShuttingDown is the JSON-RPC code of the answer a call still waiting
// for its task gets when Shutdown's grace period ends (internal error, as the
// spec has no code of its own for it). The error's ErrorInfo metadata names
// the task ("taskId") and the state it was left in ("state").
const CodeShuttingDown = a2a.CodeInternalError

// cutoff coordinates Shutdown with the calls still waiting on a task when
// the grace period ends: SendMessage blocked on its execution, and streams.
// Shutdown closes cut, revokes and settles the executions, closes settled,
// and waits until every waiting call has written its error; only then may
// the HTTP server cut connections, so nobody gets an empty reply. The zero
// value is ready to use.
type cutoff struct {
	once    sync.Once
	cutOnce sync.Once
	cut     chan struct{}
	settled chan struct{}

	mu      sync.Mutex
	waiting int
	idle    chan struct{} // set by wait, closed when waiting drops to zero
}

func (c *cutoff) init() {
	c.once.Do(func() {
		c.cut = make(chan struct{})
		c.settled = make(chan struct{})
	})
}

// cutC is closed when the grace period has ended.
func (c *cutoff) cutC() <-chan struct{} {
	c.init()
	return c.cut
}

func (c *cutoff) isCut() bool {
	select {
	case <-c.cutC():
		return true
	default:
		return false
	}
}

// enter counts a waiting call; the returned func uncounts it.
func (c *cutoff) enter() func() {
	c.mu.Lock()
	c.waiting++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.waiting--
		if c.waiting == 0 && c.idle != nil {
			close(c.idle)
			c.idle = nil
		}
	}
}

// wait returns once no call is waiting, or after limit.
func (c *cutoff) wait(limit time.Duration) {
	c.mu.Lock()
	if c.waiting == 0 {
		c.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	c.idle = idle
	c.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

// cutExecutions is Shutdown's last step once its grace period is over: the
// calls still waiting are told to answer, the executions still running are
// revoked and cancelled (cause ErrShutdown), their tasks are settled FAILED
// (ShutdownText), and the waiting calls then write their errors, which
// cutExecutions waits for (at most a few seconds).
func (x *executions) cutExecutions() {
	x.shut.init()
	x.shut.cutOnce.Do(x.cutOnce)
}

func (x *executions) cutOnce() {
	c := &x.shut
	close(c.cut)
	var cut []*execution
	for _, hb := range x.hubs.all() {
		hb.mu.Lock()
		if e := hb.exec; e != nil {
			e.upd.revoked = true
			e.cancel(ErrShutdown)
			cut = append(cut, e)
		}
		hb.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, e := range cut {
		x.settleCut(ctx, e)
	}
	close(c.settled)
	c.wait(5 * time.Second)
}

var errAlreadyFinal = errors.New("a2asrv: task is already final")

// settleCut records FAILED for the task of an execution cut by Shutdown,
// through the hub like any write (so its version follows the last one
// streamed), unless the task is final already or was never stored.
func (x *executions) settleCut(ctx context.Context, e *execution) {
	u, hb := e.upd, e.upd.hub
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if !u.created || u.replied {
		return
	}
	_, err := hb.applyLocked(ctx, func(t *a2a.Task) (*a2a.StreamResponse, error) {
		if t.Status.State.Final() {
			return nil, errAlreadyFinal
		}
		settleTask(t, ShutdownText, x.clock.now(), x.clock.newID())
		return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
			TaskID: t.ID, ContextID: t.ContextID, Status: t.Status,
		}}, nil
	})
	if err != nil && !errors.Is(err, errAlreadyFinal) {
		x.log.ErrorContext(ctx, "a2asrv: settle a task cut by shutdown", "task_id", hb.id, "err", err)
	}
}

// cutError is what a call waiting on hb's task answers once Shutdown has cut
// it off. It waits for the settling writes, so the state it names is the one
// the task was left in.
func (x *executions) cutError(hb *hub) *a2a.Error {
	c := &x.shut
	c.init()
	<-c.settled
	hb.mu.Lock()
	t := hb.task
	hb.mu.Unlock()
	e := a2a.NewError(CodeShuttingDown, "server shutting down before the task's outcome was stored")
	e.Metadata = map[string]string{"taskId": hb.id}
	if t != nil {
		e.Message = "server shutting down; the task was left in state " + t.Status.State.String()
		e.Metadata["state"] = t.Status.State.String()
	}
	return e
}
