package schedsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/problem"
)

// The task content limit is the gateway's input limit: every config's
// task is an input the gateway takes.
func TestTaskContentLimit(t *testing.T) {
	if heartbeat.MaxTaskContentChars != gateway.MaxInputChars {
		t.Errorf("heartbeat.MaxTaskContentChars = %d, gateway.MaxInputChars = %d", heartbeat.MaxTaskContentChars, gateway.MaxInputChars)
	}
}

func TestCreate(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	alice := h.aliceToken()
	with := func(f func(r *heartbeat.CreateRequest)) heartbeat.CreateRequest {
		r := createReq()
		f(&r)
		return r
	}
	tests := []struct {
		name   string
		path   string
		token  string
		body   any
		status int
		typ    string
		fields []string // the fields the problem names
	}{
		{"bad cron", configsPath, alice, with(func(r *heartbeat.CreateRequest) { r.CronExpression = "61 * * * *" }),
			400, heartbeat.ProblemInvalidRequest, []string{"cron_expression"}},
		{"six fields", configsPath, alice, with(func(r *heartbeat.CreateRequest) { r.CronExpression = "0 0 * * * *" }),
			400, heartbeat.ProblemInvalidRequest, []string{"cron_expression"}},
		{"a cron that never fires", configsPath, alice, with(func(r *heartbeat.CreateRequest) { r.CronExpression = "0 0 31 2 *" }),
			400, heartbeat.ProblemInvalidRequest, []string{"cron_expression"}},
		{"unknown time zone", configsPath, alice, with(func(r *heartbeat.CreateRequest) { r.Timezone = "Mars/Olympus_Mons" }),
			400, heartbeat.ProblemInvalidRequest, []string{"timezone"}},
		{"the server's local zone", configsPath, alice, with(func(r *heartbeat.CreateRequest) { r.Timezone = "Local" }),
			400, heartbeat.ProblemInvalidRequest, []string{"timezone"}},
		{"the host's link to its local zone", configsPath, alice, with(func(r *heartbeat.CreateRequest) { r.Timezone = "localtime" }),
			400, heartbeat.ProblemInvalidRequest, []string{"timezone"}},
		{"a path for a zone", configsPath, alice, with(func(r *heartbeat.CreateRequest) { r.Timezone = "../../etc/passwd" }),
			400, heartbeat.ProblemInvalidRequest, []string{"timezone"}},
		{"no budget", configsPath, alice, with(func(r *heartbeat.CreateRequest) { r.Budget = nil }),
			400, heartbeat.ProblemInvalidRequest, []string{"budget"}},
		{"no run cap", configsPath, alice, with(func(r *heartbeat.CreateRequest) { r.Budget = &heartbeat.Budget{MaxDailyTokens: 5} }),
			400, heartbeat.ProblemInvalidRequest, []string{"budget.max_daily_runs"}},
		{"negative caps", configsPath, alice, with(func(r *heartbeat.CreateRequest) {
			r.Budget = &heartbeat.Budget{MaxDailyRuns: 1, MaxDailyTokens: -1, MaxDailyCostUSD: -0.5}
		}), 400, heartbeat.ProblemInvalidRequest, []string{"budget.max_daily_tokens", "budget.max_daily_cost_usd"}},
		{"no image, no tag, no task", configsPath, alice, with(func(r *heartbeat.CreateRequest) {
			r.AgentImage, r.AgentImageTag, r.TaskContent = "", "", "  "
		}), 400, heartbeat.ProblemInvalidRequest, []string{"agent_image", "agent_image_tag", "task_content"}},
		{"another instance in the body", configsPath, alice, with(func(r *heartbeat.CreateRequest) { r.InstanceID = "inst-2" }),
			400, heartbeat.ProblemInvalidRequest, []string{"instance_id"}},
		{"an unknown field", configsPath, alice, []byte(`{"cron_expression":"* * * * *","budget":{"max_daily_runs":1},"colour":"red"}`),
			400, problem.TypeMalformedJSON, nil},
		{"a repeated key", configsPath, alice, []byte(`{"cron_expression":"* * * * *","cron_expression":"0 * * * *"}`),
			400, problem.TypeMalformedJSON, nil},
		{"an unknown instance", heartbeat.ConfigsPath("echo", "inst-9"), alice, createReq(), 404, heartbeat.ProblemInstanceNotFound, nil},
		{"another agent's instance", heartbeat.ConfigsPath("agent-joke", "inst-1"), alice, createReq(), 404, heartbeat.ProblemInstanceNotFound, nil},
		{"another tenant's instance", heartbeat.ConfigsPath("echo", "inst-g"), alice, createReq(), 404, heartbeat.ProblemInstanceNotFound, nil},
		{"no token", configsPath, "", createReq(), 401, problem.TypeUnauthorized, nil},
		{"a read-only token", configsPath, h.token("acme", "bob", "schedules:read"), createReq(), 403, problem.TypeForbidden, nil},
		{"the operator without a tenant", configsPath, adminToken, createReq(), 400, heartbeat.ProblemInvalidRequest, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := h.call(http.MethodPost, tc.path, tc.token, tc.body, nil)
			var p problem.Problem
			_ = json.Unmarshal(body, &p)
			if code != tc.status || p.Type != tc.typ {
				t.Fatalf("%d %s, want %d %s", code, body, tc.status, tc.typ)
			}
			var fields []string
			for _, fe := range p.Errors {
				fields = append(fields, fe.Field)
			}
			if d := cmp.Diff(tc.fields, fields); d != "" {
				t.Errorf("the fields named (-want +got):\n%s\n%s", d, body)
			}
		})
	}
	if starts := h.runs.starts(); len(starts) != 0 {
		t.Errorf("refused creates started %d runs", len(starts))
	}

	// A good one, and a second for the same instance.
	var created heartbeat.ConfigCreated
	code, body := h.call(http.MethodPost, configsPath, alice, createReq(), &created)
	if code != http.StatusCreated || created.Status != heartbeat.StatusActive || created.InstanceID != "inst-1" ||
		created.TemporalScheduleID != heartbeat.ScheduleID(created.ConfigID) {
		t.Fatalf("create: %d %s", code, body)
	}
	code, body = h.call(http.MethodPost, configsPath, alice, createReq(), nil)
	var p problem.Problem
	_ = json.Unmarshal(body, &p)
	if code != http.StatusConflict || p.Type != heartbeat.ProblemConfigExists || !strings.Contains(p.Detail, created.ConfigID) {
		t.Errorf("a second create: %d %s", code, body)
	}
	// The operator creates for a tenant it names; a hosted-agent instance
	// and a registry agent's are both found by their agent.
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+heartbeat.ConfigsPath("agent-joke", "inst-2"), strings.NewReader(mustJSON(t, createReq())))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("X-Tenant-ID", "acme")
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("the operator's create: %d", resp.StatusCode)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Of racing creates for one instance exactly one is created; the rest get
// 409, on every store.
func TestCreateRace(t *testing.T) {
	for name, newStore := range map[string]func(t *testing.T) heartbeat.Store{
		"memory":   func(*testing.T) heartbeat.Store { return heartbeat.NewMemoryStore() },
		"sqlite":   func(t *testing.T) heartbeat.Store { return sqliteStores(t, 1)[0] },
		"postgres": func(t *testing.T) heartbeat.Store { return postgresStores(t, 1)[0] },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{store: newStore(t)})
			const n = 8
			codes := make(chan int, n)
			var wg sync.WaitGroup
			tok := h.aliceToken()
			for range n {
				wg.Go(func() {
					code, _ := h.call(http.MethodPost, configsPath, tok, createReq(), nil)
					codes <- code
				})
			}
			wg.Wait()
			close(codes)
			got := map[int]int{}
			for c := range codes {
				got[c]++
			}
			if d := cmp.Diff(map[int]int{201: 1, 409: n - 1}, got); d != "" {
				t.Errorf("statuses (-want +got):\n%s", d)
			}
		})
	}
}

