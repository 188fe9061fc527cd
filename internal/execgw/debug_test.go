package execgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store/postgres"
)

// newDebugEnv is newEnvOn with the deliveries that the runs' debuggers
// hold reported on the channel returned, each with the delivery's copy of
// its run.
func newDebugEnv(t *testing.T, st gateway.Store, agents hostedAgents) (*env, <-chan gateway.Run) {
	t.Helper()
	return newDebugEnvEvery(t, st, agents, 20*time.Millisecond)
}

// newDebugEnvEvery is newDebugEnv with the dispatcher's sweep every
// sweep: a long one leaves a held run to whatever kicks the dispatcher.
func newDebugEnvEvery(t *testing.T, st gateway.Store, agents hostedAgents, sweep time.Duration) (*env, <-chan gateway.Run) {
	t.Helper()
	e := &env{t: t, store: st, tokens: &fakeTokens{}}
	parked := make(chan gateway.Run, 4096)
	e.svc = execgw.New(st, execgw.Deps{AdminToken: secret.New(adminTok), Tokens: e.tokens, Hosted: agents, BaseURL: "http://gateway.test"},
		&execgw.Options{SweepEvery: sweep, RetryBackoff: time.Millisecond})
	execgw.SetParkHook(e.svc, func(r gateway.Run) {
		select {
		case parked <- r:
		default:
			t.Error("the park hook's channel is full")
		}
	})
	e.serve()
	return e, parked
}

// waitParked waits for a delivery held on a copy of its run that ok
// accepts; the minute bounds a failure only.
func waitParked(t *testing.T, parked <-chan gateway.Run, what string, ok func(gateway.Run) bool) gateway.Run {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case r := <-parked:
			if ok(r) {
				return r
			}
		case <-deadline:
			t.Fatalf("no delivery was held %s", what)
		}
	}
}

// debugAnswer is the answer to a debug action: the debugger, or a
// problem.
type debugAnswer struct {
	gateway.DebugSession
	Type string `json:"type"`
}

