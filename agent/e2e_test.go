package agent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/internal/schematest"
)

// endpoint serves a through a2asrv on an httptest server.
func endpoint(t *testing.T, a *agent.Agent) string {
	t.Helper()
	srv := httptest.NewServer(nil)
	srv.Config.Handler = a.Handler(srv.URL, nil)
	t.Cleanup(srv.Close)
	return srv.URL
}

// rpc posts one JSON-RPC call with extra headers and returns its result or
// error.
func rpc(t *testing.T, url, method string, params any, header http.Header) (json.RawMessage, *a2a.Error) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	env, err := a2a.DecodeResponse(raw)
	if err != nil {
		t.Fatalf("%s: %v: %s", method, err, raw)
	}
	return env.Result, env.Error
}

func sendTask(t *testing.T, url string, req a2a.SendMessageRequest, header http.Header) *a2a.Task {
	t.Helper()
	res, e := rpc(t, url, "SendMessage", req, header)
	if e != nil {
		t.Fatalf("SendMessage: %v", e)
	}
	schematest.Validate(t, "Send Message Response", res)
	var out a2a.SendMessageResponse
	if err := a2a.Unmarshal(res, &out); err != nil || out.Task == nil {
		t.Fatalf("SendMessage answered %s (%v), want a task", res, err)
	}
	return out.Task
}

func userMsg(text string, md map[string]any) *a2a.Message {
	m := a2a.NewMessage(a2a.RoleUser, a2a.TextPart(text))
	m.Metadata = md
	return m
}

func TestEndToEndContext(t *testing.T) {
	const ext = "https://example.com/ext/budget/v1"
	a := agent.New("ctx", "1", &agent.Options{Extensions: []a2a.AgentExtension{{URI: ext}}})
	a.MustRegister(agent.Skill{ID: "inspect", Handler: func(c *agent.Context) (agent.Result, error) {
		budget, _ := c.Extensions().Value(ext)
		return agent.Result{Output: map[string]any{
			"input": c.Input(), "run": c.RunID(), "tenant": c.Tenant(), "idem": c.IdempotencyKey(),
			"history": c.History(), "trace": c.TraceID(), "headers": c.CustomHeaders(),
			"budget": budget, "active": c.Extensions().IsActive(ext), "task": c.TaskID() != "",
		}}, nil
	}})
	url := endpoint(t, a)
	header := http.Header{}
	header.Set("X-Customer-Id", "cust-1")
	header.Set("Authorization", "Bearer not-for-skills")
	header.Set("X-NovaOS-Run-Id", "spoofed")
	header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	header.Set(a2a.HeaderExtensions, ext)
	task := sendTask(t, url, a2a.SendMessageRequest{
		Message: userMsg("look", nil),
		Metadata: map[string]any{
			agent.ContextMetadataKey: map[string]any{
				"run_id": "run-1", "tenant_id": "acme", "idempotency_key": "idem-1",
				"history": []any{map[string]any{"role": "user", "content": "before"}},
			},
			ext: 12,
		},
	}, header)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("state = %v: %s", task.Status.State, task.Status.Message.Text())
	}
	var got map[string]any
	if err := json.Unmarshal(task.Artifacts[0].Parts[0].Data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"input": "look", "run": "run-1", "tenant": "acme", "idem": "idem-1",
		"history": []any{map[string]any{"role": "user", "content": "before"}},
		"trace":   "4bf92f3577b34da6a3ce929d0e0e4736",
		"budget":  12.0, "active": true, "task": true,
	}
	headers, _ := got["headers"].(map[string]any)
	delete(got, "headers")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("context seen by the skill (-want +got):\n%s", diff)
	}
	if headers["x-customer-id"] != "cust-1" {
		t.Errorf("custom headers = %v, want x-customer-id", headers)
	}
	for name := range headers {
		if !agent.IsSafeCustomHeader(name) {
			t.Errorf("unsafe header %q reached the skill", name)
		}
	}
}

