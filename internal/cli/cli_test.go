package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"novaos.dev/novaos/internal/bench"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/store/postgres"
)

// syncBuffer lets a test read what a command running in another goroutine
// has written so far.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testEnv(vars map[string]string) (*env, *syncBuffer, *syncBuffer) {
	var out, errOut syncBuffer
	return &env{stdout: &out, stderr: &errOut, getenv: func(k string) string { return vars[k] }}, &out, &errOut
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"no command", nil, "Usage: novaos <command>"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", []string{"serve", "--nope"}, "flag provided but not defined"},
		{"stray argument", []string{"serve", "extra"}, `unexpected argument "extra"`},
		{"bad log level", []string{"serve", "--log-level", "loud"}, "--log-level"},
		{"zero memory index", []string{"serve", "--memory-index-bytes", "0"}, "--memory-index-bytes must be positive"},
		{"memory index not a size", []string{"serve", "--memory-index-bytes", "lots"}, "memory-index-bytes"},
		{"token ttl past max", []string{"serve", "--token-ttl", "48h"}, "--token-ttl at most --token-max-ttl"},
		{"embedding url alone", []string{"serve", "--embedding-url", "http://127.0.0.1:1/v1"}, "go together"},
		{"bench without target", []string{"bench"}, "name a target"},
		{"unknown bench target", []string{"bench", "mcp"}, `unknown target "mcp"`},
		{"unknown scenario", []string{"bench", "a2a", "--scenario", "grpc"}, `unknown scenario "grpc"`},
		{"no clients", []string{"bench", "a2a", "--c", "0"}, "--c must be at least 1"},
		{"unknown store", []string{"bench", "a2a", "--store", "redis"}, `unknown store "redis"`},
		{"bench db not postgres", []string{"bench", "a2a", "--db", "mysql://x/y"}, "--db must be a postgres://"},
		{"bench replicas without db", []string{"bench", "a2a", "--replicas", "1,2"}, "--replicas needs --db"},
		{"bench sqlite rows without db", []string{"bench", "a2a", "--with-sqlite"}, "--with-sqlite needs --db"},
		{"bench pool without db", []string{"bench", "a2a", "--db-max-conns", "8"}, "--db-max-conns needs --db"},
		{"bench replicas zero", []string{"bench", "a2a", "--db", "postgres://x/y", "--replicas", "0"}, `want counts from 1 to 16, comma-separated, not "0"`},
		{"bench replicas too many", []string{"bench", "a2a", "--db", "postgres://x/y", "--replicas", "17"}, "want counts from 1 to 16"},
		{"bench replicas twice", []string{"bench", "a2a", "--db", "postgres://x/y", "--replicas", "2,2"}, "2 is listed twice"},
		{"bench replicas not numbers", []string{"bench", "a2a", "--db", "postgres://x/y", "--replicas", "one"}, `not "one"`},
		{"bench negative pool", []string{"bench", "a2a", "--db", "postgres://x/y", "--db-max-conns", "0"}, "--db-max-conns: want a positive number"},
		{"xstream without db", []string{"bench", "a2a", "--scenario", "xstream"}, "--scenario xstream needs --db and a --replicas count of 2 or more"},
		{"xstream on one replica", []string{"bench", "a2a", "--scenario", "xstream", "--db", "postgres://x/y"}, "--scenario xstream needs --db"},
		{"serve pool without db", []string{"serve", "--db-max-conns", "8"}, "--db-max-conns tune a PostgreSQL pool: give --db postgres://… or $NOVAOS_DATABASE_URL"},
		{"serve timeout without db", []string{"serve", "--db-statement-timeout", "5s"}, "--db-statement-timeout tune a PostgreSQL pool"},
		{"serve timeout with sqlite default", []string{"serve", "--db-statement-timeout", "0", "--data", "x"}, "--db-statement-timeout tune a PostgreSQL pool"},
		{"serve negative pool", []string{"serve", "--db", "postgres://x/y", "--db-max-conns", "-2"}, "--db-max-conns: want a positive number"},
		{"serve negative timeout", []string{"serve", "--db", "postgres://x/y", "--db-statement-timeout", "-1s"}, "--db-statement-timeout: want a duration of at least 0"},
		{"help for unknown command", []string{"help", "nope"}, `unknown command "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(nil)
			if code := run(t.Context(), tc.args, e); code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut.String(), tc.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tc.wantStderr)
			}
			if !strings.Contains(errOut.String(), "Usage: novaos") {
				t.Errorf("no usage on stderr: %q", errOut)
			}
			if out.String() != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	tests := []struct {
		name                   string
		args                   []string
		wantStdout, wantStderr string
	}{
		{"help", []string{"help"}, "serve", ""},
		{"--help", []string{"--help"}, "bench", ""},
		{"help serve", []string{"help", "serve"}, "", "-shutdown-timeout"},
		{"serve -h", []string{"serve", "-h"}, "", "NOVAOS_DATABASE_URL"},
		{"serve -h names the pool flags", []string{"serve", "-h"}, "", "-db-statement-timeout"},
		{"bench a2a -h names xstream", []string{"bench", "a2a", "-h"}, "", "xstream"},
		{"bench a2a -h", []string{"bench", "a2a", "-h"}, "", "-warmup"},
		{"version", []string{"version"}, "novaos ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(nil)
			if code := run(t.Context(), tc.args, e); code != exitOK {
				t.Fatalf("exit code %d; stderr %s", code, errOut)
			}
			if !strings.Contains(out.String(), tc.wantStdout) || !strings.Contains(errOut.String(), tc.wantStderr) {
				t.Errorf("stdout %q stderr %q, want %q and %q", out, errOut, tc.wantStdout, tc.wantStderr)
			}
		})
	}
}

func TestVersionLine(t *testing.T) {
	e, out, _ := testEnv(nil)
	if code := run(t.Context(), []string{"version"}, e); code != exitOK {
		t.Fatal(code)
	}
	if !regexp.MustCompile(`^novaos \S.* go1\.\S+ \w+/\w+\n$`).MatchString(out.String()) {
		t.Errorf("version line %q", out)
	}
}

var healthzLine = regexp.MustCompile(`health\s+(https?://\S+/healthz)`)

// waitForURL waits for serve to print where it listens.
func waitForURL(t *testing.T, out *syncBuffer, done <-chan int) string {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		if m := healthzLine.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d before serving; stdout %q", code, out)
		case <-deadline:
			t.Fatalf("serve printed no URL; stdout %q", out)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestServeUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	e, out, errOut := testEnv(nil)
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, e) }()

	health := waitForURL(t, out, done)
	base := strings.TrimSuffix(health, "/healthz")
	for _, want := range []string{base + "/agents/echo", base + "/agents/tck", base + "/agents/echo/.well-known/agent-card.json", base + "/agents/tck/.well-known/agent-card.json"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout does not list %s:\n%s", want, out)
		}
	}
	resp, err := http.Get(health)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz status %d", resp.StatusCode)
	}

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit code %d; stderr %s", code, errOut)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop after its context was cancelled")
	}
	// Logs are JSON lines on stderr.
	first, _, _ := strings.Cut(errOut.String(), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(first), &rec); err != nil || rec["msg"] == nil {
		t.Errorf("first stderr line is not a JSON log record: %q", first)
	}
	if _, err := http.Get(health); err == nil {
		t.Error("server still answers after serve returned")
	}
}

