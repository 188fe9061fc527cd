package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/internal/memorysvc"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2apush"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/internal/builtin"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/tlscert"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/registry"
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
// 127.0.0.1:8080 with SQLite in ./novaos-data.
type Options struct {
	// Addr is the TCP address to listen on; port 0 picks a free port,
	// which Server.Addr and Server.URL then report.
	Addr string
	// PublicURL is the base URL clients reach the server at, when it is not
	// the listen address (behind a proxy, or listening on 0.0.0.0). Agent
	// cards name their endpoints under it.
	PublicURL string
	// DataDir holds the SQLite database; it is created if missing. Unused
	// with PostgreSQL.
	DataDir string
	// DatabaseURL selects PostgreSQL (postgres:// or postgresql://). Empty
	// means SQLite in DataDir.
	DatabaseURL string
	// DBMaxConns bounds the PostgreSQL connection pool (default
	// DefaultDBMaxConns) and DBStatementTimeout the time one statement may
	// run (postgres.Options.StatementTimeout: zero means its default, 30s,
	// negative none). Unused with SQLite.
	DBMaxConns         int32
	DBStatementTimeout time.Duration
	// TaskStore, when set, keeps tasks instead of a database, and no
	// database is opened: DataDir and DatabaseURL are ignored.
	TaskStore a2asrv.TaskStore
	// PushConfigStore keeps push-notification configs when TaskStore is
	// overridden; nil then means push configs are not supported.
	PushConfigStore a2asrv.PushConfigStore
	// PushOutbox, with TaskStore and PushConfigStore, is the outbox their
	// writes fill (a2asrv.MemoryTaskStore.PushOutbox); nil means push
	// notifications are not sent.
	PushOutbox a2asrv.PushOutbox
	// TaskFeed, with TaskStore, reports the writes other servers sharing
	// it make (a2asrv.MemoryTaskStore.Feed, for servers in one process);
	// nil means this server is its tasks' only writer. A PostgreSQL
	// database brings its own (LISTEN/NOTIFY).
	TaskFeed a2asrv.TaskFeed
	// TCKStreamingTimeout is the delay unit of the tck agent's slow
	// scenarios; it must match the conformance kit's TCK_STREAMING_TIMEOUT
	// (default builtin.DefaultStreamingTimeout, 2s).
	TCKStreamingTimeout time.Duration
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// CardKey, a private key, signs every agent card the server serves
	// (cardsig.Sign), and its public half is served as a JWKS of its own
	// at CardJWKSPath, apart from the token keys. Nil serves unsigned cards.
	CardKey *jwk.Key
	// RegistryPolicy decides which agent URLs /api/v1/agents accepts. Nil
	// means any public host, plus loopback hosts when the server's own
	// URL is on loopback; hosted agents are recorded whatever it says.
	RegistryPolicy *registry.Policy
	// RegistryLoopbackIfLocal makes a RegistryPolicy accept loopback
	// hosts too when the server's own URL is on loopback (a developer's
	// machine), as the nil RegistryPolicy does.
	RegistryLoopbackIfLocal bool
	// LeaseHeartbeat and LeaseExpiry time the server's lease on the tasks
	// it writes (store/lease): it is renewed every LeaseHeartbeat (default
	// 5s) and lapses LeaseExpiry (default 30s, at least twice the
	// heartbeat) after the last renewal; then another server on the same
	// database settles the tasks this one left running. The server sweeps
	// for such tasks at Start and every LeaseExpiry.
	LeaseHeartbeat time.Duration
	LeaseExpiry    time.Duration
	// AdminToken, when set, is the bearer token writes to /api/v1/agents
	// (register, update, delete) must present; without it they are
	// accepted from loopback peers only. Reads are open either way.
	AdminToken secret.Value
	// PushURLPolicy decides which webhook URLs push-notification configs
	// may name, checked when they are stored. Nil means public hosts, plus
	// loopback hosts when the server's own URL is on loopback (a
	// developer's machine, where a local webhook receiver is the norm and a
	// loopback-only server has no one else to be tricked by);
	// PushLoopbackIfLocal adds that to a PushURLPolicy too. Metadata
	// addresses are refused whatever it says.
	PushURLPolicy       *netguard.Policy
	PushLoopbackIfLocal bool
	// PushKeyFile holds the key push-config secrets (webhook credentials
	// and tokens) are sealed with at rest: 32 bytes in base64. Default
	// DataDir/push.key, created owner-only the first time a secret is
	// stored, also with PostgreSQL, where every replica must be given the
	// same file. With TaskStore set and no PushKeyFile, secrets are stored
	// as the given PushConfigStore keeps them.
	PushKeyFile string
	// PushDelivery tunes the delivery of push notifications (timeouts,
	// retries, concurrency, …; zero fields mean a2apush's defaults). Its
	// Policy, Signer, Issuer, Open and Logger are the server's: the
	// PushURLPolicy, the token issuer, the push key. Notifications are
	// delivered whenever push configs are stored in the database (or
	// Options.PushOutbox is set), and only then do the agents' cards say
	// pushNotifications: true.
	PushDelivery a2apush.Options

	// Agents are hosted besides the built-in echo and tck agents, at
	// /agents/{name}; a name is one path segment of letters, digits, '-'
	// and '_'.
	Agents map[string]Agent

	// Limits bound connections, request bodies and the body bytes in
	// flight across the server (see httpapi.Limits; zero fields mean its
	// defaults, negative ones turn a limit off). /healthz is served on the
	// connections reserved past the cap.
	Limits httpapi.Limits
	// MaxBodyBytes bounds one request body of a hosted agent's endpoint
	// (default a2asrv.DefaultMaxBodyBytes, 10 MiB); a larger one gets 413.
	MaxBodyBytes int64
	// MaxIDBytes and MaxExtensions bound the identifiers and the
	// A2A-Extensions entries of an agent request (a2asrv.Options);
	// ArtifactFlushInterval bounds how long a streamed chunk waits for the
	// store. Zero means a2asrv's defaults.
	MaxIDBytes            int
	MaxExtensions         int
	MaxExtensionURIBytes  int
	ArtifactFlushInterval time.Duration
	// Bindings are the A2A protocol bindings the agents' cards list, in
	// the operator's order of preference (a2a.BindingJSONRPC,
	// a2a.BindingHTTPJSON, a2a.BindingGRPC); nil means DefaultBindings,
	// then gRPC when GRPCAddr is set. Every agent serves both HTTP
	// bindings at its URL either way: the card says which a client should
	// pick first.
	Bindings []string
	// RefuseV03 answers A2A 0.3 clients with -32009 instead of serving
	// them (a2asrv.Options.RefuseV03).
	RefuseV03 bool
	// GRPCAddr, when set, is the address the A2A gRPC binding listens on
	// (its own listener; port 0 picks one). Every hosted agent is served
	// there, addressed by its name as the request's tenant ("echo", or
	// "echo/<tenant>"), and its card lists that interface.
	GRPCAddr string
	// GRPCPublicAddr is the host:port cards name for the gRPC interface;
	// "" means the listen address (an unspecified host becoming loopback).
	GRPCPublicAddr string
	// GRPCMaxStreams caps the concurrent calls on one gRPC connection
	// (zero: DefaultGRPCMaxStreams; negative: no cap). A client past it
	// waits for a call to end, or has its stream refused.
	GRPCMaxStreams int
	// AllowHosts are more names writes may carry in Host, for a local
	// proxy: "name" on any port or "name:port". When the server is
	// loopback-only (listens on loopback, no PublicURL elsewhere), a write
	// whose Host is not one of its names gets 421; setting AllowHosts
	// checks Host whatever the listen address.
	AllowHosts []string
	// Token configures the execution tokens the server signs and accepts.
	Token TokenOptions
	// Memory configures the memory service at /api/v1/mcp.
	Memory MemoryOptions
	// Gate configures the governance gate at /api/v1/gate and /ui/gate.
	Gate GateOptions
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
	db     database
	tasks  a2asrv.TaskStore
	push   a2asrv.PushConfigStore
	pusher *a2apush.Deliverer // push.go; nil without an outbox

	mu       sync.Mutex
	started  bool
	shutdown bool
	ln       net.Listener
	http     *http.Server
	handlers []*a2asrv.Handler
	agents   []hostedAgent
	grpc     grpcServing // grpc.go
	baseURL  string
	done     chan struct{}
	err      error

	sweeperStop context.CancelFunc // recover.go
	sweeperDone chan struct{}

	tls *tlscert.Pair // nil: plaintext

	issuer *auth.Issuer       // memory.go
	memory *memorysvc.Service // nil when no memory store
	gate   *gatesvc.Service   // gate.go; nil when no gate store

	// workers stop the services' background loops, in start order.
	workers []func()
}

