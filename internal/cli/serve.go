package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/builtin"
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
	cardKey := fs.String("card-key", "", "private JWK `file` to sign agent cards with (see novaos card keygen); its public key is served at "+app.JWKSPath)
	leaseBeat := fs.Duration("lease-heartbeat", lease.DefaultHeartbeat, "how often this server renews its lease on the tasks it runs (crash recovery)")
	leaseExpiry := fs.Duration("lease-expiry", lease.DefaultExpiry, "how long after its last renewal a server's lease lapses and the tasks it left running are settled FAILED (at least twice --lease-heartbeat)")
	tckTimeout := fs.Duration("tck-timeout", builtin.DefaultStreamingTimeout, "delay unit of the tck agent's slow scenarios; match the kit's TCK_STREAMING_TIMEOUT")
	var allowHosts listFlag
	var allowLoopback optBool
	fs.Var(&allowHosts, "registry-allow-host", "registry: accept agent URLs only on hosts under this `suffix` (repeatable; \".example.com\" matches the hosts below it, \"example.com\" also itself); default any public host")
	fs.Var(&allowLoopback, "registry-allow-loopback", "registry: accept loopback agent URLs (localhost, 127.0.0.0/8, ::1) (default true when the server's own URL, --public-url or else the listen address, is on loopback, as with the default --addr; else false)")
	allowPrivate := fs.Bool("registry-allow-private", false, "registry: accept agent URLs on private, shared and link-local addresses (10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10, …)")
	var pushLoopback optBool
	fs.Var(&pushLoopback, "push-allow-loopback", "push: accept webhook URLs on loopback (localhost, 127.0.0.0/8, ::1) (default true when the server's own URL is on loopback, as with the default --addr; else false)")
	pushPrivate := fs.Bool("push-allow-private", false, "push: accept webhook URLs on private, shared and link-local addresses (10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10, …); metadata addresses are refused regardless")
	pushKeyFile := fs.String("push-key-file", "", "`file` with the key push credentials are sealed with at rest (32 bytes, base64); created owner-only when missing (default <--data>/"+app.PushKeyFile+"; with PostgreSQL give every replica the same file)")
	tokenFile := fs.String("admin-token-file", "", "`file` holding the admin token that writes to the registry (POST/PUT/DELETE "+registry.APIPath+") must send as \"Authorization: Bearer <token>\"; default $"+EnvAdminToken+", else only clients on this machine may write")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	for _, h := range allowHosts {
		if !validHostSuffix(h) {
			return usageError(fs, "--registry-allow-host: want a host name suffix such as .example.com, not %q", h)
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
	log := slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: lvl}))
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

	srv, err := app.New(ctx, &app.Options{
		Addr:        *addr,
		PublicURL:   *public,
		DataDir:     *data,
		DatabaseURL: *db,
		Logger:      log,
		CardKey:     key,
		AdminToken:  token,

		RegistryPolicy: &registry.Policy{AllowedHostSuffixes: allowHosts, AllowPrivate: *allowPrivate,
			AllowLoopback: allowLoopback.set && allowLoopback.v},
		RegistryLoopbackIfLocal: !allowLoopback.set,
		TCKStreamingTimeout:     *tckTimeout,

		PushURLPolicy:       &netguard.Policy{AllowPrivate: *pushPrivate, AllowLoopback: pushLoopback.set && pushLoopback.v},
		PushLoopbackIfLocal: !pushLoopback.set,
		PushKeyFile:         *pushKeyFile,
		LeaseHeartbeat:      *leaseBeat,
		LeaseExpiry:         *leaseExpiry,
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos serve: %v\n", err)
		return exitFail
	}
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintf(e.stderr, "novaos serve: %v\n", err)
		shutdown(srv, *grace, e)
		return exitFail
	}
	printEndpoints(e, srv, !token.IsZero())
	if key != nil {
		fmt.Fprintf(e.stdout, "Agent cards are signed by key %q; its JWKS is %s%s\n", key.KeyID(), srv.URL(), app.JWKSPath)
	}

	select {
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
	fmt.Fprintf(w, "  health       %s/healthz\n\n", srv.URL())
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
