package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// InProcessRemoteAddr is the RemoteAddr of every request HandlerTransport
// serves. Handlers and middleware parse RemoteAddr as an IP and a port
// (the Guard, IsLoopbackPeer, access logs), so it must be one; the caller
// is this very process, as local as a loopback peer; and port 0, which no
// TCP peer has, tells the two apart for code that must.
const InProcessRemoteAddr = "127.0.0.1:0"

var (
	// ErrBodyClosed is what a handler's writes return once the caller has
	// closed the response body (or abandoned the call before the header):
	// the in-process counterpart of a closed connection.
	ErrBodyClosed = errors.New("httpapi: in-process response body closed by the caller")

	errWriteAfterReturn = errors.New("httpapi: in-process response written after its handler returned")
)

// PanicError is what reading an in-process response body returns when its
// handler panicked after it had sent the header (before, the response is
// a 500). It carries the panic's value and stack for the caller to log.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("httpapi: in-process handler panicked: %v", e.Value)
}

// HandlerTransport returns an http.RoundTripper that serves each request
// with h in this process, without a socket: an http.Client (and so an
// A2A client) built on it calls a handler the server hosts as it would a
// remote one.
//
// h runs in a goroutine of its own with a server-side copy of the request:
// its URL reduced to path and query, Host kept (the URL's host when the
// request sets none), RemoteAddr InProcessRemoteAddr, TLS nil whatever
// the scheme, the body passed through (and closed when h returns), and a
// context that ends with the request's, when the caller closes the
// response body, or when h returns.
//
// The response is handed over when net/http would send its header: at h's
// first Flush, once h has written more than 2 KB, or when h returns (then
// whole, with its Content-Length); Content-Type is sniffed when h sets
// none. So a caller sees what it would see from a server, and a unary
// call costs one handoff. From then on the body streams through an
// io.Pipe: a Flush returns once the caller has read what it pushed, so an
// SSE frame arrives when it is flushed, and a handler that writes faster
// than the caller reads waits for it. Once the caller closes the body or
// its request's context ends, h's context ends and its writes and flushes
// fail with ErrBodyClosed; h is left to finish, and a body h leaves
// unfinished fails with the context's error rather than a clean EOF.
//
// A panic in h ends its response: a 500 if the header was not yet sent,
// else a body whose read fails with a *PanicError. http.ErrAbortHandler
// ends it like a dropped connection. The process lives on either way; h
// should still recover and log its own panics, as the server's handler
// does, since the transport has nowhere to log them.
//
// The writer implements http.Flusher; http.ResponseController's Flush,
// SetReadDeadline, SetWriteDeadline and EnableFullDuplex succeed (there is
// no connection to time out, and the body and response are independent
// already); Hijack is not supported. Informational (1xx) headers are
// dropped, and trailers are not sent.
//
// h sees a loopback peer: give it only the handlers that callers of this
// transport may reach (a hosted agent's), never a server's whole mux, whose
// AdminRule trusts loopback peers that name the server.
func HandlerTransport(h http.Handler) http.RoundTripper {
	return handlerTransport{h: h}
}

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("httpapi: in-process request without a URL")
	}
	if t.h == nil {
		closeBody(req)
		return nil, errors.New("httpapi: HandlerTransport without a handler")
	}
	if err := req.Context().Err(); err != nil {
		closeBody(req)
		return nil, err
	}
	ctx, cancel := context.WithCancel(req.Context())
	pr, pw := io.Pipe()
	w := &pipeWriter{
		req:    req,
		header: http.Header{},
		pr:     pr,
		pw:     pw,
		cancel: cancel,
		gone:   ctx.Done(),
		ready:  make(chan struct{}),
	}
	// The caller going away while it reads: the read fails at once, as
	// it would on a connection the transport closed.
	stop := context.AfterFunc(req.Context(), func() {
		pw.CloseWithError(context.Cause(req.Context()))
	})
	go w.serve(t.h, serverRequest(ctx, req), stop)
	select {
	case <-w.ready:
		return w.resp, nil
	case <-req.Context().Done():
		w.abandon()
		return nil, context.Cause(req.Context())
	}
}

