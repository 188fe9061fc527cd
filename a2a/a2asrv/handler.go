package a2asrv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/netguard"
)

// Defaults for the zero Options.
const (
	// DefaultMaxBodyBytes bounds a request body.
	DefaultMaxBodyBytes = 10 << 20
	// DefaultArtifactFlushInterval bounds how long an artifact update may
	// wait for the store.
	DefaultArtifactFlushInterval = 50 * time.Millisecond
)

// Options configure a Handler. The zero value (or nil) is usable: tasks are
// kept in a bounded in-memory store, push configs are not supported and
// every caller is anonymous.
type Options struct {
	// TaskStore keeps tasks; nil means NewMemoryTaskStore(nil).
	TaskStore TaskStore
	// PushConfigStore keeps push-notification configs; nil means the four
	// push-config methods answer PushNotificationNotSupported.
	PushConfigStore PushConfigStore
	// ExtendedCard is served by GetExtendedAgentCard; nil answers
	// ExtendedAgentCardNotConfigured.
	ExtendedCard *a2a.AgentCard
	// Identify says who a request acts for. An *a2a.Error it returns is sent
	// as is; any other error is answered as unauthenticated. nil treats
	// every caller as the same anonymous owner, with the tenant taken from
	// the request's tenant field.
	Identify func(r *http.Request) (Scope, error)
	// MaxBodyBytes bounds a request body (default 10 MiB).
	MaxBodyBytes int64
	// ArtifactFlushInterval bounds how long an artifact update may be
	// streamed before it is stored (default 50ms); see the package doc,
	// Write path.
	ArtifactFlushInterval time.Duration
	// MaxIDBytes bounds every identifier a request carries: task, message,
	// context and push-config ids, referenceTaskIds and the tenant (longer
	// is -32602), and the JSON-RPC id as written (longer is -32600).
	// Default DefaultMaxIDBytes.
	MaxIDBytes int
	// MaxExtensions bounds the distinct URIs a request may list in
	// A2A-Extensions (more is -32600); default DefaultMaxExtensions.
	MaxExtensions int
	// MaxExtensionURIBytes bounds one URI in A2A-Extensions (longer is
	// -32600); default DefaultMaxExtensionURIBytes.
	MaxExtensionURIBytes int
	// KeepAlive is the interval of SSE keep-alive comments (default 15s).
	KeepAlive time.Duration
	// CardMaxAge is the Cache-Control max-age of the served card (default 5m).
	CardMaxAge time.Duration
	// DefaultHistoryLength caps the history returned when a request does not
	// say (0 means the whole history).
	DefaultHistoryLength int
	Logger               *slog.Logger
	// Now and NewID make responses reproducible in tests.
	Now   func() time.Time
	NewID func() string
	// NewTaskID, when set, proposes the id of the task a SendMessage
	// creates (one whose message names no task), such as the platform's
	// run id (package agent sets it so). A fresh NewID is used instead
	// when it proposes "", an id outside 1..128 letters, digits and
	// "-_.:", or an id in use: a task of the caller's scope, or a task
	// live in this process in any scope (reserved until the request ends,
	// so two concurrent requests never share one). A stored task of
	// another scope is never read or changed: the store refuses to create
	// a second task with its id (ErrExists) and the request fails.
	NewTaskID func(req *a2a.SendMessageRequest) string

	// PushURLPolicy decides which webhook URLs push-notification configs
	// may name, checked when a config is stored (CreateTaskPushNotification
	// Config, and inline in SendMessage). Nil means public hosts only: no
	// loopback, private, link-local or metadata address. A sender must
	// check the address it dials again (netguard.Policy.Dialer).
	PushURLPolicy *netguard.Policy
}

// CodeUnauthenticated is the JSON-RPC code for a request whose caller could
// not be identified. A2A leaves authentication errors to the implementation;
// this is the code a2a-go uses.
const CodeUnauthenticated = -31401

