package a2aclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"time"

	"novaos.dev/novaos/a2a"
)

// SendStreamingMessage sends a message and streams the agent's updates (A2A
// SendStreamingMessage). The iterator yields each frame as it arrives and
// ends after the frame that ends the task's run (a message, or a task or
// status update in a terminal or interrupted state).
//
// A stream that closes before such a frame is resumed with SubscribeToTask
// (Options.ResumeAttempts, capped exponential backoff). Frames carry the
// task's sequence number as their SSE id; frames at or below the last
// sequence seen are skipped on a resumed stream, and its opening Task
// snapshot is yielded only when it is newer than the last frame seen (it
// then carries whatever was missed). A task that ended while disconnected
// (SubscribeToTask refused with UnsupportedOperation) is fetched with
// GetTask and yielded as a final Task frame. When the stream cannot be
// resumed the iterator yields an error matching ErrStreamIncomplete: a
// stream is never a silent success.
//
// A JSON-RPC error, before the stream (plain JSON or one SSE error event)
// or inside it, is yielded as a *CallError and ends the iteration.
//
// No stream is opened when the card says capabilities.streaming is false,
// or Options.DisableStreaming is set: the message goes by SendMessage and
// its answer (the task, or a message) is yielded as the one frame, or its
// error as the one error, so the caller's loop is the same either way;
// like a stream, that call is bounded by ctx and WithTimeout only, and
// interceptors see it as the SendMessage call it is. A
// card that does not state the capability, and a client without a card,
// stream.
func (c *Client) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest, opts ...CallOption) iter.Seq2[*a2a.StreamResponse, error] {
	if !c.streams() {
		return func(yield func(*a2a.StreamResponse, error) bool) {
			// As a stream is, the call is bounded by its context (or
			// the caller's WithTimeout) only, not by Options.Timeout.
			res, err := c.SendMessage(ctx, req, append([]CallOption{WithTimeout(-1)}, opts...)...)
			if err != nil {
				yield(nil, err)
				return
			}
			yield(&a2a.StreamResponse{Task: res.Task, Message: res.Message}, nil)
		}
	}
	r := *withSkill(req, opts)
	if r.Tenant == "" {
		r.Tenant = c.tenant
	}
	return c.stream(ctx, a2a.MethodSendStreamingMessage, &r, "", r.Tenant, opts)
}

// streams reports whether SendStreamingMessage opens a stream: unless
// the caller turned streaming off or the card says the agent has none.
func (c *Client) streams() bool {
	if c.opts.DisableStreaming {
		return false
	}
	return c.card == nil || c.card.Capabilities.Streaming == nil || *c.card.Capabilities.Streaming
}

// SubscribeToTask follows a task's updates (A2A SubscribeToTask), starting
// with its current state, with the same resumption and terminality rules as
// SendStreamingMessage.
func (c *Client) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest, opts ...CallOption) iter.Seq2[*a2a.StreamResponse, error] {
	r := *req
	if r.Tenant == "" {
		r.Tenant = c.tenant
	}
	return c.stream(ctx, a2a.MethodSubscribeToTask, &r, r.ID, r.Tenant, opts)
}

// streamState is what a stream remembers across reconnections.
type streamState struct {
	taskID  string
	lastSeq int64
	done    bool // a final frame was yielded
}

func (c *Client) stream(ctx context.Context, method string, params any, taskID, tenant string, opts []CallOption) iter.Seq2[*a2a.StreamResponse, error] {
	return func(yield func(*a2a.StreamResponse, error) bool) {
		cfg := c.config(opts, true)
		if cfg.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
			defer cancel()
		}
		st := &streamState{taskID: taskID}
		resumed := false
		attempt := 0
		backoff := c.opts.ResumeBackoff
		for {
			m, p := method, params
			if resumed {
				m, p = a2a.MethodSubscribeToTask, &a2a.SubscribeToTaskRequest{Tenant: tenant, ID: st.taskID}
			}
			progressed, stop, err := c.connect(ctx, m, p, &cfg, st, resumed, yield)
			if stop {
				return
			}
			if st.done {
				return
			}
			if err == nil {
				err = ErrStreamIncomplete
			}
			var ce *CallError
			var perm permanent
			var he *HTTPError
			refused := errors.As(err, &he) && he.StatusCode/100 == 4 // 401, 404, 429…: resuming will not help
			retryable := !errors.As(err, &ce) && !errors.As(err, &perm) && !refused && !errors.Is(err, ErrResponseTooLarge) && !errors.Is(err, ErrInvalidResponse) && ctx.Err() == nil
			if resumed && errors.As(err, &ce) && errors.Is(ce.Err, a2a.ErrUnsupportedOperation) {
				// The task ended while we were away: its final state is
				// what was missed.
				c.finishFromTask(ctx, st, tenant, &cfg, yield)
				return
			}
			if !retryable || st.taskID == "" || c.opts.ResumeAttempts < 0 {
				if errors.As(err, &perm) {
					err = perm.err
				} else if !errors.Is(err, ErrStreamIncomplete) && !errors.As(err, &ce) && ctx.Err() == nil {
					err = fmt.Errorf("%w: %w", ErrStreamIncomplete, err)
				}
				c.yieldErr(ctx, m, &cfg, err, yield)
				return
			}
			if progressed {
				attempt, backoff = 0, c.opts.ResumeBackoff
			}
			attempt++
			if attempt > c.opts.ResumeAttempts {
				c.yieldErr(ctx, m, &cfg, fmt.Errorf("%w after %d resume attempts: %w", ErrStreamIncomplete, c.opts.ResumeAttempts, err), yield)
				return
			}
			c.opts.Logger.DebugContext(ctx, "a2aclient: resuming stream", "task", st.taskID, "attempt", attempt, "after", backoff, "err", err)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				c.yieldErr(ctx, m, &cfg, fmt.Errorf("a2aclient: %s: %w", m, context.Cause(ctx)), yield)
				return
			case <-t.C:
			}
			backoff = min(backoff*2, c.opts.ResumeMaxBackoff)
			resumed = true
		}
	}
}