func TestPauseResume(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	id := h.create(createReq())
	base := configsPath + "/" + id
	tok := h.aliceToken()
	step := func(action string, want heartbeat.Status) {
		t.Helper()
		var st heartbeat.ConfigStatus
		code, body := h.call(http.MethodPost, base+"/"+action, tok, nil, &st)
		if code != http.StatusOK || st != (heartbeat.ConfigStatus{ConfigID: id, InstanceID: "inst-1", Status: want}) {
			t.Fatalf("%s: %d %s", action, code, body)
		}
	}
	step("pause", heartbeat.StatusPaused)
	paused := h.list()
	step("pause", heartbeat.StatusPaused)
	if again := h.list(); !again.UpdatedAt.Equal(paused.UpdatedAt) || again.Schedules[0].NextRunAt != nil {
		t.Errorf("a second pause changed the config: %+v", again)
	}
	// Ticks pass while paused: no run, nothing missed.
	h.advance(t0.Add(10 * time.Minute))
	if n := len(h.runs.starts()); n != 0 {
		t.Errorf("%d runs started while paused", n)
	}
	step("resume", heartbeat.StatusActive)
	cfg := h.list()
	if s := cfg.Schedules[0]; s.NextRunAt == nil || !s.NextRunAt.Equal(time.Date(2026, 7, 1, 10, 11, 0, 0, time.UTC)) || s.Missed != nil {
		t.Errorf("resumed: next run %v, missed %+v; want 10:11 and none", s.NextRunAt, s.Missed)
	}
	step("resume", heartbeat.StatusActive)
	if again := h.list(); !again.UpdatedAt.Equal(cfg.UpdatedAt) {
		t.Errorf("a second resume changed the config")
	}
	h.advance(time.Date(2026, 7, 1, 10, 11, 0, 0, time.UTC))
	if n := len(h.runs.starts()); n != 1 {
		t.Errorf("%d runs after the resume's first tick, want 1", n)
	}
	// Unknown ids, and a config asked for under another instance.
	for _, path := range []string{configsPath + "/nope/pause", heartbeat.ConfigsPath("agent-joke", "inst-2") + "/" + id + "/pause"} {
		if code, body := h.call(http.MethodPost, path, tok, nil, nil); code != http.StatusNotFound {
			t.Errorf("pause %s: %d %s", path, code, body)
		}
	}
	if code, _ := h.call(http.MethodGet, base+"/pause", tok, nil, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET pause: %d, want 405", code)
	}
}

