package a2asrv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
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
	// TaskFeed reports the task writes of other processes that share
	// TaskStore (replicas on one database), so that streams and CancelTask
	// work across them; nil means this Handler is the only writer of its
	// tasks. See the package doc, Replicas.
	TaskFeed TaskFeed
	// PushConfigStore keeps push-notification configs; nil means the four
	// push-config methods answer PushNotificationNotSupported.
	PushConfigStore PushConfigStore
	// ExtendedCard is served by GetExtendedAgentCard; nil answers
	// ExtendedAgentCardNotConfigured.
	ExtendedCard *a2a.AgentCard
	// Identify says who a call acts for, from its service parameters
	// (Call.Header: the HTTP headers, or the gRPC metadata) and its tenant
	// (Call.Tenant). An *a2a.Error it returns is sent as is; any other
	// error is answered as unauthenticated. A Scope with an empty Tenant
	// takes the request's. nil treats every caller as the same anonymous
	// owner, with the tenant taken from the request.
	Identify func(ctx context.Context, c *Call) (Scope, error)
	// Interceptors see every call on every binding, in this order; see
	// Interceptor.
	Interceptors []Interceptor
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

	// RefuseV03 answers A2A 0.3 calls (message/send, … with no
	// A2A-Version) with -32009, as for any unsupported version, instead of
	// serving them through the 0.3 compatibility layer.
	RefuseV03 bool

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
const CodeUnauthenticated = a2a.CodeUnauthenticated

// Handler serves one agent over the A2A JSON-RPC binding: POST to its root
// runs a method, GET /.well-known/agent-card.json returns the card.
type Handler struct {
	card  *a2a.AgentCard
	exec  Executor
	opts  Options
	store TaskStore
	log   *slog.Logger

	// card is the served card; card03 the same with A2A 0.3's members
	// added, for callers that send no A2A-Version (nil when 0.3 is refused
	// or the card is signed, since the added members would break the
	// signature).
	card1, card03 *servedCard

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
	h.hubs = hubs{store: h.store, feed: h.opts.TaskFeed, log: h.log, flushEvery: h.opts.ArtifactFlushInterval}
	h.streamOK = card != nil && card.Capabilities.Streaming != nil && *card.Capabilities.Streaming
	if card != nil {
		b, err := json.Marshal(card)
		if err != nil {
			panic("a2asrv: agent card does not encode: " + err.Error())
		}
		h.card1 = newServedCard(b)
		if !h.opts.RefuseV03 && len(card.Signatures) == 0 {
			if b, err := a2av03.HybridCard(card); err == nil {
				h.card03 = newServedCard(b)
			} else {
				h.log.Warn("a2asrv: the card has no A2A 0.3 form; 0.3 clients get the v1 card", "err", err)
			}
		}
	}
	return h
}

// servedCard is a card's bytes and their ETag.
type servedCard struct {
	json []byte
	etag string
}

func newServedCard(b []byte) *servedCard {
	sum := sha256.Sum256(b)
	return &servedCard{json: b, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
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

// ServeHTTP routes a request relative to the agent's mount point: a POST
// to the root is JSON-RPC, the card is at a2a.WellKnownCardPath, and the
// HTTP+JSON binding's resources (/message:send, /tasks/…, with or without
// a /{tenant} prefix) are beside them, so one URL serves both bindings.
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
		if !h.serveREST(w, r) {
			http.NotFound(w, r)
		}
	}
}

func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	card := h.card1
	if card == nil {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	if h.card03 != nil {
		// A 0.3 client sends no A2A-Version, and needs url and
		// preferredTransport to find the agent: it gets the card with
		// 0.3's members added, which v1 readers ignore.
		hd.Set("Vary", a2a.HeaderVersion)
		if r.Header.Get(a2a.HeaderVersion) == "" {
			card = h.card03
		}
	}
	hd.Set("ETag", card.etag)
	hd.Set("Cache-Control", "public, max-age="+itoa(int(h.opts.CardMaxAge/time.Second)))
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, card.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", itoa(len(card.json)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(card.json)
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
