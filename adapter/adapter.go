package adapter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"novaos.dev/novaos/delivery"
)

// Config says which agent an adapter runs and where its platform is.
type Config struct {
	// BaseURL is the platform's base URL (https, or http on loopback).
	BaseURL string
	// AgentID is the pull instance's id: the agent the tokens name.
	AgentID string
	// Consumer names this adapter's cursor of the agent's events (a-z,
	// 0-9, '.', '_', '-'; "default" when empty). Two adapters of one
	// agent with different consumers both receive every event, and the
	// platform starts each run once; a second adapter with the same
	// consumer takes it over, and the first stops.
	Consumer    string
	Credentials Credentials
	// StateDir holds the inbox and the outbox (inbox.sqlite3,
	// outbox.sqlite3), created owner-only. Required unless Options gives
	// both stores.
	StateDir string
	// Polling receives events by polling instead of over the gateway.
	Polling bool
	// CheckTriggerers checks every token's subject against the agent's
	// triggerers (getAgentTriggerers), reloaded when the platform says
	// they changed.
	CheckTriggerers bool
	// Adapter and Runtime name the software in heartbeats; Capabilities
	// says what the agent can do beyond plain runs.
	Adapter      delivery.NameVersion
	Runtime      delivery.NameVersion
	Capabilities delivery.Capabilities
	// Settings are the adapter's limits and timings; nil means
	// DefaultSettings.
	Settings *Settings
}

// Options are an adapter's replaceable parts; nil means the defaults.
type Options struct {
	Clock  Clock
	Logger *slog.Logger
	// HTTPClient carries the client's requests (its Transport is used).
	HTTPClient *http.Client
	// Source replaces the gateway or polling source (tests wrap one to
	// tamper with or record deliveries).
	Source Source
	// Inbox and Outbox replace the SQLite stores in StateDir.
	Inbox  InboxStore
	Outbox OutboxStore
	// Client replaces the client made from Config (it must be for the
	// same platform and credentials).
	Client *Client
	// Rand drives jitter; nil is a random source.
	Rand *rand.Rand
}

// Handler is the agent: what it does with a run. Prepare runs before the
// run is started (load context, warm a model up); Execute does the run's
// work once the platform started it. Both run with the run's newest
// invocation token bound to ctx, so every client call made with ctx
// carries it. A handler may also implement BillingReporter,
// FollowupHandler and EventHandler.
type Handler interface {
	Prepare(ctx context.Context, inv *Invocation) error
	Execute(ctx context.Context, run *Run) error
}

// BillingReporter says what the agent will really use for a run; the
// token must grant both or the run is refused. Without one, an adapter
// reports the platform's billing and the chat tool class.
type BillingReporter interface {
	Actual(ctx context.Context, inv *Invocation) (delivery.BillingMode, delivery.ToolClass)
}

// FollowupHandler takes a follow-up message for a run that is running
// (a follow-up for a run waiting for input resumes it with Execute).
type FollowupHandler interface {
	OnFollowup(ctx context.Context, run *Run, inv *Invocation) error
}

// EventHandler sees the events that carry no token and that the adapter
// does not handle itself.
type EventHandler interface {
	OnEvent(ctx context.Context, ev delivery.Event) error
}

// Invocation is a verified event that starts or resumes a run, without
// its token.
type Invocation struct {
	EventID string
	Seq     int64
	Type    string
	RunID   string
	// ThreadID and MessageID (or InteractionID, CommandID) are what the
	// event names.
	ThreadID      string
	MessageID     string
	InteractionID string
	CommandID     string
	// Claims are the token's verified claims.
	Claims delivery.Claims
	// Payload is the event's payload.
	Payload []byte
}

// RuntimeFailure is an error of the agent's runtime (its model, its
// tools): Execute returning one fails the run with reason runtime_error;
// any other error fails it with adapter_error.
type RuntimeFailure struct{ Err error }

func (e *RuntimeFailure) Error() string { return "runtime failure: " + e.Err.Error() }
func (e *RuntimeFailure) Unwrap() error { return e.Err }

