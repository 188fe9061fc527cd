package execgw_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/builtin"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/tools"
)

func echoAgent(t *testing.T) http.Handler {
	a := agent.New("echo", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "echo", Handler: func(c *agent.Context) (agent.Result, error) {
		return agent.Result{Output: "echo: " + c.Input(), Metadata: map[string]any{"model": "none"}}, nil
	}})
	return sdkAgent(t, a)
}

func TestRunCompletes(t *testing.T) {
	e := newEnv(t, hostedAgents{"echo": echoAgent(t)}, nil)
	inst := e.install("my-echo", "echo", map[string]any{"scopes": []string{"memory:read:*"}, "config": map[string]any{"tone": "dry"}})
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "hello", ThreadID: "thread-1"})

	evs := e.events(userTok, run, "", nil)
	got := types(evs)
	want := []string{"status:QUEUED", "status:RUNNING", "message.delta", "artifact", "message.final", "status:COMPLETED", "done"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("event types (-want +got):\n%s", diff)
	}
	for i, ev := range evs {
		if ev.Event != "message" || ev.ID != strconv.Itoa(i+1) || ev.Frame.Sequence != int64(i+1) || ev.Frame.RunID != run || ev.Frame.Timestamp == 0 {
			t.Errorf("frame %d: id %q event %q %+v", i, ev.ID, ev.Event, ev.Frame)
		}
	}
	var r gateway.Run
	if st := e.do("GET", gateway.RunsPath+"/"+run, userTok, nil, &r); st != 200 {
		t.Fatalf("GET run: %d", st)
	}
	if r.Status != gateway.StatusCompleted || r.Reason == "" || r.Output != "echo: hello" || r.TaskID != run || r.EndedAt.IsZero() {
		t.Fatalf("run %+v", r)
	}
	if len(r.Artifacts) != 1 || r.Artifacts[0].SkillMetadata["model"] != "none" {
		t.Fatalf("artifacts %+v: want the skill metadata apart", r.Artifacts)
	}
	for _, p := range r.Artifacts[0].Parts {
		if hitl.Tagged(p, hitl.MetadataMediaType) || hitl.Tagged(p, hitl.SkillMetadataMediaType) {
			t.Fatalf("artifact shows a marked part: %+v", p)
		}
	}
	// The run's token carried the instance's scopes and the run's ids.
	e.tokens.mu.Lock()
	c, alg := e.tokens.minted[0], e.tokens.algs[0]
	e.tokens.mu.Unlock()
	if c.RunID != run || c.TenantID != "acme" || c.UserID != "alice" || c.InstanceID != inst || !c.HasScope("memory:read:agent") {
		t.Fatalf("minted claims %+v", c)
	}
	if alg != identity.EdDSA {
		t.Fatalf("a hosted agent's token is signed %q, want EdDSA", alg)
	}
	if r.AgentID != "echo" || c.AgentID != "echo" {
		t.Fatalf("run of the hosted echo names agent %q, its token %q", r.AgentID, c.AgentID)
	}
}

// Every resume point gives exactly the events after it, and a fresh
// subscription to an ended run replays it whole.
func TestEventsResume(t *testing.T) {
	e := newEnv(t, hostedAgents{"echo": echoAgent(t)}, nil)
	inst := e.install("echo", "echo", nil)
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "x"})
	all := e.events(userTok, run, "", nil)
	for i := range all[:len(all)-1] {
		rest := e.events(userTok, run, all[i].ID, nil)
		if diff := cmp.Diff(all[i+1:], rest, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("after id %s (-want +got):\n%s", all[i].ID, diff)
		}
	}
	// After the last event of an ended run nothing follows: 204.
	req, _ := http.NewRequest("GET", e.srv.URL+gateway.EventsPath+run, nil)
	req.Header.Set("Authorization", "Bearer "+userTok)
	req.Header.Set("Last-Event-ID", all[len(all)-1].ID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("after the last event: %d, want 204", resp.StatusCode)
	}
}

