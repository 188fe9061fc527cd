package agenthost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aotel"
	"novaos.dev/novaos/a2a/a2apush"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/a2a/cardsig"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/builtin"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/instrument"
	"novaos.dev/novaos/internal/sealkey"
	"novaos.dev/novaos/internal/tlscert"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store"
)

// Agent is what the host serves at /agents/{name}: an executor and the
// card that describes it.
type Agent interface {
	a2asrv.Executor
	Card() *a2a.AgentCard
}

// Options configure the hosted agents; zero fields mean the defaults.
type Options struct {
	// Hosted are agents hosted besides the built-in echo and tck agents,
	// at /agents/{name}; a name is one path segment of letters, digits,
	// '-' and '_'.
	Hosted map[string]Agent
	// TCKStreamingTimeout is the delay unit of the tck agent's slow
	// scenarios; it must match the conformance kit's TCK_STREAMING_TIMEOUT
	// (default builtin.DefaultStreamingTimeout, 2s).
	TCKStreamingTimeout time.Duration
	// CardKey, a private key, signs every agent card (cardsig.Sign). Nil
	// serves unsigned cards.
	CardKey *jwk.Key

	// Bindings are the A2A protocol bindings the cards list, in the
	// operator's order of preference (a2a.BindingJSONRPC,
	// a2a.BindingHTTPJSON, a2a.BindingGRPC); nil means DefaultBindings,
	// then gRPC when GRPCAddr is set. Every agent serves both HTTP
	// bindings at its URL either way: the card says which a client should
	// pick first.
	Bindings []string
	// RefuseV03 answers A2A 0.3 clients with -32009 instead of serving
	// them (a2asrv.Options.RefuseV03).
	RefuseV03 bool
	// MaxBodyBytes bounds one request body (default
	// a2asrv.DefaultMaxBodyBytes, 10 MiB); a larger one gets 413.
	MaxBodyBytes int64
	// MaxIDBytes, MaxExtensions and MaxExtensionURIBytes bound the
	// identifiers and the A2A-Extensions entries of a request;
	// ArtifactFlushInterval bounds how long a streamed chunk waits for the
	// store (a2asrv.Options; zero means its defaults).
	MaxIDBytes            int
	MaxExtensions         int
	MaxExtensionURIBytes  int
	ArtifactFlushInterval time.Duration

	// GRPCAddr, when set, is the address the A2A gRPC binding listens on
	// (its own listener; port 0 picks one). Every agent is served there,
	// addressed by its name as the request's tenant ("echo", or
	// "echo/<tenant>"), and its card lists that interface.
	GRPCAddr string
	// GRPCPublicAddr is the host:port cards name for the gRPC interface;
	// "" means the listen address (an unspecified host becoming loopback).
	GRPCPublicAddr string
	// GRPCMaxStreams caps the concurrent calls on one gRPC connection
	// (zero: DefaultGRPCMaxStreams; negative: no cap).
	GRPCMaxStreams int

	// PushURLPolicy decides which webhook URLs push-notification configs
	// may name, checked when they are stored. Nil means public hosts, plus
	// loopback hosts when the server's own URL is on loopback;
	// PushLoopbackIfLocal adds that to a PushURLPolicy too. Metadata
	// addresses are refused whatever it says.
	PushURLPolicy       *netguard.Policy
	PushLoopbackIfLocal bool
	// PushKeyFile holds the key push-config secrets are sealed with at
	// rest: 32 bytes in base64. Default Deps.DataDir/push.key, created
	// owner-only the first time a secret is stored; replicas sharing a
	// database must be given the same file. Without a data directory and
	// without PushKeyFile, secrets are stored as the push-config store
	// keeps them.
	PushKeyFile string
	// PushDelivery tunes the delivery of push notifications (zero fields
	// mean a2apush's defaults). Its Policy, Signer, Issuer, Open and
	// Logger are the host's.
	PushDelivery a2apush.Options
}

// DefaultBindings is the cards' order of bindings unless Options say
// otherwise: JSON-RPC, which every A2A SDK speaks, first.
var DefaultBindings = []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON}