func TestGetAndDelete(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	r := createReq()
	r.Timezone, r.CronExpression = "Europe/Berlin", "0 9 * * MON-FRI"
	id := h.create(r)
	tok := h.aliceToken()
	var cfg heartbeat.Config
	if code, body := h.call(http.MethodGet, configsPath+"/"+id, tok, nil, &cfg); code != http.StatusOK {
		t.Fatalf("get: %d %s", code, body)
	}
	next := time.Date(2026, 7, 2, 7, 0, 0, 0, time.UTC) // Thursday 09:00 CEST
	want := heartbeat.Config{ConfigID: id, InstanceID: "inst-1", AgentID: "echo", Status: heartbeat.StatusActive,
		Triggers: []heartbeat.Trigger{{Type: "cron", CronExpression: "0 9 * * MON-FRI", Timezone: "Europe/Berlin",
			TaskContent: r.TaskContent, AgentImage: r.AgentImage, AgentImageTag: r.AgentImageTag}},
		Budget: r.Budget,
		Schedules: []heartbeat.Schedule{{ScheduleID: heartbeat.ScheduleID(id), TemporalScheduleID: heartbeat.ScheduleID(id),
			Status: heartbeat.StatusActive, CronExpression: "0 9 * * MON-FRI", Timezone: "Europe/Berlin", NextRunAt: &next}},
		CreatedAt: t0, UpdatedAt: t0}
	if d := cmp.Diff(want, cfg); d != "" {
		t.Errorf("get (-want +got):\n%s", d)
	}
	if code, _ := h.call(http.MethodDelete, configsPath+"/"+id, tok, nil, nil); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
	if code, _ := h.call(http.MethodDelete, configsPath+"/"+id, tok, nil, nil); code != http.StatusNotFound {
		t.Errorf("a second delete: %d", code)
	}
	var list heartbeat.ConfigList
	if code, body := h.call(http.MethodGet, configsPath, tok, nil, &list); code != http.StatusOK || len(list.Configs) != 0 ||
		!strings.Contains(string(body), `"configs":[]`) {
		t.Errorf("list after delete: %d %s", code, body)
	}
	h.create(createReq()) // the instance may have one again
}