func TestEventsBadCursor(t *testing.T) {
	e := newEnv(t, hostedAgents{"echo": echoAgent(t)}, nil)
	inst := e.install("echo", "echo", nil)
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "x"})
	e.waitStatus(run, gateway.StatusCompleted)
	for _, id := range []string{"-1", "abc", "01", "1e3", "99999", "9223372036854775808"} {
		req, _ := http.NewRequest("GET", e.srv.URL+gateway.EventsPath+run, nil)
		req.Header.Set("Authorization", "Bearer "+userTok)
		req.Header.Set("Last-Event-ID", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Type string }
		_ = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if resp.StatusCode != 400 || p.Type != gateway.ProblemInvalidCursor {
			t.Errorf("Last-Event-ID %q: %d %s, want 400 %s", id, resp.StatusCode, p.Type, gateway.ProblemInvalidCursor)
		}
	}
}

// A paused run waits for the user, and the reply continues the same run
// on the same task under a new idempotency key.
func TestHumanInTheLoop(t *testing.T) {
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateWorking, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("thinking")))
			w.status(a2a.TaskStateInputRequired, hitl.NewMessage("Which account?",
				hitl.InputRequest("Which account?", hitl.InputText, nil, "s-1")))
		},
		func(req *a2a.SendMessageRequest, w *frameWriter) {
			w.text("a1", "paid from "+req.Message.Text(), false)
			w.status(a2a.TaskStateCompleted, nil)
		},
	}}
	e := newEnv(t, hostedAgents{"payer": sc}, nil)
	inst := e.install("payer", "payer", nil)
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "pay the invoice"})
	first := e.events(userTok, run, "", func(ev sseEvent) bool { return ev.Frame.Type == gateway.EventHITL })
	if diff := cmp.Diff([]string{"status:QUEUED", "status:RUNNING", "status:progress", "status:WAITING_USER", "hitl"}, types(first)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	var pause map[string]any
	_ = json.Unmarshal(first[len(first)-1].Frame.Payload, &pause)
	if h, _ := pause["hitl"].(map[string]any); h["content"] != "Which account?" || h["hitl_type"] != "input_request" {
		t.Fatalf("hitl payload %v", pause)
	}
	r := e.waitStatus(run, gateway.StatusWaitingUser)
	// A reply or cancel from a caller who may not see the run, or may only
	// read it, changes nothing.
	readOnly := "t|acme|alice|runs:read"
	for _, c := range []struct {
		name, token, action string
		status              int
	}{
		{"another user's reply", bobTok, "reply", 404},
		{"another tenant's reply", otherTok, "reply", 404},
		{"a reader's reply", readOnly, "reply", 403},
		{"another user's cancel", bobTok, "cancel", 404},
		{"another tenant's cancel", otherTok, "cancel", 404},
		{"a reader's cancel", readOnly, "cancel", 403},
	} {
		if st := e.do("POST", gateway.RunsPath+"/"+run+"/"+c.action, c.token, map[string]any{"input": "savings"}, nil); st != c.status {
			t.Fatalf("%s: %d, want %d", c.name, st, c.status)
		}
	}
	if still, _ := e.store.GetRun(context.Background(), "", run); still.Status != gateway.StatusWaitingUser || still.Version != r.Version {
		t.Fatalf("the run changed: %+v", still)
	}
	var res gateway.ExecuteResult
	if st := e.do("POST", gateway.RunsPath+"/"+run+"/reply", userTok, map[string]any{"input": "savings", "action_id": "submit"}, &res); st != 202 || res.RunID != run {
		t.Fatalf("reply: %d %+v", st, res)
	}
	rest := e.events(userTok, run, first[len(first)-1].ID, nil)
	if diff := cmp.Diff([]string{"status:QUEUED", "status:RUNNING", "message.delta", "artifact", "message.final", "status:COMPLETED", "done"}, types(rest)); diff != "" {
		t.Fatalf("after the reply (-want +got):\n%s", diff)
	}
	done := e.waitStatus(run, gateway.StatusCompleted)
	if done.Output != "paid from savings" {
		t.Fatalf("output %q", done.Output)
	}
	one, two := platform(t, sc.call(0)), platform(t, sc.call(1))
	if one.RunID != run || two.RunID != run || one.IdempotencyKey == "" || one.IdempotencyKey == two.IdempotencyKey {
		t.Fatalf("contexts %+v / %+v: same run, new idempotency key", one, two)
	}
	if got := sc.call(1).Message; got.TaskID != r.TaskID || got.TaskID == "" {
		t.Fatalf("the reply went to task %q, want %q", got.TaskID, r.TaskID)
	}
	if f := hitl.Extract(sc.call(1).Message); f.Response == nil || f.Response.ActionID != "submit" || f.Response.SessionID != "s-1" {
		t.Fatalf("the reply carries %+v", f.Response)
	}
	// A second reply finds the run not waiting.
	var p struct{ Type string }
	if st := e.do("POST", gateway.RunsPath+"/"+run+"/reply", userTok, map[string]any{"input": "again"}, &p); st != 409 || p.Type != gateway.ProblemRunNotWaiting {
		t.Fatalf("reply to a finished run: %d %s", st, p.Type)
	}
}