// Check reports options New would refuse, so a server can refuse them
// before it opens a database.
func (o *Options) Check() error {
	_, err := o.resolve()
	return err
}

// resolve returns o with its defaults filled in, or why it cannot serve.
func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Bindings == nil {
		r.Bindings = slices.Clone(DefaultBindings)
		if r.GRPCAddr != "" {
			r.Bindings = append(r.Bindings, a2a.BindingGRPC)
		}
	}
	for _, b := range r.Bindings {
		switch {
		case b == a2a.BindingGRPC && r.GRPCAddr == "":
			return r, fmt.Errorf("agenthost: binding %s needs a gRPC listen address", b)
		case b != a2a.BindingJSONRPC && b != a2a.BindingHTTPJSON && b != a2a.BindingGRPC:
			return r, fmt.Errorf("agenthost: binding %q: this server serves %s, %s and %s", b, a2a.BindingJSONRPC, a2a.BindingHTTPJSON, a2a.BindingGRPC)
		}
	}
	if r.MaxBodyBytes <= 0 {
		r.MaxBodyBytes = a2asrv.DefaultMaxBodyBytes
	}
	if k := r.CardKey; k != nil && !k.IsPrivate() {
		return r, errors.New("agenthost: card key: want a private key")
	}
	for _, name := range slices.Sorted(maps.Keys(r.Hosted)) {
		if !validName(name) || name == "echo" || name == "tck" {
			return r, fmt.Errorf("agenthost: agent name %q: want a path segment of letters, digits, '-' and '_' not taken by another agent", name)
		}
		if r.Hosted[name] == nil {
			return r, fmt.Errorf("agenthost: agent %q is nil", name)
		}
	}
	return r, nil
}

// validName reports whether name can be an agent's path segment.
func validName(name string) bool {
	return name != "" && len(name) <= 64 && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
}

// Tokens verifies the execution tokens callers present and signs the JWT
// every push notification carries: the server's token issuer.
type Tokens interface {
	Verify(ctx context.Context, token string) (*identity.Claims, error)
	a2apush.Signer
	IssuerURL() string
}

// Deps are what the host takes from the server around it.
type Deps struct {
	// BaseURL is the server's base URL; agents are at BaseURL/agents/{name}.
	BaseURL string
	// DataDir is the default home of the push key; "" when the server
	// keeps no files.
	DataDir string
	Logger  *slog.Logger
	// Guard is the HTTP listener's guard, whose limits and in-flight
	// budget the gRPC listener shares.
	Guard *httpapi.Guard
	// TLS serves gRPC over TLS; nil means plaintext.
	TLS *tlscert.Pair
	// CheckListener refuses a gRPC listen address the server may not
	// serve on (plaintext off loopback); nil accepts any.
	CheckListener func(net.Addr) error
	// Tokens identifies the agents' callers (identify) and signs push
	// notifications; nil treats every caller as anonymous and sends
	// notifications unsigned.
	Tokens Tokens
	// Interceptors see every call to every agent, in this order, on every
	// binding (the memory service records conversation turns this way).
	Interceptors []a2asrv.Interceptor
	// Sealer seals push-config secrets at rest, unless Options.PushKeyFile
	// names a key of their own: the server's one sealing key.
	Sealer *sealkey.Sealer
	// SweepEvery is how often tasks of dead processes are looked for (the
	// database's lease expiry); SweepTicker, when set, times the sweeps
	// instead of a time.Ticker.
	SweepEvery  time.Duration
	SweepTicker func(every time.Duration) (ticks <-chan time.Time, stop func())
	// Tracing traces every call to every agent (a server span per call,
	// package a2aotel) and every push attempt; nil traces nothing.
	Tracing trace.TracerProvider
	// Metrics, when set, receives the A2A call metrics and the push
	// delivery metrics.
	Metrics prometheus.Registerer
}

