package gatesvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc/judge"
	"novaos.dev/novaos/internal/gatesvc/rules"
)

// Defaults of Options.
const (
	// DefaultHoldWindow is the deployment's hold window: the longest a
	// hold waits for an operator before it fails closed.
	DefaultHoldWindow = 15 * time.Minute
	// DefaultRestartGrace is how long the gate may be down with holds
	// pending and keep them; past it they fail closed.
	DefaultRestartGrace = 2 * time.Minute
	// DefaultClaimTimeout is how long a granted claim may go without its
	// acknowledgement before operators see it as unconfirmed.
	DefaultClaimTimeout = 5 * time.Minute
	// DefaultCommitmentVersion is what a commitment means in this release;
	// changing it invalidates standing approvals.
	DefaultCommitmentVersion = "1"
	// DefaultMaxWait caps one long-poll wait.
	DefaultMaxWait = 30 * time.Second
	// DefaultRuleRefresh is how stale another replica's view of a
	// tenant's current rule set may be.
	DefaultRuleRefresh = time.Second
	// DefaultSweepEvery is how often expired holds and stale claims are
	// settled when no waiter did it first.
	DefaultSweepEvery = time.Second
	// JudgePromptVersion names the judge's prompt in decisions and the
	// audit; it changes whenever package judge's prompt does.
	JudgePromptVersion = "judge-1"
)

// Options configure a Service; zero fields mean the defaults.
type Options struct {
	Now    func() time.Time
	Logger *slog.Logger
	// MaxBodyBytes bounds one request to the API Mount serves (default
	// DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// HoldWindow is the deployment's hold window; with HoldIndefinite a
	// hold waits until a person decides (and sessions may park).
	HoldWindow     time.Duration
	HoldIndefinite bool
	RestartGrace   time.Duration
	ClaimTimeout   time.Duration
	// CommitmentVersion is recorded with every standing verdict; a resume
	// under another version is refused.
	CommitmentVersion string
	MaxWait           time.Duration
	RuleRefresh       time.Duration
	SweepEvery        time.Duration
	// Rules tunes rule compilation (cost limits).
	Rules *rules.Options
	// Judge, when set, is asked after the rules; JudgeModel names its
	// model in decisions and the audit.
	Judge      Judger
	JudgeModel string
}

// Judger is the LLM judge layer (package judge's *Judge).
type Judger interface {
	Judge(ctx context.Context, req judge.Request) (*judge.Verdict, error)
}

// Service is the gate: it judges actions, keeps holds, grants claims and
// records acknowledgements over a gate.Store. Safe for concurrent use.
type Service struct {
	store gate.Store
	o     Options
	log   *slog.Logger

	rules   ruleCache
	waiters waiters
	// recheck is how often a long-poll re-reads its action: a decision
	// made on another replica wakes no channel here (tests lengthen it to
	// show that a local decision wakes its waiters at once).
	recheck time.Duration

	inflightMu sync.Mutex
	inflight   map[actionKey]*inflight

	closing   chan struct{} // closed by Close
	closeOnce sync.Once

	tel *telemetry

	deps Deps // Mount's
}

// actionKey names an action across tenants.
type actionKey struct{ tenant, session, action string }

// New returns a Service over store.
func New(store gate.Store, o *Options) *Service {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HoldWindow <= 0 {
		opts.HoldWindow = DefaultHoldWindow
	}
	if opts.RestartGrace <= 0 {
		opts.RestartGrace = DefaultRestartGrace
	}
	if opts.ClaimTimeout <= 0 {
		opts.ClaimTimeout = DefaultClaimTimeout
	}
	if opts.CommitmentVersion == "" {
		opts.CommitmentVersion = DefaultCommitmentVersion
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.RuleRefresh <= 0 {
		opts.RuleRefresh = DefaultRuleRefresh
	}
	if opts.SweepEvery <= 0 {
		opts.SweepEvery = DefaultSweepEvery
	}
	s := &Service{store: store, o: opts, log: opts.Logger, recheck: time.Second, inflight: map[actionKey]*inflight{}, closing: make(chan struct{})}
	s.tel = newTelemetry(nil, nil, store, opts.Now, opts.Logger) // Mount's replaces it
	s.rules.init(store, opts.RuleRefresh, opts.Rules, opts.Now)
	s.waiters.init()
	return s
}

// Start settles what a restart left behind: when the gate was down for
// longer than the restart grace, every pending hold fails closed
// ([fail_closed_restart_past_grace]); within it, holds keep their windows.
// It records the first heartbeat. Call it once before serving.
func (s *Service) Start(ctx context.Context) error {
	now := s.o.Now()
	prev, err := s.store.Heartbeat(ctx, now)
	if err != nil {
		return fmt.Errorf("gate: heartbeat: %w", err)
	}
	if prev.IsZero() || now.Sub(prev) <= s.o.RestartGrace {
		return nil
	}
	down := now.Sub(prev).Round(time.Second)
	s.log.Warn("gate: down longer than the restart grace; pending holds fail closed", "down", down, "grace", s.o.RestartGrace)
	if _, err := s.store.AppendAudit(ctx, gate.AuditEntry{Kind: "restart_past_grace", Actor: "gate",
		Body: mustJSON(map[string]any{"down_s": down.Seconds(), "grace_s": s.o.RestartGrace.Seconds()})}); err != nil {
		return fmt.Errorf("gate: audit restart: %w", err)
	}
	return s.failHolds(ctx, gate.ReasonRestartPastGrace, func() ([]gate.ActionRecord, error) {
		return s.store.ListActions(ctx, gate.ActionFilter{States: []gate.ActionState{gate.ActionHeld}, Limit: holdPage})
	})
}

// Close ends the long-polls in flight at once, and makes later ones
// answer at once, each with its action as it stands: a pending hold stays
// pending, its window running on. Call it when the server begins to shut
// down: otherwise an agent waiting on a hold keeps its request open for up
// to MaxWait and holds the shutdown up past any reasonable deadline. The
// SDK asks again and reaches the server that takes over (within the
// restart grace, the hold is kept). Records are untouched. Safe to call
// more than once.
func (s *Service) Close() { s.closeOnce.Do(func() { close(s.closing) }) }

// Run keeps the heartbeat and settles expired holds and stale claims
// until ctx ends.
func (s *Service) Run(ctx context.Context) {
	beat := min(s.o.RestartGrace/4, 10*time.Second)
	heartbeat := time.NewTicker(beat)
	defer heartbeat.Stop()
	sweep := time.NewTicker(s.o.SweepEvery)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-heartbeat.C:
			if _, err := s.store.Heartbeat(ctx, s.o.Now()); err != nil && ctx.Err() == nil {
				s.log.Error("gate: heartbeat", "err", err)
			}
		case <-sweep.C:
			if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("gate: sweep", "err", err)
			}
		}
	}
}

