package a2asrv

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"novaos.dev/novaos/a2a"
)

// The JSON-RPC binding: a POST to the agent's root carries one JSON-RPC
// request; the answer is one JSON-RPC response, or for a streaming method
// an SSE stream whose events each hold a JSON-RPC response.

// rpcCall is one JSON-RPC request in flight.
type rpcCall struct {
	w  http.ResponseWriter
	r  *http.Request
	id json.RawMessage
	// sse is set for a streaming method whose caller accepts an event
	// stream: its errors are sent as one SSE error event, because some
	// clients (a2a-go's) read nothing but SSE on a streaming call.
	sse  bool
	call Call
}

// rpcBinding is the JSON-RPC binding of a Handler, A2A 0.3's dialect
// included (v03.go).
type rpcBinding struct {
	core    *Core
	bodies  *bodyPool
	methods map[string]rpcMethod // by v1 method name
}

// An rpcMethod decodes a method's params and answers the call.
type rpcMethod func(b *rpcBinding, rc *rpcCall, params json.RawMessage)

func newRPCBinding(co *Core, bodies *bodyPool) *rpcBinding {
	return &rpcBinding{core: co, bodies: bodies, methods: map[string]rpcMethod{
		a2a.MethodSendMessage:                      rpcUnary(co.tasks.sendMessage),
		a2a.MethodSendStreamingMessage:             rpcStream(co.tasks.sendStreamingMessage),
		a2a.MethodSubscribeToTask:                  rpcStream(co.tasks.subscribeToTask),
		a2a.MethodGetTask:                          rpcUnary(co.tasks.getTask),
		a2a.MethodListTasks:                        rpcUnary(co.tasks.listTasks),
		a2a.MethodCancelTask:                       rpcUnary(co.tasks.cancelTask),
		a2a.MethodCreateTaskPushNotificationConfig: rpcUnary(co.push.createConfig),
		a2a.MethodGetTaskPushNotificationConfig:    rpcUnary(co.push.getConfig),
		a2a.MethodListTaskPushNotificationConfigs:  rpcUnary(co.push.listConfigs),
		a2a.MethodDeleteTaskPushNotificationConfig: rpcUnary(co.push.deleteConfig),
		a2a.MethodGetExtendedAgentCard:             rpcUnary(co.extendedCard),
	}}
}

func rpcUnary[Req, Resp any](m unaryMethod[Req, Resp]) rpcMethod {
	return func(b *rpcBinding, rc *rpcCall, params json.RawMessage) {
		req := new(Req)
		if e := a2a.DecodeParams(params, req); e != nil {
			rpcFail(rc, e)
			return
		}
		resp, e := invoke(rc.r.Context(), b.core, &rc.call, req, m)
		if e != nil {
			rpcFail(rc, e)
			return
		}
		b.writeValue(rc, resp)
	}
}

func rpcStream[Req any](m streamMethod[Req]) rpcMethod {
	return func(b *rpcBinding, rc *rpcCall, params json.RawMessage) {
		req := new(Req)
		if e := a2a.DecodeParams(params, req); e != nil {
			rpcFail(rc, e)
			return
		}
		runRPCStream(b, rc, req, m, a2a.AppendStreamResponse)
	}
}

// runRPCStream runs a streaming method for a JSON-RPC call: each frame an
// SSE event holding the JSON-RPC response whose result encode writes.
func runRPCStream[Req any](b *rpcBinding, rc *rpcCall, req *Req, m streamMethod[Req], encode func([]byte, *a2a.StreamResponse) ([]byte, error)) {
	sink := newSSESink(rc.w, b.core.log, func(buf []byte, v Version, resp *a2a.StreamResponse) ([]byte, error) {
		return appendRPCFrame(buf, rc.id, v, resp, encode)
	})
	_, e := invoke(rc.r.Context(), b.core, &rc.call, req, countFrames(sink, m))
	sink.end(e, func(e *a2a.Error) (a2a.Event, error) {
		return a2a.Event{Data: a2a.AppendErrorResponse(nil, rc.id, e)}, nil
	}, func(e *a2a.Error) { rpcFail(rc, e) })
}

func streamingMethod(m string) bool {
	return m == a2a.MethodSendStreamingMessage || m == a2a.MethodSubscribeToTask
}

func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}

