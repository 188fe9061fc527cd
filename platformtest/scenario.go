package platformtest

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
)

// ScenarioServer is a platform the scenarios run against: the
// FakeServer, or a real platform a test started.
type ScenarioServer interface {
	URL() string
	AgentID() string
	OtherAgentID() string
	Credentials() adapter.Credentials
	// AdapterClock is the clock the adapters under test run on: the
	// platform's own, where it is fake.
	AdapterClock() adapter.Clock
	// PassTime lets d go by for the platform and the adapters.
	PassTime(ctx context.Context, d time.Duration)
	Timing() Timing
	Trigger(ctx context.Context, text string) (Triggered, error)
	ForgeToken(ctx context.Context, runID string, v Variant) (string, error)
	RunState(ctx context.Context, runID string) (delivery.Run, error)
	WaitRun(ctx context.Context, runID string, cond func(delivery.Run) bool) (delivery.Run, error)
	ConsumerState(ctx context.Context, consumer string) (delivery.ConsumerState, error)
	WaitConsumer(ctx context.Context, consumer string) error
	Restart(ctx context.Context, consumer string, ackedSeq int64) error
}

// ScenarioOptions tune a scenario; nil means the defaults.
type ScenarioOptions struct {
	// Gateway runs the adapters over the WebSocket gateway instead of
	// polling.
	Gateway bool
	// Timeout bounds the scenario (default 2 minutes).
	Timeout time.Duration
	// Logger receives the adapters' logs (nil: discarded).
	Logger *slog.Logger
	// Settings are the adapters' (nil: adapter.DefaultSettings); against
	// a platform with short token times, give an InvocationTokenLeeway
	// that fits them.
	Settings *adapter.Settings
}

func (o *ScenarioOptions) orDefault() ScenarioOptions {
	var v ScenarioOptions
	if o != nil {
		v = *o
	}
	if v.Timeout <= 0 {
		v.Timeout = 2 * time.Minute
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	return v
}

// scenario is one scenario's run: its server, options and adapters.
type scenario struct {
	t   testing.TB
	s   ScenarioServer
	o   ScenarioOptions
	ctx context.Context
}

func newScenario(t testing.TB, s ScenarioServer, opts *ScenarioOptions) (*scenario, context.CancelFunc) {
	o := opts.orDefault()
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	return &scenario{t: t, s: s, o: o, ctx: ctx}, cancel
}

// client is a client of the agent's API, as an adapter would make it.
func (sc *scenario) client() *adapter.Client {
	sc.t.Helper()
	c, err := adapter.NewClient(sc.s.URL(), sc.s.Credentials(), &adapter.ClientOptions{Clock: sc.s.AdapterClock(), Logger: sc.o.Logger,
		Settings: sc.o.Settings})
	if err != nil {
		sc.t.Fatal(err)
	}
	return c
}

// running is an adapter the scenario started.
type running struct {
	a    *adapter.Adapter
	rec  *RecordingSource
	stop context.CancelFunc
	done chan struct{}
	// reason and err are what Run returned, once done is closed.
	reason adapter.CloseReason
	err    error
}

// start runs an adapter for consumer with handler h, its source wrapped
// by wrap (when set) and recorded, and waits until the platform knows
// its consumer.
func (sc *scenario) start(consumer string, h adapter.Handler, wrap func(adapter.Source) adapter.Source) *running {
	sc.t.Helper()
	c := sc.client()
	src, err := sc.source(c, consumer)
	if err != nil {
		sc.t.Fatal(err)
	}
	if wrap != nil {
		src = wrap(src)
	}
	rec := &RecordingSource{Source: src}
	cfg := adapter.Config{BaseURL: sc.s.URL(), AgentID: sc.s.AgentID(), Consumer: consumer,
		Credentials: sc.s.Credentials(), StateDir: sc.t.TempDir(), Settings: sc.o.Settings}
	a, err := adapter.New(cfg, h, &adapter.Options{Clock: sc.s.AdapterClock(), Logger: sc.o.Logger, Source: rec, Client: c})
	if err != nil {
		sc.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(sc.ctx)
	r := &running{a: a, rec: rec, stop: cancel, done: make(chan struct{})}
	go func() {
		r.reason, r.err = a.Run(ctx)
		close(r.done)
	}()
	sc.t.Cleanup(func() { r.close() })
	if err := sc.s.WaitConsumer(sc.ctx, consumer); err != nil {
		sc.t.Fatalf("the adapter of consumer %s did not connect: %v", consumer, err)
	}
	return r
}

var closeOnce sync.Map

func (r *running) close() {
	r.stop()
	<-r.done
	if _, loaded := closeOnce.LoadOrStore(r, true); !loaded {
		_ = r.a.Close()
	}
}

// source is the transport the options name, for consumer.
func (sc *scenario) source(c *adapter.Client, consumer string) (adapter.Source, error) {
	if !sc.o.Gateway {
		return adapter.NewPollingSource(c, sc.s.AgentID(), consumer, nil)
	}
	disc, err := c.Discover(sc.ctx)
	if err != nil {
		return nil, err
	}
	return adapter.NewGatewaySource(sc.s.URL(), disc.Gateway, &adapter.GatewayOptions{AgentID: sc.s.AgentID(),
		Consumer: consumer, Credentials: sc.s.Credentials(), Clock: sc.s.AdapterClock(), Logger: sc.o.Logger, Settings: sc.o.Settings})
}

// runOf is the run an event is about, when it names one.
func runOf(ev delivery.Event) string {
	var p struct {
		RunID       string `json:"run_id"`
		Interaction struct {
			RunID string `json:"run_id"`
		} `json:"interaction"`
	}
	_ = json.Unmarshal(ev.Payload, &p)
	if p.RunID != "" {
		return p.RunID
	}
	return p.Interaction.RunID
}

// trigger starts a run or fails the test.
func (sc *scenario) trigger(text string) Triggered {
	sc.t.Helper()
	tr, err := sc.s.Trigger(sc.ctx, text)
	if err != nil {
		sc.t.Fatal(err)
	}
	return tr
}

// waitEnded waits until a run ended.
func (sc *scenario) waitEnded(runID string) delivery.Run {
	sc.t.Helper()
	r, err := sc.s.WaitRun(sc.ctx, runID, func(r delivery.Run) bool { return r.State.Ended() })
	if err != nil {
		sc.t.Fatal(err)
	}
	return r
}

// tokens keeps the tokens a tampering source saw, by run, so a scenario
// can send one itself; it never prints them.
type tokens struct {
	mu  sync.Mutex
	all map[string][]string
}

func (k *tokens) add(run, tok string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.all == nil {
		k.all = map[string][]string{}
	}
	k.all[run] = append(k.all[run], tok)
}

func (k *tokens) of(run string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.all[run]...)
}
