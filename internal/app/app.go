package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/internal/agenthost"
	"novaos.dev/novaos/internal/auth"
	deliverysvc "novaos.dev/novaos/internal/delivery"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/internal/toolgw/files"
	"novaos.dev/novaos/internal/toolgw/knowledge"
	"novaos.dev/novaos/internal/toolgw/upstream"
	"novaos.dev/novaos/store"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/llmgw"
	"novaos.dev/novaos/internal/telemetry"
	"novaos.dev/novaos/internal/tlscert"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// Defaults for the zero Options.
const (
	DefaultAddr    = "127.0.0.1:8080"
	DefaultDataDir = "./novaos-data"
	// DatabaseFile is the SQLite file's name inside the data directory.
	DatabaseFile = "novaos.db"
	// DefaultDBMaxConns is the PostgreSQL pool's size when
	// Options.DBMaxConns is zero. pgxpool's own default, the larger of 4
	// and the CPUs, sizes the pool by the CPUs of the wrong machine: on 2
	// CPUs, before task writes were committed in groups, it halved
	// SendMessage throughput against 8, 16 or 32 connections, which
	// measured alike. With group commit the four sizes measure alike on
	// that benchmark, but the writer's batches take two connections and
	// anything that waits (a gate write on its audit lock, a long memory
	// query) holds one: 8 leaves room for reads beside them, and ten
	// replicas, each with its listener, within PostgreSQL's default
	// max_connections of 100.
	DefaultDBMaxConns = 8
)

// Options configure a Server; the zero value (or nil) serves on
// 127.0.0.1:8080 with SQLite in ./novaos-data. Each platform service has
// its own group; zero fields mean its defaults.
type Options struct {
	// Addr is the TCP address to listen on; port 0 picks a free port,
	// which Server.Addr and Server.URL then report.
	Addr string
	// PublicURL is the base URL clients reach the server at, when it is not
	// the listen address (behind a proxy, or listening on 0.0.0.0). Agent
	// cards name their endpoints under it.
	PublicURL string
	// DataDir holds the SQLite database and the key files; it is created
	// if missing.
	DataDir string
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// AdminToken, when set, is the bearer token the operator's writes
	// (registry, gate administration) must present; without it they are
	// accepted from this machine only.
	AdminToken secret.Value

	// SealKeyFile holds the key values are sealed with at rest (push
	// credentials, instances' secrets, runs' custom headers): 32 bytes in
	// base64, created owner-only when first needed. Default SealKeyFile in
	// DataDir (taking over a push.key an earlier release made); replicas
	// sharing a database must be given the same file.
	SealKeyFile string

	// Database selects and tunes the database.
	Database DatabaseOptions
	// Stores, when set, are used instead of a database: Database is
	// ignored, and no file is written unless an option names one
	// (Token.KeyFile, Agents.PushKeyFile). A service whose store is nil is
	// not served, except the agent registry, which then keeps its records
	// in memory.
	Stores *store.Stores
	// HTTP bounds the listener and says whom it serves.
	HTTP HTTPOptions

	// Agents configures the hosted agents at /agents/{name}: which, over
	// which bindings, their limits, gRPC and push notifications.
	Agents AgentOptions
	// Token configures the execution tokens the server signs and accepts.
	Token TokenOptions
	// Memory configures the memory service at /api/v1/mcp.
	Memory MemoryOptions
	// Gate configures the governance gate at /api/v1/gate and /ui/gate.
	Gate GateOptions
	// Registry configures the agent registry at /api/v1/agents.
	Registry RegistryOptions
	// Gateway configures the execution gateway: instances, runs and their
	// events under /api/v1.
	Gateway GatewayOptions
	// Tools configures the tool gateway at /mcp/v1.
	Tools ToolsOptions
	// BuiltinTools configures the platform's own tools behind it.
	BuiltinTools BuiltinToolsOptions
	// LLM configures the LLM gateway at /v1 and /api/v1/llm.
	LLM LLMOptions
	// Schedules configures the heartbeat schedules at /api/v1/agent-ops.
	Schedules SchedulesOptions
	// Delivery configures pull delivery at /api/v1/delivery.
	Delivery DeliveryOptions
	// DeliveryKeyFile is the invocation-token key ring (default
	// <DataDir>/delivery.key): replicas on one database share one, so
	// that each verifies the tokens the others signed and publishes
	// their keys.
	DeliveryKeyFile string

	// TracerProvider is where the server's and the services' spans go.
	// Nil builds one from OTLPEndpoint, OTLPHeaders and TraceSampleRatio
	// (telemetry.NewTracing): exporting over OTLP/HTTP, or, without an
	// endpoint, recording nothing but carrying an inbound traceparent on
	// to the logs and to outbound calls.
	TracerProvider trace.TracerProvider
	// OTLPEndpoint is the OTLP/HTTP collector spans are exported to: a
	// base URL (http://127.0.0.1:4318, to which /v1/traces is added) or a
	// traces URL. Empty: none. Unused with TracerProvider.
	OTLPEndpoint string
	// OTLPHeaders are sent with every export (a collector's API key).
	OTLPHeaders map[string]secret.Value
	// TraceSampleRatio is the share of new traces recorded, from 0 to 1
	// (zero: telemetry.DefaultSampleRatio, all; negative: none); a request
	// whose traceparent carries its caller's decision follows it, and a
	// run queued by a recorded request is recorded.
	TraceSampleRatio float64
	// Metrics is the registry the server's and the services' metrics are
	// registered with and /metrics serves; nil is a new one with the Go
	// runtime and process collectors.
	Metrics *prometheus.Registry
	// MetricsAddr, when set, serves /metrics and /debug/pprof/ on a
	// listener of their own at this address, to whoever reaches it (bind
	// it where only the scraper does), and not on Addr; the TLS and
	// InsecureListen rules of Addr apply to it. Empty: they are served on
	// Addr to the operator (the admin rule).
	MetricsAddr string
	// AccessLog logs a line per request at info: method, route, path,
	// status, bytes, duration, service, remote address, the tenant of an
	// execution token, and trace_id when the Logger's handler adds it
	// (telemetry.LogHandler). Never a header, query or body.
	AccessLog bool
	// NoTelemetry turns the server's telemetry off: no span, metric or
	// access log line per request, a no-op tracer provider for every
	// service (an inbound traceparent is not even carried on), no
	// metrics registered, and neither /metrics nor /debug/pprof/ served
	// (Server.Metrics is nil). It is the baseline the telemetry's cost is
	// measured against (novaos bench ops); New refuses it beside any
	// option it would leave unused (TracerProvider, OTLPEndpoint,
	// OTLPHeaders, TraceSampleRatio, Metrics, MetricsAddr, AccessLog).
	NoTelemetry bool
	// Version is the server's version, the spans' service.version.
	Version string
}