// serve answers a POST to the agent's root.
func (b *rpcBinding) serve(w http.ResponseWriter, r *http.Request) {
	// Counted for Shutdown until the answer is written, so an answer that
	// Shutdown's cut-off causes is out before Shutdown returns.
	leave := b.core.execs.shut.enter()
	defer leave()
	if e := checkContentType(r.Header); e != nil {
		writeRPCError(w, nil, e, http.StatusUnsupportedMediaType)
		return
	}
	buf := b.bodies.get()
	body, status, e := b.bodies.read(buf, r)
	if buf.Cap() <= maxPooledBuf {
		defer b.bodies.put(buf)
	}
	// A large body is not pooled: once its params are decoded nothing
	// refers to it (the id is copied below), so the collector may take it
	// while the method runs rather than after.
	buf = nil
	if e != nil {
		writeRPCError(w, nil, e, status)
		return
	}
	req, perr := a2a.DecodeRequest(body)
	if perr != nil {
		writeRPCError(w, req.ID, perr, http.StatusOK)
		return
	}
	if len(body) > maxPooledBuf {
		req.ID = bytes.Clone(req.ID)
	}
	body = nil
	if maxID := b.core.opts.MaxIDBytes; len(req.ID) > maxID {
		writeRPCError(w, nil, a2a.NewError(a2a.CodeInvalidRequest, "the JSON-RPC id is longer than %d bytes", maxID), http.StatusOK)
		return
	}
	if req.Notification {
		// JSON-RPC 2.0 sends nothing back for a notification, and A2A
		// defines none: running a method whose answer nobody can read
		// (a SendMessage) would only do unasked work.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	rc := &rpcCall{w: w, r: r, id: req.ID, sse: streamingMethod(req.Method) && acceptsEventStream(r),
		call: Call{Method: req.Method, Binding: a2a.BindingJSONRPC, Header: r.Header}}
	if v1, ok := b.v03Call(req.Method, r.Header); ok {
		b.serve03(rc, req.Method, v1, req.Params)
		return
	}
	if e := b.notV03(req.Method, r.Header); e != nil {
		rpcFail(rc, e)
		return
	}
	if e := b.core.negotiate(&rc.call); e != nil {
		rpcFail(rc, e)
		return
	}
	if active := rc.call.Extensions; len(active) > 0 {
		w.Header().Set(a2a.HeaderExtensions, strings.Join(active, ", "))
	}
	m, ok := b.methods[req.Method]
	if !ok {
		writeRPCError(w, rc.id, a2a.NewError(a2a.CodeMethodNotFound, "method %q not found", truncate(req.Method, 64)), http.StatusOK)
		return
	}
	m(b, rc, req.Params)
}

// rpcFail answers the call with a protocol error: as a JSON-RPC response,
// or, for a streaming call that accepts SSE, as a stream of one error
// event. A caller Identify refused is answered HTTP 401.
func rpcFail(rc *rpcCall, e *a2a.Error) {
	if rc.sse {
		setStreamHeaders(rc.w.Header())
		rc.w.WriteHeader(http.StatusOK)
		_, _ = rc.w.Write(a2a.AppendEvent(nil, a2a.Event{Data: a2a.AppendErrorResponse(nil, rc.id, e)}))
		return
	}
	status := http.StatusOK
	if e.Code == CodeUnauthenticated {
		status = http.StatusUnauthorized
	}
	writeRPCError(rc.w, rc.id, e, status)
}

func writeRPCError(w http.ResponseWriter, id json.RawMessage, e *a2a.Error, status int) {
	body := a2a.AppendErrorResponse(nil, id, e)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// bodyPool reads request bodies, within the limit, into buffers it
// reuses; both HTTP bindings share one.
type bodyPool struct {
	max  int64 // Options.MaxBodyBytes
	bufs sync.Pool
}

// read reads a request body of at most max bytes into buf; on failure it
// returns the error and the HTTP status to send it with.
func (p *bodyPool) read(buf *bytes.Buffer, r *http.Request) ([]byte, int, *a2a.Error) {
	tooLarge := func() ([]byte, int, *a2a.Error) {
		return nil, http.StatusRequestEntityTooLarge, a2a.NewError(a2a.CodeInvalidRequest, "request body exceeds %d bytes", p.max)
	}
	if r.ContentLength > p.max {
		return tooLarge()
	}
	if r.ContentLength > 0 {
		// Room for the whole body and the read that finds its end: a
		// buffer grown by doubling would allocate about three times it.
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, p.max+1)); err != nil {
		return nil, http.StatusBadRequest, a2a.NewError(a2a.CodeParseError, "could not read request body")
	}
	if int64(buf.Len()) > p.max {
		return tooLarge()
	}
	return buf.Bytes(), 0, nil
}