// serverRequest is req as a server would have read it.
func serverRequest(ctx context.Context, req *http.Request) *http.Request {
	r := req.Clone(ctx)
	r.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	r.RequestURI = req.URL.RequestURI()
	if r.Host == "" {
		r.Host = req.URL.Host
	}
	r.RemoteAddr = InProcessRemoteAddr
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Del("Host")
	r.Body = req.Body
	if r.Body == nil {
		r.Body = http.NoBody
	}
	if r.ContentLength == 0 && r.Body != http.NoBody {
		r.ContentLength = -1 // a client's 0 with a body means unknown
	}
	r.GetBody, r.Close, r.TLS, r.Response = nil, false, nil, nil
	return r
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// bufferSize is how much body a handler may write before its response
// starts without a Flush: net/http's own threshold (its
// bufferBeforeChunkingSize), so a response that fits is handed over whole
// with its Content-Length exactly when a server would send one.
const bufferSize = 2 << 10

// pipeWriter is the handler's http.ResponseWriter. The handler's
// goroutine alone writes (a ResponseWriter is not for concurrent use);
// the response it hands over through ready, the body through the pipe.
type pipeWriter struct {
	req    *http.Request // the caller's
	header http.Header   // the handler's, until WriteHeader
	pr     *io.PipeReader
	pw     *io.PipeWriter
	cancel context.CancelFunc
	gone   <-chan struct{} // the handler's context is done: the caller left

	status  int         // 0 until WriteHeader
	sent    http.Header // the header as of WriteHeader
	buf     []byte      // body written before the response started
	written int64       // body bytes written (counted for HEAD too)
	started bool        // the response was handed over
	done    bool        // the handler returned
	closed  atomic.Bool // the caller closed the body

	ready chan struct{} // closed once resp is set
	resp  *http.Response
}

var (
	_ http.ResponseWriter = (*pipeWriter)(nil)
	_ http.Flusher        = (*pipeWriter)(nil)
)

func (w *pipeWriter) serve(h http.Handler, r *http.Request, stop func() bool) {
	defer func() {
		p := recover()
		w.done = true
		switch {
		case p == nil:
			w.WriteHeader(http.StatusOK)
			switch {
			case !w.started:
				w.start(true)
			case w.req.Context().Err() != nil:
				// The handler ended because the caller left: a cut
				// stream, not a whole one, whichever goroutine closes
				// the pipe first.
				w.pw.CloseWithError(context.Cause(w.req.Context()))
			case w.flushBuf() == nil:
				w.pw.Close()
			}
		case !w.started:
			w.header, w.status, w.buf, w.written = http.Header{}, 0, nil, 0
			w.WriteHeader(http.StatusInternalServerError)
			w.start(true)
		case p == http.ErrAbortHandler:
			w.pw.CloseWithError(io.ErrUnexpectedEOF)
		default:
			stack := make([]byte, 64<<10)
			w.pw.CloseWithError(&PanicError{Value: p, Stack: stack[:runtime.Stack(stack, false)]})
		}
		stop()
		w.cancel()
		r.Body.Close()
	}()
	h.ServeHTTP(w, r)
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code)) // as net/http does; serve answers 500
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		return // informational: the caller's transport would skip it
	}
	w.status = code
	w.sent = w.header.Clone() // later changes to the map are ignored, as by net/http
}

// bodyAllowed reports whether the response may have a body.
func (w *pipeWriter) bodyAllowed() bool {
	return w.status != http.StatusNoContent && w.status != http.StatusNotModified && w.status >= 200
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, errWriteAfterReturn
	}
	w.WriteHeader(http.StatusOK)
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.callerGone() {
		return 0, ErrBodyClosed
	}
	w.written += int64(len(p))
	if w.req.Method == http.MethodHead {
		// Counted for Content-Length and sniffed for Content-Type, as
		// net/http does; never sent.
		if !w.started && len(w.buf) < sniffLen {
			w.buf = append(w.buf, p[:min(len(p), sniffLen-len(w.buf))]...)
		}
		return len(p), nil
	}
	if !w.started && len(w.buf)+len(p) <= bufferSize {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if !w.started {
		w.buf = append(w.buf, p[:min(len(p), sniffLen)]...) // for the sniffer only
		w.start(false)
		w.buf = w.buf[:len(w.buf)-min(len(p), sniffLen)]
	}
	if err := w.flushBuf(); err != nil {
		return 0, err
	}
	return w.pw.Write(p)
}