// debugRun posts a debug action with body (raw JSON; "" sends none).
func (e *env) debugRun(token, runID, action, body string) (int, debugAnswer) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+gateway.RunsPath+"/"+runID+"/debug/"+action, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out debugAnswer
	if err := json.Unmarshal(raw, &out); err != nil {
		e.t.Fatalf("debug %s: %d %s: %v", action, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, out
}

// mustDebug posts action and wants the state it leads to.
func (e *env) mustDebug(token, runID string, action gateway.DebugAction, want gateway.BreakpointState) gateway.DebugSession {
	e.t.Helper()
	st, d := e.debugRun(token, runID, string(action), "")
	if st != http.StatusOK || d.BreakpointState != want || d.Action != action || d.RunID != runID {
		e.t.Fatalf("debug %s: %d %+v, want %s", action, st, d, want)
	}
	return d.DebugSession
}

// storedEvents are a run's events after the sequence after.
func (e *env) storedEvents(runID string, after int64) []gateway.Event {
	e.t.Helper()
	evs, err := e.store.Events(context.Background(), runID, after, gateway.MaxPage)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

func (e *env) lastSequence(runID string) int64 {
	e.t.Helper()
	r, err := e.store.GetRun(context.Background(), "", runID)
	if err != nil {
		e.t.Fatal(err)
	}
	return r.LastSequence
}

// Each action moves the debugger as a person expects one to, and is
// recorded as a debug.<action> event; what the rules refuse is refused
// with the problem that says why.
func TestDebugActions(t *testing.T) {
	e, _ := newDebugEnv(t, gateway.NewMemoryStore(), hostedAgents{})
	ctx := context.Background()
	// A run waiting for its user: no dispatcher takes it meanwhile.
	run, _, err := e.store.CreateRun(ctx, gateway.RunWrite{Now: time.Now(), Run: gateway.Run{ID: "r-1", TenantID: "acme",
		InstanceID: "i-1", Caller: gateway.Caller{Subject: "sub-alice", UserID: "alice"}, Status: gateway.StatusWaitingUser,
		Input: "q", Turn: 1}})
	if err != nil {
		t.Fatal(err)
	}
	big := `{"metadata": {"note": "` + strings.Repeat("x", gateway.MaxDebugMetadataBytes) + `"}}`
	steps := []struct {
		name, token, action, body string
		status                    int
		problem                   string
		state                     gateway.BreakpointState
		steps                     int
		events                    int // recorded by the action
	}{
		{"a step of a run nobody paused", userTok, "step", "", 409, gateway.ProblemRunNotPaused, "", 0, 0},
		{"an unknown action", userTok, "stop", "", 400, gateway.ProblemInvalidRequest, "", 0, 0},
		{"another tenant's run", otherTok, "pause", "", 404, gateway.ProblemRunNotFound, "", 0, 0},
		{"another user's run", bobTok, "pause", "", 404, gateway.ProblemRunNotFound, "", 0, 0},
		{"a token without runs:execute", "t|acme|alice|runs:read", "pause", "", 403, problem.TypeForbidden, "", 0, 0},
		// The scope is checked before the request is: such a token learns
		// nothing of what the route takes.
		{"an unknown action by a token without runs:execute", "t|acme|alice|runs:read", "stop", "", 403, problem.TypeForbidden, "", 0, 0},
		{"metadata that is not an object", userTok, "pause", `{"metadata": [1]}`, 400, problem.TypeMalformedJSON, "", 0, 0},
		{"metadata over the limit", userTok, "pause", big, 400, gateway.ProblemInvalidRequest, "", 0, 0},
		{"pause", userTok, "pause", `{"metadata": {"note": "look here"}}`, 200, "", gateway.BreakpointPaused, 0, 1},
		{"pause of a paused run", userTok, "pause", "", 200, "", gateway.BreakpointPaused, 0, 0},
		{"step", userTok, "step", "{}", 200, "", gateway.BreakpointStepping, 1, 1},
		{"a step more, by a service account", serviceTok, "step", "", 200, "", gateway.BreakpointStepping, 2, 1},
		{"pause by the operator drops the steps", adminTok, "pause", "", 200, "", gateway.BreakpointPaused, 0, 1},
		{"resume", userTok, "resume", "", 200, "", gateway.BreakpointRunning, 0, 1},
		{"resume of a running run", userTok, "resume", "", 200, "", gateway.BreakpointRunning, 0, 0},
		{"abort", userTok, "abort", "", 200, "", gateway.BreakpointAborted, 0, 3}, // debug.abort, status, error
		{"pause of an ended run", userTok, "pause", "", 409, gateway.ProblemRunEnded, "", 0, 0},
		{"abort of an ended run", serviceTok, "abort", "", 409, gateway.ProblemRunEnded, "", 0, 0},
	}
	session := ""
	for _, s := range steps {
		before := e.lastSequence(run.ID)
		st, got := e.debugRun(s.token, run.ID, s.action, s.body)
		if st != s.status || got.Type != s.problem && s.problem != "" {
			t.Fatalf("%s: %d %+v, want %d %s", s.name, st, got, s.status, s.problem)
		}
		if n := e.lastSequence(run.ID) - before; n != int64(s.events) {
			t.Errorf("%s: %d events recorded, want %d", s.name, n, s.events)
		}
		if st != http.StatusOK {
			continue
		}
		if session == "" {
			session = got.SessionID
		}
		if got.SessionID == "" || got.SessionID != session || got.RunID != run.ID || string(got.Action) != s.action ||
			got.BreakpointState != s.state || got.Steps != s.steps || got.UpdatedAt.IsZero() {
			t.Errorf("%s: debugger %+v, want session %s in %s with %d steps", s.name, got.DebugSession, session, s.state, s.steps)
		}
	}

	// The actions are in the run's events, with who and what they said.
	var debugEvents []gateway.DebugPayload
	var kinds []string
	for _, ev := range e.storedEvents(run.ID, 0) {
		kinds = append(kinds, ev.Type)
		if gateway.IsDebugEvent(ev.Type) {
			var p gateway.DebugPayload
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatal(err)
			}
			debugEvents = append(debugEvents, p)
		}
	}
	want := []string{"debug.pause", "debug.step", "debug.step", "debug.pause", "debug.resume", "debug.abort", "status", "error"}
	if d := cmp.Diff(want, kinds); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	first := debugEvents[0]
	if first.Actor != "sub-alice" || first.Metadata["note"] != "look here" || first.SessionID != session || first.BreakpointState != gateway.BreakpointPaused {
		t.Errorf("the pause's event %+v", first)
	}
	if debugEvents[3].Actor != "admin" || debugEvents[2].Actor != "sub-" {
		t.Errorf("actors %q and %q, want admin and the service account's subject", debugEvents[3].Actor, debugEvents[2].Actor)
	}
	var r gateway.Run
	if st := e.do("GET", gateway.RunsPath+"/"+run.ID, userTok, nil, &r); st != 200 || r.Status != gateway.StatusCancelled ||
		r.Reason != "aborted by sub-alice" || r.Debug == nil || r.Debug.BreakpointState != gateway.BreakpointAborted {
		t.Errorf("the aborted run: %d %+v", st, r)
	}
	var p struct{ Type string }
	if st := e.do("GET", gateway.RunsPath+"/"+run.ID+"/debug/pause", userTok, nil, &p); st != http.StatusMethodNotAllowed {
		t.Errorf("GET of a debug action: %d", st)
	}
}

// chunkAgent streams "c0 " first, then, once release is closed, the
// chunks up to n and a completion; done is closed when it returns.
func chunkAgent(n int, release <-chan struct{}, done chan<- struct{}) *script {
	return &script{seen: make(chan string, 8), steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			defer close(done)
			w.text("a", "c0 ", false)
			<-release
			for i := 1; i < n; i++ {
				w.text("a", fmt.Sprintf("c%d ", i), true)
			}
			w.status(a2a.TaskStateCompleted, nil)
		},
	}}
}