func (p *bodyPool) get() *bytes.Buffer {
	if b, ok := p.bufs.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

// maxPooledBuf is the largest buffer kept for reuse: a pool of large
// buffers would hold the memory of the largest requests for good.
const maxPooledBuf = 64 << 10

func (p *bodyPool) put(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuf {
		p.bufs.Put(b)
	}
}

// nullResult is the result of methods whose proto response is Empty.
var nullResult = json.RawMessage("null")

// writeValue answers with v as the result. The hot results go through
// the a2a package's append encoders; the rest through encoding/json.
func (b *rpcBinding) writeValue(rc *rpcCall, v any) {
	// The envelope and the result go into one pooled buffer: nothing on
	// this path allocates per small answer, and a large one is not copied
	// from a buffer of its own into the envelope's.
	buf := b.bodies.get()
	defer b.bodies.put(buf)
	out := appendResultPrefix(buf.AvailableBuffer(), rc.id)
	out, err := appendValue(out, v)
	if err != nil {
		b.core.log.ErrorContext(rc.r.Context(), "a2asrv: encode result", "err", err)
		writeRPCError(rc.w, rc.id, a2a.NewError(a2a.CodeInternalError, "could not encode the result"), http.StatusOK)
		return
	}
	out = append(out, '}')
	hd := rc.w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", itoa(len(out)))
	_, _ = rc.w.Write(out)
}

// appendResultPrefix appends what a2a.AppendResult writes before the
// result, so that the result can be encoded in place.
func appendResultPrefix(b []byte, id json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if len(id) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, id...)
	}
	return append(b, `,"result":`...)
}

// appendValue appends the JSON of a core method's response.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil, struct{}:
		return append(b, nullResult...), nil
	case *a2a.SendMessageResponse:
		return a2a.AppendSendMessageResponse(b, v)
	case *a2a.Task:
		return a2a.AppendTask(b, v)
	}
	out, err := json.Marshal(v)
	return append(b, out...), err
}

// appendRPCFrame writes one SSE event holding the JSON-RPC response for a
// stream frame. The encoded JSON has no raw newlines, so it goes on a
// single data line.
func appendRPCFrame(b []byte, id json.RawMessage, v Version, resp *a2a.StreamResponse, encode func([]byte, *a2a.StreamResponse) ([]byte, error)) ([]byte, error) {
	b = appendEventID(b, v)
	b = append(b, `data: {"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b, err := encode(b, resp)
	if err != nil {
		return nil, err
	}
	return append(b, "}\n\n"...), nil
}

// appendEventID writes an SSE event's id line: the task version the frame
// reflects (none for a message-only answer).
func appendEventID(b []byte, v Version) []byte {
	if v <= 0 {
		return b
	}
	b = append(b, "id: "...)
	b = appendInt(b, int64(v))
	return append(b, '\n')
}

// sseSink is the StreamSink of the HTTP bindings: frames queue up in out
// and go to the network in one write and flush per batch, so when the
// executor is faster than the connection a burst of chunks costs one
// syscall instead of one each. The response starts (200, event-stream
// headers) at the first flush.
type sseSink struct {
	w       http.ResponseWriter
	flusher http.Flusher
	log     *slog.Logger
	encode  func(b []byte, v Version, resp *a2a.StreamResponse) ([]byte, error)
	out     []byte
	started bool
}

func newSSESink(w http.ResponseWriter, log *slog.Logger, encode func([]byte, Version, *a2a.StreamResponse) ([]byte, error)) *sseSink {
	f, _ := w.(http.Flusher)
	return &sseSink{w: w, flusher: f, log: log, encode: encode}
}

func (s *sseSink) Send(v Version, resp *a2a.StreamResponse) error {
	out, err := s.encode(s.out, v, resp)
	if err != nil {
		s.log.Error("a2asrv: encode frame", "err", err)
		return err
	}
	s.out = out
	return nil
}

func (s *sseSink) Flush() error {
	if !s.started {
		s.started = true
		setStreamHeaders(s.w.Header())
		s.w.WriteHeader(http.StatusOK)
	}
	if len(s.out) > 0 {
		_, err := s.w.Write(s.out)
		s.out = s.out[:0]
		if err != nil {
			return err
		}
	}
	if s.flusher != nil {
		s.flusher.Flush()
	}
	return nil
}

// end answers the error a stream ended with, if any: as one more event
// (event) when the stream has started, else as the binding's plain error
// (fail), flushed at once so that the HTTP server's close after Shutdown
// cannot overtake an answer Shutdown itself caused.
func (s *sseSink) end(e *a2a.Error, event func(*a2a.Error) (a2a.Event, error), fail func(*a2a.Error)) {
	switch {
	case e == nil || e == errSinkFailed:
	case s.started:
		if ev, err := event(e); err == nil {
			s.out = a2a.AppendEvent(s.out, ev)
			_ = s.Flush()
		}
	default:
		fail(e)
		if s.flusher != nil {
			s.flusher.Flush()
		}
	}
}

func (s *sseSink) KeepAlive() error {
	s.out = append(s.out, a2a.KeepAlive...)
	return s.Flush()
}

func setStreamHeaders(hd http.Header) {
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	hd.Set("Connection", "keep-alive")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