// sniffLen is how much of the body http.DetectContentType looks at.
const sniffLen = 512

// flushBuf moves the buffered body into the pipe, which returns once the
// caller has read it.
func (w *pipeWriter) flushBuf() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.pw.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// start hands the response over: the status and header as of WriteHeader,
// the Content-Type sniffed from the first bytes when the handler set none,
// and the body. final says the handler has returned: the body is then the
// buffer, whole, with its length.
func (w *pipeWriter) start(final bool) {
	w.started = true
	h := w.sent
	if h.Get("Content-Type") == "" && h.Get("Transfer-Encoding") == "" && w.bodyAllowed() && len(w.buf) > 0 {
		h.Set("Content-Type", http.DetectContentType(w.buf[:min(len(w.buf), sniffLen)]))
	}
	length := int64(-1)
	if v := h.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			length = n
		}
	}
	if final && length < 0 && w.bodyAllowed() && h.Get("Transfer-Encoding") == "" {
		length = w.written
		h.Set("Content-Length", strconv.FormatInt(length, 10))
	}
	var body io.ReadCloser = &pipeBody{w: w}
	switch {
	case !w.bodyAllowed():
		length, body = 0, http.NoBody
	case w.req.Method == http.MethodHead:
		body, w.buf = http.NoBody, nil // w.buf held the bytes to sniff only
	case final && len(w.buf) > 0:
		body = io.NopCloser(bytes.NewReader(w.buf))
	case final:
		body = http.NoBody
	}
	w.resp = &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          body,
		ContentLength: length,
		Request:       w.req,
	}
	close(w.ready)
}

// Flush starts the response if it has not started, and hands what is
// buffered to the caller, returning once the caller has read it.
func (w *pipeWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush for http.ResponseController: it fails once the
// caller has closed the body.
func (w *pipeWriter) FlushError() error {
	if w.done {
		return errWriteAfterReturn
	}
	w.WriteHeader(http.StatusOK)
	if w.callerGone() {
		return ErrBodyClosed
	}
	if !w.started {
		w.start(false)
	}
	return w.flushBuf()
}

// callerGone reports whether the caller closed the body, gave up waiting
// for the header, or its request's context ended: a handler that sees its
// context end sees its writes fail too, as on a dropped connection.
func (w *pipeWriter) callerGone() bool {
	if w.closed.Load() {
		return true
	}
	select {
	case <-w.gone:
		return true
	default:
		return false
	}
}

// No connection to time out: the deadlines http.ResponseController sets
// (the Guard's body-rate deadline among them) succeed and do nothing.
func (w *pipeWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *pipeWriter) SetWriteDeadline(time.Time) error { return nil }

// EnableFullDuplex succeeds: the handler may read the request body while it
// writes the response already.
func (w *pipeWriter) EnableFullDuplex() error { return nil }

// abandon is the caller leaving: the handler's writes fail, and its
// context ends.
func (w *pipeWriter) abandon() {
	w.closed.Store(true)
	w.pr.CloseWithError(ErrBodyClosed)
	w.cancel()
}

// pipeBody is the response body the caller reads.
type pipeBody struct {
	w    *pipeWriter
	once sync.Once
}

func (b *pipeBody) Read(p []byte) (int, error) { return b.w.pr.Read(p) }

// Close stops the handler as a closed connection would: its writes fail,
// and its context ends.
func (b *pipeBody) Close() error {
	b.once.Do(b.w.abandon)
	return nil
}
