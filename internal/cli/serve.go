package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/agenthost"
	"novaos.dev/novaos/internal/memorysvc"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/builtin"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/telemetry"
	"novaos.dev/novaos/internal/tlscert"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/store/lease"
)

func runServe(ctx context.Context, args []string, e *env) int {
	fs := newFlags("serve", "serve [flags]", e)
	addr := fs.String("addr", app.DefaultAddr, "TCP `address` to listen on (port 0 picks a free port)")
	data := fs.String("data", app.DefaultDataDir, "data `directory` for the SQLite database")
	db := fs.String("db", "", "PostgreSQL `URL` (postgres://…); default $"+EnvDatabaseURL+", else SQLite in --data")
	public := fs.String("public-url", "", "base `URL` clients reach the server at, for agent cards (default: the listen address)")
	grace := fs.Duration("shutdown-timeout", 10*time.Second, "how long running requests may finish after SIGINT/SIGTERM")
	level := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	cardKey := fs.String("card-key", "", "private JWK `file` to sign agent cards with (see novaos card keygen); its public key is served at "+app.CardJWKSPath+", apart from the token keys at "+app.JWKSPath)
	leaseBeat := fs.Duration("lease-heartbeat", lease.DefaultHeartbeat, "how often this server renews its lease on the tasks it runs (crash recovery)")
	leaseExpiry := fs.Duration("lease-expiry", lease.DefaultExpiry, "how long after its last renewal a server's lease lapses and the tasks it left running are settled FAILED (at least twice --lease-heartbeat)")
	bindings := fs.String("bindings", "", "A2A `bindings` the agent cards list, in order of preference (comma-separated: jsonrpc, http+json or rest, grpc); every agent serves both HTTP bindings at its URL (default jsonrpc,http+json, then grpc with --grpc-addr)")
	v03 := fs.Bool("a2a-v03", true, "serve A2A 0.3 clients (0.3 method names and shapes, on calls without A2A-Version) on each agent's JSON-RPC URL; =false answers them -32009")
	grpcAddr := fs.String("grpc-addr", "", "`address` the A2A gRPC binding listens on, on its own listener (port 0 picks one); agents are addressed by name as the request's tenant; default off")
	grpcPublic := fs.String("grpc-public-addr", "", "`host:port` agent cards name for the gRPC interface (default the --grpc-addr listen address)")
	tlsCert := fs.String("tls-cert", "", "PEM `file` of the certificate chain (leaf first) to serve both listeners with over TLS 1.2+; with --tls-key. Read again when the file changes and on SIGHUP")
	tlsKey := fs.String("tls-key", "", "PEM `file` of the private key of --tls-cert")
	tlsReload := fs.Duration("tls-reload-interval", tlscert.DefaultInterval, "how often the --tls-cert and --tls-key files are checked for a change (negative: only on SIGHUP)")
	insecureListen := fs.Bool("insecure-listen", false, "serve plaintext HTTP and gRPC on an address that is not loopback (behind a proxy that terminates TLS); without it such an address needs --tls-cert and --tls-key")
	grpcStreams := fs.Int("grpc-max-streams", agenthost.DefaultGRPCMaxStreams, "concurrent calls one gRPC connection may have; a client past it waits or has its stream refused (negative: no cap)")
	tckTimeout := fs.Duration("tck-timeout", builtin.DefaultStreamingTimeout, "delay unit of the tck agent's slow scenarios; match the kit's TCK_STREAMING_TIMEOUT")
	var allowHosts listFlag
	var allowLoopback optBool
	fs.Var(&allowHosts, "registry-allow-host", "registry: accept agent URLs only on hosts under this `suffix` (repeatable; \".example.com\" matches the hosts below it, \"example.com\" also itself); default any public host")
	fs.Var(&allowLoopback, "registry-allow-loopback", "registry: accept loopback agent URLs (localhost, 127.0.0.0/8, ::1) (default true when the server's own URL, --public-url or else the listen address, is on loopback, as with the default --addr; else false)")
	allowPrivate := fs.Bool("registry-allow-private", false, "registry: accept agent URLs on private, shared and link-local addresses (10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10, …)")
	var pushLoopback optBool
	fs.Var(&pushLoopback, "push-allow-loopback", "push: accept webhook URLs on loopback (localhost, 127.0.0.0/8, ::1) (default true when the server's own URL is on loopback, as with the default --addr; else false)")
	pushPrivate := fs.Bool("push-allow-private", false, "push: accept webhook URLs on private, shared and link-local addresses (10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10, …); metadata addresses are refused regardless")
	sealKeyFile := fs.String("seal-key-file", "", "`file` with the key secrets are sealed with at rest: push credentials, agent instances' secrets, runs' custom headers (32 bytes, base64); created owner-only when missing (default <--data>/"+app.SealKeyFile+", taking over an earlier push.key; with PostgreSQL give every replica the same file)")
	pushKeyFile := fs.String("push-key-file", "", "`file` with a key of their own for push credentials, instead of --seal-key-file's (32 bytes, base64; created owner-only when missing)")
	tokenFile := fs.String("admin-token-file", "", "`file` holding the admin token that writes to the registry (POST/PUT/DELETE "+registry.APIPath+") must send as \"Authorization: Bearer <token>\"; default $"+EnvAdminToken+", else only clients on this machine may write")
	lim := limitFlags(fs)
	dbFl := databaseFlags(fs)
	plat := platformFlags(fs)
	gateFl := gateFlags(fs)
	gatewayFl := gatewayFlags(fs)
	toolsFl := toolsFlags(fs)
	schedFl := schedulesFlags(fs)
	deliveryFl := deliveryFlags(fs)
	pushFl := pushFlags(fs)
	telFl := telemetryFlags(fs)
	llmFl := llmFlags(fs)
	fs.Usage = func() { groupedUsage(fs.Output(), "serve [flags]", fs, serveGroups) }
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if msg := plat.check(); msg != "" {
		return usageError(fs, "%s", msg)
	}
	if msg := gatewayFl.check(); msg != "" {
		return usageError(fs, "%s", msg)
	}
	if msg := toolsFl.check(); msg != "" {
		return usageError(fs, "%s", msg)
	}
	if msg := schedFl.check(); msg != "" {
		return usageError(fs, "%s", msg)
	}
	if msg := deliveryFl.check(); msg != "" {
		return usageError(fs, "%s", msg)
	}
	if msg := gateFl.check(); msg != "" {
		return usageError(fs, "%s", msg)
	}
	if msg := pushFl.check(); msg != "" {
		return usageError(fs, "%s", msg)
	}
	if msg := telFl.check(e); msg != "" {
		return usageError(fs, "%s", msg)
	}
	if msg := llmFl.check(); msg != "" {
		return usageError(fs, "%s", msg)
	}
	for _, h := range allowHosts {
		if !validHostSuffix(h) {
			return usageError(fs, "--registry-allow-host: want a host name suffix such as .example.com, not %q", h)
		}
	}
	if msg := lim.check(); msg != "" {
		return usageError(fs, "%s", msg)
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usageError(fs, "--tls-cert and --tls-key go together: give both, or neither")
	}
	var cardBindings []string
	if *bindings != "" {
		var err error
		if cardBindings, err = parseBindings(*bindings); err != nil {
			return usageError(fs, "--bindings: %v", err)
		}
		if slices.Contains(cardBindings, a2a.BindingGRPC) && *grpcAddr == "" {
			return usageError(fs, "--bindings lists grpc: give --grpc-addr")
		}
	}
	if _, err := (&lease.Options{Heartbeat: *leaseBeat, Expiry: *leaseExpiry}).Resolve(); err != nil || *leaseBeat < 0 || *leaseExpiry < 0 {
		return usageError(fs, "--lease-expiry must be at least twice --lease-heartbeat, both positive")
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return usageError(fs, "--log-level: %v", err)
	}
	if *db == "" {
		*db = e.getenv(EnvDatabaseURL)
	}
	if msg := dbFl.check(fs, *db); msg != "" {
		return usageError(fs, "%s", msg)
	}
	dbMaxConns, dbTimeout := dbFl.options()
	// Lines logged in a request's context carry its trace id.
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: lvl})))
	key, err := readCardKey(*cardKey)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos serve: %v\n", err)
		return exitFail
	}
	token, err := serverAdminToken(*tokenFile, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos serve: %v\n", err)
		return exitFail
	}
	memOpts, err := plat.memory(llmFl.platform)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos serve: %v\n", err)
		return exitFail
	}
	gateOpts, err := gateFl.options(llmFl.platform)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos serve: %v\n", err)
		return exitFail
	}
	builtinTools, err := toolsFl.builtins()
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos serve: %v\n", err)
		return exitFail
	}

	regOpts := app.RegistryOptions{Policy: &registry.Policy{AllowedHostSuffixes: allowHosts, AllowPrivate: *allowPrivate,
		AllowLoopback: allowLoopback.set && allowLoopback.v}, LoopbackIfLocal: !allowLoopback.set}
	opts := &app.Options{
		Addr:        *addr,
		PublicURL:   *public,
		DataDir:     *data,
		Logger:      log,
		AdminToken:  token,
		SealKeyFile: *sealKeyFile,
		Database: app.DatabaseOptions{URL: *db, MaxConns: dbMaxConns, StatementTimeout: dbTimeout,
			LeaseHeartbeat: *leaseBeat, LeaseExpiry: *leaseExpiry, MemoryIndexBytes: plat.memIndex.n},
		HTTP: app.HTTPOptions{Limits: lim.limits(), AllowHosts: lim.allowHosts, CORSOrigins: lim.corsOrigins,
			TLSCertFile: *tlsCert, TLSKeyFile: *tlsKey, TLSReloadInterval: *tlsReload, InsecureListen: *insecureListen},
		Token:  plat.token(),
		Memory: memOpts,
		Gate:   gateOpts,
		Agents: app.AgentOptions{
			Bindings: cardBindings, RefuseV03: !*v03, CardKey: key, TCKStreamingTimeout: *tckTimeout,
			GRPCAddr: *grpcAddr, GRPCPublicAddr: *grpcPublic, GRPCMaxStreams: *grpcStreams,
			MaxBodyBytes: lim.maxBody.n, MaxIDBytes: *lim.maxIDBytes, MaxExtensions: *lim.maxExtensions,
			MaxExtensionURIBytes: *lim.maxExtURI, ArtifactFlushInterval: *lim.flushEvery,
			PushURLPolicy:       &netguard.Policy{AllowPrivate: *pushPrivate, AllowLoopback: pushLoopback.set && pushLoopback.v},
			PushLoopbackIfLocal: !pushLoopback.set, PushKeyFile: *pushKeyFile, PushDelivery: pushFl.options(),
		},
		Registry:        regOpts,
		Gateway:         gatewayFl.options(regOpts),
		Tools:           toolsFl.options(),
		BuiltinTools:    builtinTools,
		LLM:             llmFl.options(),
		Schedules:       schedFl.options(),
		Delivery:        deliveryFl.options(),
		DeliveryKeyFile: *deliveryFl.keyFile,
	}
	telFl.apply(opts)
	srv, err := app.New(ctx, opts)
	if err != nil {
		code, err := explainListen(err)
		fmt.Fprintf(e.stderr, "novaos serve: %v\n", err)
		return code
	}
	// SIGHUP reloads the certificate; set before serving, so that a
	// SIGHUP to a server that says it serves never takes the default
	// action, which ends the process.
	var hup chan os.Signal
	if *tlsCert != "" {
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	if err := srv.Start(ctx); err != nil {
		code, err := explainListen(err)
		fmt.Fprintf(e.stderr, "novaos serve: %v\n", err)
		shutdown(srv, *grace, e)
		return code
	}
	printEndpoints(e, srv, !token.IsZero())
	if *tlsCert != "" {
		fmt.Fprintf(e.stdout, "TLS with the certificate in %s, read again when it changes and on SIGHUP\n", *tlsCert)
	}
	if key != nil {
		fmt.Fprintf(e.stdout, "Agent cards are signed by key %q; its JWKS is %s%s\n", key.KeyID(), srv.URL(), app.CardJWKSPath)
	}

	for {
		select {
		case <-hup:
			// The outcome is logged either way; a refused pair leaves the
			// one in use.
			log.Info("serve: SIGHUP: reloading the TLS certificate")
			_ = srv.ReloadTLS()
		case <-ctx.Done():
			fmt.Fprintln(e.stdout, "Shutting down…")
			if err := shutdown(srv, *grace, e); err != nil {
				return exitFail
			}
			return exitOK
		case <-srv.Done():
			fmt.Fprintf(e.stderr, "novaos serve: %v\n", srv.Err())
			shutdown(srv, *grace, e)
			return exitFail
		}
	}
}

