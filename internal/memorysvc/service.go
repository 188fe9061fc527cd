package memorysvc

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/memory"
)

// Defaults of Options.
const (
	DefaultScratchTTL       = 5 * time.Minute
	DefaultMaxScratchTTL    = 24 * time.Hour
	DefaultMaxDurableTTL    = 5 * 365 * 24 * time.Hour
	MinTTL                  = time.Second
	DefaultConsolidateEvery = 20 * time.Second
	DefaultSweepEvery       = time.Minute
	DefaultGateEvery        = 5 * time.Second
	// DefaultLatencyBudget bounds a query or assemble that names none.
	DefaultLatencyBudget = 2 * time.Second
	// DefaultHintAttempts is how often extraction of a hint is tried
	// before it is dead-lettered.
	DefaultHintAttempts = 3
)

// Options configure a Service; nil or zero fields mean the defaults.
type Options struct {
	// Now is the clock (tests inject one).
	Now func() time.Time
	// Embedder makes the vectors of durable memories and queries; nil is
	// memory.NewHashEmbedder(0), lexical and model-free.
	Embedder memory.Embedder
	// Extractor turns hints into user facts; nil is Sentences, which
	// needs no model.
	Extractor Extractor
	// ScratchTTL is how long run and task memories live when a write
	// names no ttl_seconds (default 5 minutes); MaxScratchTTL and
	// MaxDurableTTL cap ttl_seconds per kind of scope. A ttl_seconds
	// below MinTTL is refused.
	ScratchTTL, MaxScratchTTL, MaxDurableTTL time.Duration
	// ConsolidateEvery is the consolidation worker's poll interval
	// (default 20s, as the memory guide says); GateEvery the write gate's sweep
	// for proposals a crash left behind (new proposals are judged at
	// once); SweepEvery the expiry sweep's.
	ConsolidateEvery, GateEvery, SweepEvery time.Duration
	// HintAttempts is how often a hint's extraction is tried before it is
	// dead-lettered (default 3).
	HintAttempts int
	Logger       *slog.Logger
	// MaxBodyBytes bounds one request to the MCP endpoint Mount serves
	// (default DefaultMaxBodyBytes); a larger one gets 413.
	MaxBodyBytes int64
}

// Service is the memory service: the memory guide's operations over a
// memory.Store, with the scope policy, the agent write gate, consolidation of
// hints and hybrid retrieval. Every method takes the Caller, whose
// identity comes from a verified token; nothing in a request names a
// tenant or an owner.
type Service struct {
	// directOnce builds directSet, the tools for in-process callers.
	directOnce sync.Once
	directSet  *toolSet
	store      memory.Store
	now        func() time.Time
	embedder   memory.Embedder
	extractor  Extractor
	scratchTTL time.Duration
	maxScratch time.Duration
	maxDurable time.Duration
	consEvery  time.Duration
	gateEvery  time.Duration
	sweepEvery time.Duration
	attempts   int
	log        *slog.Logger

	gateKick chan struct{} // a proposal is waiting
	stopOnce sync.Once

	tokens  Tokens // Mount's
	maxBody int64
	tel     *telemetry
	// argChecks counts the passes tools made over their own arguments,
	// which Handler's check of the whole body spares them.
	argChecks atomic.Int64
}

