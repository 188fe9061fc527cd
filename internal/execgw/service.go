package execgw

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/defaults"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
)

// Defaults of Options.
const (
	// DefaultMaxBodyBytes bounds an execute request: 100,000 characters of
	// input are up to 400 KB of UTF-8, and attachments travel as base64.
	DefaultMaxBodyBytes = 8 << 20
	// DefaultTokenTTL is how long a run's execution token lives; a run
	// that outlasts it gets a fresh one at its next delivery.
	DefaultTokenTTL = 15 * time.Minute
	// DefaultMaxAttempts bounds the deliveries of one turn whose stream
	// ended without an ending or a pause.
	DefaultMaxAttempts = 3
	// DefaultRetryBackoff is the wait before the second attempt; it
	// doubles for each later one.
	DefaultRetryBackoff = time.Second
	// DefaultLease is how long a dispatcher's claim on a run lasts
	// without renewal: another replica takes the run over this long after
	// its dispatcher died.
	DefaultLease = 30 * time.Second
	// DefaultSweepEvery is how often runs whose dispatcher died (or that
	// wait out a backoff) are looked for.
	DefaultSweepEvery = 2 * time.Second
	// DefaultKeepAlive is the interval of SSE keep-alive comments on an
	// idle event stream.
	DefaultKeepAlive = 15 * time.Second
	// DefaultMaxStreams bounds the event streams open at once.
	DefaultMaxStreams = 10000
	// DefaultMaxConcurrentRuns bounds the runs this process delivers at
	// once; more wait queued.
	DefaultMaxConcurrentRuns = 256
	// DefaultMaxOutputBytes bounds the answer and artifacts of one turn.
	DefaultMaxOutputBytes = 8 << 20
	// DefaultHistoryTurns bounds the earlier turns a thread run carries.
	DefaultHistoryTurns = 50
)

// Options configure the gateway; zero fields mean the defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
	// MaxBodyBytes bounds one request body.
	MaxBodyBytes int64
	// TokenTTL is the lifetime of a run's execution token.
	TokenTTL time.Duration
	// MaxAttempts and RetryBackoff bound the redelivery of a turn whose
	// stream dropped.
	MaxAttempts  int
	RetryBackoff time.Duration
	// Lease and SweepEvery time the takeover of runs whose dispatcher
	// died.
	Lease      time.Duration
	SweepEvery time.Duration
	// KeepAlive is the interval of keep-alive comments on event streams.
	KeepAlive time.Duration
	// MaxStreams bounds the event streams open at once (503 beyond).
	MaxStreams int
	// MaxConcurrentRuns bounds the deliveries in flight in this process.
	MaxConcurrentRuns int
	// HistoryTurns bounds the earlier turns of a thread sent to a run.
	HistoryTurns int
	// MaxOutputBytes bounds the answer and artifacts of one turn; a turn
	// past it fails.
	MaxOutputBytes int
	// URLPolicy says which hosts agents installed by URL may be on,
	// checked when an instance is installed and again at every connect;
	// nil means public hosts, and loopback hosts too when the server is
	// reached on loopback; LoopbackIfLocal adds that to a URLPolicy.
	URLPolicy       *registry.Policy
	LoopbackIfLocal bool
}