// explainListen names the flags for a plaintext listen address the server
// refused (a usage error); other errors are failures.
func explainListen(err error) (code int, _ error) {
	if errors.Is(err, app.ErrPlaintextListen) {
		return exitUsage, fmt.Errorf("%w: serve it over TLS with --tls-cert and --tls-key, or pass --insecure-listen if a proxy in front terminates TLS", err)
	}
	return exitFail, err
}

func shutdown(srv *app.Server, grace time.Duration, e *env) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos serve: %v\n", err)
	}
	return err
}

func printEndpoints(e *env, srv *app.Server, token bool) {
	w := e.stdout
	fmt.Fprintf(w, "NovaOS is serving on %s\n\n", srv.URL())
	for _, ep := range srv.Endpoints() {
		fmt.Fprintf(w, "  agent %-6s %s\n", ep.Name, ep.URL)
		fmt.Fprintf(w, "  card  %-6s %s\n", ep.Name, ep.CardURL)
	}
	writes := "writes from this machine only; set --admin-token-file to allow others"
	if token {
		writes = "writes need the admin token"
	}
	fmt.Fprintf(w, "  registry     %s%s (%s)\n", srv.URL(), registry.APIPath, writes)
	fmt.Fprintf(w, "  memory       %s%s (MCP; an execution token from novaos token mint)\n", srv.URL(), memorysvc.Path)
	fmt.Fprintf(w, "  gate         %s%s (a token with gate:submit; operators: %s/ui/gate, novaos gate)\n", srv.URL(), gate.APIPath, srv.URL())
	if addr := srv.GRPCAddr(); addr != "" {
		fmt.Fprintf(w, "  gRPC         %s (A2A gRPC binding; an agent's name is the request's tenant)\n", addr)
	}
	fmt.Fprintf(w, "  keys         %s%s (token keys)\n", srv.URL(), app.JWKSPath)
	fmt.Fprintf(w, "  health       %s/healthz\n", srv.URL())
	if u := srv.MetricsURL(); u != "" {
		fmt.Fprintf(w, "  metrics      %s%s (Prometheus; profiles at %s)\n\n", u, app.MetricsPath, app.PprofPath)
	} else {
		fmt.Fprintf(w, "  metrics      %s%s (Prometheus, the operator only; profiles at %s)\n\n", srv.URL(), app.MetricsPath, app.PprofPath)
	}
	fmt.Fprintln(w, "Press Ctrl-C to stop.")
}