// Sweep expires holds whose window has passed and marks claims older than
// the claim timeout unconfirmed. Run calls it; tests call it directly.
func (s *Service) Sweep(ctx context.Context) error {
	now := s.o.Now()
	if err := s.failHolds(ctx, gate.ReasonOperatorTimeout, func() ([]gate.ActionRecord, error) {
		return s.store.ExpiringHolds(ctx, now, holdPage)
	}); err != nil {
		return err
	}
	return s.markStaleClaims(ctx, now)
}

// failHolds expires, with reason, every hold list returns (pages of up
// to holdPage, read again until one comes back short).
func (s *Service) failHolds(ctx context.Context, reason gate.Reason, list func() ([]gate.ActionRecord, error)) error {
	for {
		recs, err := list()
		if err != nil {
			return fmt.Errorf("gate: list holds: %w", err)
		}
		for _, r := range recs {
			if _, err := s.expireHold(ctx, r, reason); err != nil && !errors.Is(err, gate.ErrConflict) {
				return err
			}
		}
		if len(recs) < holdPage {
			return nil
		}
	}
}

// holdPage is how many holds failHolds settles per read.
const holdPage = 500

// expireHold fails one hold closed and wakes its waiters. On a conflict
// (decided meanwhile) it returns the current record with the error.
func (s *Service) expireHold(ctx context.Context, r gate.ActionRecord, reason gate.Reason) (gate.ActionRecord, error) {
	next := r
	next.State = gate.ActionExpired
	next.Reason = reason
	next.DecidedBy = "gate"
	next.DecidedAt = s.o.Now()
	out, err := s.write(ctx, r, next, "hold_expired", "gate", map[string]any{"reason": reason})
	if err == nil {
		s.waiters.wake(keyOf(r))
		s.tel.holdEnded(out, "expired")
	}
	return out, err
}

// markStaleClaims turns claims older than the claim timeout into
// unconfirmed actions for an operator.
func (s *Service) markStaleClaims(ctx context.Context, now time.Time) error {
	f := gate.ActionFilter{States: []gate.ActionState{gate.ActionClaimed}, Limit: 500}
	for {
		recs, err := s.store.ListActions(ctx, f)
		if err != nil {
			return fmt.Errorf("gate: list claims: %w", err)
		}
		for _, r := range recs {
			if s.claimLive(r, now) {
				continue
			}
			if _, err := s.markUnconfirmed(ctx, r, "claim_timeout"); err != nil && !errors.Is(err, gate.ErrConflict) {
				return err
			}
		}
		if len(recs) < f.Limit {
			return nil
		}
		last := recs[len(recs)-1]
		f.AfterCreated, f.AfterSessionID, f.AfterActionID, f.AfterTenantID = last.CreatedAt, last.SessionID, last.ActionID, last.TenantID
	}
}

// claimLive reports whether r's claim is younger than the claim timeout
// at now: its holder may still be writing, so no one else may claim it
// and no operator may settle it yet.
func (s *Service) claimLive(r gate.ActionRecord, now time.Time) bool {
	return now.Sub(r.ClaimedAt) < s.o.ClaimTimeout
}

// markUnconfirmed records that a claim's acknowledgement is missing.
func (s *Service) markUnconfirmed(ctx context.Context, r gate.ActionRecord, why string) (gate.ActionRecord, error) {
	next := r
	next.State = gate.ActionUnconfirmed
	return s.write(ctx, r, next, "execution_unconfirmed", "gate", map[string]any{"why": why, "fencing_token": r.FencingToken})
}

// write compare-and-sets an action from cur to next with an audit entry
// of kind by actor, and returns the stored record.
func (s *Service) write(ctx context.Context, cur, next gate.ActionRecord, kind, actor string, body any, ledger ...gate.LedgerEntry) (gate.ActionRecord, error) {
	e := &gate.AuditEntry{Kind: kind, TenantID: cur.TenantID, SessionID: cur.SessionID, ActionID: cur.ActionID,
		Actor: actor, Body: mustJSON(body)}
	out, err := s.store.WriteAction(ctx, gate.ActionWrite{Record: next, ExpectVersion: cur.Version, Now: s.o.Now(), Audit: e, Ledger: ledger})
	if err != nil {
		return out, fmt.Errorf("gate: %s: %w", kind, err)
	}
	return out, nil
}

func keyOf(r gate.ActionRecord) actionKey { return actionKey{r.TenantID, r.SessionID, r.ActionID} }

func newID() string { return a2a.NewID() }