// Main itself, stopped the way an operator stops it.
func TestMainServeStopsOnSIGINT(t *testing.T) {
	t.Setenv(EnvDatabaseURL, "")
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- Main([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, &out, &errOut) }()
	// The URL is printed after the signal handler is installed, so the
	// signal cannot reach the default handler and kill the test.
	waitForURL(t, &out, done)
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit code %d; stderr %s", code, errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
	if !strings.Contains(out.String(), "Shutting down") {
		t.Errorf("stdout %q", out.String())
	}
}

func TestServeReadsDatabaseURLFromEnv(t *testing.T) {
	e, _, errOut := testEnv(map[string]string{EnvDatabaseURL: "mysql://root:hunter2@db.example.com/x"})
	code := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, e)
	if code != exitFail {
		t.Fatalf("exit code %d, want %d", code, exitFail)
	}
	if !strings.Contains(errOut.String(), "postgres://") || strings.Contains(errOut.String(), "hunter2") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestServeAddressInUse(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	e, out, _ := testEnv(nil)
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, e) }()
	addr := strings.TrimPrefix(strings.TrimSuffix(waitForURL(t, out, done), "/healthz"), "http://")

	e2, _, errOut2 := testEnv(nil)
	if code := run(t.Context(), []string{"serve", "--addr", addr, "--data", t.TempDir()}, e2); code != exitFail {
		t.Errorf("second serve on %s: exit code %d, want %d", addr, code, exitFail)
	}
	if !strings.Contains(errOut2.String(), "listen") {
		t.Errorf("stderr %q", errOut2)
	}
	cancel()
	<-done
}

