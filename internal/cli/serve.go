package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/builtin"
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
	tckTimeout := fs.Duration("tck-timeout", builtin.DefaultStreamingTimeout, "delay unit of the tck agent's slow scenarios; match the kit's TCK_STREAMING_TIMEOUT")
	if code, ok := parse(fs, args); !ok {
		return code
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

	srv, err := app.New(ctx, &app.Options{
		Addr:        *addr,
		PublicURL:   *public,
		DataDir:     *data,
		DatabaseURL: *db,
		Logger:      log,
		CardKey:     key,

		TCKStreamingTimeout: *tckTimeout,
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
	printEndpoints(e, srv)
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

func printEndpoints(e *env, srv *app.Server) {
	w := e.stdout
	fmt.Fprintf(w, "NovaOS is serving on %s\n\n", srv.URL())
	for _, ep := range srv.Endpoints() {
		fmt.Fprintf(w, "  agent %-6s %s\n", ep.Name, ep.URL)
		fmt.Fprintf(w, "  card  %-6s %s\n", ep.Name, ep.CardURL)
	}
	fmt.Fprintf(w, "  health       %s/healthz\n\n", srv.URL())
	fmt.Fprintln(w, "Press Ctrl-C to stop.")
}
