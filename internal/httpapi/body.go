package httpapi

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// ErrOverloaded is what reading a chunked request body returns once the
// in-flight byte budget cannot hold what it has read; the Guard then
// answers 503 in place of the handler, if the handler has not answered yet.
var ErrOverloaded = errors.New("httpapi: too many request bytes in flight")

// budget counts the request body bytes admitted at once.
type budget struct {
	max  int64
	used atomic.Int64
}

// acquire admits n bytes if they fit.
func (b *budget) acquire(n int64) bool {
	for {
		u := b.used.Load()
		if n > b.max-u {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *budget) release(n int64) { b.used.Add(-n) }

// deadlineSetter is what sets a request's read deadline: net/http's own
// ResponseWriter has the method, and http.ResponseController reaches it
// through wrappers that Unwrap.
type deadlineSetter interface {
	SetReadDeadline(time.Time) error
}

// readDeadline finds w's read deadline setter without allocating for
// net/http's own writer; nil when w has none.
func readDeadline(w http.ResponseWriter) deadlineSetter {
	if d, ok := w.(deadlineSetter); ok {
		return d
	}
	if _, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
		return http.NewResponseController(w)
	}
	return nil
}

// deadlineStep is how far beyond what the minimum rate allows the read
// deadline is moved when it must move, so a body costs a deadline change a
// second at most, not one per read; a sender gains at most this much.
const deadlineStep = time.Second

// body wraps a request body: it keeps the connection's read deadline at
// the start of the request plus the longer of the body timeout and the
// time the bytes read so far may take at the minimum rate, lifts the
// deadline once the body is read (so a response stream is not cut), and
// holds the body's share of the budget until its handler returns.
type body struct {
	rc       io.ReadCloser
	ctl      deadlineSetter // nil: no deadlines
	start    time.Time
	timeout  time.Duration
	rate     int64
	deadline time.Time
	n        int64

	budget *budget // nil: no budget
	factor int64   // Limits.HoldFactor
	// counted: a chunked body, each read admitted against the budget.
	counted bool
	// held is what the request holds of the budget: factor times its
	// Content-Length from the start, or times what a chunked body has
	// read. A handler may read on another goroutine than the one that
	// returns, hence atomics.
	held  atomic.Int64
	freed atomic.Bool
	// tripped is read by the writer, which a handler may use from another
	// goroutine than the one reading the body.
	tripped atomic.Pointer[trip]
}

// trip is why a chunked body stopped being read: what Read returns, and
// what the Guard answers in place of the handler.
type trip struct {
	err     error
	refusal *refusal
}

// overloaded: the budget is full. tooLarge: the body alone is bigger than
// the whole budget, so retrying cannot help.
var (
	overloaded = &trip{err: ErrOverloaded, refusal: refuseBytes}
	tooLarge   = &trip{refusal: refuseTooLarge}
)

func (b *body) Read(p []byte) (int, error) {
	if t := b.tripped.Load(); t != nil {
		return 0, t.readErr(b.budget.max / b.factor)
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if b.counted && n > 0 {
		share := int64(n) * b.factor
		t := overloaded
		if share > b.budget.max-b.held.Load() {
			t = tooLarge
		}
		if t == tooLarge || !b.budget.acquire(share) {
			b.tripped.Store(t)
			return 0, t.readErr(b.budget.max / b.factor)
		}
		b.held.Add(share)
		if b.freed.Load() {
			// Read after its handler returned: give back what it took.
			b.budget.release(b.held.Swap(0))
		}
	}
	switch {
	case err == io.EOF:
		b.lift()
	case err == nil && b.ctl != nil && b.rate > 0:
		b.extend()
	}
	return n, err
}

// readErr is what a read of a tripped body returns: a too-large body says
// so as net/http's MaxBytesError, which handlers already answer as 413.
func (t *trip) readErr(limit int64) error {
	if t.err != nil {
		return t.err
	}
	return &http.MaxBytesError{Limit: limit}
}

func (b *body) Close() error { return b.rc.Close() }

// free gives the request's share of the budget back, once, when its
// handler returns.
func (b *body) free() {
	if b.budget != nil && b.freed.CompareAndSwap(false, true) {
		b.budget.release(b.held.Swap(0))
	}
}

// extend moves the deadline to what the minimum rate allows for the bytes
// read so far, when that is well past the current one.
func (b *body) extend() {
	d := time.Duration(b.n/b.rate)*time.Second + time.Duration(b.n%b.rate)*time.Second/time.Duration(b.rate)
	if d <= b.timeout {
		return
	}
	want := b.start.Add(d)
	if !want.After(b.deadline) {
		return
	}
	// A step ahead, so the next second of reads leaves the deadline alone.
	want = want.Add(deadlineStep)
	if b.ctl.SetReadDeadline(want) == nil {
		b.deadline = want
	}
}

// lift clears the read deadline: the body is read, and what follows on
// this connection is net/http's own business (its background read, which
// a deadline would turn into a cancelled request, and then keep-alive).
// net/http clears it too when it starts that read; doing it here keeps
// streams safe without depending on that.
func (b *body) lift() {
	if b.ctl != nil {
		_ = b.ctl.SetReadDeadline(time.Time{})
		b.ctl = nil
	}
}

// budgetWriter stands between a handler and the connection while a
// chunked body is read against the budget: once the budget trips, and if
// the handler has written nothing before that, what it writes is dropped so
// the Guard can answer 503 (or 413) instead.
type budgetWriter struct {
	http.ResponseWriter
	b       *body
	wrote   bool // something reached the connection
	dropped bool
}

func (w *budgetWriter) WriteHeader(code int) {
	if w.b.tripped.Load() != nil && !w.wrote {
		w.dropped = true
		return
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *budgetWriter) Write(p []byte) (int, error) {
	if w.b.tripped.Load() != nil && !w.wrote {
		w.dropped = true
		return len(p), nil
	}
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

func (w *budgetWriter) Flush() {
	if w.b.tripped.Load() != nil && !w.wrote {
		return
	}
	w.wrote = true
	// net/http's own writer is a Flusher; the controller only for a
	// wrapper that reaches one through Unwrap.
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *budgetWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
