package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/defaults"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
)

// KeyFile is the invocation-token key ring's name in the data directory:
// a ring of its own, apart from the execution tokens'.
const KeyFile = "delivery.key"

// Defaults of Options.
const (
	// DefaultTokenTTL is how long an invocation token lives; an agent
	// that starts later renews it.
	DefaultTokenTTL = 5 * time.Minute
	// DefaultJWKSMaxAge is the key set's Cache-Control max-age.
	DefaultJWKSMaxAge = 5 * time.Minute
	// DefaultClockLeeway is the clock skew allowed on the times of
	// invocation tokens.
	DefaultClockLeeway = time.Minute
	// DefaultAckTimeout is how long an event sent to a consumer may go
	// unacknowledged before it is sent again.
	DefaultAckTimeout = 30 * time.Second
	// DefaultHeartbeatInterval is the interval agents are told to send
	// heartbeats at.
	DefaultHeartbeatInterval = 30 * time.Second
	// DefaultRunStaleAfter is how long a started run's agent may go
	// without a sign of life of it before the run ends stale: four
	// default heartbeat intervals, so that one or two lost heartbeats
	// end nothing.
	DefaultRunStaleAfter = 2 * time.Minute
	// DefaultMaxPollWait bounds a long poll's wait.
	DefaultMaxPollWait = 25 * time.Second
	// DefaultMaxBodyBytes bounds a request body: a patch of a hundred
	// operations of long texts, or a message with its components.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultPollLimit is a poll's page without a limit.
	DefaultPollLimit = 100
	// DefaultMaxRenewAge is how old an invocation token may be and still
	// be renewed.
	DefaultMaxRenewAge = 24 * time.Hour
	// DefaultProofWindow is how far a DPoP proof's iat may be from now.
	DefaultProofWindow = time.Minute
	// DefaultNonceWindow is how long a DPoP nonce stays current (it is
	// accepted in its window and the next).
	DefaultNonceWindow = 5 * time.Minute
	// DefaultMaxProofIDs bounds the proof ids remembered against replay.
	DefaultMaxProofIDs = 100_000
	// DefaultIdempotencyTTL is how long an answer is kept for a repeat of
	// its Idempotency-Key.
	DefaultIdempotencyTTL = 24 * time.Hour
	// DefaultIdempotencyStale is how long a key may stay in progress
	// before it is taken for abandoned (its process died) and run again.
	DefaultIdempotencyStale = 2 * time.Minute
	// DefaultPruneEvery is how often old idempotency records, and used
	// tokens past their time, are dropped.
	DefaultPruneEvery = time.Hour
	// DefaultContextMessages bounds the thread messages of a run context.
	DefaultContextMessages = 50
	// DefaultAttachmentText bounds the text of one attachment in a run
	// context.
	DefaultAttachmentText = 64 << 10
	// DefaultMaxMessageChars bounds a message's content.
	DefaultMaxMessageChars = 40_000
	// DefaultMaxComponents bounds a message's components.
	DefaultMaxComponents = 25
)

