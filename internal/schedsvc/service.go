package schedsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/internal/defaults"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
)

// Defaults of Options.
const (
	// DefaultMaxBodyBytes bounds a create: 100,000 characters of task
	// content are at most 400 KB of UTF-8.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultPollEvery is how often the store is read for configs that
	// other servers created or changed.
	DefaultPollEvery = 5 * time.Second
	// DefaultGrace is how late a tick may be found and still start its
	// run; a tick found later was missed.
	DefaultGrace = time.Minute
	// DefaultLease is how long a server holds a tick it claimed before
	// any server may take it over.
	DefaultLease = time.Minute
	// DefaultMaxAttempts bounds the tries to start one tick's run.
	DefaultMaxAttempts = 3
	// DefaultMaxConcurrentFires bounds the runs one pass starts at once.
	DefaultMaxConcurrentFires = 16
	// DefaultBatch is how many due configs one read of the store takes.
	DefaultBatch = 100
	// DefaultMaxMissedScan bounds the missed ticks counted one by one;
	// past it the count is an estimate from the ticks of the latest day.
	DefaultMaxMissedScan = 100_000
)

// Options configure the service; zero fields mean the defaults.
type Options struct {
	Logger *slog.Logger
	// Clock tells the time and wakes the scheduler; nil is the system's.
	Clock Clock
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// PollEvery is how often the scheduler reads the store for configs
	// other servers created or changed (default DefaultPollEvery): a
	// change made through this server wakes it at once.
	PollEvery time.Duration
	// Grace is how late a tick may be found due and still start a run
	// (default DefaultGrace); a tick found later is reported missed.
	Grace time.Duration
	// Lease is how long a claimed tick is this server's to start
	// (default DefaultLease); then any server takes it over.
	Lease time.Duration
	// MaxAttempts bounds the tries to start one tick's run (default
	// DefaultMaxAttempts); the tick then fails.
	MaxAttempts int
	// MaxConcurrentFires bounds the runs one pass starts at once.
	MaxConcurrentFires int
	// Batch is how many due configs one read of the store takes.
	Batch int
	// MaxMissedScan bounds the missed ticks counted one by one.
	MaxMissedScan int
}

