package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/netguard"
)

const (
	e2eToken = "tok-5d41402abc4b"
	e2eCreds = "cred-7d793037a076"
)

func TestPushSecretsAtRestSQLite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	testPushSecretsAtRest(t, &app.Options{DataDir: dir}, dir, func(t *testing.T) []string {
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(dir, app.DatabaseFile)), RawQuery: "mode=ro"}
		db, err := sql.Open("sqlite", u.String())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows := queryBodies(t, db)
		// Not in any page of the file or its WAL either.
		for _, f := range []string{app.DatabaseFile, app.DatabaseFile + "-wal"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(e2eCreds)) || bytes.Contains(b, []byte(e2eToken)) {
				t.Errorf("%s holds a push secret in plaintext", f)
			}
		}
		return rows
	})
}

func TestPushSecretsAtRestPostgres(t *testing.T) {
	dbURL := pgtest.URL(t)
	dir := filepath.Join(t.TempDir(), "data")
	testPushSecretsAtRest(t, &app.Options{DataDir: dir, Database: app.DatabaseOptions{URL: dbURL}}, dir, func(t *testing.T) []string {
		conn, err := pgx.Connect(t.Context(), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		rows, err := conn.Query(t.Context(), "SELECT body FROM a2a_push_configs")
		if err != nil {
			t.Fatal(err)
		}
		raw, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			t.Fatal(err)
		}
		var bodies []string
		for _, b := range raw {
			bodies = append(bodies, string(b))
		}
		return bodies
	})
}

func queryBodies(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SELECT CAST(body AS TEXT) FROM a2a_push_configs")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// testPushSecretsAtRest stores configs with secrets through the wire, on
// both paths, checks the raw rows hold none, that reads never return the
// credentials, and that a restarted server still opens them.
func testPushSecretsAtRest(t *testing.T, opts *app.Options, dataDir string, rawRows func(*testing.T) []string) {
	o := *opts
	srv := start(t, &o)
	echo := srv.URL() + "/agents/echo"
	task := sendText(t, echo, "hello")
	cfg := map[string]any{"taskId": task.ID, "id": "hook", "url": "https://hooks.example.com/a2a", "token": e2eToken,
		"authentication": map[string]any{"scheme": "Bearer", "credentials": e2eCreds}}
	res, rerr := rpc(t, echo, a2a.MethodCreateTaskPushNotificationConfig, cfg)
	if rerr != nil {
		t.Fatalf("create: %v", rerr)
	}
	if strings.Contains(string(res), e2eCreds) || !strings.Contains(string(res), e2eToken) {
		t.Errorf("create answered %s: want the token and no credentials", res)
	}
	inline := a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("inline")),
		Configuration: &a2a.SendMessageConfiguration{TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{
			ID: "inline", URL: "https://hooks.example.com/inline", Token: e2eToken,
			Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: e2eCreds}}}}
	if _, rerr := rpc(t, echo, a2a.MethodSendMessage, inline); rerr != nil {
		t.Fatalf("inline: %v", rerr)
	}

	bodies := rawRows(t)
	if len(bodies) != 2 {
		t.Fatalf("%d push-config rows, want 2", len(bodies))
	}
	for _, b := range bodies {
		if strings.Contains(b, e2eCreds) || strings.Contains(b, e2eToken) {
			t.Errorf("a stored row holds a push secret: %s", b)
		}
		if !strings.Contains(b, "novaos-sealed:v1:") || !strings.Contains(b, "hooks.example.com") {
			t.Errorf("a stored row is not the sealed config: %s", b)
		}
	}
	key := filepath.Join(dataDir, app.SealKeyFile)
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file %s: %v, %v; want mode 0600", key, fi, err)
	}

	readBack := func(srv *app.Server) {
		t.Helper()
		echo := srv.URL() + "/agents/echo"
		get, rerr := rpc(t, echo, a2a.MethodGetTaskPushNotificationConfig, map[string]any{"taskId": task.ID, "id": "hook"})
		if rerr != nil {
			t.Fatalf("get: %v", rerr)
		}
		list, rerr := rpc(t, echo, a2a.MethodListTaskPushNotificationConfigs, map[string]any{"taskId": task.ID})
		if rerr != nil {
			t.Fatalf("list: %v", rerr)
		}
		for name, b := range map[string][]byte{"get": get, "list": list} {
			if bytes.Contains(b, []byte(e2eCreds)) || bytes.Contains(b, []byte("novaos-sealed")) {
				t.Errorf("%s returned credentials or a sealed value: %s", name, b)
			}
			if !bytes.Contains(b, []byte(e2eToken)) || !bytes.Contains(b, []byte("Bearer")) {
				t.Errorf("%s lost the token or scheme: %s", name, b)
			}
		}
	}
	readBack(srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	o2 := *opts
	readBack(start(t, &o2))
}

func TestPushURLPolicyOnTheServer(t *testing.T) {
	tests := []struct {
		name string
		opts app.Options
		url  string
		ok   bool
	}{
		{"public", app.Options{}, "https://hooks.example.com/a2a", true},
		{"loopback on a loopback server", app.Options{}, "http://127.0.0.1:9000/hook", true},
		{"metadata", app.Options{}, "http://169.254.169.254/latest/meta-data/", false},
		{"NAT64 metadata", app.Options{}, "http://[64:ff9b::a9fe:a9fe]/", false},
		{"private", app.Options{}, "http://10.0.0.7/hook", false},
		{"port 0", app.Options{}, "http://hooks.example.com:0/", false},
		{"private allowed", app.Options{Agents: app.AgentOptions{PushURLPolicy: &netguard.Policy{AllowPrivate: true}, PushLoopbackIfLocal: true}}, "http://10.0.0.7/hook", true},
		{"loopback refused when told", app.Options{Agents: app.AgentOptions{PushURLPolicy: &netguard.Policy{}}}, "http://127.0.0.1:9000/hook", false},
		{"loopback still local with a policy", app.Options{Agents: app.AgentOptions{PushURLPolicy: &netguard.Policy{AllowPrivate: true}, PushLoopbackIfLocal: true}}, "http://[::1]:9000/hook", true},
		{"not loopback behind a public URL", app.Options{PublicURL: "https://agents.example.com"}, "http://127.0.0.1:9000/hook", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.DataDir = t.TempDir()
			srv := start(t, &o)
			echo := "http://" + srv.Addr() + "/agents/echo" // not the public URL, which does not resolve
			task := sendText(t, echo, "hello")
			_, rerr := rpc(t, echo, a2a.MethodCreateTaskPushNotificationConfig, map[string]any{"taskId": task.ID, "url": tc.url})
			if tc.ok && rerr != nil {
				t.Errorf("create %s: %v", tc.url, rerr)
			}
			if !tc.ok && (rerr == nil || rerr.Code != a2a.CodeInvalidParams) {
				t.Errorf("create %s: %v, want -32602", tc.url, rerr)
			}
		})
	}
}
