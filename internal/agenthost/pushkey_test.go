package agenthost

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/sealkey"
)

// rowStore is a push-config store whose rows the test can read and
// tamper with, as someone with access to the database could.
type rowStore struct {
	rows map[string]a2a.TaskPushNotificationConfig // tenant/task/id -> body
}

func (r *rowStore) key(s a2asrv.Scope, task, id string) string {
	return s.Tenant + "\x00" + task + "\x00" + id
}

func (r *rowStore) Put(_ context.Context, s a2asrv.Scope, cfg *a2a.TaskPushNotificationConfig) error {
	c := *cfg
	if cfg.Authentication != nil {
		a := *cfg.Authentication
		c.Authentication = &a
	}
	r.rows[r.key(s, cfg.TaskID, cfg.ID)] = c
	return nil
}

func (r *rowStore) Get(_ context.Context, s a2asrv.Scope, task, id string) (*a2a.TaskPushNotificationConfig, error) {
	c, ok := r.rows[r.key(s, task, id)]
	if !ok {
		return nil, a2asrv.ErrNotFound
	}
	if c.Authentication != nil {
		a := *c.Authentication
		c.Authentication = &a
	}
	return &c, nil
}

func (r *rowStore) List(ctx context.Context, s a2asrv.Scope, task string, _ int, _ string) ([]*a2a.TaskPushNotificationConfig, string, error) {
	var out []*a2a.TaskPushNotificationConfig
	for k := range r.rows {
		if parts := strings.Split(k, "\x00"); parts[0] == s.Tenant && parts[1] == task {
			c, _ := r.Get(ctx, s, task, parts[2])
			out = append(out, c)
		}
	}
	return out, "", nil
}

func (r *rowStore) Delete(_ context.Context, s a2asrv.Scope, task, id string) error {
	delete(r.rows, r.key(s, task, id))
	return nil
}

const (
	testToken = "tok-0f1e2d3c4b5a"
	testCreds = "cred-9a8b7c6d5e4f"
)

func sealedStore(t *testing.T, keyFile string) (agentPushConfigs, *rowStore) {
	t.Helper()
	seal, err := newPushSealer(keyFile, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rows := &rowStore{rows: map[string]a2a.TaskPushNotificationConfig{}}
	return agentPushConfigs{store: rows, agent: "echo", seal: seal}, rows
}

func testConfig() *a2a.TaskPushNotificationConfig {
	return &a2a.TaskPushNotificationConfig{ID: "hook", TaskID: "task-1", URL: "https://hooks.example.com/a2a",
		Token: testToken, Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: testCreds}}
}

var scope = a2asrv.Scope{Tenant: "acme"}