// Host serves the hosted agents over every A2A binding: their HTTP
// routes, the gRPC listener, push delivery and crash recovery.
type Host struct {
	opts   Options
	deps   Deps
	log    *slog.Logger
	stores *store.Stores
	agents []hosted
	pusher *a2apush.Deliverer // nil without an outbox
	grpc   grpcServing
	routes []httpapi.Route

	ticks     <-chan time.Time // times the sweeps after the first
	stopTicks func()
}

type hosted struct {
	name    string
	agent   Agent
	card    *a2a.AgentCard // with the interface URLs filled in
	handler *a2asrv.Handler
}

// New builds the hosted agents' handlers on st's task and push-config
// stores, and opens the gRPC listener the cards name. It serves nothing
// yet: the routes are mounted by the caller, and Run serves gRPC.
func New(ctx context.Context, st *store.Stores, deps Deps, opts *Options) (*Host, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	h := &Host{opts: o, deps: deps, stores: st, log: deps.Logger}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.agents = []hosted{
		{name: "echo", agent: builtin.Echo()},
		{name: "tck", agent: builtin.NewTCK(&builtin.TCKOptions{StreamingTimeout: o.TCKStreamingTimeout})},
		{name: "ask", agent: builtin.Ask()},
	}
	for _, name := range slices.Sorted(maps.Keys(o.Hosted)) {
		h.agents = append(h.agents, hosted{name: name, agent: o.Hosted[name]})
	}
	if err := h.listenGRPC(ctx); err != nil {
		return nil, err
	}
	if err := h.mount(); err != nil {
		h.grpc.close()
		return nil, err
	}
	return h, nil
}

// mount builds every agent's handler and its route at /agents/{name}: the
// handler routes relative to its mount point, "" being the JSON-RPC
// endpoint and /.well-known/agent-card.json the card.
func (h *Host) mount() error {
	seal, err := h.pushSealer()
	if err != nil {
		return err
	}
	if err := h.newPushDelivery(seal); err != nil {
		return err
	}
	h.grpc.handlers = map[string]*a2asrv.Handler{}
	tasks, push := h.stores.Tasks, h.stores.PushConfigs
	// Tracing and metrics come first, so their span and duration cover
	// the other services' interceptors too.
	interceptors := append([]a2asrv.Interceptor{h.a2aTelemetry()}, h.deps.Interceptors...)
	for i := range h.agents {
		a := &h.agents[i]
		a.card = cardAt(a.agent.Card(), h.interfaces(a.name))
		// Push configs are taken whenever there is a store for them;
		// notifications are sent when there is also a deliverer.
		a.card.Capabilities.PushNotifications = a2a.Bool(push != nil && h.pusher != nil)
		if h.opts.CardKey != nil {
			// The handler precomputes the card's bytes: sign first.
			if a.card, err = cardsig.Sign(a.card, h.opts.CardKey, nil); err != nil {
				return fmt.Errorf("agenthost: sign %s card: %w", a.name, err)
			}
		}
		opts := &a2asrv.Options{
			TaskStore:             agentTasks{store: tasks, agent: a.name, wake: h.wakePush},
			Logger:                h.log.With("agent", a.name),
			PushURLPolicy:         h.pushURLPolicy(),
			MaxBodyBytes:          h.opts.MaxBodyBytes,
			MaxIDBytes:            h.opts.MaxIDBytes,
			MaxExtensions:         h.opts.MaxExtensions,
			MaxExtensionURIBytes:  h.opts.MaxExtensionURIBytes,
			ArtifactFlushInterval: h.opts.ArtifactFlushInterval,
			RefuseV03:             h.opts.RefuseV03,
			Interceptors:          slices.Clone(interceptors),
		}
		if h.deps.Tokens != nil {
			opts.Identify = h.identify
		}
		if push != nil {
			opts.PushConfigStore = agentPushConfigs{store: push, agent: a.name, seal: seal, wake: h.wakePush}
		}
		if f := h.stores.Feed; f != nil {
			opts.TaskFeed = agentFeed{feed: f, agent: a.name}
		}
		if seeder, ok := a.agent.(interface {
			NewTaskID(*a2a.SendMessageRequest) string
		}); ok {
			opts.NewTaskID = seeder.NewTaskID // an SDK agent's tasks take the platform's run id
		}
		a.handler = a2asrv.NewHandler(a.card, a.agent, opts)
		h.grpc.handlers[a.name] = a.handler
		p := Path(a.name)
		sub := http.StripPrefix(p, a.handler)
		h.routes = append(h.routes, httpapi.Route{Pattern: p, Handler: sub}, httpapi.Route{Pattern: p + "/", Handler: sub})
	}
	return nil
}

