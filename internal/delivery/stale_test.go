package delivery

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// staleWindow is the tests' Options.RunStaleAfter: four heartbeat
// intervals of staleBeat.
const (
	staleWindow = 2 * time.Minute
	staleBeat   = 30 * time.Second
)

// runStores are the execution gateway's stores the stale runs are tried
// on: each opens a store and, for replicas, another handle of the same
// database.
var runStores = []struct {
	name string
	open func(t *testing.T) (first gateway.Store, another func() gateway.Store)
}{
	{"memory", func(t *testing.T) (gateway.Store, func() gateway.Store) {
		st := gateway.NewMemoryStore()
		return st, func() gateway.Store { return st }
	}},
	{"sqlite", func(t *testing.T) (gateway.Store, func() gateway.Store) {
		path := filepath.Join(t.TempDir(), "novaos.db")
		open := func() gateway.Store {
			db, err := sqlite.Open(context.Background(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db.Stores().Gateway
		}
		return open(), open
	}},
	{"postgres", func(t *testing.T) (gateway.Store, func() gateway.Store) {
		url := pgtest.URL(t)
		open := func() gateway.Store {
			db, err := postgres.Open(context.Background(), url, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db.GatewayStore()
		}
		return open(), open
	}},
}

// staleEnv is the harness over a gateway store, with execution gateways
// (replicas, each on its own handle of the store) dispatching its pull
// runs on the harness's clock, their routes mounted beside the
// service's.
type staleEnv struct {
	*harness
	a *agent // the pull instance's agent, polling consumer "rest"
}

func newStaleEnv(t *testing.T, open func(t *testing.T) (gateway.Store, func() gateway.Store), replicas int) *staleEnv {
	t.Helper()
	first, another := open(t)
	h := newHarnessOver(t, &Options{RunStaleAfter: staleWindow, HeartbeatInterval: staleBeat}, first, nil)
	issuer, err := auth.Open("", auth.Options{Issuer: h.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for i := range replicas {
		st := first
		if i > 0 {
			st = another()
		}
		gw := execgw.New(st, execgw.Deps{Tokens: issuer, Pull: h.svc, BaseURL: h.srv.URL, AdminToken: secret.New(testAdmin)},
			&execgw.Options{Now: h.clock.Now, SweepEvery: 5 * time.Millisecond})
		if i == 0 {
			for _, rt := range gw.Routes() {
				h.mux.Handle(rt.Pattern, rt.Handler)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); gw.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		if i == 0 {
			t.Cleanup(func() { _ = gw.Shutdown(context.Background()) })
		}
	}
	e := &staleEnv{harness: h, a: h.agent(h.inst, true)}
	e.a.open("rest")
	return e
}

// start queues a run of the pull instance through the execution
// gateway, waits until it is offered, polls its token and starts it.
func (e *staleEnv) start() (id, tok string) {
	e.t.Helper()
	var res gateway.ExecuteResult
	if st := e.operator("POST", gateway.ExecutePath, gateway.ExecuteRequest{InstanceID: e.inst.ID, Input: "hello"}, &res); st != http.StatusAccepted {
		e.t.Fatalf("execute: %d", st)
	}
	id = res.RunID
	e.waitFor("the run offered", func() bool { r := e.run(id); return r.Pull != nil && r.Pull.OfferedTurn == 1 })
	tok, _ = e.a.tokenFor("rest", id)
	if ans := e.a.call("POST", delivery.StartRunPath(id), startBody(), tok, newKey()); ans.status != http.StatusOK {
		e.t.Fatalf("start: %d %s", ans.status, ans.body)
	}
	return id, tok
}

// swept waits until a claim passed over the runs at the clock's time: a
// sentinel run, started and lapsed by then, ends stale.
func (e *staleEnv) swept() {
	e.t.Helper()
	now := e.clock.Now()
	id := a2a.NewID()
	if _, _, err := e.runs.CreateRun(context.Background(), gateway.RunWrite{Run: gateway.Run{ID: id, TenantID: testTenant, InstanceID: e.inst.ID,
		ThreadID: id, Status: gateway.StatusRunning, Input: "sentinel", Turn: 1, LeaseOwner: gateway.PullLeaseOwner, LeaseUntil: now.Add(-time.Second),
		Pull: &gateway.PullState{OfferedTurn: 1, Starts: 1}}, Now: now}); err != nil {
		e.t.Fatal(err)
	}
	if r := e.ended(id); r.Status != gateway.StatusFailed || r.Reason != delivery.ReasonStale {
		e.t.Fatalf("the sentinel run is %s (%s); want failed, stale", r.Status, r.Reason)
	}
}

// cancels polls the agent's consumer until every run of ids was told
// to stop, and returns the reasons it was told by run.
func (e *staleEnv) cancels(ids ...string) map[string][]string {
	e.t.Helper()
	told := map[string][]string{}
	e.waitFor("the agent told", func() bool {
		for _, ev := range e.a.poll("rest").Events {
			var p delivery.CancelRequestedPayload
			if ev.Type == delivery.EventCancelRequested && json.Unmarshal(ev.Payload, &p) == nil {
				told[p.RunID] = append(told[p.RunID], p.Reason)
			}
		}
		for _, id := range ids {
			if len(told[id]) == 0 {
				return false
			}
		}
		return true
	})
	return told
}

// operator calls the execution gateway as the operator of the tenant.
func (e *staleEnv) operator(method, path string, body, out any) int {
	e.t.Helper()
	ans := e.do(method, path, body, map[string]string{"Authorization": "Bearer " + testAdmin, "X-Tenant-ID": testTenant})
	if out != nil {
		_ = json.Unmarshal(ans.body, out)
	}
	return ans.status
}

// waitFor polls cond until it holds (a bound on a failure, not a timing
// assumption).
func (e *staleEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			e.t.Fatalf("%s: not within the test's bound", what)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// ended waits until the run ended and returns it.
func (e *staleEnv) ended(id string) gateway.Run {
	e.t.Helper()
	var r gateway.Run
	e.waitFor("run "+id+" ended", func() bool {
		r = e.run(id)
		return r.Status.Terminal()
	})
	return r
}

// beat sends a's heartbeat over REST listing runs as active.
func beat(t testing.TB, a *agent, runs ...string) {
	t.Helper()
	hb := delivery.Heartbeat{Status: delivery.HeartbeatOK, Details: delivery.HeartbeatDetails{ActiveRuns: runs}}
	if ans := a.call("POST", delivery.HeartbeatPath(a.id), hb, "", ""); ans.status != http.StatusOK {
		t.Fatalf("heartbeat: %d %s", ans.status, ans.body)
	}
}

// gwBeat sends a heartbeat over the gateway listing runs as active and
// reads up to its answer.
func gwBeat(r *gwRaw, runs ...string) {
	r.t.Helper()
	r.send(delivery.OpHeartbeat, delivery.GatewayHeartbeat{Agent: &delivery.Heartbeat{Status: delivery.HeartbeatOK,
		Details: delivery.HeartbeatDetails{ActiveRuns: runs}}})
	for f := r.next(); f.Op != delivery.OpHeartbeatAck; f = r.next() {
		if f.Op == delivery.OpError {
			r.t.Fatalf("heartbeat refused: %s", f.D)
		}
	}
}

// TestStaleRuns: a run its agent started ends failed, reason stale, once
// its agent gave no sign of life of it for the window: heartbeats that
// list it (over REST or the gateway) and its patches keep it running for
// any number of windows, another agent's heartbeats do not, a run that
// waits for a person is left alone, and a resumed run has a fresh
// window. Each case ends with a sentinel run, started with it and left
// without a sign, ending stale: a claim passed over the case's run after
// its clock moved.
func TestStaleRuns(t *testing.T) {
	type step func(e *staleEnv, id, tok string)
	every := func(n int, d time.Duration, sign step) step {
		return func(e *staleEnv, id, tok string) {
			for range n {
				e.clock.Advance(d)
				sign(e, id, tok)
			}
		}
	}
	tests := []struct {
		name string
		live step
		want gateway.Status
	}{
		{"no sign of life", func(e *staleEnv, _, _ string) { e.clock.Advance(staleWindow + time.Second) }, gateway.StatusFailed},
		{"heartbeats over REST", every(12, staleBeat, func(e *staleEnv, id, _ string) { beat(e.t, e.a, "other-run", id, id) }),
			gateway.StatusRunning},
		{"heartbeats over the gateway", func(e *staleEnv, id, tok string) {
			r := e.dialRaw(e.t)
			r.identify(e.a, "gw")
			every(12, staleBeat, func(*staleEnv, string, string) { gwBeat(r, id) })(e, id, tok)
		}, gateway.StatusRunning},
		{"heartbeats of another agent", func(e *staleEnv, id, tok string) {
			other := e.agent(e.other, false)
			every(5, staleBeat, func(e *staleEnv, id, _ string) { beat(e.t, other, id) })(e, id, tok)
		}, gateway.StatusFailed},
		{"patches", func(e *staleEnv, id, tok string) {
			every(6, staleWindow/2, func(e *staleEnv, id, tok string) {
				v := decodeAs[delivery.Run](e.t, e.a.call("GET", delivery.RunPath(id), nil, tok, "")).Version
				if ans := e.a.call("PATCH", delivery.RunPath(id), delivery.RunPatch{BaseVersion: v,
					Ops: []delivery.PatchOp{{Op: "add", Path: "/status_line", Value: "working"}}}, tok, newKey()); ans.status != http.StatusOK {
					e.t.Fatalf("patch: %d %s", ans.status, ans.body)
				}
			})(e, id, tok)
		}, gateway.StatusRunning},
		{"waiting for input", func(e *staleEnv, id, tok string) {
			if ans := e.a.call("POST", delivery.AwaitInputPath(id), delivery.RunAwaitInput{StatusLine: "which one?"}, tok, newKey()); ans.status != http.StatusOK {
				e.t.Fatalf("await-input: %d %s", ans.status, ans.body)
			}
			e.clock.Advance(3 * staleWindow)
		}, gateway.StatusWaitingUser},
	}
	for _, st := range runStores {
		t.Run(st.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					e := newStaleEnv(t, st.open, 1)
					id, tok := e.start()
					tt.live(e, id, tok)
					e.swept()
					r := e.run(id)
					if tt.want == gateway.StatusFailed {
						r = e.ended(id) // claimed with the sentinel, perhaps ending still
					}
					if r.Status != tt.want || r.Status == gateway.StatusRunning && r.LeaseOwner != gateway.PullLeaseOwner {
						t.Fatalf("the run is %s (%s), leased to %q until %s at %s; want %s", r.Status, r.Reason, r.LeaseOwner, r.LeaseUntil, e.clock.Now(), tt.want)
					}
					if tt.want != gateway.StatusFailed {
						return
					}
					if r.Reason != delivery.ReasonStale {
						t.Errorf("the run failed with %q; want %q", r.Reason, delivery.ReasonStale)
					}
					checkEndedStale(t, e, id, tok)
				})
			}
		})
	}
}

// checkEndedStale checks what the agent of a run ended stale sees: its
// view says so, it was told to stop, and its next calls of the run are
// refused as of an ended run.
func checkEndedStale(t *testing.T, e *staleEnv, id, tok string) {
	t.Helper()
	v := decodeAs[delivery.Run](t, e.a.call("GET", delivery.RunPath(id), nil, tok, ""))
	if v.State != delivery.RunFailed || v.StateReason != delivery.ReasonStale {
		t.Errorf("the agent sees the run %s (%s)", v.State, v.StateReason)
	}
	if told := e.cancels(id)[id]; len(told) != 1 || told[0] != delivery.ReasonStale {
		t.Errorf("the agent was told to stop the run for %q; want %q once", told, delivery.ReasonStale)
	}
	patch := e.a.call("PATCH", delivery.RunPath(id), delivery.RunPatch{BaseVersion: v.Version,
		Ops: []delivery.PatchOp{{Op: "add", Path: "/status_line", Value: "still here"}}}, tok, newKey())
	if p := patch.problem(t); patch.status != http.StatusConflict || p.Code != delivery.CodeConflict || p.Reason != delivery.RunNotActive {
		t.Errorf("a patch of the stale run: %d %s %s", patch.status, p.Code, p.Reason)
	}
	fin := e.a.call("POST", delivery.FinishRunPath(id), delivery.RunFinish{State: delivery.RunCompleted}, tok, newKey())
	if p := fin.problem(t); fin.status != http.StatusForbidden || p.Code != delivery.CodeInvocationTokenInvalid || p.Reason != delivery.RunInactive {
		t.Errorf("a finish of the stale run: %d %s %s", fin.status, p.Code, p.Reason)
	}
}

// TestStaleRunResumed: a run resumed after a person answered it has a
// fresh window from its resume, however long it waited.
func TestStaleRunResumed(t *testing.T) {
	e := newStaleEnv(t, runStores[0].open, 1)
	id, tok := e.start()
	if ans := e.a.call("POST", delivery.AwaitInputPath(id), delivery.RunAwaitInput{StatusLine: "which one?"}, tok, newKey()); ans.status != http.StatusOK {
		t.Fatalf("await-input: %d %s", ans.status, ans.body)
	}
	e.clock.Advance(3 * staleWindow)
	if st := e.operator("POST", gateway.RunsPath+"/"+id+"/reply", map[string]string{"input": "the blue one"}, nil); st != http.StatusAccepted {
		t.Fatalf("reply: %d", st)
	}
	e.waitFor("the follow-up offered", func() bool { r := e.run(id); return r.Pull.OfferedTurn == 2 })
	var ftok string
	for _, ev := range e.a.poll("rest").Events {
		if ev.Type == delivery.EventFollowup {
			ftok = ev.InvocationToken
		}
	}
	if ftok == "" {
		t.Fatal("no follow-up")
	}
	resumed := e.a.call("POST", delivery.ResumeRunPath(id), delivery.RunResume{BillingModeUsed: delivery.BillingPlatform, ToolClassUsed: delivery.ToolChat}, ftok, newKey())
	if resumed.status != http.StatusOK {
		t.Fatalf("resume: %d %s", resumed.status, resumed.body)
	}
	if r := e.run(id); r.Status != gateway.StatusRunning || !r.LeaseUntil.Equal(e.clock.Now().Add(staleWindow)) || r.LeaseOwner != gateway.PullLeaseOwner {
		t.Fatalf("the resumed run is %s leased to %q until %s; want running, its agent's until %s", r.Status, r.LeaseOwner, r.LeaseUntil, e.clock.Now().Add(staleWindow))
	}
	e.clock.Advance(staleWindow + time.Second)
	if r := e.ended(id); r.Status != gateway.StatusFailed || r.Reason != delivery.ReasonStale {
		t.Fatalf("the run is %s (%s); want failed, stale", r.Status, r.Reason)
	}
}

// TestStaleRunReplicas: replicas on one database, each sweeping, end a
// stale run once: one ending, one word to its agent.
func TestStaleRunReplicas(t *testing.T) {
	for _, st := range runStores {
		t.Run(st.name, func(t *testing.T) {
			e := newStaleEnv(t, st.open, 3)
			var ids []string
			for range 5 {
				id, _ := e.start()
				ids = append(ids, id)
			}
			e.clock.Advance(staleWindow + time.Second)
			for _, id := range ids {
				e.ended(id)
			}
			for _, id := range ids {
				events, err := e.runs.Events(context.Background(), id, 0, 100)
				if err != nil {
					t.Fatal(err)
				}
				endings := 0
				for _, ev := range events {
					var p gateway.StatusPayload
					if ev.Type == gateway.EventStatus && json.Unmarshal(ev.Payload, &p) == nil && p.Status.Terminal() {
						endings++
					}
				}
				if r := e.run(id); endings != 1 || r.Reason != delivery.ReasonStale {
					t.Errorf("run %s ended %d times, %s (%s)", id, endings, r.Status, r.Reason)
				}
			}
			for id, told := range e.cancels(ids...) {
				if len(told) != 1 {
					t.Errorf("the agent was told %d times to stop run %s", len(told), id)
				}
			}
		})
	}
}

// TestRunStaleAfterBounds: a window of two heartbeat intervals or less
// is refused; without one it is the default, or four intervals when
// longer.
func TestRunStaleAfterBounds(t *testing.T) {
	ring, err := auth.Open("", auth.Options{Issuer: "http://platform.test", Algorithm: auth.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		o         Options
		want      time.Duration
		wantError bool
	}{
		{"defaults", Options{}, DefaultRunStaleAfter, false},
		{"long heartbeats", Options{HeartbeatInterval: time.Minute}, 4 * time.Minute, false},
		{"just over two intervals", Options{HeartbeatInterval: time.Minute, RunStaleAfter: 2*time.Minute + time.Millisecond}, 2*time.Minute + time.Millisecond, false},
		{"two intervals", Options{HeartbeatInterval: time.Minute, RunStaleAfter: 2 * time.Minute}, 0, true},
		{"one interval", Options{RunStaleAfter: DefaultHeartbeatInterval}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, err := New(Deps{Store: newFakeStore(), Runs: gateway.NewMemoryStore(), Keys: ring, BaseURL: "http://platform.test"}, &tt.o)
			if (err != nil) != tt.wantError {
				t.Fatalf("New: %v; want an error %v", err, tt.wantError)
			}
			if err == nil && svc.StaleAfter() != tt.want {
				t.Errorf("StaleAfter %s, want %s", svc.StaleAfter(), tt.want)
			}
		})
	}
}

// TestLeaseNotes: a note says a run's lease is fresh until less than
// the refresh margin is left; the notes stay within their bound, the
// lapsed ones forgotten first; a heartbeat's ids are due once each.
func TestLeaseNotes(t *testing.T) {
	now := h0()
	n := newLeaseNotes(3)
	n.note("a", now.Add(time.Minute), now)
	n.note("a", now.Add(time.Second), now) // an older lease is not taken
	n.note("b", now.Add(-time.Second), now)
	n.note("c", now.Add(2*time.Minute), now)
	if got := n.due([]string{"a", "b", "c", "d", "d", "b"}, now, 90*time.Second); !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Errorf("due %v; want a (a minute left), b (lapsed), d (unknown), once each", got)
	}
	n.note("d", now.Add(2*time.Minute), now) // full: b, lapsed, goes
	if _, ok := n.m["b"]; ok || len(n.m) != 3 {
		t.Errorf("notes %v; want b forgotten", n.m)
	}
	n.note("e", now.Add(2*time.Minute), now) // full, none lapsed: all go
	if len(n.m) != 1 || n.m["e"].IsZero() {
		t.Errorf("notes %v; want only e", n.m)
	}
}