// A write confirmation is answered with its own call id only.
func TestWriteConfirmation(t *testing.T) {
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateAuthRequired, hitl.NewMessage("Send the email?",
				&hitl.WriteConfirmation{CallID: "call-7", ToolName: "mail.send"}))
		},
		func(_ *a2a.SendMessageRequest, w *frameWriter) { w.status(a2a.TaskStateCompleted, nil) },
	}}
	e := newEnv(t, hostedAgents{"mailer": sc}, nil)
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("mailer", "mailer", nil), Input: "mail bob"})
	evs := e.events(userTok, run, "", func(ev sseEvent) bool { return ev.Frame.Type == gateway.EventWriteConfirmationRequired })
	if last := evs[len(evs)-1]; !strings.Contains(string(last.Frame.Payload), `"call_id":"call-7"`) {
		t.Fatalf("pause payload %s", last.Frame.Payload)
	}
	e.waitStatus(run, gateway.StatusWaitingUser)
	for _, body := range []map[string]any{
		{"call_id": "call-8", "approved": true},
		{"approved": true},
		{"call_id": "call-7"},
		{"input": "yes"},
	} {
		if st := e.do("POST", gateway.RunsPath+"/"+run+"/reply", userTok, body, nil); st != 400 {
			t.Errorf("reply %v: %d, want 400", body, st)
		}
	}
	if st := e.do("POST", gateway.RunsPath+"/"+run+"/reply", userTok, map[string]any{"call_id": "call-7", "approved": true}, nil); st != 202 {
		t.Fatalf("reply: %d", st)
	}
	e.waitStatus(run, gateway.StatusCompleted)
	if f := hitl.Extract(sc.call(1).Message); f.Response == nil || f.Response.Metadata["call_id"] != "call-7" || f.Response.Metadata["approved"] != true {
		t.Fatalf("the resumed call carries %+v", f.Response)
	}
	// The resumed delivery's token is bound to the approved call; the first was not.
	e.tokens.mu.Lock()
	first, second := e.tokens.minted[0].CallID, e.tokens.minted[1].CallID
	e.tokens.mu.Unlock()
	if first != "" || second != "call-7" {
		t.Fatalf("tokens bound to %q then %q", first, second)
	}
}