func (o *Options) withDefaults() Options {
	v := defaults.Copy(o)
	defaults.Logger(&v.Logger)
	if v.Clock == nil {
		v.Clock = systemClock{}
	}
	defaults.Positive(&v.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Positive(&v.PollEvery, DefaultPollEvery)
	defaults.Positive(&v.Grace, DefaultGrace)
	defaults.Positive(&v.Lease, DefaultLease)
	defaults.Positive(&v.MaxAttempts, DefaultMaxAttempts)
	defaults.Positive(&v.MaxConcurrentFires, DefaultMaxConcurrentFires)
	defaults.Positive(&v.Batch, DefaultBatch)
	defaults.Positive(&v.MaxMissedScan, DefaultMaxMissedScan)
	return v
}

// Tokens verifies the platform tokens callers present: the server's token
// issuer.
type Tokens interface {
	Authenticator() httpapi.Authenticator
}

// Runs is the execution gateway, which every fire starts a run through.
type Runs interface {
	// Instance returns the tenant's instance; an error matching
	// gateway.ErrNotFound when there is none.
	Instance(ctx context.Context, tenantID, instanceID string) (gateway.Instance, error)
	// Start queues a run. A run of the same RunID that exists already is
	// an error matching gateway.ErrExists, and nothing is started; an
	// instance that is gone matches gateway.ErrNotFound; a request the
	// gateway refuses is a *problem.Problem of status 4xx. Any other
	// error is taken as passing: the tick is tried again.
	Start(ctx context.Context, r RunStart) (runID string, err error)
}

// RunStart is the run a fire starts.
type RunStart struct {
	TenantID   string
	InstanceID string
	// RunID and IdempotencyKey are the tick's own (RunIDFor,
	// IdempotencyKeyFor): every try of one tick, on any server, names the
	// same run.
	RunID          string
	IdempotencyKey string
	Input          string
	// Caller is who the run is started as: the config's creator.
	Caller gateway.Caller
	// Limits are what is left of the config's daily token and cost
	// budget when a meter reports the day's use (Deps.Spend) and the
	// budget caps them; zero fields set no limit. The gateway keeps them
	// as the run's own LLM limit, which the LLM gateway holds the run's
	// model calls to.
	Limits Limits
}

// Limits cap one run's model use.
type Limits struct {
	MaxTokens  int64
	MaxCostUSD float64
}

// Spend reports what runs used: the LLM gateway's meter.
type Spend interface {
	// Spent returns the model tokens and the cost in USD that the
	// tenant's runs runIDs used in all, as far as they are known.
	Spent(ctx context.Context, tenantID string, runIDs []string) (Usage, error)
}

// Usage is what runs used.
type Usage struct {
	Tokens  int64
	CostUSD float64
}

// Deps are what the service takes from the server around it.
type Deps struct {
	Store  heartbeat.Store // required (Mount sets it)
	Tokens Tokens          // required
	Runs   Runs            // required
	// AdminToken is the server's admin token; without one a caller on
	// the server's machine is the operator (httpapi.AdminRule).
	AdminToken secret.Value
	// Spend reports the day's token and cost use of a config's runs;
	// without it those two caps of a budget cannot be checked, and only
	// the run cap is enforced.
	Spend Spend
	// Tracing makes the fires' spans (nil: none); Metrics registers the
	// service's metrics (nil: not registered).
	Tracing trace.TracerProvider
	Metrics prometheus.Registerer
}

// Service serves heartbeat configs and fires their schedules.
type Service struct {
	store heartbeat.Store
	deps  Deps
	o     Options
	log   *slog.Logger
	api   *httpapi.API
	clock Clock
	tel   *telemetry
	// owner names this process in the fires it claims: random, so a
	// restarted process never takes an old claim for its own.
	owner string

	kick chan struct{} // a config changed in this process

	warnedMu sync.Mutex
	warned   map[string]bool // configs whose unchecked caps were logged

	// idle, when set (tests), is told when the scheduler goes to sleep,
	// with the time up to which it handled every due tick.
	idle func(time.Time)
}

// New returns the service over deps.
func New(deps Deps, o *Options) *Service {
	opts := o.withDefaults()
	s := &Service{store: deps.Store, deps: deps, o: opts, log: opts.Logger, clock: opts.Clock,
		owner: newOwner(), kick: make(chan struct{}, 1), warned: map[string]bool{}}
	s.api = &httpapi.API{Name: "schedules", Logger: s.log, MaxBodyBytes: opts.MaxBodyBytes,
		Auth: httpapi.AdminOrToken(deps.AdminToken, deps.Tokens.Authenticator()), ProblemFor: problemFor}
	s.tel = newTelemetry(deps.Tracing, deps.Metrics, s.log)
	return s
}

// Mount builds the service over st.Schedules; nil when st keeps no
// schedules or there is no execution gateway to start runs through.
func Mount(st *store.Stores, deps Deps, o *Options) *Service {
	if st.Schedules == nil || deps.Runs == nil {
		return nil
	}
	deps.Store = st.Schedules
	return New(deps, o)
}

// Interceptors are none: the service calls no hosted agent itself.
func (s *Service) Interceptors() []a2asrv.Interceptor { return nil }

// Routes serve the heartbeat configs under heartbeat.BasePath.
func (s *Service) Routes() []httpapi.Route {
	route := func(pattern string, m httpapi.Methods) httpapi.Route {
		return httpapi.Route{Pattern: pattern, Handler: s.api.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.api.Route(w, r, m)
		}))}
	}
	configs := heartbeat.BasePath + "/agents/{agentId}/instances/{instanceId}/heartbeat-configs"
	return []httpapi.Route{
		route(configs, httpapi.Methods{http.MethodGet: s.serveList, http.MethodPost: s.serveCreate}),
		route(configs+"/{configId}", httpapi.Methods{http.MethodGet: s.serveGet, http.MethodDelete: s.serveDelete}),
		route(configs+"/{configId}/pause", httpapi.Methods{http.MethodPost: s.servePause}),
		route(configs+"/{configId}/resume", httpapi.Methods{http.MethodPost: s.serveResume}),
	}
}

// changed wakes the scheduler: a config it may have to fire changed.
func (s *Service) changed() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func newOwner() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
