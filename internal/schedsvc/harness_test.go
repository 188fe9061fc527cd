package schedsvc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// t0 is the harness clock's start: half a minute past ten, so a schedule
// of every minute is due at 10:01.
var t0 = time.Date(2026, 7, 1, 10, 0, 30, 0, time.UTC)

const adminToken = "admin-token-for-the-schedule-tests"

// fakeRuns is the execution gateway: instances to find, and the runs
// started, each id once, as the gateway's store keeps them.
type fakeRuns struct {
	mu        sync.Mutex
	instances map[[2]string]gateway.Instance // by tenant, id
	started   []RunStart
	ids       map[string]bool
	// fail, when set, answers a start in place of the gateway.
	fail func(r RunStart) error
	// startedCh, when set, is told every run started.
	startedCh chan RunStart
}

func newFakeRuns() *fakeRuns {
	f := &fakeRuns{instances: map[[2]string]gateway.Instance{}, ids: map[string]bool{}}
	f.add(gateway.Instance{ID: "inst-1", TenantID: "acme", Name: "greeter", Hosted: "echo"})
	f.add(gateway.Instance{ID: "inst-2", TenantID: "acme", Name: "joker", AgentID: "agent-joke"})
	f.add(gateway.Instance{ID: "inst-g", TenantID: "globex", Name: "greeter", Hosted: "echo"})
	return f
}

func (f *fakeRuns) add(inst gateway.Instance) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.instances[[2]string{inst.TenantID, inst.ID}] = inst
}

func (f *fakeRuns) Instance(_ context.Context, tenant, id string) (gateway.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	inst, ok := f.instances[[2]string{tenant, id}]
	if !ok {
		return gateway.Instance{}, gateway.ErrNotFound
	}
	return inst, nil
}

func (f *fakeRuns) Start(_ context.Context, r RunStart) (string, error) {
	f.mu.Lock()
	fail, ch := f.fail, f.startedCh
	f.mu.Unlock()
	if fail != nil {
		if err := fail(r); err != nil {
			return "", err
		}
	}
	f.mu.Lock()
	if f.ids[r.RunID] {
		f.mu.Unlock()
		return "", gateway.ErrExists
	}
	f.ids[r.RunID] = true
	f.started = append(f.started, r)
	f.mu.Unlock()
	if ch != nil {
		ch <- r
	}
	return r.RunID, nil
}

func (f *fakeRuns) starts() []RunStart {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]RunStart(nil), f.started...)
}

// harness is the service over a store, with a fake clock and gateway, an
// HTTP server, spans and metrics.
type harness struct {
	t      testing.TB
	svc    *Service
	store  heartbeat.Store
	clock  *ManualClock
	runs   *fakeRuns
	srv    *httptest.Server
	issuer *auth.Issuer
	spans  *tracetest.SpanRecorder
	reg    *prometheus.Registry

	passMu   sync.Mutex
	lastPass time.Time     // the latest time the scheduler caught up to
	passCh   chan struct{} // closed and replaced whenever it sleeps

	stop func()
}

type harnessOpts struct {
	store   heartbeat.Store
	clock   *ManualClock
	runs    *fakeRuns
	issuer  *auth.Issuer
	spend   Spend
	opts    *Options
	noStart bool // do not start Run
}

func newIssuer(t testing.TB) *auth.Issuer {
	t.Helper()
	iss, err := auth.Open("", auth.Options{Issuer: "http://novaos.test"})
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

func newHarness(t testing.TB, ho harnessOpts) *harness {
	t.Helper()
	if ho.store == nil {
		ho.store = heartbeat.NewMemoryStore()
	}
	if ho.clock == nil {
		ho.clock = NewManualClock(t0)
	}
	if ho.runs == nil {
		ho.runs = newFakeRuns()
	}
	if ho.issuer == nil {
		ho.issuer = newIssuer(t)
	}
	h := &harness{t: t, store: ho.store, clock: ho.clock, runs: ho.runs, issuer: ho.issuer,
		spans: tracetest.NewSpanRecorder(), reg: prometheus.NewRegistry(), passCh: make(chan struct{})}
	var o Options
	if ho.opts != nil {
		o = *ho.opts
	}
	o.Clock = ho.clock
	h.svc = New(Deps{Store: ho.store, Tokens: ho.issuer, Runs: ho.runs, AdminToken: secret.New(adminToken), Spend: ho.spend,
		Tracing: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans)), Metrics: h.reg}, &o)
	h.svc.idle = h.onIdle
	mux := http.NewServeMux()
	for _, r := range h.svc.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	h.stop = func() {}
	if !ho.noStart {
		h.start()
	}
	t.Cleanup(func() { h.stop() })
	return h
}