// a2aTelemetry is the interceptor that traces and counts every call to
// every agent: one for all of them, so they count into one set of series.
func (h *Host) a2aTelemetry() a2asrv.Interceptor {
	o := &a2aotel.Options{TracerProvider: h.tracing()}
	if h.deps.Metrics != nil {
		o.Metrics = instrument.Register(h.deps.Metrics, a2aotel.NewMetrics(), h.log)
	}
	return a2aotel.NewServerInterceptor(o)
}

// tracing is Deps.Tracing, or the provider that records nothing.
func (h *Host) tracing() trace.TracerProvider { return instrument.Provider(h.deps.Tracing) }

// identify verifies the execution token a call carries, once for the
// agent and every interceptor: a verified token's claims become the
// call's Identity (identity.Verified), which the agent SDK's
// Context.Execution and the memory service's turn recorder read. A call
// without a token is anonymous; one whose token does not verify is
// refused as unauthenticated, as the platform's other services refuse
// it. The scope stays the request's: tasks are the agent's, whoever
// calls.
func (h *Host) identify(ctx context.Context, c *a2asrv.Call) (a2asrv.Scope, error) {
	tok, ok := identity.BearerToken(c.Header)
	if !ok {
		return a2asrv.Scope{}, nil
	}
	claims, err := h.deps.Tokens.Verify(ctx, tok)
	if err != nil {
		return a2asrv.Scope{}, fmt.Errorf("agenthost: %w", err)
	}
	c.Identity = identity.Verified{Claims: claims, Token: secret.New(tok)}
	// For the access log and the request metrics above the agent.
	httpapi.NoteCaller(ctx, &httpapi.Caller{Scheme: httpapi.SchemeExecutionToken, Claims: claims})
	return a2asrv.Scope{}, nil
}

// Prefix is where agents are served: /agents/{name}.
const Prefix = "/agents/"

// Path is agent name's A2A endpoint, relative to the server's base URL.
func Path(name string) string { return Prefix + name }

// IsJSONRPC reports whether r is a call to an agent's JSON-RPC endpoint,
// whose refusals must be JSON-RPC errors for an A2A client to read them;
// the HTTP+JSON paths under it get problem+json like every other resource.
func IsJSONRPC(r *http.Request) bool {
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	return r.Method == http.MethodPost && ok && !strings.Contains(strings.TrimSuffix(name, "/"), "/")
}

// Routes are the agents' HTTP routes.
func (h *Host) Routes() []httpapi.Route { return h.routes }

// Interceptors are none: the host is where the others' interceptors run.
func (h *Host) Interceptors() []a2asrv.Interceptor { return nil }

// Start settles what dead processes left running, before the server
// serves; ctx cuts it short.
func (h *Host) Start(ctx context.Context) error {
	if r := h.stores.Recoverer; r != nil {
		h.sweep(ctx, r)
		h.startSweeps()
	}
	return nil
}

// Run serves the gRPC binding, delivers push notifications and sweeps for
// tasks of dead processes every Deps.SweepEvery, until ctx ends.
func (h *Host) Run(ctx context.Context) {
	var wg sync.WaitGroup
	h.serveGRPC()
	if h.pusher != nil {
		wg.Go(func() { h.pusher.Run(ctx) })
	}
	if r := h.stores.Recoverer; r != nil {
		if h.ticks == nil { // not Started
			h.startSweeps()
		}
		wg.Go(func() { h.sweepEvery(ctx, r) })
	}
	wg.Wait()
}