// validHostSuffix accepts what registry.Policy can match: a host name,
// optionally with a leading dot ("example.com", ".example.com").
func validHostSuffix(s string) bool {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "."), ".")
	if s == "" {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			return false
		}
	}
	return true
}

// serveLimits are serve's connection, body and cross-site flags
// (README: Configuration and Limits).
type serveLimits struct {
	headerTimeout, bodyTimeout, idleTimeout *time.Duration
	bodyMinRate                             *int64
	maxConns, connReserve                   *int
	maxIDBytes, maxExtensions, maxExtURI    *int
	flushEvery                              *time.Duration
	maxHeader, maxInflight, maxBody         byteSize
	allowHosts, corsOrigins                 listFlag
}

func limitFlags(fs *flag.FlagSet) *serveLimits {
	l := &serveLimits{
		maxHeader:   byteSize{n: httpapi.DefaultMaxHeaderBytes},
		maxInflight: byteSize{n: httpapi.DefaultInflightBytes(), off: true},
		maxBody:     byteSize{n: a2asrv.DefaultMaxBodyBytes},
	}
	l.headerTimeout = fs.Duration("header-timeout", httpapi.DefaultHeaderTimeout, "time a client has to send a request's headers (negative: no limit)")
	l.bodyTimeout = fs.Duration("body-timeout", httpapi.DefaultBodyTimeout, "time any request body or gRPC request message may take to arrive; past it, it must have averaged --body-min-rate or its connection is cut (negative: no limit)")
	l.bodyMinRate = fs.Int64("body-min-rate", httpapi.DefaultBodyMinRate, "`bytes` per second a body slower than --body-timeout must average since its request began (negative: none, --body-timeout bounds every body)")
	l.idleTimeout = fs.Duration("idle-timeout", httpapi.DefaultIdleTimeout, "close a keep-alive connection idle this long (negative: never)")
	fs.Var(&l.maxHeader, "max-header-bytes", "`size` of the request line and headers beyond which a request gets 431, and of a gRPC call's metadata (bytes, or with KiB, MiB, KB, MB)")
	l.maxConns = fs.Int("max-conns", 0, fmt.Sprintf("open connections, HTTP and gRPC together, beyond which only /healthz is served, on --conn-reserve more HTTP ones (0: three quarters of the open-file limit, at most 32768: %d here; negative: no cap)", httpapi.DefaultMaxConns()))
	l.connReserve = fs.Int("conn-reserve", httpapi.DefaultConnReserve, "connections accepted past --max-conns to serve /healthz and answer others 503 (negative: none)")
	fs.Var(&l.maxInflight, "max-inflight-bytes", "`size` of the memory the requests in flight may hold, each counted as "+strconv.Itoa(httpapi.DefaultHoldFactor)+" times its body until its handler returns (HTTP and gRPC alike); a request beyond it gets 503 with Retry-After, a gRPC call UNAVAILABLE (negative: no budget)")
	fs.Var(&l.maxBody, "max-body-bytes", "largest request body `size` of an agent endpoint; a larger one gets 413")
	l.maxIDBytes = fs.Int("max-id-bytes", a2asrv.DefaultMaxIDBytes, "longest identifier (task, message, context, push-config id, tenant) a request may carry, in `bytes`; longer is -32602")
	l.maxExtensions = fs.Int("max-extensions", a2asrv.DefaultMaxExtensions, "most distinct URIs a request may list in A2A-Extensions; more is -32600")
	l.maxExtURI = fs.Int("max-extension-uri-bytes", a2asrv.DefaultMaxExtensionURIBytes, "longest URI in A2A-Extensions, in `bytes`; longer is -32600")
	l.flushEvery = fs.Duration("artifact-flush-interval", a2asrv.DefaultArtifactFlushInterval, "longest a streamed artifact chunk waits before it is stored; what a crash can lose of a task not yet final")
	fs.Var(&l.allowHosts, "allow-host", "`name` (or name:port) that writes may carry in Host besides the server's own (localhost, 127.0.0.1, [::1], the listen and --public-url hosts), for a local proxy; repeatable; setting one checks Host on every listen address. Not --registry-allow-host, which is about agent URLs")
	fs.Var(&l.corsOrigins, "cors-origin", "browser `origin` (https://app.example.com) given CORS access; repeatable; default none. Writes from pages of other origins get 403")
	return l
}