// Handler serves one agent over the A2A JSON-RPC binding: POST to its root
// runs a method, GET /.well-known/agent-card.json returns the card.
type Handler struct {
	card  *a2a.AgentCard
	exec  Executor
	opts  Options
	store TaskStore
	log   *slog.Logger

	cardJSON []byte
	cardETag string

	hubs    hubs
	workers *workers
	wg      sync.WaitGroup
	// life orders starting executions against Shutdown: an execution is
	// counted in wg under the read lock, so once Shutdown has set closing
	// under the write lock, wg can only go down.
	life     sync.RWMutex
	closing  bool
	bufs     sync.Pool
	streamOK bool
	shut     cutoff // the calls waiting when Shutdown's grace ends (recover.go)
}

// NewHandler returns a handler serving card and running exec for every
// message.
func NewHandler(card *a2a.AgentCard, exec Executor, opts *Options) *Handler {
	h := &Handler{card: card, exec: exec, workers: newWorkers()}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.TaskStore == nil {
		h.opts.TaskStore = NewMemoryTaskStore(nil)
	}
	if h.opts.MaxBodyBytes <= 0 {
		h.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if h.opts.MaxIDBytes <= 0 {
		h.opts.MaxIDBytes = DefaultMaxIDBytes
	}
	if h.opts.MaxExtensions <= 0 {
		h.opts.MaxExtensions = DefaultMaxExtensions
	}
	if h.opts.MaxExtensionURIBytes <= 0 {
		h.opts.MaxExtensionURIBytes = DefaultMaxExtensionURIBytes
	}
	if h.opts.KeepAlive <= 0 {
		h.opts.KeepAlive = 15 * time.Second
	}
	if h.opts.CardMaxAge <= 0 {
		h.opts.CardMaxAge = 5 * time.Minute
	}
	h.log = h.opts.Logger
	if h.log == nil {
		h.log = discardLogger()
	}
	h.store = h.opts.TaskStore
	if h.opts.ArtifactFlushInterval <= 0 {
		h.opts.ArtifactFlushInterval = DefaultArtifactFlushInterval
	}
	h.hubs = hubs{store: h.store, log: h.log, flushEvery: h.opts.ArtifactFlushInterval}
	h.streamOK = card != nil && card.Capabilities.Streaming != nil && *card.Capabilities.Streaming
	if card != nil {
		b, err := json.Marshal(card)
		if err != nil {
			panic("a2asrv: agent card does not encode: " + err.Error())
		}
		h.cardJSON = b
		sum := sha256.Sum256(b)
		h.cardETag = `"` + hex.EncodeToString(sum[:16]) + `"`
	}
	return h
}

func (h *Handler) now() time.Time {
	if h.opts.Now != nil {
		return h.opts.Now().UTC().Truncate(time.Millisecond)
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

func (h *Handler) newID() string {
	if h.opts.NewID != nil {
		return h.opts.NewID()
	}
	return a2a.NewID()
}

// ServeHTTP routes a request relative to the agent's mount point.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "A2A JSON-RPC endpoint: use POST", http.StatusMethodNotAllowed)
			return
		}
		h.serveRPC(w, r)
	case path == a2a.WellKnownCardPath:
		h.serveCard(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if h.cardJSON == nil {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("ETag", h.cardETag)
	hd.Set("Cache-Control", "public, max-age="+itoa(int(h.opts.CardMaxAge/time.Second)))
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, h.cardETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", itoa(len(h.cardJSON)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(h.cardJSON)
}

func etagMatches(header, etag string) bool {
	for c := range strings.SplitSeq(header, ",") {
		c = strings.TrimSpace(c)
		if c == "*" || strings.TrimPrefix(c, "W/") == etag {
			return true
		}
	}
	return false
}

func itoa(n int) string { return string(appendInt(nil, int64(n))) }

func appendInt(b []byte, n int64) []byte {
	if n == 0 {
		return append(b, '0')
	}
	var tmp [20]byte
	i := len(tmp)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		tmp[i] = '-'
	}
	return append(b, tmp[i:]...)
}

// call is one JSON-RPC request in flight.
type call struct {
	w      http.ResponseWriter
	r      *http.Request
	id     json.RawMessage
	scope  Scope
	active []string
	// maxID is Options.MaxIDBytes.
	maxID int
	// tenant is the tenant read from params before the method ran (""
	// when params hold no plain "tenant" key); the method's own decode
	// must read the same, or the scope was taken from the wrong one.
	tenant string
	// sse is set for a streaming method whose caller accepts an event
	// stream: its errors are sent as one SSE error event, because some
	// clients (a2a-go's) read nothing but SSE on a streaming call.
	sse bool
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

// fail answers the call with a protocol error, as a JSON-RPC response or,
// for a streaming call that accepts SSE, as a stream of one error event.
func (h *Handler) fail(c *call, e *a2a.Error) {
	if !c.sse {
		h.writeError(c.w, c.id, e, http.StatusOK)
		return
	}
	setStreamHeaders(c.w.Header())
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(a2a.AppendEvent(nil, a2a.Event{Data: a2a.AppendErrorResponse(nil, c.id, e)}))
}

func setStreamHeaders(hd http.Header) {
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	hd.Set("Connection", "keep-alive")
}

func (h *Handler) getBuf() *bytes.Buffer {
	if b, ok := h.bufs.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

func (h *Handler) putBuf(b *bytes.Buffer) {
	if b.Cap() <= 64<<10 {
		h.bufs.Put(b)
	}
}

func (h *Handler) serveRPC(w http.ResponseWriter, r *http.Request) {
	if e := checkContentType(r.Header); e != nil {
		h.writeError(w, nil, e, http.StatusUnsupportedMediaType)
		return
	}
	buf := h.getBuf()
	defer h.putBuf(buf)
	if r.ContentLength > h.opts.MaxBodyBytes {
		h.writeBodyTooLarge(w)
		return
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, h.opts.MaxBodyBytes+1))
	if err != nil {
		h.writeError(w, nil, a2a.NewError(a2a.CodeParseError, "could not read request body"), http.StatusBadRequest)
		return
	}
	if int64(buf.Len()) > h.opts.MaxBodyBytes {
		h.writeBodyTooLarge(w)
		return
	}
	req, perr := a2a.DecodeRequest(buf.Bytes())
	if perr != nil {
		h.writeError(w, req.ID, perr, http.StatusOK)
		return
	}
	if len(req.ID) > h.opts.MaxIDBytes {
		h.writeError(w, nil, a2a.NewError(a2a.CodeInvalidRequest, "the JSON-RPC id is longer than %d bytes", h.opts.MaxIDBytes), http.StatusOK)
		return
	}
	if req.Notification {
		// JSON-RPC 2.0 sends nothing back for a notification, and A2A
		// defines none: running a method whose answer nobody can read
		// (a SendMessage) would only do unasked work.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	c := &call{w: w, r: r, id: req.ID, maxID: h.opts.MaxIDBytes, sse: streamingMethod(req.Method) && acceptsEventStream(r)}
	if verr := a2a.CheckVersion(r.Header.Get(a2a.HeaderVersion)); verr != nil {
		h.fail(c, verr)
		return
	}
	var declared []a2a.AgentExtension
	if h.card != nil {
		declared = h.card.Capabilities.Extensions
	}
	requested, eerr := a2a.ParseExtensionsLimit(r.Header.Values(a2a.HeaderExtensions), h.opts.MaxExtensions, h.opts.MaxExtensionURIBytes)
	if eerr != nil {
		h.fail(c, eerr)
		return
	}
	active, eerr := a2a.NegotiateExtensions(requested, declared)
	if eerr != nil {
		h.fail(c, eerr)
		return
	}
	c.active = active
	if len(active) > 0 {
		w.Header().Set(a2a.HeaderExtensions, strings.Join(active, ", "))
	}
	m, ok := methods[req.Method]
	if !ok {
		h.writeError(w, c.id, a2a.NewError(a2a.CodeMethodNotFound, "method %q not found", truncate(req.Method, 64)), http.StatusOK)
		return
	}
	if bytes.Contains(req.Params, []byte(`"tenant"`)) {
		// Only the tenant is needed here; the method decodes the rest. Most
		// requests carry none, and this decode is skipped for them.
		var tenant tenantOnly
		if e := a2a.DecodeParams(req.Params, &tenant); e != nil {
			h.fail(c, e)
			return
		}
		if e := checkID("tenant", tenant.Tenant, c.maxID); e != nil {
			h.fail(c, e)
			return
		}
		c.tenant = tenant.Tenant
	}
	scope, serr := h.identify(r, c.tenant)
	if serr != nil {
		if c.sse {
			h.fail(c, serr)
		} else {
			h.writeError(w, c.id, serr, http.StatusUnauthorized)
		}
		return
	}
	c.scope = scope
	m(h, c, req.Params)
}

type tenantOnly struct {
	Tenant string `json:"tenant"`
}

func (h *Handler) identify(r *http.Request, tenant string) (Scope, *a2a.Error) {
	if h.opts.Identify == nil {
		return Scope{Tenant: tenant}, nil
	}
	s, err := h.opts.Identify(r)
	if err != nil {
		var e *a2a.Error
		if errors.As(err, &e) {
			return Scope{}, e
		}
		h.log.InfoContext(r.Context(), "a2asrv: caller not identified", "err", err)
		return Scope{}, a2a.NewError(CodeUnauthenticated, "unauthenticated")
	}
	if s.Tenant == "" {
		s.Tenant = tenant
	}
	return s, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (h *Handler) writeBodyTooLarge(w http.ResponseWriter) {
	e := a2a.NewError(a2a.CodeInvalidRequest, "request body exceeds %d bytes", h.opts.MaxBodyBytes)
	h.writeError(w, nil, e, http.StatusRequestEntityTooLarge)
}

func (h *Handler) writeError(w http.ResponseWriter, id json.RawMessage, e *a2a.Error, status int) {
	body := a2a.AppendErrorResponse(nil, id, e)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (h *Handler) writeResult(c *call, result []byte) {
	buf := h.getBuf()
	defer h.putBuf(buf)
	b := a2a.AppendResult(buf.AvailableBuffer(), c.id, result)
	hd := c.w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", itoa(len(b)))
	_, _ = c.w.Write(b)
}

// writeValue answers with v as the result. The hot results go through the
// a2a package's append encoders; the rest through encoding/json.
func (h *Handler) writeValue(c *call, v any) {
	buf := h.getBuf()
	defer h.putBuf(buf)
	var b []byte
	var err error
	switch v := v.(type) {
	case a2a.SendMessageResponse:
		b, err = a2a.AppendSendMessageResponse(buf.AvailableBuffer(), &v)
	case *a2a.Task:
		b, err = a2a.AppendTask(buf.AvailableBuffer(), v)
	default:
		b, err = json.Marshal(v)
	}
	if err != nil {
		h.log.ErrorContext(c.r.Context(), "a2asrv: encode result", "err", err)
		h.writeError(c.w, c.id, a2a.NewError(a2a.CodeInternalError, "could not encode the result"), http.StatusOK)
		return
	}
	h.writeResult(c, b)
}

// Shutdown stops accepting messages, waits for running executions until ctx
// is done, then cuts off the rest: their tasks are settled FAILED with
// ShutdownText (interrupted and final tasks keep their state), and every
// call still waiting on one (a blocking SendMessage, a stream) is answered
// with a CodeShuttingDown error naming the task and its state before
// Shutdown returns. Close the HTTP server only after Shutdown returns, or
// those answers may be cut off.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.life.Lock()
	h.closing = true
	h.life.Unlock()
	defer h.workers.stop()
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	h.cutExecutions()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return ctx.Err()
}