var consumerName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// New makes an adapter. It opens the stores in Config.StateDir (unless
// Options gives them); Run connects.
func New(cfg Config, h Handler, opts *Options) (*Adapter, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if h == nil {
		return nil, errors.New("adapter: a Handler is required")
	}
	if cfg.AgentID == "" {
		return nil, errors.New("adapter: Config.AgentID is required")
	}
	if cfg.Consumer == "" {
		cfg.Consumer = "default"
	}
	if !consumerName.MatchString(cfg.Consumer) {
		return nil, fmt.Errorf("adapter: consumer names are 1 to 64 of a-z, 0-9, '.', '_' and '-'")
	}
	set := DefaultSettings()
	if cfg.Settings != nil {
		set = *cfg.Settings
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	a := &Adapter{cfg: cfg, h: h, set: set, clock: o.Clock, log: o.Logger.With("agent_id", cfg.AgentID, "consumer", cfg.Consumer),
		src: o.Source, inbox: o.Inbox, rnd: o.Rand, runs: map[string]*runTask{}, httpClient: o.HTTPClient}
	a.api = o.Client
	if a.api == nil {
		c, err := NewClient(cfg.BaseURL, cfg.Credentials, &ClientOptions{Settings: &a.set, Clock: a.clock,
			HTTPClient: o.HTTPClient, Logger: o.Logger, UserAgent: cfg.Adapter, Rand: child(o.Rand)})
		if err != nil {
			return nil, err
		}
		a.api = c
	}
	if (a.inbox == nil || o.Outbox == nil) && cfg.StateDir == "" {
		return nil, errors.New("adapter: Config.StateDir is required for the inbox and outbox")
	}
	if cfg.StateDir != "" {
		if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
			return nil, fmt.Errorf("adapter: state directory: %w", err)
		}
	}
	var closers []func() error
	if a.inbox == nil {
		in, err := OpenSQLiteInbox(filepath.Join(cfg.StateDir, "inbox.sqlite3"), &InboxOptions{Clock: a.clock})
		if err != nil {
			return nil, err
		}
		a.inbox = in
		closers = append(closers, in.Close)
	}
	store := o.Outbox
	if store == nil {
		out, err := OpenSQLiteOutbox(filepath.Join(cfg.StateDir, "outbox.sqlite3"), &OutboxOptions{Clock: a.clock})
		if err != nil {
			for _, c := range closers {
				_ = c()
			}
			return nil, err
		}
		store = out
		closers = append(closers, out.Close)
	}
	a.outbox = newOutbox(store, a.api, a.clock, a.set, a.log, a.tokenOf)
	a.closers = closers
	return a, nil
}

// child is a source of its own drawn from r: a *rand.Rand is not safe
// for concurrent use, and each part that draws jitter draws from its own.
func child(r *rand.Rand) *rand.Rand { return rand.New(rand.NewPCG(r.Uint64(), r.Uint64())) }

// lockedFloat is r.Float64 behind a lock.
func lockedFloat(r *rand.Rand) func() float64 {
	var mu sync.Mutex
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

// Adapter runs one agent's pulled runs. Safe for concurrent use.
type Adapter struct {
	cfg     Config
	h       Handler
	set     Settings
	clock   Clock
	log     *slog.Logger
	api     *Client
	src     Source
	inbox   InboxStore
	outbox  *Outbox
	rnd     *rand.Rand
	closers []func() error
	// httpClient fetches the JWKS (nil: the default client).
	httpClient *http.Client

	// verify checks delivered tokens, with replay; recheck reads a
	// stored token's claims again, without.
	verify, recheck *Verifier
	issuer          string
	allow           *triggerers

	mu    sync.Mutex
	runs  map[string]*runTask
	acks  ackTracker
	tasks sync.WaitGroup
}

// Outbox is the adapter's outbox: messages and writes that are sent
// once, however often they are tried.
func (a *Adapter) Outbox() *Outbox { return a.outbox }

// Close closes the stores the adapter opened. Call it after Run returned.
func (a *Adapter) Close() error {
	var errs []error
	for _, c := range a.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}
