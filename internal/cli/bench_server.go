package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/secret"
)

// benchLogLevel is the level of the bench servers' logs on stderr.
var benchLogLevel = slog.LevelWarn

// benchLogger is what a bench's servers log to: warnings and worse, as
// JSON, on stderr.
func benchLogger(e *env) *slog.Logger {
	return slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: benchLogLevel}))
}

// startBenchServer serves novaos for the bench called name on loopback
// with o, giving it what o leaves unset: the bench's logger, a fresh
// admin token, and a throwaway data directory, which holds the token
// keys even when the records live in PostgreSQL. stop shuts the server
// down and removes that directory.
func startBenchServer(ctx context.Context, name string, o *app.Options, e *env) (srv *app.Server, stop func(), err error) {
	o.Addr = "127.0.0.1:0"
	if o.Logger == nil {
		o.Logger = benchLogger(e)
	}
	if o.AdminToken.IsZero() {
		o.AdminToken = secret.New(newBenchSecret())
	}
	remove := func() {}
	if o.DataDir == "" {
		dir, err := os.MkdirTemp("", "novaos-bench-"+name+"-")
		if err != nil {
			return nil, nil, err
		}
		o.DataDir, remove = dir, func() { os.RemoveAll(dir) }
	}
	if srv, err = app.New(ctx, o); err != nil {
		remove()
		return nil, nil, err
	}
	stop = func() {
		srv.Shutdown(context.Background())
		remove()
	}
	if err := srv.Start(ctx); err != nil {
		stop()
		return nil, nil, err
	}
	return srv, stop, nil
}

// benchTenant is a tenant of its own for one run of a bench: prefix and a
// random suffix, so that runs sharing a PostgreSQL database never see one
// another's records.
func benchTenant(prefix string) string { return prefix + newBenchSecret()[:12] }

// mintBenchToken mints a token of c on srv, good for longer than a bench
// runs.
func mintBenchToken(ctx context.Context, srv *app.Server, c identity.Claims) (secret.Value, error) {
	tok, err := srv.Issuer().Mint(ctx, c, 24*time.Hour)
	if err != nil {
		return secret.Value{}, fmt.Errorf("mint token: %w", err)
	}
	return secret.New(tok), nil
}