func TestEndToEndOutcomes(t *testing.T) {
	cancelled := make(chan bool, 1)
	slowStarted := make(chan struct{}, 1)
	a := agent.New("outcomes", "1", nil)
	a.MustRegister(agent.Skill{ID: "panic", Handler: func(c *agent.Context) (agent.Result, error) { panic("boom") }})
	a.MustRegister(agent.Skill{ID: "ask", Handler: func(c *agent.Context) (agent.Result, error) {
		if c.Request().Task != nil {
			return agent.Result{Output: "got " + c.Input()}, nil
		}
		return agent.Result{Status: agent.StatusWaitingUser, Output: "which colour?"}, nil
	}})
	a.MustRegister(agent.Skill{ID: "slow", Handler: func(c *agent.Context) (agent.Result, error) {
		slowStarted <- struct{}{}
		<-c.Done()
		cancelled <- c.IsCancelled()
		return agent.Result{}, c.Err()
	}})
	a.MustRegister(agent.Skill{ID: "png", OutputModes: []string{"image/png"}, Handler: func(c *agent.Context) (agent.Result, error) {
		return agent.Result{Output: []byte{0x89}}, nil
	}})
	url := endpoint(t, a)
	skill := func(id string) map[string]any { return map[string]any{agent.SkillIDMetadataKey: id} }

	t.Run("panic fails the task and the server lives on", func(t *testing.T) {
		for range 2 {
			task := sendTask(t, url, a2a.SendMessageRequest{Message: userMsg("x", skill("panic"))}, nil)
			if task.Status.State != a2a.TaskStateFailed || task.Status.Message.Parts[0].Text != "panic: boom" {
				t.Errorf("task = %v %q, want FAILED \"panic: boom\"", task.Status.State, task.Status.Message.Text())
			}
		}
	})
	t.Run("unknown skill is rejected", func(t *testing.T) {
		task := sendTask(t, url, a2a.SendMessageRequest{Message: userMsg("x", skill("nope"))}, nil)
		if task.Status.State != a2a.TaskStateRejected || !strings.Contains(task.Status.Message.Text(), `unknown skill "nope"`) {
			t.Errorf("task = %v %q", task.Status.State, task.Status.Message.Text())
		}
	})
	t.Run("pause and continue", func(t *testing.T) {
		first := sendTask(t, url, a2a.SendMessageRequest{Message: userMsg("paint", skill("ask"))}, nil)
		if first.Status.State != a2a.TaskStateInputRequired || first.Status.Message.Text() != "which colour?" {
			t.Fatalf("first = %v %q", first.Status.State, first.Status.Message.Text())
		}
		follow := userMsg("blue", nil) // no skillId: the task's skill is reused
		follow.TaskID, follow.ContextID = first.ID, first.ContextID
		second := sendTask(t, url, a2a.SendMessageRequest{Message: follow}, nil)
		if second.ID != first.ID || second.Status.State != a2a.TaskStateCompleted || second.Status.Message.Text() != "got blue" {
			t.Errorf("second = %s %v %q", second.ID, second.Status.State, second.Status.Message.Text())
		}
	})
	t.Run("no acceptable output mode", func(t *testing.T) {
		_, e := rpc(t, url, "SendMessage", a2a.SendMessageRequest{
			Message:       userMsg("x", skill("png")),
			Configuration: &a2a.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}},
		}, nil)
		if e == nil || e.Code != a2a.CodeContentTypeNotSupported {
			t.Errorf("error = %v, want ContentTypeNotSupported", e)
		}
	})
	t.Run("CancelTask reaches the skill", func(t *testing.T) {
		task := sendTask(t, url, a2a.SendMessageRequest{
			Message:       userMsg("x", skill("slow")),
			Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true},
		}, nil)
		// Cancel once the skill runs: a task cancelled before its skill
		// starts never starts it, which is right but not what this checks.
		select {
		case <-slowStarted:
		case <-time.After(5 * time.Second):
			t.Fatal("the skill never started")
		}
		res, e := rpc(t, url, "CancelTask", a2a.CancelTaskRequest{ID: task.ID}, nil)
		if e != nil {
			t.Fatalf("CancelTask: %v", e)
		}
		var got a2a.Task
		if err := a2a.Unmarshal(res, &got); err != nil || got.Status.State != a2a.TaskStateCanceled {
			t.Errorf("CancelTask answered %s (%v)", res, err)
		}
		select {
		case saw := <-cancelled:
			if !saw {
				t.Error("IsCancelled = false in a skill stopped by CancelTask")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the skill never saw the cancellation")
		}
	})
}