func TestPushSecretsAreSealed(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	keyFile := filepath.Join(dir, PushKeyFile)
	p, rows := sealedStore(t, keyFile)
	if _, err := os.Stat(keyFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a key file exists before any secret was stored: %v", err)
	}
	in := testConfig()
	if err := p.Put(ctx, scope, in); err != nil {
		t.Fatal(err)
	}
	if in.Token != testToken || in.Authentication.Credentials != testCreds {
		t.Errorf("Put changed the caller's config: %+v", in)
	}

	// The row holds neither secret.
	if len(rows.rows) != 1 {
		t.Fatalf("%d rows", len(rows.rows))
	}
	for _, row := range rows.rows {
		if row.Token == testToken || strings.Contains(row.Token, testToken) || !strings.HasPrefix(row.Token, sealedPrefix) {
			t.Errorf("stored token %q is not sealed", row.Token)
		}
		if strings.Contains(row.Authentication.Credentials, testCreds) || !strings.HasPrefix(row.Authentication.Credentials, sealedPrefix) {
			t.Errorf("stored credentials %q are not sealed", row.Authentication.Credentials)
		}
		if row.URL != in.URL || row.Authentication.Scheme != "Bearer" {
			t.Errorf("stored row lost its plain fields: %+v", row)
		}
	}

	// The key: owner-only, in an owner-only directory.
	for path, want := range map[string]os.FileMode{keyFile: 0o600, dir: 0o700} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", path, fi.Mode().Perm(), err, want)
		}
	}

	// Get and List: the token, never the credentials.
	got, err := p.Get(ctx, scope, "task-1", "hook")
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != testToken || got.Authentication == nil || got.Authentication.Credentials != "" || got.Authentication.Scheme != "Bearer" {
		t.Errorf("Get = %+v %+v, want the token and the scheme without credentials", got, got.Authentication)
	}
	list, _, err := p.List(ctx, scope, "task-1", 0, "")
	if err != nil || len(list) != 1 || list[0].Token != testToken || list[0].Authentication.Credentials != "" {
		t.Errorf("List = %+v, %v", list, err)
	}

	// Open: the whole config, for delivery.
	open, err := p.Open(ctx, scope, "task-1", "hook")
	if err != nil {
		t.Fatal(err)
	}
	if open.Token != testToken || open.Authentication.Credentials != testCreds {
		t.Errorf("Open = %+v %+v", open, open.Authentication)
	}

	// A second process with the same key file opens it too.
	again, _ := sealedStore(t, keyFile)
	again.store = rows
	if c, err := again.Open(ctx, scope, "task-1", "hook"); err != nil || c.Authentication.Credentials != testCreds {
		t.Errorf("Open with the key reloaded = %+v, %v", c, err)
	}
}

// A sealed value opens only where it was stored, under the key it was
// sealed with: anything else fails closed, without repeating a secret.
func TestPushSecretsFailClosed(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		tamper func(t *testing.T, p *agentPushConfigs, rows *rowStore)
		task   string // where the test then reads; default task-1
	}{
		{"another key", func(t *testing.T, p *agentPushConfigs, rows *rowStore) {
			other, _ := sealedStore(t, filepath.Join(t.TempDir(), "other.key"))
			if err := other.Put(ctx, scope, &a2a.TaskPushNotificationConfig{ID: "x", TaskID: "x", URL: "https://x.example/", Token: "t"}); err != nil {
				t.Fatal(err) // creates the other key
			}
			p.seal = other.seal
		}, ""},
		{"no key file any more", func(t *testing.T, p *agentPushConfigs, rows *rowStore) {
			fresh, _ := sealedStore(t, filepath.Join(t.TempDir(), "missing.key"))
			p.seal = fresh.seal
		}, ""},
		{"row copied to another task", func(t *testing.T, p *agentPushConfigs, rows *rowStore) {
			row := rows.rows[rows.key(agentScope("echo", scope), "task-1", "hook")]
			rows.rows[rows.key(agentScope("echo", scope), "task-2", "hook")] = row
		}, "task-2"},
		{"row copied to another task, body rewritten to match", func(t *testing.T, p *agentPushConfigs, rows *rowStore) {
			row := rows.rows[rows.key(agentScope("echo", scope), "task-1", "hook")]
			row.TaskID = "task-2"
			rows.rows[rows.key(agentScope("echo", scope), "task-2", "hook")] = row
		}, "task-2"},
		{"row copied to another tenant", func(t *testing.T, p *agentPushConfigs, rows *rowStore) {
			row := rows.rows[rows.key(agentScope("echo", scope), "task-1", "hook")]
			rows.rows[rows.key(agentScope("other", scope), "task-1", "hook")] = row
			p.agent = "other"
		}, ""},
		{"URL rewritten to the attacker's", func(t *testing.T, p *agentPushConfigs, rows *rowStore) {
			k := rows.key(agentScope("echo", scope), "task-1", "hook")
			row := rows.rows[k]
			row.URL = "https://attacker.example/collect"
			rows.rows[k] = row
		}, ""},
		{"credentials swapped into the token", func(t *testing.T, p *agentPushConfigs, rows *rowStore) {
			k := rows.key(agentScope("echo", scope), "task-1", "hook")
			row := rows.rows[k]
			row.Token = row.Authentication.Credentials
			rows.rows[k] = row
		}, ""},
		{"ciphertext altered", func(t *testing.T, p *agentPushConfigs, rows *rowStore) {
			k := rows.key(agentScope("echo", scope), "task-1", "hook")
			row := rows.rows[k]
			b := []byte(row.Token)
			b[len(b)-2] ^= 1
			row.Token = string(b)
			rows.rows[k] = row
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, rows := sealedStore(t, filepath.Join(t.TempDir(), PushKeyFile))
			if err := p.Put(ctx, scope, testConfig()); err != nil {
				t.Fatal(err)
			}
			tc.tamper(t, &p, rows)
			task := tc.task
			if task == "" {
				task = "task-1"
			}
			for name, read := range map[string]func() (*a2a.TaskPushNotificationConfig, error){
				"Open": func() (*a2a.TaskPushNotificationConfig, error) { return p.Open(ctx, scope, task, "hook") },
				"Get":  func() (*a2a.TaskPushNotificationConfig, error) { return p.Get(ctx, scope, task, "hook") },
			} {
				c, err := read()
				if !errors.Is(err, errPushKey) {
					t.Errorf("%s = %+v, %v; want errPushKey", name, c, err)
					continue
				}
				if msg := err.Error(); strings.Contains(msg, testToken) || strings.Contains(msg, testCreds) {
					t.Errorf("%s error repeats a secret: %s", name, msg)
				}
			}
		})
	}
}

