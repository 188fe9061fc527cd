package llmgw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/defaults"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/instrument"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
)

// Defaults of Options.
const (
	// DefaultMaxBodyBytes bounds a request to /v1 (images in base64
	// make chat requests large).
	DefaultMaxBodyBytes = 16 << 20
	// DefaultMaxResponseBytes bounds a provider's answer that is not
	// streamed (a batch of embeddings is large).
	DefaultMaxResponseBytes = 64 << 20
	// DefaultMaxEventBytes bounds one event of a provider's stream.
	DefaultMaxEventBytes = 1 << 20
	// DefaultTimeout bounds a call that is not streamed, and a stream's
	// wait for its first event, as the OpenAI SDKs' own default.
	DefaultTimeout = 10 * time.Minute
	// DefaultStreamIdle bounds the wait for a stream's next event.
	DefaultStreamIdle = 2 * time.Minute
	// DefaultConnectTimeout bounds connecting to a provider.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxTokens is the answer a call that names no max_tokens is
	// assumed to take, in its budget estimate.
	DefaultMaxTokens = 4096
	// DefaultPlatformTenant is the tenant the platform's own calls (the
	// memory service's models, the gate's judge) are counted to.
	DefaultPlatformTenant = "novaos-platform"
	// DefaultConfigTTL is how long a route, a provider, a budget and an
	// opened key are reused before they are read again.
	DefaultConfigTTL = time.Second
	// DefaultLeaseTTL is how long a budget lease lasts unless its holder
	// renews it: a crashed replica's leases end after it.
	DefaultLeaseTTL = time.Minute
	// DefaultLeaseShare is the most of what is free on a counter one
	// lease takes beyond what a call needs.
	DefaultLeaseShare = 0.25
	// DefaultLeaseAhead is how long of a counter's recent spending a
	// lease is sized for.
	DefaultLeaseAhead = 10 * time.Second
	// DefaultLeaseIdle is how long a lease no call used is kept before it
	// is returned.
	DefaultLeaseIdle = 10 * time.Second
	// DefaultFlushEvery is how often the usage of settled calls is
	// written, in one batch.
	DefaultFlushEvery = 100 * time.Millisecond
	// DefaultCounterRetention is how long a budget counter unused is
	// kept: a run's per-run budget restarts after it.
	DefaultCounterRetention = 8 * 24 * time.Hour
	// DefaultMaxInflight bounds the calls in flight in this process.
	DefaultMaxInflight = 1024
	// DefaultMaxAdminBodyBytes bounds an administration request.
	DefaultMaxAdminBodyBytes = 64 << 10
)

// Options configure the gateway; nil or zero fields mean the defaults.
type Options struct {
	Logger *slog.Logger
	// Now is the clock of budget days, usage and caches.
	Now func() time.Time
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// MaxResponseBytes bounds a provider's answer that is not streamed
	// (a 502 beyond).
	MaxResponseBytes int64
	// MaxEventBytes bounds one event of a provider's stream.
	MaxEventBytes int
	// Timeout bounds a call that is not streamed and a stream's wait for
	// its first event, unless the provider names its own.
	Timeout time.Duration
	// StreamIdle bounds the wait for each next event of a stream.
	StreamIdle time.Duration
	// ConnectTimeout bounds connecting to a provider.
	ConnectTimeout time.Duration
	// DefaultMaxTokens is the answer a chat call naming no max_tokens is
	// assumed to take when its budget is reserved.
	DefaultMaxTokens int64
	// AllowPrivate lets providers be on loopback and private addresses
	// (a local vLLM or Ollama); by default only public addresses are
	// dialled. Metadata addresses never are.
	AllowPrivate bool
	// PlatformTenant is the tenant the platform's own calls are counted
	// and budgeted to (DefaultPlatformTenant).
	PlatformTenant string
	// Platform, when set, is bound to the gateway, so the platform's own
	// model clients reach it in process.
	Platform *Platform
	// ConfigTTL is how long a route, a provider, a budget and an opened
	// key are reused before they are read again, in the background
	// (default 1s): another replica's change is seen within twice it.
	ConfigTTL time.Duration
	// LeaseTTL is how long a budget lease lasts unless renewed (default
	// 1 min): the leases of a replica that died end after it, their
	// allowance counted as used.
	LeaseTTL time.Duration
	// LeaseShare is the most of what is free on a budget counter that one
	// lease takes beyond a call's need (default 0.25, at most 1).
	LeaseShare float64
	// LeaseAhead is how long of a counter's recent spending a lease is
	// sized for (at least four calls), and grown in the background when
	// less than half of that is left (default 10s).
	LeaseAhead time.Duration
	// LeaseIdle is how long a lease no call used is kept before its
	// allowance is returned (default 10s).
	LeaseIdle time.Duration
	// FlushEvery is how often the usage of settled calls is written, in
	// one batch, and leases renewed (default 100ms): a crash loses at
	// most that long of usage from the usage report.
	FlushEvery time.Duration
	// CounterRetention is how long an unused budget counter is kept.
	CounterRetention time.Duration
	// SweepEvery is how often expired leases and old counters are swept
	// (default 5 min).
	SweepEvery time.Duration
	// MaxInflight bounds the calls in flight in this process (503
	// beyond).
	MaxInflight int
	// MaxAdminBodyBytes bounds an administration request body.
	MaxAdminBodyBytes int64
}