func TestTenantIsolation(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	id := h.create(createReq())
	globex := h.token("globex", "gary", "schedules:*")
	var list heartbeat.ConfigList
	if code, body := h.call(http.MethodGet, configsPath, globex, nil, &list); code != http.StatusOK || len(list.Configs) != 0 {
		t.Errorf("another tenant's list: %d %s", code, body)
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, configsPath + "/" + id},
		{http.MethodPost, configsPath + "/" + id + "/pause"},
		{http.MethodPost, configsPath + "/" + id + "/resume"},
		{http.MethodDelete, configsPath + "/" + id},
	} {
		if code, body := h.call(r.method, r.path, globex, nil, nil); code != http.StatusNotFound {
			t.Errorf("another tenant's %s %s: %d %s", r.method, r.path, code, body)
		}
	}
	// A token naming its tenant in the header may not name another.
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+configsPath, nil)
	req.Header.Set("Authorization", "Bearer "+globex)
	req.Header.Set("X-Tenant-ID", "acme")
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a token with another tenant's header: %d, want 403", resp.StatusCode)
	}
	if cfg := h.list(); cfg.Status != heartbeat.StatusActive {
		t.Errorf("acme's config after globex's tries: %+v", cfg)
	}
}

// A tick starts one run through the gateway, as the config's creator,
// with the tick's own run id and idempotency key.
func TestFire(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	id := h.create(createReq())
	tick := time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC)
	h.advance(tick)
	want := []RunStart{{TenantID: "acme", InstanceID: "inst-1", RunID: RunIDFor(id, tick), IdempotencyKey: IdempotencyKeyFor(id, tick),
		Input: "Check in on any pending tasks.", Caller: gateway.Caller{Subject: "schedule:" + id, UserID: "alice"}}}
	if d := cmp.Diff(want, h.runs.starts()); d != "" {
		t.Fatalf("runs started (-want +got):\n%s", d)
	}
	s := h.list().Schedules[0]
	next := tick.Add(time.Minute)
	if !s.LastRunAt.Equal(tick) || !s.NextRunAt.Equal(next) ||
		!cmp.Equal(s.LastFire, &heartbeat.FireInfo{ScheduledAt: tick, Outcome: heartbeat.OutcomeFired, RunID: RunIDFor(id, tick)}) {
		t.Errorf("schedule after the fire: last %v next %v fire %+v", s.LastRunAt, s.NextRunAt, s.LastFire)
	}
	if got := h.counter(outcomeFired); got != 1 {
		t.Errorf("novaos_schedule_fires_total{outcome=fired} = %v", got)
	}
	if got := testutil.ToFloat64(h.svc.tel.configs.WithLabelValues("active")); got != 1 {
		t.Errorf("novaos_schedules{status=active} = %v", got)
	}
	// The metrics are registered under their names.
	if n, err := testutil.GatherAndCount(h.reg, "novaos_schedule_fires_total", "novaos_schedules"); err != nil || n != 6 {
		t.Errorf("gathered %d series, %v; want 4 outcomes and 2 statuses", n, err)
	}
	spans := h.spans.Ended()
	if len(spans) != 1 || spans[0].Name() != "heartbeat.fire" {
		t.Fatalf("spans = %v", spans)
	}
	attrs := map[string]string{}
	for _, kv := range spans[0].Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	for k, v := range map[string]string{"novaos.heartbeat.config_id": id, "novaos.heartbeat.outcome": "fired",
		"novaos.run_id": RunIDFor(id, tick), "novaos.tenant_id": "acme", "novaos.heartbeat.tick": "2026-07-01T10:01:00Z"} {
		if attrs[k] != v {
			t.Errorf("span attribute %s = %q, want %q", k, attrs[k], v)
		}
	}
	// The next minute fires again.
	h.advance(next)
	if n := len(h.runs.starts()); n != 2 {
		t.Errorf("%d runs after two ticks", n)
	}
}

