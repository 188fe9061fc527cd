package app_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/agenthost"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/auth"
	deliverysvc "novaos.dev/novaos/internal/delivery"
	"novaos.dev/novaos/internal/pgtest"
)

func TestRestartSQLite(t *testing.T) {
	dir := t.TempDir()
	testRestart(t, "sqlite", func() *app.Options { return &app.Options{DataDir: dir} })
}

func TestRestartPostgres(t *testing.T) {
	url := pgtest.URL(t)
	// With PostgreSQL the data directory holds key files and the token
	// issuer's record only, never a database: replicas are given the same
	// key files.
	dir := filepath.Join(t.TempDir(), "keys")
	testRestart(t, "postgres", func() *app.Options { return &app.Options{DataDir: dir, Database: app.DatabaseOptions{URL: url}} })
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != app.TokenKeyFile && e.Name() != app.SealKeyFile && e.Name() != agenthost.PushKeyFile && e.Name() != auth.RecordFile &&
			e.Name() != deliverysvc.KeyFile {
			t.Errorf("data directory holds %s with PostgreSQL; want key files and the issuer record only", e.Name())
		}
	}
}

// testRestart creates tasks through one server, shuts it down, and reads
// them back through a new server on the same database.
func testRestart(t *testing.T, kind string, opts func() *app.Options) {
	first, err := app.New(t.Context(), withLoopback(opts()))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(t.Context()); err != nil {
		first.Shutdown(context.Background())
		t.Fatal(err)
	}
	var before []*a2a.Task
	for _, text := range []string{"one", "two", "three"} {
		before = append(before, sendText(t, first.URL()+"/agents/echo", text))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := first.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	second := start(t, withLoopback(opts()))
	echo := second.URL() + "/agents/echo"
	if code, body := get(t, second.URL()+"/healthz"); code != http.StatusOK || !strings.Contains(string(body), `"kind":"`+kind+`","ok":true`) {
		t.Errorf("healthz: %d %s", code, body)
	}
	for _, want := range before {
		res, rerr := rpc(t, echo, a2a.MethodGetTask, a2a.GetTaskRequest{ID: want.ID})
		if rerr != nil {
			t.Fatalf("GetTask %s after restart: %v", want.ID, rerr)
		}
		var got a2a.Task
		if err := a2a.Unmarshal(res, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, &got); diff != "" {
			t.Errorf("task %s changed across the restart (-before +after)\n%s", want.ID, diff)
		}
	}

	res, rerr := rpc(t, echo, a2a.MethodListTasks, a2a.ListTasksRequest{})
	if rerr != nil {
		t.Fatalf("ListTasks: %v", rerr)
	}
	var list a2a.ListTasksResponse
	if err := a2a.Unmarshal(res, &list); err != nil {
		t.Fatal(err)
	}
	for _, want := range before {
		if !slices.ContainsFunc(list.Tasks, func(got a2a.Task) bool { return got.ID == want.ID }) {
			t.Errorf("ListTasks after restart misses %s", want.ID)
		}
	}

	res, rerr = rpc(t, echo, a2a.MethodListTasks, a2a.ListTasksRequest{ContextID: before[1].ContextID})
	if rerr != nil {
		t.Fatalf("ListTasks by context: %v", rerr)
	}
	list = a2a.ListTasksResponse{}
	if err := a2a.Unmarshal(res, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != 1 || list.Tasks[0].ID != before[1].ID {
		t.Errorf("ListTasks in context %s: %d tasks, want just %s", before[1].ContextID, len(list.Tasks), before[1].ID)
	}

	if _, rerr := rpc(t, echo, a2a.MethodGetTask, a2a.GetTaskRequest{ID: a2a.NewID()}); !errors.Is(rerr, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask of an unknown id: %v, want TaskNotFound", rerr)
	}
}

func withLoopback(o *app.Options) *app.Options {
	o.Addr = "127.0.0.1:0"
	return o
}