// Rows written before sealing existed are read as plaintext and sealed on
// their next write.
func TestPushSecretsWrittenBeforeSealing(t *testing.T) {
	ctx := context.Background()
	p, rows := sealedStore(t, filepath.Join(t.TempDir(), PushKeyFile))
	legacy := agentPushConfigs{store: rows, agent: "echo"} // no sealer: what older versions wrote
	if err := legacy.Put(ctx, scope, testConfig()); err != nil {
		t.Fatal(err)
	}
	if c, err := p.Get(ctx, scope, "task-1", "hook"); err != nil || c.Token != testToken || c.Authentication.Credentials != "" {
		t.Errorf("Get of a plaintext row = %+v, %v", c, err)
	}
	if c, err := p.Open(ctx, scope, "task-1", "hook"); err != nil || c.Authentication.Credentials != testCreds {
		t.Errorf("Open of a plaintext row = %+v, %v", c, err)
	}
	c, _ := p.Open(ctx, scope, "task-1", "hook")
	if err := p.Put(ctx, scope, c); err != nil {
		t.Fatal(err)
	}
	for _, row := range rows.rows {
		if !strings.HasPrefix(row.Token, sealedPrefix) || !strings.HasPrefix(row.Authentication.Credentials, sealedPrefix) {
			t.Errorf("the row was not sealed when rewritten: %+v", row)
		}
	}
}

func TestPushKeyFile(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, bad := range []string{"", "not base64!", "c2hvcnQ=", strings.Repeat("A", 44) + "\nextra"} {
		path := write("bad.key", bad, 0o600)
		if _, err := newPushSealer(path, false, log); !errors.Is(err, errPushKey) {
			t.Errorf("key file %q: %v, want errPushKey", bad, err)
		} else if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("the error repeats the key file's content: %v", err)
		}
	}
	// 32 bytes, as `openssl rand -base64 32` writes them.
	good := write("loose.key", "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=\n", 0o644)
	s, err := newPushSealer(good, false, log)
	if err != nil {
		t.Fatalf("a good key file: %v", err)
	}
	if fi, _ := os.Stat(good); fi.Mode().Perm() != 0o600 {
		t.Errorf("a key file open to others was left at %v, want 0600", fi.Mode().Perm())
	}
	sealed, err := s.seal("x", nil)
	if err != nil || !strings.HasPrefix(sealed, sealedPrefix+s.kid+":") {
		t.Errorf("seal = %q, %v", sealed, err)
	}
}