// At least once: a stream that ends without an ending is delivered again
// under the same idempotency key; after the last attempt the run fails
// saying so (KB-15: a status FAILED then error).
func TestRedelivery(t *testing.T) {
	drop := func(_ *a2a.SendMessageRequest, w *frameWriter) { w.text("a1", "half an ans", false) }
	finish := func(_ *a2a.SendMessageRequest, w *frameWriter) {
		w.text("a1", "the answer", false)
		w.status(a2a.TaskStateCompleted, nil)
	}
	t.Run("recovers", func(t *testing.T) {
		sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){drop, finish}}
		e := newEnv(t, hostedAgents{"flaky": sc}, nil)
		run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("flaky", "flaky", nil), Input: "q"})
		r := e.waitStatus(run, gateway.StatusCompleted)
		if sc.count() != 2 || platform(t, sc.call(0)).IdempotencyKey != platform(t, sc.call(1)).IdempotencyKey {
			t.Fatalf("%d calls; want 2 with one idempotency key", sc.count())
		}
		if sc.call(0).Message.MessageID != sc.call(1).Message.MessageID {
			t.Fatal("a redelivery sent a new message id")
		}
		if r.Output != "the answer" || r.Attempt != 2 {
			t.Fatalf("run %+v", r)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){drop, drop, drop}}
		e := newEnv(t, hostedAgents{"flaky": sc}, nil)
		run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("flaky", "flaky", nil), Input: "q"})
		evs := e.events(userTok, run, "", nil)
		n := len(evs)
		if n < 2 || types(evs)[n-2] != "status:FAILED" || evs[n-1].Frame.Type != gateway.EventError {
			t.Fatalf("events end %v", types(evs))
		}
		r := e.waitStatus(run, gateway.StatusFailed)
		if sc.count() != 3 || !strings.Contains(r.Reason, "without an ending") || !strings.Contains(r.Reason, "3 of 3") {
			t.Fatalf("%d calls, reason %q", sc.count(), r.Reason)
		}
		// The backoff doubles from --gateway-retry-backoff (1ms here), and
		// each delivery after the first says which it is.
		var retries, starts []string
		for _, ev := range evs {
			var p gateway.StatusPayload
			if ev.Frame.Type != gateway.EventStatus || json.Unmarshal(ev.Frame.Payload, &p) != nil {
				continue
			}
			if i := strings.Index(p.Reason, "retrying"); i >= 0 {
				retries = append(retries, p.Reason[i:])
			} else if p.Status == gateway.StatusRunning {
				starts = append(starts, p.Reason)
			}
		}
		if want := []string{"retrying in 1ms (attempt 1 of 3)", "retrying in 2ms (attempt 2 of 3)"}; !slices.Equal(retries, want) {
			t.Fatalf("retries %q, want %q", retries, want)
		}
		if want := []string{"", "delivering again: attempt 2 of 3", "delivering again: attempt 3 of 3"}; !slices.Equal(starts, want) {
			t.Fatalf("starts %q, want %q", starts, want)
		}
	})
	t.Run("an A2A error fails at once", func(t *testing.T) {
		sc := &script{refuse: a2a.ErrContentTypeNotSupported}
		e := newEnv(t, hostedAgents{"strict": sc}, nil)
		run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("strict", "strict", nil), Input: "q"})
		r := e.waitStatus(run, gateway.StatusFailed)
		if sc.count() != 1 || r.Attempt != 1 || !strings.Contains(r.Reason, "refused") {
			t.Fatalf("%d calls; run %+v", sc.count(), r)
		}
	})
	t.Run("refusal fails at once", func(t *testing.T) {
		a := agent.New("picky", "1", nil)
		a.MustRegister(agent.Skill{ID: "one", Handler: func(*agent.Context) (agent.Result, error) { return agent.Result{}, nil }})
		a.MustRegister(agent.Skill{ID: "two", Handler: func(*agent.Context) (agent.Result, error) { return agent.Result{}, nil }})
		e := newEnv(t, hostedAgents{"picky": sdkAgent(t, a)}, nil)
		run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("picky", "picky", nil), Input: "which skill?"})
		r := e.waitStatus(run, gateway.StatusFailed)
		if r.Attempt != 1 || r.Reason == "" {
			t.Fatalf("run %+v", r)
		}
	})
}

