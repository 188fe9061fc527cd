package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables read by URL.
const (
	EnvURL     = "NOVAOS_TEST_POSTGRES_URL"
	EnvRequire = "NOVAOS_REQUIRE_POSTGRES"
)

// URL returns the address of a new, empty database that lives until the
// test and its subtests end. Without a server configured it skips t, or
// fails it when EnvRequire is "1".
func URL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvURL)
	if admin == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("pgtest: %s=1 but %s is not set", EnvRequire, EnvURL)
		}
		t.Skipf("pgtest: %s is not set; run ./scripts/test, which starts a throwaway PostgreSQL", EnvURL)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "novaos_test_" + hex.EncodeToString(b[:])

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := exec(ctx, admin, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// FORCE ends sessions a test left open (PostgreSQL 13+).
		if err := exec(ctx, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	return u
}

func exec(ctx context.Context, connString, sql string) error {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// withDatabase points a connection string, in URL or keyword/value form, at
// database name.
func withDatabase(connString, name string) (string, error) {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return "", fmt.Errorf("not a valid URL")
		}
		u.Path = "/" + name
		u.RawPath = ""
		q := u.Query()
		q.Del("dbname")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// A later keyword wins in libpq's keyword/value syntax.
	return connString + " dbname=" + name, nil
}

// RefuseConnections makes the database at dbURL, one URL returned, refuse
// new connections, as a server being restarted would, until allow is
// called or the test ends; connections already open stay. A test that
// cuts a connection can so see what happens while it cannot come back,
// for as long as it needs, instead of racing the reconnection.
func RefuseConnections(t testing.TB, dbURL string) (allow func()) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("pgtest: refuse connections: %v", err)
	}
	name := pgx.Identifier{cfg.Database}.Sanitize()
	admin := os.Getenv(EnvURL)
	set := func(allowed bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// PostgreSQL refuses this from a connection to the database itself.
		return exec(ctx, admin, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", name, allowed))
	}
	if err := set(false); err != nil {
		t.Fatalf("pgtest: refuse connections: %v", err)
	}
	var once sync.Once
	allow = func() {
		once.Do(func() {
			if err := set(true); err != nil {
				t.Errorf("pgtest: allow connections again: %v", err)
			}
		})
	}
	t.Cleanup(allow)
	return allow
}