// Options configure the service; zero fields mean the defaults.
type Options struct {
	Logger *slog.Logger
	// Now is the clock of every decision (token times, ack timeouts,
	// proof windows); nil means time.Now.
	Now func() time.Time
	// TokenTTL is the lifetime of an invocation token.
	TokenTTL time.Duration
	// JWKSMaxAge is the key set's Cache-Control max-age.
	JWKSMaxAge time.Duration
	// ClockLeeway is the skew allowed on token times: a token is expired
	// at its exp plus this.
	ClockLeeway time.Duration
	// AckTimeout is how long a sent event may go unacknowledged before
	// it is sent again, with a fresh token.
	AckTimeout time.Duration
	// HeartbeatInterval is what agents are told to send heartbeats at.
	HeartbeatInterval time.Duration
	// RunStaleAfter is how long a run its agent started may go without a
	// sign of life of it — a heartbeat listing it in active_runs, a call
	// that writes it (patch, run.update, a message in it) — before the
	// execution gateway ends it failed, reason stale (default
	// DefaultRunStaleAfter, or four heartbeat intervals when that is
	// longer). It must be more than two heartbeat intervals.
	RunStaleAfter time.Duration
	// MaxPollWait bounds a long poll's wait.
	MaxPollWait time.Duration
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// PollLimit is a poll's page without a limit (at most
	// delivery.MaxPage).
	PollLimit int
	// MaxRenewAge is how old a token may be and still be renewed.
	MaxRenewAge time.Duration
	// ProofWindow is how far a DPoP proof's iat may be from now; a proof
	// is refused a second time until it is too old to be accepted (its
	// iat, this and a second). A shared store's proofs past that are
	// pruned every ProofWindow.
	ProofWindow time.Duration
	// NonceWindow is how long a DPoP nonce stays current; NonceKey signs
	// nonces (nil: a random key, and nonces hold in this process only —
	// replicas behind one URL need one key).
	NonceWindow time.Duration
	NonceKey    []byte
	// MaxProofIDs bounds the proof ids this process remembers against
	// replay; the oldest are forgotten first beyond it (a shared store
	// keeps them all, see Deps.SharedStore).
	MaxProofIDs int
	// IdempotencyTTL is how long an answer is kept for a repeat of its
	// key; IdempotencyStale how long a key may stay in progress before
	// it is taken for abandoned; PruneEvery how often old ones go, and
	// with them the used tokens past their time (a resume's is kept
	// until its token expires, TokenTTL and ClockLeeway after it was
	// issued: the store keeps those of the last PruneEvery, TokenTTL and
	// ClockLeeway at most).
	IdempotencyTTL   time.Duration
	IdempotencyStale time.Duration
	PruneEvery       time.Duration
	// ContextMessages bounds the earlier messages of a run context;
	// AttachmentText the text of one attachment in it.
	ContextMessages int
	AttachmentText  int
	// MaxMessageChars and MaxComponents bound a message.
	MaxMessageChars int
	MaxComponents   int

	// ResumeWindow is how long a dropped gateway session may be resumed
	// (remembered in this process only: elsewhere, or later, the agent
	// identifies again).
	ResumeWindow time.Duration
	// GatewayMaxFrameBytes bounds a frame the gateway reads (the
	// connection is closed 1009 beyond).
	GatewayMaxFrameBytes int64
	// GatewayIdentifyTimeout is how long a new connection has to identify
	// or resume after hello (else 4003).
	GatewayIdentifyTimeout time.Duration
	// GatewayMaxInFlight bounds the events sent to a gateway consumer
	// beyond its acknowledged sequence; more wait for its acks.
	GatewayMaxInFlight int
	// GatewayMaxBufferedBytes bounds the frames waiting to be written to
	// one connection: events wait while half of it is taken, and an
	// answer that finds it full closes the connection 4014 (the agent
	// does not read).
	GatewayMaxBufferedBytes int64
	// GatewayWriteTimeout bounds the write of one frame; a peer that
	// takes longer loses its connection.
	GatewayWriteTimeout time.Duration
	// GatewaySweepEvery is how often the gateway checks its connections'
	// deadlines (identify, heartbeats, redelivery) against Now.
	GatewaySweepEvery time.Duration
}

