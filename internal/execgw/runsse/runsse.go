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
	// Frames go straight to the ResponseWriter, whose own buffer is
	// enough: a second one would cost 4 KiB per open stream.
	rc := http.NewResponseController(w)
	flush := func() error {
		_ = rc.SetWriteDeadline(time.Now().Add(o.WriteTimeout))
		return rc.Flush()
	}
	if flush() != nil {
		return
	}
	var frame []byte
	ctx := r.Context()
	keepAlive := time.NewTicker(o.KeepAlive)
	defer keepAlive.Stop()
	for {
		events, err := src.Events(ctx, after, Page)
		if err != nil {
			if ctx.Err() == nil && o.OnError != nil {
				o.OnError(err)
			}
			return
		}
		for _, e := range events {
			var err error
			if frame, err = AppendFrame(frame[:0], e); err != nil {
				return
			}
			if _, err := w.Write(frame); err != nil {
				return
			}
			after = e.Sequence
			if e.Type == gateway.EventDone || e.Type == gateway.EventError {
				_ = flush()
				return
			}
		}
		if len(events) > 0 {
			if flush() != nil {
				return
			}
			if len(events) == Page {
				continue
			}
		} else if ended, err := src.Ended(ctx, after); err != nil || ended {
			return // the stream already said how the run ended
		}
		select {
		case <-o.Wake:
		case <-keepAlive.C:
			if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil || flush() != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-o.Closing:
			return
		}
	}
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