// deltas are the texts of the message.delta events among evs.
func deltas(t *testing.T, evs []gateway.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		if ev.Type == gateway.EventMessageDelta {
			var p struct{ Content string }
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatal(err)
			}
			out = append(out, p.Content)
		}
	}
	return out
}

// firstDelta follows the run's stream until the agent's first chunk is
// recorded.
func (e *env) firstDelta(runID string) {
	e.t.Helper()
	e.events(userTok, runID, "", func(ev sseEvent) bool { return ev.Frame.Type == gateway.EventMessageDelta })
}

// A paused run records none of the agent's further events, and the agent
// is held back rather than read; a step lets exactly one through; a
// resume lets the run finish with every event, in order.
func TestDebugPausedRun(t *testing.T) {
	testPausedRun(t, gateway.NewMemoryStore(), nil)
}

// The same across two replicas on PostgreSQL: the actions go to the
// replica that does not deliver the run, and reach the one that does.
func TestDebugPausedRunAcrossReplicas(t *testing.T) {
	url := pgtest.URL(t)
	open := func() gateway.Store {
		db, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db.GatewayStore()
	}
	testPausedRun(t, open(), open)
}

// testPausedRun runs the paused run on st; with other, a second replica
// on another handle of the database takes the debug actions.
func testPausedRun(t *testing.T, st gateway.Store, other func() gateway.Store) {
	// More chunks than the gateway reads ahead of its writes: held, the
	// agent cannot send them all.
	const chunks = 400
	release, agentDone := make(chan struct{}), make(chan struct{})
	e, parked := newDebugEnv(t, st, hostedAgents{"chunks": chunkAgent(chunks, release, agentDone)})
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("chunks", "chunks", nil), Input: "q"})
	e.firstDelta(run)

	ctl, ctlParked := e, (<-chan gateway.Run)(nil)
	if other != nil {
		// Started once e delivers the run: its lease keeps the other
		// replica from taking it, and this replica's agent refuses a
		// call, which would be a delivery by the wrong one.
		refuse := &script{refuse: &a2a.Error{Code: a2a.CodeInvalidRequest, Message: "delivered by the wrong replica"}}
		ctl, ctlParked = newDebugEnv(t, other(), hostedAgents{"chunks": refuse})
	}

	ctl.mustDebug(userTok, run, gateway.DebugPause, gateway.BreakpointPaused)
	paused := ctl.lastSequence(run)
	close(release)
	waitParked(t, parked, "after the pause", func(r gateway.Run) bool { return r.LastSequence == paused && r.Debug.Holds() })
	if evs := ctl.storedEvents(run, paused); len(evs) != 0 {
		t.Fatalf("events recorded while paused: %+v", evs)
	}
	select {
	case <-agentDone:
		t.Fatal("the agent sent every chunk while the run was paused: the gateway read its stream on")
	default:
	}

	ctl.mustDebug(userTok, run, gateway.DebugStep, gateway.BreakpointStepping)
	waitParked(t, parked, "after the step", func(r gateway.Run) bool { return r.LastSequence == paused+2 })
	evs := ctl.storedEvents(run, paused)
	if len(evs) != 2 || evs[0].Type != "debug.step" || !cmp.Equal(deltas(t, evs), []string{"c1 "}) {
		t.Fatalf("a step let through %+v, want debug.step and the chunk c1", evs)
	}
	if r, _ := ctl.store.GetRun(context.Background(), "", run); r.Debug.BreakpointState != gateway.BreakpointPaused {
		t.Fatalf("after its event the step left the debugger %+v, want paused", r.Debug)
	}

	ctl.mustDebug(userTok, run, gateway.DebugResume, gateway.BreakpointRunning)
	all := ctl.events(userTok, run, "", nil)
	<-agentDone
	last := all[len(all)-1]
	if last.Frame.Type != gateway.EventDone {
		t.Fatalf("the run ended with %s", types(all))
	}
	var got []string
	var kinds []string
	for _, ev := range all {
		if ev.Frame.Type == gateway.EventMessageDelta {
			var p struct{ Content string }
			_ = json.Unmarshal(ev.Frame.Payload, &p)
			got = append(got, p.Content)
		}
		if gateway.IsDebugEvent(ev.Frame.Type) {
			kinds = append(kinds, ev.Frame.Type+"@"+ev.ID)
		}
	}
	var want []string
	for i := range chunks {
		want = append(want, fmt.Sprintf("c%d ", i))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("the chunks (-want +got):\n%s", d)
	}
	wantKinds := []string{fmt.Sprintf("debug.pause@%d", paused), fmt.Sprintf("debug.step@%d", paused+1), fmt.Sprintf("debug.resume@%d", paused+3)}
	if d := cmp.Diff(wantKinds, kinds); d != "" {
		t.Errorf("the debugger's events (-want +got):\n%s", d)
	}
	if r := e.waitStatus(run, gateway.StatusCompleted); r.Output != strings.Join(want, "") {
		t.Errorf("output %q", r.Output)
	}
	if ctlParked != nil && len(ctlParked) != 0 {
		t.Error("the replica that took the actions held a delivery of its own")
	}
}