// yieldErr reports a stream failure through the interceptors.
func (c *Client) yieldErr(ctx context.Context, method string, cfg *callConfig, err error, yield func(*a2a.StreamResponse, error) bool) {
	if len(c.opts.Interceptors) > 0 {
		call := &Call{Method: method, Card: c.card, Binding: c.iface.ProtocolBinding, SessionID: cfg.session, Header: http.Header{}}
		err = c.after(ctx, call, nil, err)
	}
	if err != nil {
		yield(nil, err)
	}
}

// finishFromTask yields the task's current state as the final frame.
func (c *Client) finishFromTask(ctx context.Context, st *streamState, tenant string, cfg *callConfig, yield func(*a2a.StreamResponse, error) bool) {
	opts := []CallOption{WithSession(cfg.session), func(o *callConfig) { o.header, o.extensions = cfg.header, cfg.extensions }}
	t, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: st.taskID, Tenant: tenant}, opts...)
	if err != nil {
		yield(nil, fmt.Errorf("%w: %w", ErrStreamIncomplete, err))
		return
	}
	f := &a2a.StreamResponse{Task: t}
	if !f.Final() {
		yield(nil, fmt.Errorf("%w: task %s is %v", ErrStreamIncomplete, t.ID, t.Status.State))
		return
	}
	st.done = true
	yield(f, nil)
}

// connect opens one stream and yields its frames. progressed reports
// whether any new frame arrived; stop that the consumer stopped or a final
// frame was yielded; err why the connection ended early (nil for a clean
// close without a final frame).
func (c *Client) connect(ctx context.Context, method string, params any, cfg *callConfig, st *streamState, resumed bool, yield func(*a2a.StreamResponse, error) bool) (progressed, stop bool, err error) {
	var activity func()
	if c.opts.StreamIdleTimeout > 0 {
		// A connection that stays silent (no frame, no keep-alive) for
		// the idle timeout is dropped, and the stream resumed.
		connCtx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		t := time.AfterFunc(c.opts.StreamIdleTimeout, func() { cancel(errIdle) })
		defer t.Stop()
		ctx = connCtx
		activity = func() { t.Reset(c.opts.StreamIdleTimeout) }
	}
	call, ctx, err := c.prepare(ctx, method, params, cfg)
	if err != nil {
		return false, false, permanent{err}
	}
	if len(c.opts.Interceptors) > 0 {
		defer func() { c.finish(ctx, call, err) }()
	}
	fs, err := c.tr.Stream(ctx, call, activity)
	if err != nil {
		return false, false, err
	}
	defer fs.Close()
	floor := st.lastSeq
	if !resumed {
		floor = 0
	}
	frames := 0
	for {
		f, seq, err := fs.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return progressed, false, nil
			}
			return progressed, false, err
		}
		if seq > 0 {
			if seq <= floor {
				frames++
				continue // seen before the reconnection
			}
			st.lastSeq = max(st.lastSeq, seq)
		}
		// The opening snapshot of a resumed stream is not progress: a
		// server that drops every stream right after it must not keep the
		// client resuming forever.
		if !resumed || f.Task == nil || frames > 0 {
			progressed = true
		}
		frames++
		if len(c.opts.Interceptors) > 0 {
			if err := c.after(ctx, call, f, nil); err != nil {
				yield(nil, err)
				return progressed, true, err // stop: the stream reads no further
			}
		}
		if st.taskID == "" {
			st.taskID = f.TaskID()
		}
		if f.Final() {
			st.done = true
		}
		if !yield(f, nil) || st.done {
			return progressed, true, nil
		}
	}
}

// permanent marks an error a resumption cannot fix (an interceptor or auth
// provider refused the call).
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// errIdle ends a stream connection that stayed silent too long.
var errIdle = errors.New("a2aclient: stream idle timeout")
