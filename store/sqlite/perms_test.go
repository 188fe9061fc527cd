package sqlite_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/sqlite"
)

// An existing database whose files are open to group or others (an older
// version, a copy, a loose umask) is made owner-only at Open, data intact.
func TestOpenTightensLooseModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes are not permissions on Windows")
	}
	tests := []struct {
		name  string
		modes map[string]os.FileMode // suffix -> mode before Open
	}{
		{"database world-readable", map[string]os.FileMode{"": 0o644}},
		{"database group-writable", map[string]os.FileMode{"": 0o660}},
		{"wal and shm left open", map[string]os.FileMode{"": 0o600, "-wal": 0o666, "-shm": 0o644}},
		{"all open", map[string]os.FileMode{"": 0o666, "-wal": 0o666, "-shm": 0o666, "-journal": 0o644}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "novaos.db")
			db := open(t, path)
			ctx := context.Background()
			task := &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}
			if _, err := db.TaskStore().Create(ctx, a2asrv.Scope{}, task); err != nil {
				t.Fatal(err)
			}
			db.Close()
			for suffix, mode := range tc.modes {
				f := path + suffix
				if _, err := os.Stat(f); err != nil {
					// SQLite removed it on a clean close: leave an empty
					// one, as a crash would leave a real one.
					if err := os.WriteFile(f, nil, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Chmod(f, mode); err != nil {
					t.Fatal(err)
				}
			}

			var logs bytes.Buffer
			db, err := sqlite.Open(ctx, path, &sqlite.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for suffix := range tc.modes {
				fi, err := os.Stat(path + suffix)
				if err != nil {
					continue // SQLite may have replaced it; a new one takes the database's mode, checked below
				}
				if fi.Mode().Perm()&0o077 != 0 {
					t.Errorf("%s has mode %v after Open, want owner-only", filepath.Base(path+suffix), fi.Mode().Perm())
				}
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("database mode after Open: %v, %v; want 0600", fi.Mode().Perm(), err)
			}
			if !strings.Contains(logs.String(), "tightened") {
				t.Errorf("Open tightened modes without saying so; logs:\n%s", logs.String())
			}
			if _, _, err := db.TaskStore().Get(ctx, a2asrv.Scope{}, "t1"); err != nil {
				t.Errorf("Get after reopen: %v", err)
			}
		})
	}
}