// A step lets a turn's ending through as one event, and a run paused
// before its ending ends only when let.
func TestDebugStepThroughTheEnding(t *testing.T) {
	release, agentDone := make(chan struct{}), make(chan struct{})
	e, parked := newDebugEnv(t, gateway.NewMemoryStore(), hostedAgents{"chunks": chunkAgent(2, release, agentDone)})
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("chunks", "chunks", nil), Input: "q"})
	e.firstDelta(run)
	e.mustDebug(userTok, run, gateway.DebugPause, gateway.BreakpointPaused)
	paused := e.lastSequence(run)
	close(release)
	<-agentDone // the agent sent everything, ending included
	waitParked(t, parked, "after the pause", func(r gateway.Run) bool { return r.LastSequence == paused })
	e.mustDebug(userTok, run, gateway.DebugStep, gateway.BreakpointStepping)
	waitParked(t, parked, "before the ending", func(r gateway.Run) bool { return r.LastSequence == paused+2 })
	if r, _ := e.store.GetRun(context.Background(), "", run); r.Status != gateway.StatusRunning {
		t.Fatalf("the run is %s before its ending was let through", r.Status)
	}
	e.mustDebug(userTok, run, gateway.DebugStep, gateway.BreakpointStepping)
	evs := e.events(userTok, run, fmt.Sprint(paused+2), nil)
	want := []string{"debug.step", "artifact", "message.final", "status:COMPLETED", "done"}
	if d := cmp.Diff(want, types(evs)); d != "" {
		t.Fatalf("after the second step (-want +got):\n%s", d)
	}
	if r := e.waitStatus(run, gateway.StatusCompleted); r.Output != "c0 c1 " || r.Debug.BreakpointState != gateway.BreakpointPaused {
		t.Fatalf("run %+v, debugger %+v", r, r.Debug)
	}
}

