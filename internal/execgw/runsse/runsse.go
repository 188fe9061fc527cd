// Package runsse streams a run's events to a client as server-sent events.
//
// The gateway's event API and its runs page send the same frames the same
// way: every event after a cursor read from the store, then each new one
// as the gateway hears of it, until the run's stream ends (done or error),
// the client goes, or the server stops. A frame is
//
//	id: <sequence>
//	event: message
//	data: {"type", "payload", "run_id", "sequence", "timestamp"}
//
// and an idle stream gets ": keepalive" comments. A client that reads
// nothing for WriteTimeout is dropped, so it cannot hold a goroutine and
// its buffers for ever.
package runsse

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"novaos.dev/novaos/gateway"
)

// Page is how many events one read of the store brings.
const Page = 256

// DefaultWriteTimeout bounds one write to a stream.
const DefaultWriteTimeout = 30 * time.Second

// Source is where a stream reads one run's events.
type Source interface {
	// Events returns up to limit events after the sequence after.
	Events(ctx context.Context, after int64, limit int) ([]gateway.Event, error)
	// Ended reports whether the run has ended with no event after the
	// given one: a follower caught up with it has nothing to wait for.
	Ended(ctx context.Context, after int64) (bool, error)
}

// Options are a stream's timing and signals.
type Options struct {
	// KeepAlive is the interval of keep-alive comments.
	KeepAlive time.Duration
	// WriteTimeout bounds one write (default DefaultWriteTimeout).
	WriteTimeout time.Duration
	// Wake receives a value when the run may have new events; Closing is
	// closed when the server stops.
	Wake    <-chan struct{}
	Closing <-chan struct{}
	// OnError hears of a failed read of the source, while the client is
	// still there; nil ignores it.
	OnError func(error)
}

// ParseCursor reads an event id a stream issued for a run whose last
// sequence is last: a decimal integer, written as the stream writes it,
// no greater than last. "" is the start.
func ParseCursor(v string, last int64) (int64, bool) {
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > last || strconv.FormatInt(n, 10) != v {
		return 0, false
	}
	return n, true
}

// Stream writes the events of src after the sequence after to w as SSE,
// then follows the run until its stream ends, the client goes or the
// server stops. The caller has checked who asks and the cursor.
func Stream(w http.ResponseWriter, r *http.Request, src Source, after int64, o Options) {
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The work is done by methods of st, so that what stays on the stack
	// of a stream resting between events is small: the runtime halves a
	// goroutine's stack only when less than a quarter of it is in use,
	// and a thousand idle streams would otherwise keep 16 KiB each.
	st := &stream{w: w, rc: http.NewResponseController(w), src: src, o: &o, after: after}
	if st.flush() != nil {
		return
	}
	ctx := r.Context()
	keepAlive := time.NewTicker(o.KeepAlive)
	defer keepAlive.Stop()
	for {
		switch st.send(ctx) {
		case stop:
			return
		case again:
			continue
		}
		select {
		case <-o.Wake:
		case <-keepAlive.C:
			if st.keepAlive() != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-o.Closing:
			return
		}
	}
}

// stream is an open stream's state.
type stream struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	src   Source
	o     *Options
	after int64  // the last sequence sent
	frame []byte // reused for each frame
}

// What a stream does after a send.
const (
	wait  = iota // for news of the run
	again        // read again at once: a full page came
	stop         // the stream is over
)

// send writes the events after st.after and says what comes next.
func (st *stream) send(ctx context.Context) int {
	events, err := st.src.Events(ctx, st.after, Page)
	if err != nil {
		if ctx.Err() == nil && st.o.OnError != nil {
			st.o.OnError(err)
		}
		return stop
	}
	for i := range events {
		e := &events[i]
		if st.frame, err = AppendFrame(st.frame[:0], *e); err != nil {
			return stop
		}
		if _, err := st.w.Write(st.frame); err != nil {
			return stop
		}
		st.after = e.Sequence
		if e.Type == gateway.EventDone || e.Type == gateway.EventError {
			_ = st.flush()
			return stop
		}
	}
	switch {
	case len(events) > 0:
		if st.flush() != nil {
			return stop
		}
		if len(events) == Page {
			return again
		}
	default:
		if ended, err := st.src.Ended(ctx, st.after); err != nil || ended {
			return stop // the stream already said how the run ended
		}
	}
	return wait
}

func (st *stream) flush() error {
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.o.WriteTimeout))
	return st.rc.Flush()
}

func (st *stream) keepAlive() error {
	if _, err := io.WriteString(st.w, ": keepalive\n\n"); err != nil {
		return err
	}
	return st.flush()
}

// AppendFrame appends one event as an SSE frame to b.
func AppendFrame(b []byte, e gateway.Event) ([]byte, error) {
	data, err := json.Marshal(e.Frame())
	if err != nil {
		return b, fmt.Errorf("runsse: encode event %d of run %s: %w", e.Sequence, e.RunID, err)
	}
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, e.Sequence, 10)
	b = append(b, "\nevent: "+gateway.SSEEventName+"\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...), nil
}