// Agent is what the server hosts at /agents/{name}: an executor and the
// card that describes it.
type Agent interface {
	a2asrv.Executor
	Card() *a2a.AgentCard
}

type hostedAgent struct {
	name  string
	agent Agent
	card  *a2a.AgentCard // with the interface URL filled in
}

// database is what the server needs of store/sqlite and store/postgres.
type database interface {
	TaskStore() a2asrv.TaskStore
	PushConfigStore() a2asrv.PushConfigStore
	PushOutbox() a2asrv.PushOutbox
	Close() error
}

var (
	_ database = (*sqlite.DB)(nil)
	_ database = (*postgres.DB)(nil)
	_ Agent    = (*agent.Agent)(nil)
)

// New opens the stores opts select and prepares the built-in agents; it
// does not listen yet.
func New(ctx context.Context, opts *Options) (*Server, error) {
	s := &Server{done: make(chan struct{})}
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
	if s.opts.Bindings == nil {
		s.opts.Bindings = slices.Clone(DefaultBindings)
		if s.opts.GRPCAddr != "" {
			s.opts.Bindings = append(s.opts.Bindings, a2a.BindingGRPC)
		}
	}
	for _, b := range s.opts.Bindings {
		switch {
		case b == a2a.BindingGRPC && s.opts.GRPCAddr == "":
			return nil, fmt.Errorf("app: binding %s needs a gRPC listen address", b)
		case b != a2a.BindingJSONRPC && b != a2a.BindingHTTPJSON && b != a2a.BindingGRPC:
			return nil, fmt.Errorf("app: binding %q: this server serves %s, %s and %s", b, a2a.BindingJSONRPC, a2a.BindingHTTPJSON, a2a.BindingGRPC)
		}
	}
	if s.opts.MaxBodyBytes <= 0 {
		s.opts.MaxBodyBytes = a2asrv.DefaultMaxBodyBytes
	}
	if need := s.opts.MaxBodyBytes * int64(holdFactor(s.opts.Limits)); s.opts.Limits.MaxInflightBytes == 0 && httpapi.DefaultInflightBytes() < need {
		// The default budget, derived from a small GOMEMLIMIT, still admits
		// the largest body.
		s.opts.Limits.MaxInflightBytes = need
	}
	// The listen address is known at Start; the rest is checked now, before
	// a database is opened.
	if _, err := s.guardOptions(nil); err != nil {
		return nil, err
	}
	if (s.opts.TLSCertFile == "") != (s.opts.TLSKeyFile == "") {
		return nil, errors.New("app: TLS needs both a certificate file and a key file")
	}
	if s.opts.TLSCertFile == "" && !s.opts.InsecureListen {
		// What can be told from the address alone is refused before a
		// database is opened; a host name is checked once it is bound.
		for _, a := range []string{s.opts.Addr, s.opts.GRPCAddr} {
			if err := plaintextAddr(a); err != nil {
				return nil, err
			}
		}
	}
	if k := s.opts.CardKey; k != nil && !k.IsPrivate() {
		return nil, errors.New("app: card key: want a private key")
	}
	if _, err := s.leaseOptions().Resolve(); err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.TLSCertFile != "" {
		var err error
		s.tls, err = tlscert.Load(s.opts.TLSCertFile, s.opts.TLSKeyFile, &tlscert.Options{Interval: s.opts.TLSReloadInterval, Logger: s.log})
		if err != nil {
			return nil, fmt.Errorf("app: %w", err)
		}
	}
	s.agents = []hostedAgent{
		{name: "echo", agent: builtin.Echo()},
		{name: "tck", agent: builtin.NewTCK(&builtin.TCKOptions{StreamingTimeout: s.opts.TCKStreamingTimeout})},
	}
	for _, name := range slices.Sorted(maps.Keys(s.opts.Agents)) {
		if !validAgentName(name) || slices.ContainsFunc(s.agents, func(a hostedAgent) bool { return a.name == name }) {
			return nil, fmt.Errorf("app: agent name %q: want a path segment of letters, digits, '-' and '_' not taken by another agent", name)
		}
		if s.opts.Agents[name] == nil {
			return nil, fmt.Errorf("app: agent %q is nil", name)
		}
		s.agents = append(s.agents, hostedAgent{name: name, agent: s.opts.Agents[name]})
	}
	if err := s.openStores(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// validAgentName reports whether name can be an agent's path segment.
func validAgentName(name string) bool {
	return name != "" && len(name) <= 64 && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
}

func (s *Server) openStores(ctx context.Context) error {
	if s.opts.TaskStore != nil {
		s.tasks, s.push = s.opts.TaskStore, s.opts.PushConfigStore
		return nil
	}
	var err error
	switch scheme, _, _ := strings.Cut(s.opts.DatabaseURL, "://"); {
	case s.opts.DatabaseURL == "":
		if err := os.MkdirAll(s.opts.DataDir, 0o700); err != nil {
			return fmt.Errorf("app: data directory: %w", err)
		}
		path := filepath.Join(s.opts.DataDir, DatabaseFile)
		s.db, err = sqlite.Open(ctx, path, &sqlite.Options{Logger: s.log, Lease: s.leaseOptions(),
			MemoryIndexBytes: s.opts.Memory.IndexBytes})
		if err != nil {
			return fmt.Errorf("app: open sqlite %s: %w", path, err)
		}
	case scheme == "postgres" || scheme == "postgresql":
		s.db, err = postgres.Open(ctx, s.opts.DatabaseURL, &postgres.Options{Logger: s.log, Lease: s.leaseOptions(),
			MemoryIndexBytes: s.opts.Memory.IndexBytes, MaxConns: cmp.Or(s.opts.DBMaxConns, DefaultDBMaxConns), StatementTimeout: s.opts.DBStatementTimeout})
		if err != nil {
			// Not the URL, which may hold a password; postgres.Open's
			// errors never repeat it either.
			return fmt.Errorf("app: open postgres: %w", err)
		}
	default:
		// Not echoed: a malformed URL may still hold a password.
		return errors.New("app: database URL must start with postgres:// or postgresql://")
	}
	s.tasks, s.push = s.db.TaskStore(), s.db.PushConfigStore()
	return nil
}