// An abort cancels a paused run: the agent's call is hung up and the
// agent told to cancel its task.
func TestDebugAbortPausedRun(t *testing.T) {
	release, agentDone := make(chan struct{}), make(chan struct{})
	sc := chunkAgent(400, release, agentDone)
	e, parked := newDebugEnv(t, gateway.NewMemoryStore(), hostedAgents{"chunks": sc})
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("chunks", "chunks", nil), Input: "q"})
	e.firstDelta(run)
	e.mustDebug(userTok, run, gateway.DebugPause, gateway.BreakpointPaused)
	paused := e.lastSequence(run)
	close(release)
	waitParked(t, parked, "after the pause", func(r gateway.Run) bool { return r.LastSequence == paused })
	e.mustDebug(userTok, run, gateway.DebugAbort, gateway.BreakpointAborted)
	<-agentDone // its call was hung up: its writes fail, and it returns
	for m := range sc.seen {
		if m == a2a.MethodCancelTask {
			break
		}
	}
	evs := e.events(userTok, run, fmt.Sprint(paused), nil)
	if d := cmp.Diff([]string{"debug.abort", "status:CANCELLED", "error"}, types(evs)); d != "" {
		t.Fatalf("after the pause (-want +got):\n%s", d)
	}
	if r := e.waitStatus(run, gateway.StatusCancelled); r.Reason != "aborted by sub-alice" {
		t.Fatalf("run %+v", r)
	}
}