// BuiltinToolsOptions configure the platform's own tool servers behind the
// tool gateway (package builtin); zero fields mean their defaults.
type BuiltinToolsOptions struct {
	Notify     builtin.NotifyOptions    // novaos.notify.*
	HTTP       builtin.HTTPOptions      // novaos.http.fetch: no domain is allowed by default
	Connectors builtin.ConnectorOptions // novaos.connector.*: off without a connector host
	Agents     builtin.AgentsOptions    // novaos.agents.call
	Files      files.Options            // novaos.files.*
	// Knowledge configures novaos.knowledge.*; its Embedder defaults to
	// the memory service's, so both search alike.
	Knowledge knowledge.Options
	// Upstream configures the tenants' own MCP servers, novaos.<server>.*.
	Upstream upstream.Options
}

// The services' options, by the names Options gives them.
type (
	AgentOptions    = agenthost.Options
	TokenOptions    = auth.Options
	MemoryOptions   = memorysvc.Options
	GateOptions     = gatesvc.Options
	RegistryOptions = registrysvc.Options
	GatewayOptions  = execgw.Options
	ToolsOptions    = toolgw.Options
	LLMOptions      = llmgw.Options
)

// DatabaseOptions select and tune the database.
type DatabaseOptions struct {
	// URL selects PostgreSQL (postgres:// or postgresql://). Empty means
	// SQLite in Options.DataDir.
	URL string
	// MaxConns bounds the PostgreSQL connection pool (default
	// DefaultDBMaxConns) and StatementTimeout the time one statement may
	// run (postgres.Options.StatementTimeout: zero means its default, 30s,
	// negative none). Unused with SQLite.
	MaxConns         int32
	StatementTimeout time.Duration
	// LeaseHeartbeat and LeaseExpiry time the server's lease on the tasks
	// it writes (store/lease): it is renewed every LeaseHeartbeat (default
	// 5s) and lapses LeaseExpiry (default 30s, at least twice the
	// heartbeat) after the last renewal; then another server on the same
	// database settles the tasks this one left running. The server sweeps
	// for such tasks at Start and every LeaseExpiry.
	LeaseHeartbeat time.Duration
	LeaseExpiry    time.Duration
	// MemoryIndexBytes bounds the database's in-process search index of
	// memory partitions (default sqlite.DefaultMemoryIndexBytes).
	MemoryIndexBytes int64
}