// Two servers on one database start each tick's run once.
func TestExactlyOnceAcrossReplicas(t *testing.T) {
	for name, stores := range map[string]func(t testing.TB, n int) []heartbeat.Store{
		"sqlite":   sqliteStores,
		"postgres": postgresStores,
	} {
		t.Run(name, func(t *testing.T) {
			st := stores(t, 2)
			clock, runs, iss := NewManualClock(t0), newFakeRuns(), newIssuer(t)
			var calls sync.Mutex
			n := 0
			runs.fail = func(RunStart) error {
				calls.Lock()
				n++
				calls.Unlock()
				return nil
			}
			a := newHarness(t, harnessOpts{store: st[0], clock: clock, runs: runs, issuer: iss})
			b := newHarness(t, harnessOpts{store: st[1], clock: clock, runs: runs, issuer: iss})
			id := a.create(createReq())
			tick := time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC)
			const ticks = 5
			for i := range ticks {
				at := tick.Add(time.Duration(i) * time.Minute)
				clock.Set(at)
				a.waitPass(at)
				b.waitPass(at)
			}
			var want []string
			for i := range ticks {
				want = append(want, RunIDFor(id, tick.Add(time.Duration(i)*time.Minute)))
			}
			var got []string
			for _, r := range runs.starts() {
				got = append(got, r.RunID)
			}
			slices.Sort(want)
			slices.Sort(got)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("runs (-want +got):\n%s", d)
			}
			if n != ticks {
				t.Errorf("the gateway was asked to start %d runs for %d ticks", n, ticks)
			}
			if sum := a.counter(outcomeFired) + b.counter(outcomeFired); sum != ticks {
				t.Errorf("fired counted %v times across the servers, want %d", sum, ticks)
			}
		})
	}
}

// Ticks that passed while no server ran are reported, not run late; the
// latest one still runs when it is within the grace.
func TestMissedTicks(t *testing.T) {
	tests := []struct {
		name      string
		cron      string
		downUntil time.Time
		runs      []time.Time
		missed    heartbeat.Missed
		next      time.Time
	}{
		{"hourly, the latest tick too late", "0 * * * *", time.Date(2026, 7, 1, 13, 30, 0, 0, time.UTC), nil,
			heartbeat.Missed{Total: 3, Count: 3, From: time.Date(2026, 7, 1, 11, 0, 0, 0, time.UTC), To: time.Date(2026, 7, 1, 13, 0, 0, 0, time.UTC)},
			time.Date(2026, 7, 1, 14, 0, 0, 0, time.UTC)},
		{"every minute, back on a tick", "* * * * *", time.Date(2026, 7, 1, 11, 5, 0, 0, time.UTC),
			[]time.Time{time.Date(2026, 7, 1, 11, 5, 0, 0, time.UTC)},
			heartbeat.Missed{Total: 64, Count: 64, From: time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC), To: time.Date(2026, 7, 1, 11, 4, 0, 0, time.UTC)},
			time.Date(2026, 7, 1, 11, 6, 0, 0, time.UTC)},
		{"hourly, back just within the grace", "0 * * * *", time.Date(2026, 7, 1, 11, 1, 0, 0, time.UTC),
			[]time.Time{time.Date(2026, 7, 1, 11, 0, 0, 0, time.UTC)}, heartbeat.Missed{}, time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)},
		{"hourly, back a second past the grace", "0 * * * *", time.Date(2026, 7, 1, 11, 1, 1, 0, time.UTC), nil,
			heartbeat.Missed{Total: 1, Count: 1, From: time.Date(2026, 7, 1, 11, 0, 0, 0, time.UTC), To: time.Date(2026, 7, 1, 11, 0, 0, 0, time.UTC)},
			time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)},
		{"every minute, back 30 s after a tick", "* * * * *", time.Date(2026, 7, 1, 10, 3, 30, 0, time.UTC),
			[]time.Time{time.Date(2026, 7, 1, 10, 3, 0, 0, time.UTC)},
			heartbeat.Missed{Total: 2, Count: 2, From: time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC), To: time.Date(2026, 7, 1, 10, 2, 0, 0, time.UTC)},
			time.Date(2026, 7, 1, 10, 4, 0, 0, time.UTC)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{noStart: true})
			r := createReq()
			r.CronExpression = tc.cron
			id := h.create(r)
			h.clock.Set(tc.downUntil) // no server ran until now
			h.start()
			h.waitPass(tc.downUntil)
			var got []time.Time
			for _, s := range h.runs.starts() {
				for _, tick := range tc.runs {
					if s.RunID == RunIDFor(id, tick) {
						got = append(got, tick)
					}
				}
			}
			if len(h.runs.starts()) != len(tc.runs) || !cmp.Equal(tc.runs, got) {
				t.Errorf("runs %v, want %v", h.runs.starts(), tc.runs)
			}
			s := h.list().Schedules[0]
			var want *heartbeat.Missed
			if tc.missed.Count > 0 {
				want = &tc.missed
				want.DetectedAt = tc.downUntil
			}
			if !cmp.Equal(want, s.Missed) {
				t.Errorf("missed = %+v, want %+v", s.Missed, want)
			}
			if !s.NextRunAt.Equal(tc.next) {
				t.Errorf("next run %v, want %v", s.NextRunAt, tc.next)
			}
			if got := h.counter(outcomeMissed); got != float64(tc.missed.Count) {
				t.Errorf("novaos_schedule_fires_total{outcome=missed} = %v", got)
			}
		})
	}
}