func TestCancel(t *testing.T) {
	started := make(chan struct{})
	hungUp := make(chan struct{})
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateWorking, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("working")))
			close(started)
			<-w.ctx.Done()
			close(hungUp)
		},
	}}
	sc.seen = make(chan string, 8)
	// A lease of an hour: the delivery's renewal, which would also find
	// the run ended, comes too late; the cancel's news must stop it.
	e := newEnv(t, hostedAgents{"slow": sc}, &execgw.Options{Lease: time.Hour})
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("slow", "slow", nil), Input: "q"})
	<-started
	// Once the gateway has recorded the agent's task (with the working
	// status, in one write), a cancel names it.
	e.events(userTok, run, "", func(ev sseEvent) bool {
		return ev.Frame.Type == gateway.EventStatus && strings.Contains(string(ev.Frame.Payload), "working")
	})
	var r gateway.Run
	if st := e.do("POST", gateway.RunsPath+"/"+run+"/cancel", userTok, nil, &r); st != 200 || r.Status != gateway.StatusCancelled || !strings.Contains(r.Reason, "cancelled by") {
		t.Fatalf("cancel: %d %+v", st, r)
	}
	<-hungUp // the delivery stopped calling the agent
	// and told the agent to cancel its task.
	for m := range sc.seen {
		if m == a2a.MethodCancelTask {
			break
		}
	}
	evs := e.events(userTok, run, "", nil)
	n := len(evs)
	if types(evs)[n-2] != "status:CANCELLED" || evs[n-1].Frame.Type != gateway.EventError {
		t.Fatalf("events %v", types(evs))
	}
	var p struct{ Type string }
	if st := e.do("POST", gateway.RunsPath+"/"+run+"/cancel", userTok, nil, &p); st != 409 || p.Type != gateway.ProblemRunEnded {
		t.Fatalf("second cancel: %d %s", st, p.Type)
	}
	if got := e.waitStatus(run, gateway.StatusCancelled); got.Reason != r.Reason {
		t.Fatalf("the delivery overwrote the cancel: %+v", got)
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t, hostedAgents{"echo": echoAgent(t)}, nil)
	inst := e.install("echo", "echo", nil)
	done := e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "x"})
	e.waitStatus(done, gateway.StatusCompleted)
	long := strings.Repeat("é", gateway.MaxInputChars+1)
	cases := []struct {
		name   string
		token  string
		body   any
		status int
	}{
		{"oversize input", userTok, gateway.ExecuteRequest{InstanceID: inst, Input: long}, 400},
		{"input at the limit is fine", userTok, gateway.ExecuteRequest{InstanceID: inst, Input: long[:len(long)-2]}, 202},
		{"no input", userTok, gateway.ExecuteRequest{InstanceID: inst, Input: " "}, 400},
		{"no instance", userTok, gateway.ExecuteRequest{Input: "x"}, 400},
		{"unknown instance", userTok, gateway.ExecuteRequest{InstanceID: "4a1c0f7e-0000-4000-8000-000000000000", Input: "x"}, 404},
		{"another tenant's instance", otherTok, gateway.ExecuteRequest{InstanceID: inst, Input: "x"}, 404},
		{"attachment without url or data", userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "x", Attachments: []gateway.Attachment{{Type: "text/plain"}}}, 400},
		{"attachment with both", userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "x", Attachments: []gateway.Attachment{{Type: "text/plain", URL: "https://example.com/a", Data: []byte("a")}}}, 400},
		{"attachment path name", userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "x", Attachments: []gateway.Attachment{{Type: "text/plain", Data: []byte("a"), Name: "../etc/passwd"}}}, 400},
		{"attachment file url", userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "x", Attachments: []gateway.Attachment{{Type: "text/plain", URL: "file:///etc/passwd"}}}, 400},
		{"good attachment", userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "x", Attachments: []gateway.Attachment{{Type: "text/plain", Data: []byte("a"), Name: "notes.txt"}}}, 202},
		{"custom headers from a user", userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "x", CustomHeaders: map[string]string{"x-user-jwt": "v"}}, 403},
		{"header value with a line break", serviceTok, gateway.ExecuteRequest{InstanceID: inst, Input: "x", CustomHeaders: map[string]string{"x-a": "v\r\nx-b: w"}}, 400},
		{"unknown field", userTok, map[string]any{"instance_id": inst, "input": "x", "instanceId": inst}, 400},
		{"no token", "", gateway.ExecuteRequest{InstanceID: inst, Input: "x"}, 401},
		{"no scope", "t|acme|alice|runs:read", gateway.ExecuteRequest{InstanceID: inst, Input: "x"}, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p struct {
				Type   string
				Detail string
			}
			if st := e.do("POST", gateway.ExecutePath, c.token, c.body, &p); st != c.status {
				t.Fatalf("status %d (%s: %s), want %d", st, p.Type, p.Detail, c.status)
			}
		})
	}
	// Runs of another tenant or user are not found; nothing changed.
	for _, tok := range []string{otherTok, bobTok} {
		if st := e.do("GET", gateway.RunsPath+"/"+done, tok, nil, nil); st != 404 {
			t.Errorf("GET another's run: %d", st)
		}
		if st := e.do("POST", gateway.RunsPath+"/"+done+"/cancel", tok, nil, nil); st != 404 {
			t.Errorf("cancel another's run: %d", st)
		}
	}
	if st := e.do("GET", gateway.ServiceRunsPath+done, userTok, nil, nil); st != 403 {
		t.Errorf("a user token on the service route: %d", st)
	}
	if st := e.do("GET", gateway.ServiceRunsPath+done, serviceTok, nil, nil); st != 200 {
		t.Errorf("a service token on the service route: %d", st)
	}
	r, _ := e.store.GetRun(context.Background(), "", done)
	if r.Status != gateway.StatusCompleted {
		t.Fatalf("the run changed: %+v", r)
	}
}