// Sealers racing to create the key (replicas or restarts sharing a data
// directory) all end with the one key, and none reads a file still being
// written.
func TestPushKeyCreatedAtomically(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for round := range 30 {
		dir := t.TempDir()
		path := filepath.Join(dir, "keys", PushKeyFile)
		const racers = 8
		kids := make([]string, racers)
		errs := make([]error, racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				s := &pushSealer{path: path, log: log}
				<-start
				if _, errs[i] = s.seal("secret", nil); errs[i] == nil {
					kids[i] = s.kid
				}
			})
		}
		close(start)
		wg.Wait()
		for i := range racers {
			if errs[i] != nil {
				t.Fatalf("round %d: sealer %d: %v", round, i, errs[i])
			}
			if kids[i] != kids[0] {
				t.Fatalf("round %d: sealer %d has key %s, sealer 0 %s", round, i, kids[i], kids[0])
			}
		}
		entries, err := os.ReadDir(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != PushKeyFile {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("round %d: the key directory holds %v, want only %s", round, names, PushKeyFile)
		}
		if fi, err := os.Stat(path); err != nil || (fi.Mode().Perm() != 0o600 && runtime.GOOS != "windows") {
			t.Fatalf("round %d: key file %v, %v, want mode 0600", round, fi, err)
		}
	}
}

// An empty key file (left by a crash between creating and writing it) is
// refused with an error naming the file, and is not replaced by a new key.
func TestPushKeyFileEmpty(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	path := filepath.Join(t.TempDir(), PushKeyFile)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newPushSealer(path, false, log); !errors.Is(err, errPushKey) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("newPushSealer with an empty key file: %v, want errPushKey naming %s as empty", err, path)
	}
	s := &pushSealer{path: path, log: log}
	if _, err := s.seal("secret", nil); !errors.Is(err, errPushKey) {
		t.Fatalf("seal with an empty key file: %v, want errPushKey", err)
	}
	if b, err := os.ReadFile(path); err != nil || len(b) != 0 {
		t.Errorf("the empty key file was replaced: %d bytes, %v", len(b), err)
	}
}

// A push config sealed before the sealer moved to sealkey (these values
// were written by the earlier code, with this key) still opens, and one
// sealed with another key names both keys.
func TestPushSecretsSealedByEarlierVersion(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, PushKeyFile)
	if err := os.WriteFile(keyFile, []byte("q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seal, err := newPushSealer(keyFile, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	stored := &a2a.TaskPushNotificationConfig{ID: "hook", TaskID: "task-1", URL: "https://hooks.example.com/a2a",
		Token: "novaos-sealed:v1:359397539cc67687:R0U8n-ZjzPUyNFW09xVHk0TaFpa4-ROnu6K8vSgFanQfW5spOYApbo-PnAg",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer",
			Credentials: "novaos-sealed:v1:359397539cc67687:1zMKfw4EIWGgWGtzPqE4JRTu8zJyvGh2s08nDlmyu7NB79MlP97iJ6X3G5Hq"}}
	got, err := seal.openConfig(a2asrv.Scope{Tenant: "acme"}, "task-1", "hook", stored, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != testToken || got.Authentication.Credentials != testCreds {
		t.Errorf("opened %q / %q", got.Token, got.Authentication.Credentials)
	}

	other, err := newPushSealer(filepath.Join(dir, "other.key"), false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.seal("x", nil); err != nil {
		t.Fatal(err)
	}
	_, err = other.openConfig(a2asrv.Scope{Tenant: "acme"}, "task-1", "hook", stored, true)
	ke, ok := errors.AsType[*sealkey.KeyError](err)
	if !errors.Is(err, errPushKey) || !ok || ke.Sealed != "359397539cc67687" || ke.Have != other.kid || !strings.Contains(err.Error(), "--push-key-file") {
		t.Errorf("opened with another key: %v", err)
	}
}