// A schedule left for years costs a bounded walk, and its count is
// extrapolated past it.
func TestMissedTicksBounded(t *testing.T) {
	h := newHarness(t, harnessOpts{noStart: true, opts: &Options{MaxMissedScan: 1000}})
	h.create(createReq())
	back := time.Date(2028, 7, 1, 10, 0, 20, 0, time.UTC) // two years of minutes later
	h.clock.Set(back)
	h.start()
	h.waitPass(back)
	s := h.list().Schedules[0]
	exact := int64(back.Sub(time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC))/time.Minute) + 1
	if s.Missed == nil || s.Missed.Count < exact-2 || s.Missed.Count > exact+2 ||
		!s.Missed.To.Equal(time.Date(2028, 7, 1, 9, 59, 0, 0, time.UTC)) {
		t.Errorf("missed = %+v, want about %d up to 09:59", s.Missed, exact)
	}
	if n := len(h.runs.starts()); n != 1 {
		t.Errorf("%d runs, want the latest tick's", n)
	}
}

// max_daily_runs: ticks over it are skipped with a reason until the day
// ends in the config's time zone.
func TestDailyRunBudget(t *testing.T) {
	h := newHarness(t, harnessOpts{clock: NewManualClock(time.Date(2026, 7, 1, 21, 57, 30, 0, time.UTC))})
	r := createReq()
	r.Timezone = "Europe/Berlin" // midnight is 22:00 UTC
	r.Budget = &heartbeat.Budget{MaxDailyRuns: 2}
	id := h.create(r)
	at := func(m int) time.Time {
		return time.Date(2026, 7, 1, 21, 58, 0, 0, time.UTC).Add(time.Duration(m) * time.Minute)
	}
	h.advance(at(0))
	h.advance(at(1))
	if n := len(h.runs.starts()); n != 2 {
		t.Fatalf("%d runs, want 2", n)
	}
	h.advance(at(2)) // 22:00 UTC: a new day in Berlin
	h.advance(at(3))
	h.advance(at(4)) // the third of the new day
	var got []string
	for _, s := range h.runs.starts() {
		for m := range 5 {
			if s.RunID == RunIDFor(id, at(m)) {
				got = append(got, at(m).Format("15:04"))
			}
		}
	}
	if d := cmp.Diff([]string{"21:58", "21:59", "22:00", "22:01"}, got); d != "" {
		t.Errorf("ticks that ran (-want +got):\n%s", d)
	}
	s := h.list().Schedules[0]
	if s.LastFire == nil || s.LastFire.Outcome != heartbeat.OutcomeSkippedBudget || !strings.Contains(s.LastFire.Reason, "2 runs") ||
		!s.LastRunAt.Equal(at(3)) {
		t.Errorf("after the budget was spent: last fire %+v, last run %v", s.LastFire, s.LastRunAt)
	}
	if got := h.counter(outcomeSkippedBudget); got != 1 {
		t.Errorf("skipped_budget counted %v", got)
	}
}

// fakeSpend reports the tokens and cost of the runs it is asked about.
type fakeSpend struct {
	mu     sync.Mutex
	perRun Usage
	err    error
	asked  [][]string
}

