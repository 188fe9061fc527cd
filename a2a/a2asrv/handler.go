package a2asrv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
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
	// takes the request's. Identify may set c.Identity to what it learned
	// (a verified token's claims), which interceptors and the executor
	// read. nil treats every caller as the same anonymous owner, with the
	// tenant taken from the request.
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

// Handler serves one agent over HTTP: a POST to its root runs a JSON-RPC
// method, the HTTP+JSON binding's resources sit beside it, and GET
// /.well-known/agent-card.json returns the card. Both bindings hand their
// calls to one [Core], which Core returns for the gRPC binding.
type Handler struct {
	core  *Core
	rpc   *rpcBinding
	rest  *restBinding
	cards cards
}

// NewHandler returns a handler serving card and running exec for every
// message.
func NewHandler(card *a2a.AgentCard, exec Executor, opts *Options) *Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	withDefaults(&o)
	log := o.Logger
	if log == nil {
		log = discardLogger()
	}
	core := newCore(card, exec, o, log)
	bodies := &bodyPool{max: o.MaxBodyBytes}
	return &Handler{
		core:  core,
		rpc:   newRPCBinding(core, bodies),
		rest:  newRESTBinding(core, bodies),
		cards: newCards(card, o.RefuseV03, o.CardMaxAge, log),
	}
}

// withDefaults fills in the zero fields of o that have a default.
func withDefaults(o *Options) {
	if o.TaskStore == nil {
		o.TaskStore = NewMemoryTaskStore(nil)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxIDBytes <= 0 {
		o.MaxIDBytes = DefaultMaxIDBytes
	}
	if o.MaxExtensions <= 0 {
		o.MaxExtensions = DefaultMaxExtensions
	}
	if o.MaxExtensionURIBytes <= 0 {
		o.MaxExtensionURIBytes = DefaultMaxExtensionURIBytes
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	if o.CardMaxAge <= 0 {
		o.CardMaxAge = 5 * time.Minute
	}
	if o.ArtifactFlushInterval <= 0 {
		o.ArtifactFlushInterval = DefaultArtifactFlushInterval
	}
}

// Core returns the transport-neutral core the handler's bindings call,
// for a binding outside this package (the gRPC one).
func (h *Handler) Core() *Core { return h.core }

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
		h.rpc.serve(w, r)
	case path == a2a.WellKnownCardPath:
		h.cards.serve(w, r)
	default:
		if !h.rest.serve(w, r) {
			http.NotFound(w, r)
		}
	}
}

// Shutdown stops accepting messages, waits for running executions until ctx
// is done, then cuts off the rest: their tasks are settled FAILED with
// ShutdownText (interrupted and final tasks keep their state), and every
// call still waiting on one (a blocking SendMessage, a stream) is answered
// with a CodeShuttingDown error naming the task and its state before
// Shutdown returns. Close the HTTP server only after Shutdown returns, or
// those answers may be cut off. It stops the Core too, whichever binding
// its calls come over.
func (h *Handler) Shutdown(ctx context.Context) error {
	return h.core.execs.shutdown(ctx)
}

// cards serves the agent card: card1 as it is; card03 the same with A2A
// 0.3's members added, for callers that send no A2A-Version (nil when 0.3
// is refused or the card is signed, since the added members would break
// the signature).
type cards struct {
	card1, card03 *servedCard
	maxAge        time.Duration
}

func newCards(card *a2a.AgentCard, refuseV03 bool, maxAge time.Duration, log *slog.Logger) cards {
	cs := cards{maxAge: maxAge}
	if card == nil {
		return cs
	}
	b, err := json.Marshal(card)
	if err != nil {
		panic("a2asrv: agent card does not encode: " + err.Error())
	}
	cs.card1 = newServedCard(b)
	if !refuseV03 && len(card.Signatures) == 0 {
		if b, err := a2av03.HybridCard(card); err == nil {
			cs.card03 = newServedCard(b)
		} else {
			log.Warn("a2asrv: the card has no A2A 0.3 form; 0.3 clients get the v1 card", "err", err)
		}
	}
	return cs
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

func (cs *cards) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	card := cs.card1
	if card == nil {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	if cs.card03 != nil {
		// A 0.3 client sends no A2A-Version, and needs url and
		// preferredTransport to find the agent: it gets the card with
		// 0.3's members added, which v1 readers ignore.
		hd.Set("Vary", a2a.HeaderVersion)
		if r.Header.Get(a2a.HeaderVersion) == "" {
			card = cs.card03
		}
	}
	hd.Set("ETag", card.etag)
	hd.Set("Cache-Control", "public, max-age="+itoa(int(cs.maxAge/time.Second)))
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

// clock stamps and names what the core writes: Options.Now and NewID, or
// the real ones.
type clock struct {
	nowFn func() time.Time
	idFn  func() string
}

func (c clock) now() time.Time {
	if c.nowFn != nil {
		return c.nowFn().UTC().Truncate(time.Millisecond)
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

func (c clock) newID() string {
	if c.idFn != nil {
		return c.idFn()
	}
	return a2a.NewID()
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