func TestBenchA2AShort(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "a2a", "--c", "4", "--d", "300ms", "--warmup", "100ms", "--json"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	var rep struct {
		Concurrency int `json:"concurrency"`
		Results     []struct {
			bench.Result
			VsBaseline *float64 `json:"vsBaseline"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Scenario)
		if r.Throughput <= 0 || r.Requests == 0 {
			t.Errorf("%s: no throughput: %+v", r.Scenario, r.Result)
		}
		if r.Errors != 0 {
			t.Errorf("%s: %d errors, first: %s", r.Scenario, r.Errors, r.FirstError)
		}
		if r.VsBaseline == nil || *r.VsBaseline <= 0 {
			t.Errorf("%s: no ratio to the baseline", r.Scenario)
		}
		if r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 {
			t.Errorf("%s: latency %+v", r.Scenario, r.Latency)
		}
	}
	if want := "send/jsonrpc,send/rest,send/grpc,stream/jsonrpc,stream/rest,stream/grpc,baseline"; strings.Join(names, ",") != want || rep.Concurrency != 4 {
		t.Errorf("scenarios %v at c=%d, want %s at 4", names, rep.Concurrency, want)
	}
}

func TestBenchTableOneScenario(t *testing.T) {
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "a2a", "--c", "2", "--d", "200ms", "--warmup", "0", "--scenario", "send", "--binding", "rest", "--store", "sqlite"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	var row []string
	for l := range strings.Lines(out.String()) {
		switch f := strings.Fields(l); {
		case len(f) == 0:
		case f[0] == "send/rest":
			row = f
		case strings.HasPrefix(f[0], "stream") || f[0] == "send/jsonrpc" || f[0] == "baseline" && len(f) == 8:
			t.Errorf("scenario not asked for ran: %q", l)
		}
	}
	// scenario req/s p50 p99 max errors peak-RSS vs-baseline
	if len(row) != 8 || row[5] != "0" || row[7] != "-" || row[1] == "0" {
		t.Errorf("send row %q in\n%s", row, out)
	}
	if !strings.Contains(out.String(), "req/s") || !strings.Contains(out.String(), "sqlite store") {
		t.Errorf("no table header or store:\n%s", out)
	}
}

// bench a2a --db runs the server under test on PostgreSQL.
func TestBenchA2APostgres(t *testing.T) {
	url := pgtest.URL(t)
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "a2a", "--c", "2", "--d", "200ms", "--warmup", "0", "--scenario", "send", "--binding", "jsonrpc", "--db", url}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	if !strings.Contains(out.String(), "postgres store") || !strings.Contains(out.String(), "send/jsonrpc") {
		t.Errorf("output:\n%s", out)
	}
}

// serveHealth runs serve with args and environment vars, decodes its
// /healthz answer into h, stops it, and returns the answer's status code.
func serveHealth(t *testing.T, vars map[string]string, args []string, h any) int {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	e, out, errOut := testEnv(vars)
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), e) }()
	health := waitForURL(t, out, done)
	resp, err := http.Get(health)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(h)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit code %d; stderr %s", code, errOut)
	}
	return resp.StatusCode
}

func TestServeDBFlagWinsOverEnv(t *testing.T) {
	url := pgtest.URL(t)
	var h struct {
		Database struct{ Kind string } `json:"database"`
	}
	// --data still names where the key files live (token.key).
	serveHealth(t, map[string]string{EnvDatabaseURL: "mysql://ignored.example.com/x"},
		[]string{"--db", url, "--data", t.TempDir()}, &h)
	if h.Database.Kind != "postgres" {
		t.Errorf("database kind %q, want postgres", h.Database.Kind)
	}
}

// With $NOVAOS_DATABASE_URL the pool flags are taken.
func TestServePoolFlagsWithEnvURL(t *testing.T) {
	url := pgtest.URL(t)
	var h struct {
		Status   string
		Listener *struct{ OK bool }
	}
	code := serveHealth(t, map[string]string{EnvDatabaseURL: url},
		[]string{"--data", t.TempDir(), "--db-max-conns", "3", "--db-statement-timeout", "1500ms"}, &h)
	// The server's listener is up: the database answers, LISTEN with it.
	if code != http.StatusOK || h.Status != "ok" || h.Listener == nil || !h.Listener.OK {
		t.Errorf("healthz %d %+v", code, h)
	}
}

// benchRows reads bench a2a's table: each row's fields by its scenario
// name (which may hold a space, as in "send/jsonrpc pg×2").
func benchRows(out string) map[string][]string {
	rows := map[string][]string{}
	for l := range strings.Lines(out) {
		f := strings.Fields(l)
		if len(f) < 8 || !strings.Contains(f[0], "/") && f[0] != "baseline" {
			continue
		}
		name := f[0]
		if len(f) > 1 && (f[1] == "sqlite" || strings.HasPrefix(f[1], "pg×")) {
			name, f = f[0]+" "+f[1], append([]string{f[0] + " " + f[1]}, f[2:]...)
		}
		if _, err := strconv.ParseFloat(f[1], 64); err == nil {
			rows[name] = f
		}
	}
	return rows
}

// --with-sqlite and --replicas 1,2: one run prints SQLite, PostgreSQL with
// one and two servers, and the baseline, with the transactions per
// request of the PostgreSQL rows.
func TestBenchA2AReplicas(t *testing.T) {
	url := pgtest.URL(t)
	e, out, errOut := testEnv(nil)
	// PostgreSQL publishes a session's commit count at most once a second:
	// a window shorter than that may count none.
	code := run(t.Context(), []string{"bench", "a2a", "--c", "4", "--d", "1200ms", "--warmup", "300ms", "--scenario", "send",
		"--binding", "jsonrpc,grpc", "--db", url, "--replicas", "1,2", "--with-sqlite"}, e)
	if code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	rows := benchRows(out.String())
	counted := false
	// scenario req/s p50 p99 max errors peak-RSS vs-baseline tx/req
	for _, name := range []string{"send/jsonrpc sqlite", "send/grpc sqlite", "send/jsonrpc pg×1", "send/grpc pg×1", "send/jsonrpc pg×2", "send/grpc pg×2"} {
		row := rows[name]
		if len(row) != 9 || row[5] != "0" || row[1] == "0" {
			t.Errorf("row %q = %q in\n%s", name, row, out)
			continue
		}
		tx, err := strconv.ParseFloat(row[8], 64)
		switch {
		case strings.HasSuffix(name, "sqlite") && row[8] != "-":
			t.Errorf("row %q: tx/req %q, want -", name, row[8])
		case !strings.HasSuffix(name, "sqlite") && (err != nil || tx < 0):
			t.Errorf("row %q: tx/req %q, want a number", name, row[8])
		}
		counted = counted || tx > 0
	}
	if !counted {
		t.Errorf("no row counted a transaction:\n%s", out)
	}
	if !strings.Contains(out.String(), "sqlite and postgres stores") || len(rows) != 6 {
		t.Errorf("rows %v in\n%s", rows, out)
	}
}

// --scenario xstream: with one server (pg×1) the subscription is on the
// replica that runs the task, and sees every update; with two, replica B
// sees them only once the database has a notification feed, and without
// one the row fails saying what B missed.
func TestBenchA2AXStream(t *testing.T) {
	url := pgtest.URL(t)
	e, out, errOut := testEnv(nil)
	code := run(t.Context(), []string{"bench", "a2a", "--c", "4", "--d", "400ms", "--warmup", "0", "--scenario", "xstream",
		"--db", url, "--replicas", "1,2", "--json"}, e)
	var report struct {
		Results []struct {
			Scenario   string
			Requests   uint64
			Errors     uint64
			FirstError string
			Replicas   int
			Frames     *bench.Frames
		}
	}
	if err := json.Unmarshal([]byte(out.String()), &report); err != nil {
		t.Fatalf("%v in %s; stderr %s", err, out, errOut)
	}
	if len(report.Results) != 2 {
		t.Fatalf("results %+v", report.Results)
	}
	one, two := report.Results[0], report.Results[1]
	if one.Scenario != "xstream/jsonrpc pg×1" || one.Errors != 0 || one.Requests == 0 || one.Frames == nil ||
		one.Frames.Seen == 0 || one.Frames.Seen != one.Frames.Expected {
		t.Errorf("one replica: %+v (frames %+v)", one, one.Frames)
	}
	_, feed := any((*postgres.DB)(nil)).(interface{ ListenerStatus() error })
	switch {
	case two.Scenario != "xstream/jsonrpc pg×2" || two.Replicas != 2 || two.Frames == nil:
		t.Errorf("two replicas: %+v", two)
	case feed && (two.Errors != 0 || two.Frames.Seen != two.Frames.Expected || code != exitOK):
		t.Errorf("two replicas with a feed: %+v (frames %+v), exit %d", two, two.Frames, code)
	case !feed && (two.Errors == 0 || !strings.Contains(two.FirstError, "replica B saw 0 of 11 status updates") || code != exitFail):
		t.Errorf("two replicas without a feed: %+v, exit %d", two, code)
	}
}