// check says what is wrong with the flags, or "".
func (l *serveLimits) check() string {
	if l.maxBody.n <= 0 {
		return "--max-body-bytes: want a positive size"
	}
	if *l.maxIDBytes <= 0 || *l.maxExtensions <= 0 || *l.maxExtURI <= 0 || *l.flushEvery <= 0 {
		return "--max-id-bytes, --max-extensions, --max-extension-uri-bytes and --artifact-flush-interval must be positive"
	}
	if l.maxInflight.n >= 0 && l.maxInflight.n/httpapi.DefaultHoldFactor < l.maxBody.n {
		return fmt.Sprintf("--max-inflight-bytes (%s) is below %d times --max-body-bytes (%s): the largest body could never be admitted", &l.maxInflight, httpapi.DefaultHoldFactor, &l.maxBody)
	}
	return ""
}

// limits are the flags as httpapi.Limits. Zero values in the flags (a
// zero duration, rate or cap) mean the default there; negative ones, off.
func (l *serveLimits) limits() httpapi.Limits {
	return httpapi.Limits{
		HeaderTimeout:    *l.headerTimeout,
		BodyTimeout:      *l.bodyTimeout,
		BodyMinRate:      *l.bodyMinRate,
		IdleTimeout:      *l.idleTimeout,
		MaxHeaderBytes:   int(l.maxHeader.n),
		MaxConns:         *l.maxConns,
		ConnReserve:      *l.connReserve,
		MaxInflightBytes: l.maxInflight.n,
	}
}