func (o *Options) withDefaults() Options {
	v := defaults.Copy(o)
	defaults.Logger(&v.Logger)
	defaults.Clock(&v.Now)
	defaults.Positive(&v.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Positive(&v.TokenTTL, DefaultTokenTTL)
	defaults.Positive(&v.RetryBackoff, DefaultRetryBackoff)
	defaults.Positive(&v.Lease, DefaultLease)
	defaults.Positive(&v.SweepEvery, DefaultSweepEvery)
	defaults.Positive(&v.KeepAlive, DefaultKeepAlive)
	defaults.Positive(&v.MaxAttempts, DefaultMaxAttempts)
	defaults.Positive(&v.MaxStreams, DefaultMaxStreams)
	defaults.Positive(&v.MaxConcurrentRuns, DefaultMaxConcurrentRuns)
	defaults.Positive(&v.HistoryTurns, DefaultHistoryTurns)
	defaults.Positive(&v.MaxOutputBytes, DefaultMaxOutputBytes)
	return v
}

// Tokens verifies the platform tokens callers present and mints the
// execution tokens of runs: the server's token issuer.
type Tokens interface {
	Authenticator() httpapi.Authenticator
	Verify(ctx context.Context, token string) (*identity.Claims, error)
	// Mint signs with the server's token algorithm (--token-alg), MintAs
	// with alg (identity.EdDSA or identity.RS256).
	Mint(ctx context.Context, c identity.Claims, ttl time.Duration) (string, error)
	MintAs(ctx context.Context, alg string, c identity.Claims, ttl time.Duration) (string, error)
}

// Hosted reaches the agents the platform hosts in process.
type Hosted interface {
	// AgentHandler is the A2A handler of the hosted agent name, served at
	// its root; false when there is no such agent.
	AgentHandler(name string) (http.Handler, bool)
}

// Sealer seals values at rest (an instance's secrets, a run's custom
// headers): purpose names what is sealed, binding where it is kept, and
// a value opens only for both (internal/sealkey's Sealer).
type Sealer interface {
	Seal(plain []byte, purpose string, binding ...string) (string, error)
	Unseal(sealed string, purpose string, binding ...string) ([]byte, error)
}

// Purposes of the values the gateway seals.
const (
	sealSecrets = "novaos instance-secrets v1"
	sealHeaders = "novaos run-headers v1"
)

// Deps are what the gateway takes from the server around it.
type Deps struct {
	// AdminToken is the server's admin token: its bearer acts for every
	// tenant. Without one, a tokenless caller on this machine is the
	// admin (httpapi.AdminRule).
	AdminToken secret.Value
	Tokens     Tokens // required
	Hosted     Hosted
	// Pull delivers the runs of pull instances; without it they fail.
	Pull Puller
	// Sealer seals secrets and custom headers at rest; without one the
	// gateway refuses to take them.
	Sealer Sealer
	// BaseURL is the server's public base URL, sent to agents as the
	// gateway they call platform services at.
	BaseURL string
	// Tracing traces every delivery ("invoke_agent <agent>") and every
	// call of an agent, whose trace context the call carries; nil traces
	// nothing.
	Tracing trace.TracerProvider
	// Metrics, when set, receives the runs' metrics.
	Metrics prometheus.Registerer
}

// Service is the execution gateway. Safe for concurrent use.
type Service struct {
	store gateway.Store
	deps  Deps
	o     Options
	log   *slog.Logger
	api   *httpapi.API
	// owner names this process in run leases.
	owner string

	hub      *hub
	dispatch *dispatcher
	// revocations remembers which runs have ended, for Revoked.
	revocations *runStates
	// outbound calls agents by URL; resolver caches their cards.
	outbound *http.Client
	resolver *a2aclient.Resolver
	registry registry.Store

	tel *telemetry

	closing   chan struct{}
	closeOnce sync.Once
	raised    raisedPauses
	handBack  atomic.Bool // set by a Shutdown with time left
	// onPark, for tests, hears of each delivery its run's debugger holds,
	// with the copy of the run the debugger held it on.
	onPark func(run gateway.Run)
	// onQueued, for tests, hears of each item of an agent's stream read
	// ahead of its recording.
	onQueued func()
}

// Mount builds the gateway over st.Gateway; nil when st keeps no runs.
func Mount(st *store.Stores, deps Deps, o *Options) *Service {
	if st.Gateway == nil {
		return nil
	}
	s := New(st.Gateway, deps, o)
	s.registry = st.Registry
	return s
}

// New returns the gateway over s.
func New(s gateway.Store, deps Deps, o *Options) *Service {
	opts := o.withDefaults()
	opts.URLPolicy = registry.PolicyAt(opts.URLPolicy, opts.LoopbackIfLocal, deps.BaseURL)
	svc := &Service{store: s, deps: deps, o: opts, log: opts.Logger, owner: newOwner(), closing: make(chan struct{})}
	svc.api = &httpapi.API{Name: "gateway", Logger: svc.log, MaxBodyBytes: opts.MaxBodyBytes,
		Auth: svc.callers(), Protect: func(r *http.Request) bool { return r.URL.Path != gateway.StreamingHealthPath },
		ProblemFor: problemFor}
	svc.revocations = newRunStates(maxRevocationCache)
	svc.hub = newHub(s, opts.MaxStreams, svc.log)
	svc.hub.onEvents = svc.revocations.forget
	svc.tel = newTelemetry(svc, deps)
	svc.outbound = outboundClient(opts.URLPolicy.Guard().Dialer(&net.Dialer{Timeout: 10 * time.Second}))
	svc.resolver = a2aclient.NewResolver(&a2aclient.ResolverOptions{HTTPClient: svc.outbound})
	svc.dispatch = newDispatcher(svc)
	return svc
}

// newOwner names this process for leases: random, so a restarted process
// never mistakes an old lease for its own.
func newOwner() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Interceptors are none: the gateway calls agents, it does not serve them.
func (s *Service) Interceptors() []a2asrv.Interceptor { return nil }

// Run watches the store for other processes' events, and delivers runs
// until ctx ends.
func (s *Service) Run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	wg.Go(func() { s.hub.run(ctx) })
	wg.Go(func() { s.dispatch.run(ctx) })
	wg.Wait()
}

// Shutdown ends the event streams in flight so the server's shutdown is
// not held up by followers, and stops delivering. A run in flight is
// handed back at once for any replica to deliver again, unless ctx has
// no time left: then nothing more is written, and the run is taken over
// when its lease lapses, as after a crash.
func (s *Service) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.handBack.Store(ctx.Err() == nil)
		close(s.closing)
	})
	s.hub.close()
	return nil
}

var errClosing = errors.New("execgw: shutting down")

// handingBack reports whether Shutdown was called with time to hand the
// runs in flight back.
func (s *Service) handingBack() bool {
	select {
	case <-s.closing:
		return s.handBack.Load()
	default:
		return false
	}
}