// KB-15: a run that fails after its agent answered (here, an answer past
// the gateway's limit) ends with a status FAILED and an error, and says why.
func TestLateFailure(t *testing.T) {
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
		func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.text("a", strings.Repeat("x", 60), false)
			w.text("a", strings.Repeat("y", 60), true)
			w.status(a2a.TaskStateCompleted, nil)
		},
	}}
	e := newEnv(t, hostedAgents{"big": sc}, &execgw.Options{MaxOutputBytes: 100})
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("big", "big", nil), Input: "q"})
	evs := e.events(userTok, run, "", nil)
	if diff := cmp.Diff([]string{"status:QUEUED", "status:RUNNING", "message.delta", "artifact", "message.final", "status:FAILED", "error"}, types(evs)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	r := e.waitStatus(run, gateway.StatusFailed)
	if !strings.Contains(r.Reason, "limit of 100 bytes") {
		t.Fatalf("reason %q", r.Reason)
	}
}

// The built-in ask agent pauses with a HITL input request and greets the
// caller by the name the reply gives.
func TestBuiltinAsk(t *testing.T) {
	e := newEnv(t, hostedAgents{"ask": sdkAgent(t, builtin.Ask())}, nil)
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("ask", "ask", nil), Input: "book a table"})
	evs := e.events(userTok, run, "", func(ev sseEvent) bool { return ev.Frame.Type == gateway.EventHITL })
	if !strings.Contains(string(evs[len(evs)-1].Frame.Payload), "What should I call you?") {
		t.Fatalf("pause %s", evs[len(evs)-1].Frame.Payload)
	}
	e.waitStatus(run, gateway.StatusWaitingUser)
	if st := e.do("POST", gateway.RunsPath+"/"+run+"/reply", userTok, map[string]any{"input_value": "Ada", "action_id": "submit"}, nil); st != 202 {
		t.Fatalf("reply: %d", st)
	}
	r := e.waitStatus(run, gateway.StatusCompleted)
	if r.Output != "Hello, Ada! You asked: book a table" {
		t.Fatalf("output %q", r.Output)
	}
}

// A thread's runs carry its earlier turns, oldest first; a run outside
// the thread carries none.
func TestThreadHistory(t *testing.T) {
	seen := make(chan agent.PlatformContext, 4)
	a := agent.New("chat", "1", nil)
	a.MustRegister(agent.Skill{ID: "chat", Handler: func(c *agent.Context) (agent.Result, error) {
		seen <- c.Platform()
		return agent.Result{Output: "re: " + c.Input()}, nil
	}})
	e := newEnv(t, hostedAgents{"chat": sdkAgent(t, a)}, nil)
	inst := e.install("chat", "chat", nil)
	for _, in := range []string{"one", "two"} {
		e.waitStatus(e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: in, ThreadID: "th-1"}), gateway.StatusCompleted)
		<-seen
	}
	e.waitStatus(e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "elsewhere"}), gateway.StatusCompleted)
	if pc := <-seen; len(pc.History) != 0 {
		t.Fatalf("a run outside the thread carries %v", pc.History)
	}
	// Another user naming the same thread reads nothing of alice's.
	e.waitStatus(e.execute(bobTok, gateway.ExecuteRequest{InstanceID: inst, Input: "peek", ThreadID: "th-1"}), gateway.StatusCompleted)
	if pc := <-seen; len(pc.History) != 0 {
		t.Fatalf("bob's run in alice's thread carries %v", pc.History)
	}
	e.waitStatus(e.execute(userTok, gateway.ExecuteRequest{InstanceID: inst, Input: "three", ThreadID: "th-1"}), gateway.StatusCompleted)
	pc := <-seen
	want := []agent.ConversationTurn{{Role: "user", Content: "one"}, {Role: "assistant", Content: "re: one"},
		{Role: "user", Content: "two"}, {Role: "assistant", Content: "re: two"}}
	if diff := cmp.Diff(want, pc.History); diff != "" {
		t.Fatalf("history (-want +got):\n%s", diff)
	}
	if pc.ThreadID != "th-1" {
		t.Fatalf("thread %q", pc.ThreadID)
	}
}