// byteSize is a flag holding a size in bytes, written as a number with an
// optional unit: B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (of
// 1000). off allows a negative number, which means no limit.
type byteSize struct {
	n   int64
	off bool
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}

func (b *byteSize) String() string {
	if b == nil {
		return ""
	}
	if b.n > 0 {
		for _, u := range sizeUnits[:3] {
			if b.n%u.mult == 0 {
				return strconv.FormatInt(b.n/u.mult, 10) + u.suffix
			}
		}
	}
	return strconv.FormatInt(b.n, 10)
}

func (b *byteSize) Set(s string) error {
	n, err := parseSize(s, b.off)
	if err != nil {
		return err
	}
	b.n = n
	return nil
}

// parseSize reads "256MiB", "64KiB", "10MB", "4096" (bytes), and, when
// negative is true, a negative number (no limit).
func parseSize(s string, negative bool) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("want a size such as 4096, 64KiB or 256MiB, not %q", s)
	case n < 0 && !negative:
		return 0, errors.New("want a size of at least 0")
	case n < 0:
		return -1, nil
	case n > math.MaxInt64/mult:
		return 0, fmt.Errorf("size %q too large", s)
	}
	return n * mult, nil
}

// parseBindings reads --bindings: binding names in order, each once.
func parseBindings(s string) ([]string, error) {
	var out []string
	for name := range strings.SplitSeq(s, ",") {
		var b string
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "jsonrpc", "json-rpc":
			b = a2a.BindingJSONRPC
		case "http+json", "rest":
			b = a2a.BindingHTTPJSON
		case "grpc":
			b = a2a.BindingGRPC
		default:
			return nil, fmt.Errorf("unknown binding %q (want jsonrpc, http+json or grpc)", strings.TrimSpace(name))
		}
		if slices.Contains(out, b) {
			return nil, fmt.Errorf("%s is listed twice", b)
		}
		out = append(out, b)
	}
	return out, nil
}