// New returns a Service over store. Call Run to start its workers.
func New(store memory.Store, o *Options) *Service {
	if o == nil {
		o = &Options{}
	}
	s := &Service{
		store:      store,
		now:        o.Now,
		embedder:   o.Embedder,
		extractor:  o.Extractor,
		scratchTTL: or(o.ScratchTTL, DefaultScratchTTL),
		maxScratch: or(o.MaxScratchTTL, DefaultMaxScratchTTL),
		maxDurable: or(o.MaxDurableTTL, DefaultMaxDurableTTL),
		consEvery:  or(o.ConsolidateEvery, DefaultConsolidateEvery),
		gateEvery:  or(o.GateEvery, DefaultGateEvery),
		sweepEvery: or(o.SweepEvery, DefaultSweepEvery),
		attempts:   o.HintAttempts,
		log:        o.Logger,
		gateKick:   make(chan struct{}, 1),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.embedder == nil {
		s.embedder = memory.NewHashEmbedder(0)
	}
	if s.extractor == nil {
		s.extractor = Sentences{}
	}
	if s.attempts <= 0 {
		s.attempts = DefaultHintAttempts
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.tel = newTelemetry(nil, nil, store, s.log) // Mount's replaces it
	return s
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Run runs the background workers (write gate, consolidation, expiry
// sweep) until ctx ends. Work they leave unfinished when ctx ends, or when
// the process dies, is durable and picked up by the next Run.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.loop(ctx, s.gateEvery, s.gateKick, s.judgeProposals) })
	wg.Go(func() { s.loop(ctx, s.consEvery, nil, s.consolidate) })
	wg.Go(func() { s.loop(ctx, s.sweepEvery, nil, s.sweep) })
	wg.Wait()
}

// loop runs work at once, then every interval and whenever kick fires.
func (s *Service) loop(ctx context.Context, every time.Duration, kick <-chan struct{}, work func(context.Context)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		work(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
	}
}

func (s *Service) sweep(ctx context.Context) {
	for {
		n, err := s.store.Sweep(ctx, s.now(), 1000)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("memory: expiry sweep failed", "err", err)
			}
			return
		}
		if n.Memories+n.Keys+n.HintsExpired+n.Hints+n.Proposals < 1000 {
			return
		}
	}
}

// Caller is who makes a call, as a verified execution token says: the
// tenant, the agent, the user it acts for, the run and conversation, and
// the scopes it was granted.
type Caller struct {
	Tenant       string
	Agent        string
	User         string
	Run          string
	Conversation string
	// Grants reports whether the token grants a scope such as
	// "memory:read:user" (with the token's wildcards applied).
	Grants func(scope string) bool
}

func (c *Caller) grants(scope string) bool { return c.Grants != nil && c.Grants(scope) }

// writesMemory reports whether c may write some memory scope: what a hint
// and its status poll need.
func (c *Caller) writesMemory() bool { return c.Grants != nil && grantsMemoryWrite(c.Grants) }

// grantsMemoryWrite reports whether grants includes a memory write scope
// (memory:write:run, task, agent, user or tenant, or a wildcard covering
// one).
func grantsMemoryWrite(grants func(scope string) bool) bool {
	for _, s := range memory.Scopes {
		if grants(ScopeWritePrefix + string(s)) {
			return true
		}
	}
	return false
}

// hintScopes is what a token lacking every memory write scope is told a
// hint needs.
const hintScopes = "a memory write scope (memory:write:run, task, agent, user or tenant)"

// Scope names the token scopes memory calls need.
const (
	ScopeReadPrefix  = "memory:read:"
	ScopeWritePrefix = "memory:write:"
	// ScopeAdmin marks an administrator's token: the only kind that may
	// write or forget tenant-scope memories.
	ScopeAdmin = "memory:admin"
)

func newID() string { return a2a.NewID() }

// refuse is the error of a refused call.
func refuse(status int, code, field, rule string) *memory.Error {
	return &memory.Error{Status: status, Code: code, Field: field, Rule: rule, Message: rule}
}

func forbidden(scope string) *memory.Error {
	return &memory.Error{Status: http.StatusForbidden, Code: memory.CodeScope, Field: "scope",
		Rule: "the token does not grant " + scope, Message: "the token does not grant " + scope}
}

func policy(field, rule string) *memory.Error {
	return refuse(http.StatusUnprocessableEntity, memory.CodePolicy, field, rule)
}

// storeErr reports a store failure: sentinels become their statuses, the
// rest 503 (a store may be down for a moment) with the cause logged only.
func (s *Service) storeErr(op string, err error) error {
	if _, ok := errors.AsType[*memory.Error](err); ok {
		return err // decided by the service already
	}
	if errors.Is(err, memory.ErrNotFound) || errors.Is(err, memory.ErrConflict) || errors.Is(err, memory.ErrKeyReused) {
		return memory.ErrorFor(err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	s.log.Error("memory: store failed", "op", op, "err", err)
	return &memory.Error{Status: http.StatusServiceUnavailable, Code: memory.CodeUnavailable, Message: "the memory store is unavailable; retry"}
}