// An event recorded within a trace keeps its trace and span ids, and both
// event routes return them; an event recorded outside one has none.
func TestRunEventsTraceContext(t *testing.T) {
	e, _ := newDebugEnv(t, gateway.NewMemoryStore(), hostedAgents{})
	run, _, err := e.store.CreateRun(context.Background(), gateway.RunWrite{Now: time.Now(), Run: gateway.Run{ID: "r-1", TenantID: "acme",
		InstanceID: "i-1", Caller: gateway.Caller{Subject: "sub-alice", UserID: "alice"}, Status: gateway.StatusWaitingUser, Turn: 1},
		Events: []gateway.Event{{Type: gateway.EventStatus, Payload: json.RawMessage(`{"status":"QUEUED"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	// The server's tracing middleware, as far as the gateway sees it: a
	// span context in each request's context.
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0x00, 0xf0, 2},
		TraceFlags: trace.FlagsSampled})
	mux := http.NewServeMux()
	for _, r := range e.svc.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	traced := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(trace.ContextWithSpanContext(r.Context(), sc)))
	}))
	defer traced.Close()
	plain := e.srv
	e.srv = traced
	e.mustDebug(userTok, run.ID, gateway.DebugPause, gateway.BreakpointPaused)
	e.srv = plain

	type page struct {
		Events []struct {
			Type    string
			TraceID *string `json:"trace_id"`
			SpanID  *string `json:"span_id"`
		}
	}
	for _, c := range []struct{ token, path string }{
		{serviceTok, gateway.ServiceRunsPath + run.ID + "/events"},
		{userTok, gateway.RunsPath + "/" + run.ID + "/events"},
	} {
		var p page
		if st := e.do("GET", c.path, c.token, nil, &p); st != 200 || len(p.Events) != 2 {
			t.Fatalf("%s: %d %+v", c.path, st, p)
		}
		if untraced := p.Events[0]; untraced.TraceID != nil || untraced.SpanID != nil {
			t.Errorf("%s: an event recorded outside a trace has %v %v", c.path, untraced.TraceID, untraced.SpanID)
		}
		if ev := p.Events[1]; ev.Type != "debug.pause" || ev.TraceID == nil || *ev.TraceID != sc.TraceID().String() ||
			ev.SpanID == nil || *ev.SpanID != sc.SpanID().String() {
			t.Errorf("%s: the pause's event %+v, want trace %s span %s", c.path, ev, sc.TraceID(), sc.SpanID())
		}
	}
}

// The Go client drives the debugger and reads the actions back from the
// event index, a user's token falling back to the user route.
func TestClientDebugControl(t *testing.T) {
	e, _ := newDebugEnv(t, gateway.NewMemoryStore(), hostedAgents{})
	ctx := context.Background()
	run, _, err := e.store.CreateRun(ctx, gateway.RunWrite{Now: time.Now(), Run: gateway.Run{ID: "r-1", TenantID: "acme",
		InstanceID: "i-1", Caller: gateway.Caller{Subject: "sub-alice", UserID: "alice"}, Status: gateway.StatusWaitingUser, Turn: 1}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := gateway.NewClient(e.srv.URL, &gateway.ClientOptions{Token: secret.New(userTok)})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		action gateway.DebugAction
		want   gateway.BreakpointState
	}{{gateway.DebugPause, gateway.BreakpointPaused}, {gateway.DebugStep, gateway.BreakpointStepping}, {gateway.DebugAbort, gateway.BreakpointAborted}} {
		d, err := c.SendDebugControl(ctx, run.ID, s.action, map[string]any{"by": "test"})
		if err != nil || d.BreakpointState != s.want || d.Action != s.action || d.RunID != run.ID || d.SessionID == "" {
			t.Fatalf("%s: %+v, %v", s.action, d, err)
		}
	}
	if _, err := c.SendDebugControl(ctx, run.ID, gateway.DebugResume, nil); !errors.Is(err, gateway.ErrConflict) {
		t.Fatalf("a resume of the aborted run: %v, want ErrConflict", err)
	}
	page, err := c.RunEvents(ctx, run.ID, gateway.RunEventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range page.Events {
		kinds = append(kinds, ev.Type)
	}
	if d := cmp.Diff([]string{"debug.pause", "debug.step", "debug.abort", "status", "error"}, kinds); d != "" || page.NextCursor != "5" {
		t.Fatalf("events (-want +got):\n%s next cursor %q", d, page.NextCursor)
	}
}

// Metadata of exactly the limit as JSON is taken, a byte more refused.
func TestDebugMetadataLimit(t *testing.T) {
	e, _ := newDebugEnv(t, gateway.NewMemoryStore(), hostedAgents{})
	run, _, err := e.store.CreateRun(context.Background(), gateway.RunWrite{Now: time.Now(), Run: gateway.Run{ID: "r-1", TenantID: "acme",
		InstanceID: "i-1", Caller: gateway.Caller{Subject: "sub-alice", UserID: "alice"}, Status: gateway.StatusWaitingUser, Turn: 1}})
	if err != nil {
		t.Fatal(err)
	}
	note := func(jsonBytes int) string { // metadata {"note":"x…"} of jsonBytes as JSON
		return `{"metadata": {"note": "` + strings.Repeat("x", jsonBytes-len(`{"note":""}`)) + `"}}`
	}
	for _, tc := range []struct {
		name   string
		body   string
		status int
	}{
		{"at the limit", note(gateway.MaxDebugMetadataBytes), http.StatusOK},
		{"a byte over", note(gateway.MaxDebugMetadataBytes + 1), http.StatusBadRequest},
	} {
		if st, got := e.debugRun(userTok, run.ID, "pause", tc.body); st != tc.status {
			t.Errorf("%s: %d %+v, want %d", tc.name, st, got, tc.status)
		}
	}
}

// A step or a resume of a queued run its debugger holds has the
// dispatcher claim it at once, not at its next sweep.
func TestDebugReleaseKicksDispatcher(t *testing.T) {
	tests := []struct {
		action gateway.DebugAction
		state  gateway.BreakpointState
	}{
		{gateway.DebugResume, gateway.BreakpointRunning},
		{gateway.DebugStep, gateway.BreakpointStepping},
	}
	for _, tc := range tests {
		t.Run(string(tc.action), func(t *testing.T) {
			done := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
				func(_ *a2a.SendMessageRequest, w *frameWriter) {
					w.text("a", "hello", false)
					w.status(a2a.TaskStateCompleted, nil)
				},
			}}
			// No sweep within the test: only a kick has the run claimed.
			e, parked := newDebugEnvEvery(t, gateway.NewMemoryStore(), hostedAgents{"done": done}, time.Hour)
			inst := e.install("done", "done", nil)
			// Queued with its debugger paused, as a run paused before
			// any dispatcher took it is; written to the store, so nothing
			// kicks the dispatcher but the action.
			run, _, err := e.store.CreateRun(context.Background(), gateway.RunWrite{Now: time.Now(), Run: gateway.Run{ID: "r-1",
				TenantID: "acme", InstanceID: inst, Caller: gateway.Caller{Subject: "sub-alice", UserID: "alice"},
				Status: gateway.StatusQueued, Input: "q", Turn: 1,
				Debug: &gateway.DebugSession{SessionID: "s-1", RunID: "r-1", BreakpointState: gateway.BreakpointPaused}}})
			if err != nil {
				t.Fatal(err)
			}
			e.mustDebug(userTok, run.ID, tc.action, tc.state)
			if tc.action == gateway.DebugStep {
				// Its one step taken, the delivery is held again.
				waitParked(t, parked, "after the step", func(r gateway.Run) bool { return r.Debug.Holds() })
				return
			}
			evs := e.events(userTok, run.ID, "", nil)
			if len(evs) == 0 || evs[len(evs)-1].Frame.Type != gateway.EventDone {
				t.Fatalf("the resumed run's events: %s", types(evs))
			}
		})
	}
}