func (o *Options) withDefaults() Options {
	v := defaults.Copy(o)
	defaults.Logger(&v.Logger)
	defaults.Clock(&v.Now)
	defaults.Positive(&v.TokenTTL, DefaultTokenTTL)
	defaults.Positive(&v.JWKSMaxAge, DefaultJWKSMaxAge)
	defaults.Positive(&v.ClockLeeway, DefaultClockLeeway)
	defaults.Positive(&v.AckTimeout, DefaultAckTimeout)
	defaults.Positive(&v.HeartbeatInterval, DefaultHeartbeatInterval)
	defaults.Positive(&v.RunStaleAfter, max(DefaultRunStaleAfter, 4*v.HeartbeatInterval))
	defaults.Positive(&v.MaxPollWait, DefaultMaxPollWait)
	defaults.Positive(&v.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Positive(&v.PollLimit, DefaultPollLimit)
	v.PollLimit = min(v.PollLimit, delivery.MaxPage)
	defaults.Positive(&v.MaxRenewAge, DefaultMaxRenewAge)
	defaults.Positive(&v.ProofWindow, DefaultProofWindow)
	defaults.Positive(&v.NonceWindow, DefaultNonceWindow)
	defaults.Positive(&v.MaxProofIDs, DefaultMaxProofIDs)
	defaults.Positive(&v.IdempotencyTTL, DefaultIdempotencyTTL)
	defaults.Positive(&v.IdempotencyStale, DefaultIdempotencyStale)
	defaults.Positive(&v.PruneEvery, DefaultPruneEvery)
	defaults.Positive(&v.ContextMessages, DefaultContextMessages)
	defaults.Positive(&v.AttachmentText, DefaultAttachmentText)
	defaults.Positive(&v.MaxMessageChars, DefaultMaxMessageChars)
	defaults.Positive(&v.MaxComponents, DefaultMaxComponents)
	v.gatewayDefaults()
	return v
}

// Keys sign invocation tokens and publish their keys: an Ed25519 key
// ring (internal/auth's Issuer opened on KeyFile with EdDSA).
type Keys interface {
	// SignJWT signs claims as a compact JWS whose header carries typ and
	// the signing key's kid.
	SignJWT(ctx context.Context, typ string, claims []byte) (string, error)
	// Key is the published key with id kid, or an error.
	Key(ctx context.Context, kid string) (*jwk.Key, error)
	// PublicKeys are the keys a verifier needs.
	PublicKeys() []*jwk.Key
	// Algorithm is what SignJWT signs with: it must be EdDSA.
	Algorithm() string
}

// Deps are what the service takes from the server around it.
type Deps struct {
	// Store keeps the agents' streams, consumers, tokens, idempotent
	// answers and messages (required).
	Store delivery.Store
	// Runs keeps the instances and runs of the execution gateway, whose
	// pull runs this service delivers (required).
	Runs gateway.Store
	// Keys sign invocation tokens (required).
	Keys Keys
	// Tokens authenticates a tenant admin's platform token (createToken);
	// AdminToken is the operator's.
	Tokens     httpapi.Authenticator
	AdminToken secret.Value
	// SharedStore says that other processes serve from Store too
	// (replicas on one database: store.Stores.Shared, which Mount takes).
	// A DPoP proof is then recorded in Store, besides this process's
	// memory, so that it is accepted once by all of them; Run prunes the
	// ones past their time.
	SharedStore bool
	// BaseURL is the server's public base URL: the issuer of invocation
	// tokens and the origin DPoP proofs name.
	BaseURL string
	// InstanceID names this platform installation in the discovery
	// document; empty derives one from BaseURL.
	InstanceID string
	// Tracing and Metrics follow the server's telemetry convention;
	// nil traces and measures nothing.
	Tracing trace.TracerProvider
	Metrics prometheus.Registerer
}

// Service is the platform side of pull delivery. Safe for concurrent use.
type Service struct {
	o      Options
	deps   Deps
	log    *slog.Logger
	store  delivery.Store
	runs   gateway.Store
	keys   Keys
	issuer string
	base   string

	tel     *telemetry
	nonces  *dpop.Nonces
	proofs  *proofIDs
	watch   *watchers
	beatsMu sync.Mutex
	beats   map[string]LastHeartbeat
	// leases remembers the leases of started runs this process saw, so
	// that a heartbeat reads only the runs whose lease is due.
	leases *leaseNotes

	// gw serves the WebSocket gateway's connections.
	gw *gwHub

	// closing ends the long polls when the server shuts down.
	closing   chan struct{}
	closeOnce sync.Once
}

// Errors of New.
var (
	errNoStore = errors.New("delivery: Deps.Store and Deps.Runs are required")
	errNoKeys  = errors.New("delivery: Deps.Keys is required")
)

// Mount builds the service over st.Delivery and st.Gateway; nil when st
// keeps either not.
func Mount(st *store.Stores, deps Deps, o *Options) (*Service, error) {
	if st.Delivery == nil || st.Gateway == nil {
		return nil, nil
	}
	deps.Store, deps.Runs, deps.SharedStore = st.Delivery, st.Gateway, st.Shared
	return New(deps, o)
}

// New returns the service over deps.
func New(deps Deps, o *Options) (*Service, error) {
	if deps.Store == nil || deps.Runs == nil {
		return nil, errNoStore
	}
	if deps.Keys == nil {
		return nil, errNoKeys
	}
	if alg := deps.Keys.Algorithm(); alg != delivery.TokenAlgorithm {
		return nil, errors.New("delivery: the invocation-token keys sign " + alg + "; they must sign " + delivery.TokenAlgorithm)
	}
	opts := o.withDefaults()
	if opts.RunStaleAfter <= 2*opts.HeartbeatInterval {
		// One lost heartbeat must not end a run.
		return nil, fmt.Errorf("delivery: RunStaleAfter %s must be more than two heartbeat intervals (%s)", opts.RunStaleAfter, 2*opts.HeartbeatInterval)
	}
	base := strings.TrimRight(deps.BaseURL, "/")
	s := &Service{o: opts, deps: deps, log: opts.Logger, store: deps.Store, runs: deps.Runs, keys: deps.Keys,
		issuer: base, base: base, tel: newTelemetry(deps.Tracing, deps.Metrics, opts.Logger),
		nonces: dpop.NewNonces(opts.NonceKey, opts.NonceWindow),
		proofs: newProofIDs(opts.MaxProofIDs), watch: newWatchers(), beats: map[string]LastHeartbeat{},
		leases: newLeaseNotes(maxLeaseNotes), closing: make(chan struct{})}
	s.gw = newGWHub(s)
	return s, nil
}

// InstanceID is the id the discovery document names this installation
// by: Deps.InstanceID, else one derived from the base URL, the same on
// every replica and restart.
func (s *Service) InstanceID() string {
	if s.deps.InstanceID != "" {
		return s.deps.InstanceID
	}
	sum := sha256.Sum256([]byte(s.base))
	return "novaos-" + hex.EncodeToString(sum[:8])
}

// Interceptors are none: agents reach the service over HTTP.
func (s *Service) Interceptors() []a2asrv.Interceptor { return nil }

// Run wakes long polls and gateway sessions on the store's news of
// appended events (also another process's), checks the gateway's
// deadlines, and drops old idempotency records, used tokens past their
// time and, from a shared store, DPoP proof ids past their time, until
// ctx ends.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() {
		err := s.store.WatchEvents(ctx, func(agentID string, _ int64) { s.watch.notify(agentID) })
		if err != nil && ctx.Err() == nil {
			s.log.Warn("delivery: the store's event notifications stopped; long polls wake on this process's events and their timeouts only", "err", err)
		}
	})
	wg.Go(func() { s.prune(ctx) })
	if s.deps.SharedStore {
		wg.Go(func() { s.pruneProofs(ctx) })
	}
	wg.Go(func() { s.gw.run(ctx) })
	wg.Wait()
}

