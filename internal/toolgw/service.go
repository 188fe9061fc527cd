package toolgw

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
	"novaos.dev/novaos/tools"
)

// Defaults of Options.
const (
	// DefaultMaxBodyBytes bounds one request to the gateway.
	DefaultMaxBodyBytes = 10 << 20
	// DefaultMaxArgumentBytes bounds one call's arguments: a file of
	// DefaultFileBytes as base64, or a document to ingest, fits.
	DefaultMaxArgumentBytes = 8 << 20
	// DefaultMaxResultBytes bounds the result of one call the gateway
	// passes back; a larger one is refused as the tool's failure. A file
	// read answers its content twice (text and structured).
	DefaultMaxResultBytes = 24 << 20
	// DefaultFileBytes is the largest file novaos.files.* keeps when the
	// server says nothing else: its base64 fits DefaultMaxArgumentBytes.
	DefaultFileBytes = 4 << 20
	// DefaultSessionIdle is how long an MCP session lives unused.
	DefaultSessionIdle = 5 * time.Minute
	// DefaultEvidence bounds the run's earlier tool calls sent to the gate
	// as a write's evidence.
	DefaultEvidence = 20
	// DefaultMaxInflight bounds the calls in flight in this process.
	DefaultMaxInflight = 1024
	// DefaultAuditDelay is how long calls' audit entries gather before
	// one commit writes them.
	DefaultAuditDelay = 10 * time.Millisecond
	// DefaultGateTimeout bounds each step of a write-class call at the
	// gate (open, submit, claim, acknowledge); a gate slower than that is
	// down, and the write fails closed.
	DefaultGateTimeout = 10 * time.Second
)

// Options configure the gateway; zero fields mean the defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// MaxArgumentBytes bounds one call's arguments (-32602 beyond).
	MaxArgumentBytes int64
	// MaxResultBytes bounds one call's result.
	MaxResultBytes int64
	// SessionIdle is how long an MCP session may go unused.
	SessionIdle time.Duration
	// Evidence bounds the earlier calls a write carries to the gate.
	Evidence int
	// MaxInflight bounds the calls in flight in this process (503
	// beyond).
	MaxInflight int
	// Version is reported to MCP clients as the server's version.
	Version string
	// GatePage is the path of the gate's operator page, where a held
	// call is decided (default "/ui/gate").
	GatePage string
	// GateTimeout bounds each step of a write at the gate (default
	// DefaultGateTimeout).
	GateTimeout time.Duration
	// HoldCheckEvery is how often runs waiting on held writes are
	// checked against the gate's decisions (default 2s); a decision made
	// in this process wakes the check at once (Service.Decided).
	HoldCheckEvery time.Duration
	// AuditDelay is how long the audit entries of calls (every read, and
	// each write's result) gather after the first before they are written
	// in one commit (default DefaultAuditDelay); negative writes each at
	// once. Queued entries are lost with the process, so a longer delay
	// loses more and commits less.
	AuditDelay time.Duration
}