// start runs the scheduler until the test ends or stop is called.
func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.svc.Run(ctx); close(done) }()
	h.stop = func() { cancel(); <-done }
}

func (h *harness) onIdle(now time.Time) {
	h.passMu.Lock()
	defer h.passMu.Unlock()
	if now.After(h.lastPass) {
		h.lastPass = now
	}
	close(h.passCh)
	h.passCh = make(chan struct{})
}

// waitPass waits until the scheduler has handled every tick due at at
// (here or, on a shared database, elsewhere), settled the runs it
// started, and gone to sleep.
func (h *harness) waitPass(at time.Time) {
	h.t.Helper()
	timeout := time.After(time.Minute) // a failure bound: a pass takes milliseconds
	for {
		h.passMu.Lock()
		last, ch := h.lastPass, h.passCh
		h.passMu.Unlock()
		if !last.Before(at) {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			h.t.Fatalf("the scheduler did not catch up to %s within a minute (it did to %s)", at, last)
		}
	}
}

// advance moves the clock to at and waits for the scheduler to catch up.
func (h *harness) advance(at time.Time) {
	h.t.Helper()
	h.clock.Set(at)
	h.waitPass(at)
}

// token mints a platform token of tenant with scopes.
func (h *harness) token(tenant, user string, scopes ...string) string {
	h.t.Helper()
	tok, err := h.issuer.Mint(context.Background(), identity.Claims{TenantID: tenant, Subject: user + "@example.com", UserID: user,
		Scopes: scopes}, time.Hour)
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

// aliceToken is a token of acme's user alice that may read and write.
func (h *harness) aliceToken() string { return h.token("acme", "alice", "schedules:*") }

// call sends a request and decodes a JSON answer into out (when not nil).
func (h *harness) call(method, path, token string, body any, out any) (int, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				h.t.Fatal(err)
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			h.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return resp.StatusCode, data
}

// createReq is a valid create of a schedule of every minute.
func createReq() heartbeat.CreateRequest {
	return heartbeat.CreateRequest{
		CronExpression: "* * * * *", AgentImage: "registry.example.com/agents/joke", AgentImageTag: "1.1.10",
		TaskContent: "Check in on any pending tasks.",
		Budget:      &heartbeat.Budget{MaxDailyRuns: 100, MaxDailyTokens: 0, MaxDailyCostUSD: 0},
	}
}

// configsPath is the configs path of acme's hosted instance inst-1.
var configsPath = heartbeat.ConfigsPath("echo", "inst-1")

// create creates a config of acme's inst-1 as alice and returns its id.
func (h *harness) create(r heartbeat.CreateRequest) string {
	h.t.Helper()
	var out heartbeat.ConfigCreated
	if code, body := h.call(http.MethodPost, configsPath, h.aliceToken(), r, &out); code != http.StatusCreated {
		h.t.Fatalf("create: %d %s", code, body)
	}
	return out.ConfigID
}

// list lists inst-1's configs as alice; it wants exactly one.
func (h *harness) list() heartbeat.Config {
	h.t.Helper()
	var out heartbeat.ConfigList
	if code, body := h.call(http.MethodGet, configsPath, h.aliceToken(), nil, &out); code != http.StatusOK || len(out.Configs) != 1 {
		h.t.Fatalf("list: %d %s", code, body)
	}
	return out.Configs[0]
}

// counter reads novaos_schedule_fires_total{outcome}.
func (h *harness) counter(outcome string) float64 {
	return testutil.ToFloat64(h.svc.tel.fires.WithLabelValues(outcome))
}

// sqliteStores opens n handles on one SQLite file.
func sqliteStores(t testing.TB, n int) []heartbeat.Store {
	path := filepath.Join(t.TempDir(), "novaos.db")
	var out []heartbeat.Store
	for range n {
		db, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		out = append(out, db.ScheduleStore())
	}
	return out
}

// postgresStores opens n handles on one new PostgreSQL database.
func postgresStores(t testing.TB, n int) []heartbeat.Store {
	url := pgtest.URL(t)
	var out []heartbeat.Store
	for range n {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		out = append(out, db.ScheduleStore())
	}
	return out
}
