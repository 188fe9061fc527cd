package platformtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/delivery"
)

// Fault is a way a platform call goes wrong, injected with
// FakeServer.Inject.
type Fault struct {
	kind  faultKind
	delay time.Duration
}

type faultKind int

const (
	faultStoredThen502 faultKind = iota + 1
	faultStoredLate
	faultRateLimited
	faultDisconnect
)

// StoredThen502 serves the request (it is stored) and then answers 502,
// as a proxy whose upstream answered too late: the client must try again
// without the platform storing it twice.
func StoredThen502() Fault { return Fault{kind: faultStoredThen502} }

// StoredLate holds the request for delay, in real time, and then serves
// it: a client that gave up and tried again meets its own first try
// still being answered.
func StoredLate(delay time.Duration) Fault { return Fault{kind: faultStoredLate, delay: delay} }

// RateLimited answers 429 rate_limited with Retry-After (whole seconds,
// at least 1) and serves nothing.
func RateLimited(retryAfter time.Duration) Fault {
	return Fault{kind: faultRateLimited, delay: retryAfter}
}

// Disconnect drops the connection without an answer and serves nothing.
func Disconnect() Fault { return Fault{kind: faultDisconnect} }

// Kind names the fault without its delay: stored_then_502, stored_late,
// rate_limited or disconnect.
func (f Fault) Kind() string {
	switch f.kind {
	case faultStoredThen502:
		return "stored_then_502"
	case faultStoredLate:
		return "stored_late"
	case faultRateLimited:
		return "rate_limited"
	case faultDisconnect:
		return "disconnect"
	}
	return "none"
}

func (f Fault) String() string {
	switch f.kind {
	case faultStoredThen502:
		return "stored_then_502"
	case faultStoredLate:
		return "stored_late(" + f.delay.String() + ")"
	case faultRateLimited:
		return "rate_limited(" + f.delay.String() + ")"
	case faultDisconnect:
		return "disconnect"
	}
	return "no fault"
}

// The targets of the gateway's faults, besides the operation ids of the
// REST API: the WebSocket upgrade request, and each frame of an op.
const GatewayUpgrade = "gateway"

// GatewayFrame is the target of the gateway frames of op (a
// delivery.Op* value, sent by either side). A frame's fault acts on its
// connection: Disconnect drops the connection instead of passing the
// frame on; StoredThen502 passes the frame on and then drops the
// connection (what was said arrived, the connection broke after);
// StoredLate holds the frame for the delay; RateLimited closes the
// connection with 4008 rate_limited and the retry-after in its reason,
// in place of the frame.
func GatewayFrame(op string) string { return "gateway." + op }

// faults holds the faults injected per target (an operation id, such as
// "startRun", or a gateway target), each for a number of requests or
// frames.
type faults struct {
	mu      sync.Mutex
	pending map[string][]Fault
	fired   map[string]int
	kinds   map[string]int // fired, by Fault.Kind
	seen    []Request
}

// Request is a request the platform received: its operation, path, and
// the fingerprint of the Invocation-Token it carried ("none" without).
type Request struct {
	Operation string
	Path      string
	Token     string
	// Status is the answer's status; 0 while it is being answered, or
	// when a fault dropped the connection.
	Status int
}

// record logs a request; the function it returns logs its answer.
func (fs *faults) record(r *http.Request, op string) func(status int) {
	fs.mu.Lock()
	i := len(fs.seen)
	fs.seen = append(fs.seen, Request{Operation: op, Path: r.URL.Path, Token: Fingerprint(r.Header.Get(delivery.InvocationTokenHeader))})
	fs.mu.Unlock()
	return func(status int) {
		fs.mu.Lock()
		fs.seen[i].Status = status
		fs.mu.Unlock()
	}
}

// statusWriter notes the status a handler answers with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (fs *faults) requests() []Request {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]Request(nil), fs.seen...)
}

func (fs *faults) inject(target string, f Fault, times int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.init()
	for range times {
		fs.pending[target] = append(fs.pending[target], f)
	}
}

// init makes the maps; fs.mu is held.
func (fs *faults) init() {
	if fs.pending == nil {
		fs.pending, fs.fired, fs.kinds = map[string][]Fault{}, map[string]int{}, map[string]int{}
	}
}

// take returns the next fault for target, if one is pending.
func (fs *faults) take(target string) (Fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	q := fs.pending[target]
	if len(q) == 0 {
		return Fault{}, false
	}
	fs.pending[target] = q[1:]
	fs.fired[target]++
	fs.kinds[q[0].Kind()]++
	return q[0], true
}

// firedCount is how many faults fired for target.
func (fs *faults) firedCount(target string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.fired[target]
}

// pendingCount is how many faults wait for target.
func (fs *faults) pendingCount(target string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.pending[target])
}

// firedKinds is how many faults fired, by kind.
func (fs *faults) firedKinds() map[string]int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make(map[string]int, len(fs.kinds))
	for k, n := range fs.kinds {
		out[k] = n
	}
	return out
}

// clear drops the faults still pending.
func (fs *faults) clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	clear(fs.pending)
}

// operationOf names the operation a request is for, from delivery.Routes,
// or GatewayUpgrade.
func operationOf(r *http.Request) string {
	if r.Method == http.MethodGet && r.URL.Path == delivery.GatewayPath {
		return GatewayUpgrade
	}
	for _, rt := range delivery.Routes {
		if rt.Method == r.Method && matchTemplate(rt.Template, r.URL.Path) {
			return rt.OperationID
		}
	}
	return ""
}

func matchTemplate(tmpl, path string) bool {
	ts, ps := strings.Split(tmpl, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i, t := range ts {
		if strings.HasPrefix(t, "{") {
			if ps[i] == "" {
				return false
			}
			continue
		}
		if t != ps[i] {
			return false
		}
	}
	return true
}

// wrap puts the injected faults in front of next.
func (fs *faults) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := operationOf(r)
		answered := fs.record(r, op)
		sw := &statusWriter{ResponseWriter: w}
		defer func() { answered(sw.status) }()
		f, ok := fs.take(op)
		if !ok {
			next.ServeHTTP(sw, r)
			return
		}
		w = sw
		switch f.kind {
		case faultStoredThen502:
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			writeProblem(w, http.StatusBadGateway, delivery.Problem{Title: "Bad Gateway", Status: http.StatusBadGateway,
				Code: delivery.CodeUnavailable, Detail: "injected: stored, then 502"})
		case faultStoredLate:
			// The try is served to its end even when its client gave up:
			// what it stores, it stores late.
			time.Sleep(f.delay)
			next.ServeHTTP(w, r.WithContext(context.WithoutCancel(r.Context())))
		case faultRateLimited:
			secs := max(int((f.delay+time.Second-1)/time.Second), 1)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			writeProblem(w, http.StatusTooManyRequests, delivery.Problem{Title: "Too Many Requests", Status: http.StatusTooManyRequests,
				Code: delivery.CodeRateLimited, RetryAfter: secs, Detail: "injected"})
		case faultDisconnect:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
	})
}

func writeProblem(w http.ResponseWriter, status int, p delivery.Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}