// Shutdown lets running calls and executions finish until ctx is done,
// then cuts them off; the routes then answer that the server is stopping.
func (h *Host) Shutdown(ctx context.Context) error {
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, a := range h.agents {
		wg.Go(func() {
			if err := a.handler.Shutdown(ctx); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("agenthost: shutdown %s: %w", a.name, err))
				mu.Unlock()
			}
		})
	}
	wg.Go(func() { h.stopGRPC(ctx) })
	wg.Wait()
	return errors.Join(errs...)
}

// Endpoint describes one hosted agent.
type Endpoint struct {
	Name    string `json:"name"`
	URL     string `json:"url"`     // the A2A JSON-RPC endpoint
	CardURL string `json:"cardUrl"` // its agent card
}

// Endpoints lists the hosted agents' URLs.
func (h *Host) Endpoints() []Endpoint {
	out := make([]Endpoint, len(h.agents))
	for i, a := range h.agents {
		u := h.deps.BaseURL + Path(a.name)
		out[i] = Endpoint{Name: a.name, URL: u, CardURL: u + a2a.WellKnownCardPath}
	}
	return out
}

// Records describe the hosted agents for the agent registry, from their
// cards: their skills' ids and names are their capabilities, their tags
// their tags.
func (h *Host) Records() []*registry.Agent {
	out := make([]*registry.Agent, len(h.agents))
	for i, a := range h.agents {
		card := a.agent.Card()
		u := h.deps.BaseURL + Path(a.name)
		rec := &registry.Agent{
			Name:        a.name,
			URL:         u,
			Description: card.Description,
			Status:      registry.StatusActive,
			Metadata: map[string]any{
				"hosted":  true,
				"version": card.Version,
				"cardUrl": u + a2a.WellKnownCardPath,
			},
		}
		for _, sk := range card.Skills {
			rec.Capabilities = append(rec.Capabilities, sk.ID)
			if sk.Name != "" && registry.NormalizeCapability(sk.Name) != registry.NormalizeCapability(sk.ID) {
				rec.Capabilities = append(rec.Capabilities, sk.Name)
			}
			for _, t := range sk.Tags {
				if !slices.Contains(rec.Tags, t) {
					rec.Tags = append(rec.Tags, t)
				}
			}
		}
		out[i] = rec
	}
	return out
}

// interfaces are the interfaces agent name is served at, in the order of
// Options.Bindings: the HTTP bindings at the agent's URL, gRPC at the gRPC
// address with the agent's name as the tenant.
func (h *Host) interfaces(name string) []a2a.AgentInterface {
	out := make([]a2a.AgentInterface, 0, len(h.opts.Bindings))
	for _, b := range h.opts.Bindings {
		in := a2a.AgentInterface{URL: h.deps.BaseURL + Path(name), ProtocolBinding: b, ProtocolVersion: a2a.ProtocolVersion}
		if b == a2a.BindingGRPC {
			in.URL, in.Tenant = h.grpc.target, name
		}
		out = append(out, in)
	}
	return out
}

// cardAt returns a copy of card whose interfaces are served first, in
// their order. Interfaces of other bindings the card may declare are kept
// after them as they are.
func cardAt(card *a2a.AgentCard, served []a2a.AgentInterface) *a2a.AgentCard {
	c := *card
	bound := func(i a2a.AgentInterface) bool {
		return slices.ContainsFunc(served, func(s a2a.AgentInterface) bool { return s.ProtocolBinding == i.ProtocolBinding })
	}
	c.SupportedInterfaces = append(slices.Clone(served), slices.DeleteFunc(slices.Clone(card.SupportedInterfaces), bound)...)
	return &c
}

// AgentHandler is the A2A handler of the hosted agent name, serving its
// endpoint and card at its root: the execution gateway calls hosted
// agents through it, in process.
func (h *Host) AgentHandler(name string) (http.Handler, bool) {
	for i := range h.agents {
		if h.agents[i].name == name {
			return h.agents[i].handler, true
		}
	}
	return nil, false
}