func (o *Options) withDefaults() Options {
	out := Options{}
	if o != nil {
		out = *o
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.MaxBodyBytes <= 0 {
		out.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if out.MaxArgumentBytes <= 0 {
		out.MaxArgumentBytes = DefaultMaxArgumentBytes
	}
	if out.MaxResultBytes <= 0 {
		out.MaxResultBytes = DefaultMaxResultBytes
	}
	if out.SessionIdle <= 0 {
		out.SessionIdle = DefaultSessionIdle
	}
	if out.Evidence <= 0 {
		out.Evidence = DefaultEvidence
	}
	if out.MaxInflight <= 0 {
		out.MaxInflight = DefaultMaxInflight
	}
	if out.Version == "" {
		out.Version = "dev"
	}
	if out.GatePage == "" {
		out.GatePage = "/ui/gate"
	}
	if out.GateTimeout <= 0 {
		out.GateTimeout = DefaultGateTimeout
	}
	if out.HoldCheckEvery <= 0 {
		out.HoldCheckEvery = 2 * time.Second
	}
	if out.AuditDelay == 0 {
		out.AuditDelay = DefaultAuditDelay
	}
	return out
}

// Tokens verifies the tokens callers present: the server's token issuer.
type Tokens interface {
	Verify(ctx context.Context, token string) (*identity.Claims, error)
	Authenticator() httpapi.Authenticator
}

// Gate is the governance gate write-class calls go through.
type Gate interface {
	// OpenSession opens the caller's session, or attaches to it when it
	// is open already.
	OpenSession(ctx context.Context, c *Caller, req gate.SessionRequest) error
	// Submit judges the action and claims it when it passes.
	Submit(ctx context.Context, c *Caller, act gate.Action) (gate.Verdict, error)
	// Claim claims a passed or approved action.
	Claim(ctx context.Context, c *Caller, req gate.ClaimRequest) (gate.Claim, error)
	// Ack records that a claimed write ran.
	Ack(ctx context.Context, c *Caller, req gate.AckRequest) (gate.Ack, error)
	// Action returns an action's record.
	Action(ctx context.Context, tenant, session, action string) (gate.ActionRecord, error)
	// Audit appends entries to the gate's hash-chained audit log.
	Audit(ctx context.Context, entries ...gate.AuditEntry) error
}

// Runs are the execution gateway's runs, which tool calls made with a
// run's token are shown in.
type Runs interface {
	// AppendEvents adds events to the tenant's run without changing its
	// state; a run that ended takes none (gateway.ErrNotFound when there
	// is no such run).
	AppendEvents(ctx context.Context, tenant, runID string, events ...gateway.Event) error
	// RecentEvents returns the run's latest events, at most limit, in
	// order.
	RecentEvents(ctx context.Context, tenant, runID string, limit int) ([]gateway.Event, error)
	// AnswerWrite answers the run's pause for the write callID: approved
	// queues the run again with a token bound to callID. A run that no
	// longer waits for that answer is left as it is (no error).
	AnswerWrite(ctx context.Context, tenant, runID, callID string, approved bool, actor string) error
	// WaitingWrites lists runs paused for a write confirmation, at most
	// limit, after the cursor a previous page returned ("" first).
	WaitingWrites(ctx context.Context, after string, limit int) (list []WaitingWrite, next string, err error)
}

// WaitingWrite is a run paused for a person's decision on a write.
type WaitingWrite struct {
	Tenant, RunID, CallID string
}

// Deps are what the gateway takes from the server around it.
type Deps struct {
	Store  tools.Store // required
	Tokens Tokens      // required
	// Providers offer the tools, in order: the first that finds a name
	// serves it.
	Providers []Provider
	// Gate judges write-class calls; without one they are refused.
	Gate Gate
	// Runs shows calls in runs; without one they are not shown.
	Runs Runs
	// BaseURL is the server's public base URL: the resource the
	// protected-resource metadata names and the gate page held calls
	// link to.
	BaseURL string
	// AdminToken is the server's admin token (policy administration).
	AdminToken secret.Value
	// Tracing traces every tools/call as a server span, "tools/call
	// <tool>", whose context the call's provider sees (its outbound
	// requests carry it); nil traces nothing.
	Tracing trace.TracerProvider
	// Metrics, when set, receives the calls' metrics.
	Metrics prometheus.Registerer
}

// Service is the tool gateway.
type Service struct {
	o    Options
	deps Deps
	log  *slog.Logger

	policies *policies
	schemas  schemas
	sessions *sessionCache
	inflight chan struct{}
	meter    *meter
	audit    *auditor
	tel      *telemetry

	decided chan struct{} // a gate decision was made in this process

	// calls ends when Shutdown's context does: the calls still in flight
	// are then cut off.
	calls    context.Context
	cutCalls context.CancelFunc

	openedMu sync.Mutex
	opened   map[string]time.Time // gate sessions this process opened, by tenant/session

	// impl is the MCP server's identity, which stateless-era results
	// carry.
	impl *mcp.Implementation
	// sdkOnly leaves every request to the SDK's server, as if fastPath
	// took none: the tests compare the two paths, and fastServed counts
	// the requests the fast path answered.
	sdkOnly    bool
	fastServed atomic.Int64
}

// New returns the gateway over deps.
func New(deps Deps, o *Options) *Service {
	opts := o.withDefaults()
	s := &Service{o: opts, deps: deps, log: opts.Logger.With("service", "toolgw"),
		inflight: make(chan struct{}, opts.MaxInflight), meter: newMeter(), decided: make(chan struct{}, 1), opened: map[string]time.Time{}}
	s.calls, s.cutCalls = context.WithCancel(context.Background())
	s.policies = newPolicies(deps.Store, opts.Now)
	s.sessions = newSessionCache(deps.Store, opts.SessionIdle, opts.Now)
	s.audit = newAuditor(deps.Gate, s.log, opts.AuditDelay)
	s.tel = newTelemetry(deps, s.log)
	return s
}

// Interceptors are none: agents reach the gateway over HTTP.
func (s *Service) Interceptors() []a2asrv.Interceptor { return nil }

// Runner is a Provider with background work (ingest jobs, idle upstream
// sessions): the gateway's Run runs it.
type Runner interface {
	Run(ctx context.Context)
}

// Router is a Provider with HTTP routes of its own (an administration
// API): the gateway's Routes serve them.
type Router interface {
	Routes() []httpapi.Route
}

// Run sweeps idle sessions, writes the audit entries of read-class calls,
// answers the runs whose held writes a person decided, and runs the
// providers' background work, until ctx ends.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.audit.run(ctx) })
	wg.Go(func() { s.sweepSessions(ctx) })
	wg.Go(func() { s.watchHolds(ctx) })
	for _, p := range s.deps.Providers {
		if r, ok := p.(Runner); ok {
			wg.Go(func() { r.Run(ctx) })
		}
	}
	wg.Wait()
}

// Shutdown releases what the providers hold (upstream processes and
// sessions). Calls in flight run on until ctx ends, then are cut off: a
// provider's Close waits for its calls, which may run for minutes. A
// write cut off stays claimed without an acknowledgement, for an
// operator to settle at the gate.
func (s *Service) Shutdown(ctx context.Context) error {
	stop := context.AfterFunc(ctx, s.cutCalls)
	defer stop()
	for _, p := range s.deps.Providers {
		if c, ok := p.(interface{ Close() error }); ok {
			if err := c.Close(); err != nil {
				s.log.Warn("toolgw: close a provider", "err", err)
			}
		} else if c, ok := p.(interface{ Close() }); ok {
			c.Close()
		}
	}
	return nil
}

func (s *Service) sweepSessions(ctx context.Context) {
	t := time.NewTicker(s.o.SessionIdle / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.deps.Store.SweepSessions(ctx, s.o.Now().Add(-s.o.SessionIdle)); err != nil && ctx.Err() == nil {
				s.log.Warn("toolgw: sweep idle sessions", "err", err)
			}
		}
	}
}

// Mount builds the gateway over st.Tools; nil when st keeps no tool
// store.
func Mount(st *store.Stores, deps Deps, o *Options) *Service {
	if st.Tools == nil {
		return nil
	}
	deps.Store = st.Tools
	return New(deps, o)
}