// HTTPOptions bound the listener and say whom it serves.
type HTTPOptions struct {
	// Limits bound connections, request bodies and the body bytes in
	// flight across the server (see httpapi.Limits; zero fields mean its
	// defaults, negative ones turn a limit off). /healthz is served on the
	// connections reserved past the cap.
	Limits httpapi.Limits
	// AllowHosts are more names writes may carry in Host, for a local
	// proxy: "name" on any port or "name:port". When the server is
	// loopback-only (listens on loopback, no PublicURL elsewhere), a write
	// whose Host is not one of its names gets 421; setting AllowHosts
	// checks Host whatever the listen address.
	AllowHosts []string
	// CORSOrigins are the browser origins (scheme://host[:port]) given
	// CORS access; none by default. Writes carrying any other Origin than
	// these and the server's own get 403.
	CORSOrigins []string
	// TLSCertFile and TLSKeyFile, both or neither, serve the HTTP and the
	// gRPC listener over TLS 1.2 or later with the PEM certificate chain
	// (leaf first) and private key in them; agent cards then name https://
	// URLs. The pair is read again when the files' content changes,
	// checked every TLSReloadInterval (default tlscert.DefaultInterval;
	// negative: never), and on ReloadTLS; a pair that does not load leaves
	// the one in use and is logged.
	TLSCertFile, TLSKeyFile string
	TLSReloadInterval       time.Duration
	// InsecureListen lets the server listen without TLS on an address that
	// is not loopback (behind a proxy that terminates TLS). Without it, or
	// TLS, Start refuses such an address with ErrPlaintextListen.
	InsecureListen bool
}

// Server is one NovaOS instance. Create it with New, then Start it and
// eventually Shutdown it; a Server is not restarted after Shutdown (create
// a new one on the same database instead).
type Server struct {
	opts   Options
	log    *slog.Logger
	stores *store.Stores
	custom bool // the stores are the caller's: no data directory in use

	mu       sync.Mutex
	started  bool
	shutdown bool
	starting chan struct{} // closed when Start's unlocked part is over
	cancel   context.CancelFunc
	ln       net.Listener
	http     *http.Server
	baseURL  string
	done     chan struct{}
	err      error
	running  []service // mounted, in list order

	tls *tlscert.Pair // nil: plaintext

	issuer *auth.Issuer
	host   *agenthost.Host
	gate   *gatesvc.Service     // nil when no gate store
	pull   *deliverysvc.Service // nil without delivery stores

	// workers stop the services' background loops, in start order.
	workers []func()

	tel       serverTelemetry
	metricsLn net.Listener // nil: /metrics on the main listener
	metricsSv *http.Server
}

// Agent is what the server hosts at /agents/{name}: an executor and the
// card that describes it.
type Agent = agenthost.Agent

var _ Agent = (*agent.Agent)(nil)

