package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/pgtest"
)

// On PostgreSQL, /healthz reports the server's notification listener: up
// at start; degraded (still 200) while its connection is gone, without
// the error's detail; up again once it has reconnected by itself.
func TestHealthzListenerOnPostgres(t *testing.T) {
	url := pgtest.URL(t)
	srv := start(t, &app.Options{DataDir: t.TempDir(), Database: app.DatabaseOptions{URL: url}})
	health := func() (int, app.Health, string) {
		t.Helper()
		code, body := get(t, srv.URL()+"/healthz")
		var h app.Health
		if err := json.Unmarshal(body, &h); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return code, h, string(body)
	}
	if code, h, body := health(); code != http.StatusOK || h.Status != "ok" || h.Listener == nil || !h.Listener.OK {
		t.Fatalf("at start: %d %s", code, body)
	}

	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The listener cannot reconnect until allow: the test sees the
	// degraded state however long it takes to ask.
	allow := pgtest.RefuseConnections(t, url)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminated %d listeners: %v", n, err)
	}
	var degraded string
	for deadline := time.Now().Add(time.Minute); degraded == "" && time.Now().Before(deadline); {
		code, h, body := health()
		switch {
		case h.Status == "degraded":
			if code != http.StatusOK || h.Listener == nil || h.Listener.OK || h.Listener.Error != "not listening" || !h.Database.OK {
				t.Errorf("degraded: %d %s", code, body)
			}
			degraded = body
		case code != http.StatusOK:
			t.Fatalf("while the listener reconnects: %d %s", code, body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if degraded == "" {
		t.Fatal("/healthz did not report the listener down within a minute")
	}
	for _, leak := range []string{"novaos", "127.0.0.1", "terminat", "FATAL"} {
		if strings.Contains(degraded, leak) {
			t.Errorf("degraded body reveals %q: %s", leak, degraded)
		}
	}
	allow()
	// Reconnection attempts back off to 5s apart: a minute bounds a failure.
	for deadline := time.Now().Add(time.Minute); ; {
		code, h, body := health()
		if code == http.StatusOK && h.Status == "ok" && h.Listener != nil && h.Listener.OK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener did not come back: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