func TestStreamingHealth(t *testing.T) {
	e := newEnv(t, nil, nil)
	var h struct {
		Healthy bool
		Status  string
	}
	if st := e.do("GET", gateway.StreamingHealthPath, "", nil, &h); st != 200 || !h.Healthy || h.Status != "ok" {
		t.Fatalf("health: %d %+v", st, h)
	}
	_ = e.svc.Shutdown(context.Background())
	if st := e.do("GET", gateway.StreamingHealthPath, "", nil, &h); st != 503 || h.Healthy {
		t.Fatalf("health while shutting down: %d %+v", st, h)
	}
}

// An SDK agent's platform events (tool.call, tool.result) reach the run's
// events by name, in order, before its ending.
func TestPlatformEventsPassThrough(t *testing.T) {
	a := agent.New("tools", "1", nil)
	a.MustRegister(agent.Skill{ID: "t", Handler: func(c *agent.Context) (agent.Result, error) {
		if err := c.PlatformEvent("tool.call", map[string]any{"tool": "search", "call_id": "c1"}); err != nil {
			return agent.Result{}, err
		}
		if err := c.PlatformEvent("tool.result", map[string]any{"call_id": "c1", "hits": 2}); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: "found 2"}, nil
	}})
	e := newEnv(t, hostedAgents{"tools": sdkAgent(t, a)}, nil)
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("tools", "tools", nil), Input: "search"})
	evs := e.events(userTok, run, "", nil)
	got := types(evs)
	call, result := slices.Index(got, "tool.call"), slices.Index(got, "tool.result")
	if call < 0 || result < call || got[len(got)-1] != "done" {
		t.Fatalf("events %v", got)
	}
	if p := string(evs[result].Frame.Payload); !strings.Contains(p, `"hits":2`) || strings.Contains(p, `"event"`) {
		t.Fatalf("tool.result payload %s", p)
	}
}

// holdingStore counts a run's writes and holds the first that records a
// message.delta until released.
type holdingStore struct {
	gateway.Store
	mu      sync.Mutex
	writes  int
	held    bool
	release chan struct{}
}

func (h *holdingStore) WriteRun(ctx context.Context, w gateway.RunWrite) (gateway.Run, []gateway.Event, error) {
	h.mu.Lock()
	h.writes++
	hold := !h.held && slices.ContainsFunc(w.Events, func(e gateway.Event) bool { return e.Type == gateway.EventMessageDelta })
	h.held = h.held || hold
	h.mu.Unlock()
	if hold {
		<-h.release
	}
	return h.Store.WriteRun(ctx, w)
}

// Frames that arrive while a write is in flight are recorded together
// by the next write, and the last ones with the turn's ending: twenty
// chunks streamed during one slow write cost two writes more, not twenty.
func TestFramesRecordedTogether(t *testing.T) {
	const chunks = 20
	sent := make(chan struct{})
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){func(_ *a2a.SendMessageRequest, w *frameWriter) {
		w.status(a2a.TaskStateWorking, nil) // a frame with nothing to record
		for i := range chunks {
			w.text("a", strconv.Itoa(i)+" ", i > 0)
		}
		close(sent)
		w.status(a2a.TaskStateCompleted, nil)
	}}}
	st := &holdingStore{Store: gateway.NewMemoryStore(), release: make(chan struct{})}
	e := newEnvOn(t, st, hostedAgents{"a": sc}, nil)
	// The held write is let go once every frame has been read ahead
	// (the working status, the chunks, the ending, and the stream's
	// end), so that what the test counts is the recording, not how soon
	// the frames were read.
	var queued atomic.Int32
	allRead := make(chan struct{})
	execgw.SetQueueHook(e.svc, func() {
		if queued.Add(1) == chunks+2 {
			close(allRead)
		}
	})
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("a", "a", nil), Input: "q"})
	<-sent
	<-allRead
	close(st.release)
	r := e.waitStatus(run, gateway.StatusCompleted)
	st.mu.Lock()
	writes := st.writes
	st.mu.Unlock()
	// RUNNING, the held first chunk, the other chunks (with the ending
	// if it arrived in time), the ending.
	if writes > 4 {
		t.Fatalf("%d writes for %d chunks", writes, chunks)
	}
	var text strings.Builder
	for _, ev := range e.events(userTok, run, "", nil) {
		if ev.Frame.Type == gateway.EventMessageDelta {
			var p struct{ Content string }
			_ = json.Unmarshal(ev.Frame.Payload, &p)
			text.WriteString(p.Content)
		}
	}
	if want := r.Output; text.String() != want || !strings.HasPrefix(want, "0 1 2 ") || !strings.HasSuffix(want, "19 ") {
		t.Fatalf("streamed %q, output %q", text.String(), r.Output)
	}
}