func (o *Options) withDefaults() Options {
	v := defaults.Copy(o)
	defaults.Logger(&v.Logger)
	defaults.Clock(&v.Now)
	defaults.Positive(&v.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Positive(&v.MaxResponseBytes, DefaultMaxResponseBytes)
	defaults.Positive(&v.MaxEventBytes, DefaultMaxEventBytes)
	defaults.Positive(&v.Timeout, DefaultTimeout)
	defaults.Positive(&v.StreamIdle, DefaultStreamIdle)
	defaults.Positive(&v.ConnectTimeout, DefaultConnectTimeout)
	defaults.Positive(&v.DefaultMaxTokens, DefaultMaxTokens)
	defaults.Positive(&v.ConfigTTL, DefaultConfigTTL)
	defaults.Positive(&v.LeaseTTL, DefaultLeaseTTL)
	defaults.Positive(&v.LeaseAhead, DefaultLeaseAhead)
	defaults.Positive(&v.LeaseIdle, DefaultLeaseIdle)
	defaults.Positive(&v.FlushEvery, DefaultFlushEvery)
	if !(v.LeaseShare > 0 && v.LeaseShare <= 1) {
		v.LeaseShare = DefaultLeaseShare
	}
	defaults.Positive(&v.CounterRetention, DefaultCounterRetention)
	defaults.Positive(&v.SweepEvery, 5*time.Minute)
	defaults.Positive(&v.MaxInflight, DefaultMaxInflight)
	defaults.Positive(&v.MaxAdminBodyBytes, DefaultMaxAdminBodyBytes)
	if v.PlatformTenant == "" {
		v.PlatformTenant = DefaultPlatformTenant
	}
	return v
}

// Tokens verifies the execution tokens callers present: the server's
// token issuer.
type Tokens interface {
	Verify(ctx context.Context, token string) (*identity.Claims, error)
	Authenticator() httpapi.Authenticator
}

// Runs are the execution gateway's runs, which calls made with a run's
// token are shown in.
type Runs interface {
	// AppendEvents adds events to the tenant's run; a run that ended
	// takes none (gateway.ErrNotFound when there is no such run).
	AppendEvents(ctx context.Context, tenant, runID string, events ...gateway.Event) error
}

// Sealer seals values at rest (internal/sealkey's Sealer): purpose names
// what is sealed, binding where it is kept, and a value opens only for
// both.
type Sealer interface {
	Seal(plain []byte, purpose string, binding ...string) (string, error)
	Unseal(sealed string, purpose string, binding ...string) ([]byte, error)
}

// Deps are what the gateway takes from the server around it.
type Deps struct {
	Store  llm.Store // required
	Tokens Tokens    // required
	// Sealer seals providers' API keys; without one a provider with a
	// key is refused.
	Sealer Sealer
	// Runs shows calls in runs (in batches, with the usage); without one
	// they are not shown.
	Runs Runs
	// AdminToken is the server's admin token (administration).
	AdminToken secret.Value
	// Tracing makes the spans of model calls; nil makes none.
	Tracing trace.TracerProvider
	// Metrics registers the gateway's metrics; nil registers none.
	Metrics prometheus.Registerer
}

// Service is the LLM gateway.
type Service struct {
	o      Options
	deps   Deps
	log    *slog.Logger
	guard  *netguard.Policy
	client *http.Client
	tracer trace.Tracer
	meter  *meter
	cache  *configCache
	ledger *ledger
	events *runEvents

	inflight chan struct{}
	// calls ends when Shutdown's context does: the calls still in flight
	// are then cut off.
	calls    context.Context
	cutCalls context.CancelFunc
	wg       sync.WaitGroup

	platformOnce sync.Once
	platform     http.RoundTripper // the /v1 endpoints in process, as the platform
}

// New returns the gateway over deps.
func New(deps Deps, o *Options) *Service {
	opts := o.withDefaults()
	s := &Service{o: opts, deps: deps, log: opts.Logger, inflight: make(chan struct{}, opts.MaxInflight)}
	s.guard = &netguard.Policy{AllowLoopback: opts.AllowPrivate, AllowPrivate: opts.AllowPrivate}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// No proxy: the dial-time guard must see where a connection goes.
	tr.Proxy = nil
	tr.DialContext = s.guard.Dialer(&net.Dialer{Timeout: opts.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.MaxIdleConnsPerHost = 64
	tr.TLSHandshakeTimeout = opts.ConnectTimeout
	s.client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		// An API key goes to its provider's URL or nowhere.
		return errRedirect
	}}
	s.tracer = instrument.Tracer(deps.Tracing, "novaos.dev/novaos/internal/llmgw")
	s.meter = newMeter(deps.Metrics, s.log)

	s.ledger = newLedger(deps.Store, &s.o, s.log, s.budgets)
	s.events = newRunEvents(deps.Runs, s.log)
	s.calls, s.cutCalls = context.WithCancel(context.Background())
	s.cache = newConfigCache(s.calls, opts.ConfigTTL, opts.Now)
	if opts.Platform != nil {
		opts.Platform.bind(s)
	}
	return s
}

// finalWriteGrace bounds Shutdown's last write of usage and leases.
const finalWriteGrace = 5 * time.Second

var errRedirect = errors.New("llmgw: the provider answered with a redirect, which the gateway does not follow")

// Mount builds the gateway over st.LLM; nil when st keeps no LLM store.
func Mount(st *store.Stores, deps Deps, o *Options) *Service {
	if st.LLM == nil {
		return nil
	}
	deps.Store = st.LLM
	return New(deps, o)
}

// Interceptors are none: agents reach the gateway over HTTP.
func (s *Service) Interceptors() []a2asrv.Interceptor { return nil }

// Run writes the usage of settled calls and keeps this replica's budget
// leases (every FlushEvery), and sweeps expired leases and old counters
// (every SweepEvery), until ctx ends.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.ledger.run(ctx, s.events.flush) })
	defer wg.Wait()
	t := time.NewTicker(s.o.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := s.o.Now()
			if err := s.deps.Store.Sweep(ctx, now, now.Add(-s.o.CounterRetention)); err != nil && ctx.Err() == nil {
				s.log.Warn("llmgw: sweep the usage ledger", "err", err)
			}
		}
	}
}

// Shutdown lets calls in flight finish while ctx lasts, then cuts them
// off (a stream cut off ends without its [DONE]); it waits for their
// settlements, writes them, and returns what this replica's leases have
// left.
func (s *Service) Shutdown(ctx context.Context) error {
	stop := context.AfterFunc(ctx, s.cutCalls)
	defer stop()
	s.wg.Wait()
	s.client.CloseIdleConnections()
	// Written even when ctx is done, as the calls it cut off were, but not
	// waited for past a moment.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalWriteGrace)
	defer cancel()
	s.events.flush(wctx)
	if err := s.ledger.flush(wctx, true); err != nil {
		return fmt.Errorf("llmgw: write the usage and return the leases: %w", err)
	}
	return nil
}