func (f *fakeSpend) Spent(_ context.Context, _ string, runIDs []string) (Usage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, runIDs)
	if f.err != nil {
		return Usage{}, f.err
	}
	n := int64(len(runIDs))
	return Usage{Tokens: f.perRun.Tokens * n, CostUSD: f.perRun.CostUSD * float64(n)}, nil
}

// The token and cost caps are checked with the meter: what is left is
// the run's limit, a spent cap or a meter that cannot tell skips.
func TestSpendBudget(t *testing.T) {
	spend := &fakeSpend{perRun: Usage{Tokens: 400, CostUSD: 0.5}}
	h := newHarness(t, harnessOpts{spend: spend})
	r := createReq()
	r.Budget = &heartbeat.Budget{MaxDailyRuns: 100, MaxDailyTokens: 1000, MaxDailyCostUSD: 5}
	id := h.create(r)
	at := func(m int) time.Time {
		return time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC).Add(time.Duration(m) * time.Minute)
	}
	for m := range 4 {
		h.advance(at(m))
	}
	var limits []Limits
	for _, s := range h.runs.starts() {
		limits = append(limits, s.Limits)
	}
	want := []Limits{{MaxTokens: 1000, MaxCostUSD: 5}, {MaxTokens: 600, MaxCostUSD: 4.5}, {MaxTokens: 200, MaxCostUSD: 4}}
	if d := cmp.Diff(want, limits); d != "" {
		t.Errorf("run limits (-want +got):\n%s", d)
	}
	s := h.list().Schedules[0]
	if s.LastFire.Outcome != heartbeat.OutcomeSkippedBudget || !strings.Contains(s.LastFire.Reason, "1000 tokens") {
		t.Errorf("the fourth tick: %+v", s.LastFire)
	}
	spend.mu.Lock()
	if last := spend.asked[len(spend.asked)-1]; !slices.Contains(last, RunIDFor(id, at(0))) || len(last) != 3 {
		t.Errorf("the meter was asked about %v", last)
	}
	spend.err = errors.New("meter down")
	spend.mu.Unlock()
	h.advance(at(4))
	if s := h.list().Schedules[0]; s.LastFire.Outcome != heartbeat.OutcomeSkippedBudget || !strings.Contains(s.LastFire.Reason, "meter down") {
		t.Errorf("with the meter down: %+v", s.LastFire)
	}
}

// The gateway's answers: a refusal fails the tick at once, a passing
// failure is tried again once the claim lapses, and the tries are
// bounded.
func TestStartFailures(t *testing.T) {
	tick := time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC)
	lease := DefaultLease
	tests := []struct {
		name    string
		fail    func(n int) error // the n-th start's error (from 1)
		advance []time.Time
		outcome heartbeat.Outcome
		reason  string
		runs    int
		tries   int // the starts asked of the gateway
	}{
		{"the instance is gone", func(int) error { return fmt.Errorf("start: %w", gateway.ErrNotFound) },
			[]time.Time{tick}, heartbeat.OutcomeFailed, "refused", 0, 1},
		{"a bad request", func(int) error {
			return &problem.Problem{Status: 400, Title: "Bad Request", Detail: "input too long"}
		}, []time.Time{tick}, heartbeat.OutcomeFailed, "input too long", 0, 1},
		{"a passing failure, then success", func(n int) error {
			if n == 1 {
				return errors.New("database is locked")
			}
			return nil
		}, []time.Time{tick, tick.Add(lease)}, heartbeat.OutcomeFired, "", 1, 2},
		{"an earlier try started it", func(int) error { return gateway.ErrExists },
			[]time.Time{tick}, heartbeat.OutcomeFired, "", 0, 1},
		{"a server error is passing", func(n int) error {
			if n == 1 {
				return &problem.Problem{Status: 500, Title: "Internal Server Error"}
			}
			return nil
		}, []time.Time{tick, tick.Add(lease)}, heartbeat.OutcomeFired, "", 1, 2},
		{"passing failures to the end", func(int) error { return errors.New("database is locked") },
			[]time.Time{tick, tick.Add(lease), tick.Add(2 * lease)}, heartbeat.OutcomeFailed, "3 attempts: database is locked", 0, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs := newFakeRuns()
			n := 0
			runs.fail = func(RunStart) error { n++; return tc.fail(n) }
			// Hourly, so the lease's minutes bring no new tick.
			h := newHarness(t, harnessOpts{runs: runs})
			r := createReq()
			r.CronExpression = "1 * * * *"
			id := h.create(r)
			for _, at := range tc.advance {
				h.advance(at)
			}
			fires, err := h.store.Fires(t.Context(), "acme", id, heartbeat.FireFilter{})
			if err != nil || len(fires) != 1 {
				t.Fatalf("fires = %+v, %v", fires, err)
			}
			f := fires[0]
			if f.Outcome != tc.outcome || !strings.Contains(f.Reason, tc.reason) || len(runs.starts()) != tc.runs || n != tc.tries {
				t.Errorf("fire %+v with %d runs in %d tries; want %s (%q) with %d in %d", f, len(runs.starts()), n,
					tc.outcome, tc.reason, tc.runs, tc.tries)
			}
			if f.Outcome == heartbeat.OutcomeFired && f.RunID != RunIDFor(id, tick) {
				t.Errorf("run id %q", f.RunID)
			}
		})
	}
}