// The platform context carries config, an output schema and history only
// when there are some; attachments go as file parts by URL or inline.
func TestPlatformContextParts(t *testing.T) {
	done := func(_ *a2a.SendMessageRequest, w *frameWriter) {
		w.status(a2a.TaskStateCompleted, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("ok")))
	}
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){done, done, done, done, done}}
	e := newEnv(t, hostedAgents{"a": sc}, nil)
	plain := e.install("plain", "a", nil)
	configured := e.install("configured", "a", map[string]any{"config": map[string]any{"model": "m"},
		"scopes": []string{"memory:read:*", "mcp:tools:novaos.memory.query"}})
	writer := e.install("writer", "a", map[string]any{"scopes": []string{"mcp:tools:novaos.notify.webhook"}})
	every := e.install("every", "a", map[string]any{"scopes": []string{"mcp:*"}})
	e.waitStatus(e.execute(userTok, gateway.ExecuteRequest{InstanceID: plain, Input: "q", ThreadID: "th-1",
		Attachments: []gateway.Attachment{
			{URL: "https://example.com/a.pdf", Name: "a.pdf", Type: "application/pdf"},
			{Data: []byte("hi"), Name: "b.txt", Type: "text/plain"},
		}}), gateway.StatusCompleted)
	e.waitStatus(e.execute(userTok, gateway.ExecuteRequest{InstanceID: configured, Input: "q",
		OutputSchema: map[string]any{"type": "object"}}), gateway.StatusCompleted)

	e.waitStatus(e.execute(userTok, gateway.ExecuteRequest{InstanceID: writer, Input: "q"}), gateway.StatusCompleted)
	e.waitStatus(e.execute(userTok, gateway.ExecuteRequest{InstanceID: every, Input: "q"}), gateway.StatusCompleted)
	e.waitStatus(e.execute(serviceTok, gateway.ExecuteRequest{InstanceID: every, Input: "q"}), gateway.StatusCompleted)

	pc := func(i int) map[string]any { return sc.call(i).Metadata[agent.ContextMetadataKey].(map[string]any) }
	first, second := pc(0), pc(1)
	// The tool gateway: its endpoint and the run's own token, and whether
	// the token may call a tool the gateway holds for a person (never for
	// a service account's run).
	for i, wantHITL := range []bool{false, false, true, true, false} {
		c := pc(i)
		if c["mcp_gateway_url"] != "http://gateway.test"+tools.Path || c["mcp_gateway_token"] != c["execution_token"] || c["execution_token"] == "" {
			t.Errorf("run %d: tool gateway %v with token present %v", i, c["mcp_gateway_url"], c["mcp_gateway_token"] != nil)
		}
		if c["mcp_write_hitl_active"] != wantHITL {
			t.Errorf("run %d: mcp_write_hitl_active %v, want %v", i, c["mcp_write_hitl_active"], wantHITL)
		}
		if parsed := platform(t, sc.call(i)); parsed.MCPGatewayURL != "http://gateway.test"+tools.Path || parsed.MCPWriteHITLActive != wantHITL {
			t.Errorf("run %d: the agent reads %q, %v", i, parsed.MCPGatewayURL, parsed.MCPWriteHITLActive)
		}
	}
	for _, k := range []string{"config", "output_schema", "history"} {
		if _, ok := first[k]; ok {
			t.Errorf("the first run's context has %s: %v", k, first[k])
		}
	}
	if cfg, _ := second["config"].(map[string]any); cfg["model"] != "m" {
		t.Errorf("config %v", second["config"])
	}
	if schema, _ := second["output_schema"].(map[string]any); schema["type"] != "object" {
		t.Errorf("output schema %v", second["output_schema"])
	}
	parts := sc.call(0).Message.Parts
	if len(parts) != 3 || parts[0].Text != "q" ||
		parts[1].URL != "https://example.com/a.pdf" || parts[1].Filename != "a.pdf" || parts[1].MediaType != "application/pdf" ||
		string(parts[2].Raw) != "hi" || parts[2].URL != "" || parts[2].Filename != "b.txt" {
		t.Errorf("parts %+v", parts)
	}
}