// Shutdown answers the long polls in flight at once (with what they
// have: nothing), so that they do not hold up the server's shutdown,
// and closes every gateway connection with 4013 server_restart, waiting
// until ctx ends for their close handshakes.
func (s *Service) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() { close(s.closing) })
	s.gw.shutdown(ctx)
	return nil
}

// pruneBatch bounds the records one statement of pruneBatches drops,
// so that no delete holds a table, or SQLite's writer, long.
const pruneBatch = 1000

// prune drops idempotency records older than Options.IdempotencyTTL,
// and the used tokens past their time, every Options.PruneEvery.
func (s *Service) prune(ctx context.Context) {
	t := time.NewTicker(s.o.PruneEvery)
	defer t.Stop()
	for {
		s.pruneOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pruneOnce is one round of prune.
func (s *Service) pruneOnce(ctx context.Context) {
	n, err := s.store.PruneRequests(ctx, s.o.Now().Add(-s.o.IdempotencyTTL))
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.Warn("delivery: pruning idempotency records failed", "err", err)
	case n > 0:
		s.log.Debug("delivery: pruned idempotency records", "count", n)
	}
	s.pruneBatches(ctx, "used tokens", s.store.PruneUsedTokens)
}

// pruneBatches drops the records prune says are past their time at
// now, in statements of at most pruneBatch, until one drops fewer (the
// rest are done, or another replica is dropping them) or ctx ends, and
// counts them; what names them in the log.
func (s *Service) pruneBatches(ctx context.Context, what string, prune func(ctx context.Context, now time.Time, limit int) (int64, error)) int64 {
	now := s.o.Now()
	var total int64
	for ctx.Err() == nil {
		n, err := prune(ctx, now, pruneBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("delivery: pruning "+what+" failed", "err", err)
			}
			break
		}
		total += n
		if n < pruneBatch {
			break
		}
	}
	if total > 0 {
		s.log.Debug("delivery: pruned "+what, "count", total)
	}
	return total
}