// A tick claimed by a server that died is taken over once its lease
// lapses and its run started once, with what is left of the day's
// budget; the tick fails when the dead server made the last try.
func TestTakeOver(t *testing.T) {
	tests := []struct {
		name      string
		deadTries int
		outcome   heartbeat.Outcome
		reason    string
		started   bool
	}{
		{"after a first try", 1, heartbeat.OutcomeFired, "", true},
		{"after the last try", DefaultMaxAttempts, heartbeat.OutcomeFailed, "could not be started in 3 attempts", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{noStart: true, spend: &fakeSpend{perRun: Usage{Tokens: 100}}})
			r := createReq()
			r.Budget = &heartbeat.Budget{MaxDailyRuns: 10, MaxDailyTokens: 1000}
			id := h.create(r)
			rec, err := h.store.Get(t.Context(), "acme", id)
			if err != nil {
				t.Fatal(err)
			}
			tick := rec.NextRunAt
			// The dead server's claim and tries, each a minute's lease.
			if _, err := h.store.Claim(t.Context(), heartbeat.Claim{TenantID: "acme", ConfigID: id, Expect: tick, Next: tick.Add(time.Hour),
				Tick: tick, Owner: "dead", LeaseUntil: tick.Add(time.Minute), Now: tick}); err != nil {
				t.Fatal(err)
			}
			for i := 1; i < tc.deadTries; i++ {
				at := tick.Add(time.Duration(i) * time.Minute)
				if _, err := h.store.Reclaim(t.Context(), "acme", id, tick, "dead", at, at.Add(time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			lapse := tick.Add(time.Duration(tc.deadTries) * time.Minute)
			h.clock.Set(lapse.Add(-30 * time.Second))
			h.start()
			h.waitPass(lapse.Add(-30 * time.Second))
			if n := len(h.runs.starts()); n != 0 {
				t.Fatalf("%d runs while the claim was live", n)
			}
			h.advance(lapse)
			var want []RunStart
			if tc.started {
				// The meter counts the tick's own run, which the dead
				// server may have started.
				want = []RunStart{{TenantID: "acme", InstanceID: "inst-1", RunID: RunIDFor(id, tick), IdempotencyKey: IdempotencyKeyFor(id, tick),
					Input: r.TaskContent, Caller: gateway.Caller{Subject: "schedule:" + id, UserID: "alice"}, Limits: Limits{MaxTokens: 900}}}
			}
			if d := cmp.Diff(want, h.runs.starts()); d != "" {
				t.Errorf("runs after the lease lapsed (-want +got):\n%s", d)
			}
			fires, _ := h.store.Fires(t.Context(), "acme", id, heartbeat.FireFilter{})
			if len(fires) != 1 || fires[0].Outcome != tc.outcome || fires[0].Attempts != tc.deadTries+1 || !strings.Contains(fires[0].Reason, tc.reason) {
				t.Errorf("the fire: %+v", fires)
			}
		})
	}
}