// New opens the stores opts select and prepares the built-in agents; it
// does not listen yet.
func New(ctx context.Context, opts *Options) (*Server, error) {
	s := &Server{done: make(chan struct{}), starting: make(chan struct{})}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Addr == "" {
		s.opts.Addr = DefaultAddr
	}
	if s.opts.DataDir == "" {
		s.opts.DataDir = DefaultDataDir
	}
	if s.opts.PublicURL != "" {
		u := strings.TrimSuffix(s.opts.PublicURL, "/")
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("app: public URL %q: want an http:// or https:// URL", s.opts.PublicURL)
		}
		s.opts.PublicURL = u
	}
	if err := s.opts.Agents.Check(); err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	if s.opts.Agents.MaxBodyBytes <= 0 {
		s.opts.Agents.MaxBodyBytes = a2asrv.DefaultMaxBodyBytes
	}
	if need := s.opts.Agents.MaxBodyBytes * int64(holdFactor(s.opts.HTTP.Limits)); s.opts.HTTP.Limits.MaxInflightBytes == 0 && httpapi.DefaultInflightBytes() < need {
		// The default budget, derived from a small GOMEMLIMIT, still admits
		// the largest body.
		s.opts.HTTP.Limits.MaxInflightBytes = need
	}
	// The listen address is known at Start; the rest is checked now, before
	// a database is opened.
	if _, err := s.guardOptions(nil); err != nil {
		return nil, err
	}
	if (s.opts.HTTP.TLSCertFile == "") != (s.opts.HTTP.TLSKeyFile == "") {
		return nil, errors.New("app: TLS needs both a certificate file and a key file")
	}
	if s.opts.HTTP.TLSCertFile == "" && !s.opts.HTTP.InsecureListen {
		// What can be told from the address alone is refused before a
		// database is opened; a host name is checked once it is bound.
		for _, a := range []string{s.opts.Addr, s.opts.Agents.GRPCAddr} {
			if err := plaintextAddr(a); err != nil {
				return nil, err
			}
		}
	}
	if _, err := s.opts.lease().Resolve(); err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	s.log = s.opts.Logger
	if s.opts.HTTP.TLSCertFile != "" {
		var err error
		s.tls, err = tlscert.Load(s.opts.HTTP.TLSCertFile, s.opts.HTTP.TLSKeyFile, &tlscert.Options{Interval: s.opts.HTTP.TLSReloadInterval, Logger: s.log})
		if err != nil {
			return nil, fmt.Errorf("app: %w", err)
		}
	}
	if err := s.tel.check(&s.opts); err != nil {
		return nil, err
	}
	if s.opts.HTTP.TLSCertFile == "" && !s.opts.HTTP.InsecureListen {
		if err := plaintextAddr(s.opts.MetricsAddr); err != nil {
			return nil, err
		}
	}
	s.tel.db = telemetry.NewDatabase(&telemetry.DatabaseOptions{Logger: s.log})
	if err := s.openStores(ctx); err != nil {
		return nil, err
	}
	if err := s.tel.setup(&s.opts, s.stores, s.log); err != nil {
		if !s.custom && s.stores.Close != nil {
			s.stores.Close()
		}
		return nil, err
	}
	return s, nil
}

// openStores opens the database Options select, unless they give stores.
func (s *Server) openStores(ctx context.Context) error {
	if s.opts.Stores != nil {
		if s.opts.Stores.Tasks == nil {
			return errors.New("app: Options.Stores has no task store")
		}
		s.stores, s.custom = s.opts.Stores, true
		return nil
	}
	switch scheme, _, _ := strings.Cut(s.opts.Database.URL, "://"); {
	case s.opts.Database.URL == "":
		if err := os.MkdirAll(s.opts.DataDir, 0o700); err != nil {
			return fmt.Errorf("app: data directory: %w", err)
		}
		path := filepath.Join(s.opts.DataDir, DatabaseFile)
		db, err := sqlite.Open(ctx, path, &sqlite.Options{Logger: s.log, Lease: s.opts.lease(),
			MemoryIndexBytes: s.opts.Database.MemoryIndexBytes, ObserveBatch: s.tel.db.ObserveBatch})
		if err != nil {
			return fmt.Errorf("app: open sqlite %s: %w", path, err)
		}
		s.stores = db.Stores()
	case scheme == "postgres" || scheme == "postgresql":
		db, err := postgres.Open(ctx, s.opts.Database.URL, &postgres.Options{Logger: s.log, Lease: s.opts.lease(),
			MemoryIndexBytes: s.opts.Database.MemoryIndexBytes, MaxConns: cmp.Or(s.opts.Database.MaxConns, DefaultDBMaxConns), StatementTimeout: s.opts.Database.StatementTimeout,
			ObserveBatch: s.tel.db.ObserveBatch})
		if err != nil {
			// Not the URL, which may hold a password; postgres.Open's
			// errors never repeat it either.
			return fmt.Errorf("app: open postgres: %w", err)
		}
		s.stores = db.Stores()
	default:
		// Not echoed: a malformed URL may still hold a password.
		return errors.New("app: database URL must start with postgres:// or postgresql://")
	}
	return nil
}
