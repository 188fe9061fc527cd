package llm_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/secret"
)

// A skill passes its *agent.Context to From.
var _ llm.Execution = (*agent.Context)(nil)

// A skill reaches the gateway with nothing but its execution: the base
// URL comes from the platform context's gateway_url, the token and the
// correlation headers from the execution, the trace context from the
// platform's.
func TestFromInASkill(t *testing.T) {
	p := llmtest.NewServer(&llmtest.Options{APIKey: token})
	defer p.Close()

	a := agent.New("writer", "1.0.0", nil)
	if err := a.Register(agent.Skill{ID: "ask", Handler: func(c *agent.Context) (agent.Result, error) {
		lc, err := llm.From(c, nil)
		if err != nil {
			return agent.Result{}, err
		}
		s, err := lc.ChatCompletionStream(c, &llm.ChatCompletionRequest{Model: llmtest.ModelChat, Messages: userMessage(c.Input())})
		if err != nil {
			return agent.Result{}, err
		}
		defer s.Close()
		var b strings.Builder
		for s.Next() {
			b.WriteString(s.Chunk().Text())
		}
		return agent.Result{Output: b.String()}, s.Err()
	}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = a.Handler(srv.URL, nil)

	const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	md := map[string]any{agent.ContextMetadataKey: map[string]any{
		"run_id": "run-9", "tenant_id": "acme", "user_id": "u1", "agent_id": "writer", "instance_id": "inst-1",
		"execution_token": token, "gateway_url": p.URL + "/", "traceparent": traceparent,
	}}
	cl, err := a2aclient.NewForURL(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cl.SendMessage(context.Background(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.RoleUser, a2a.TextPart("write a haiku")), Metadata: md,
	})
	if err != nil || resp.Task == nil {
		t.Fatalf("send: %+v, %v", resp, err)
	}
	if resp.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task %s: %+v", resp.Task.Status.State, resp.Task.Status.Message)
	}
	if got := resp.Task.Artifacts[0].Parts[0].Text; got != "write a haiku" {
		t.Errorf("skill answered %q", got)
	}
	last := p.LastRequest()
	want := map[string]string{
		"Authorization": "Bearer " + token, identity.HeaderRunID: "run-9", identity.HeaderTenantID: "acme",
		identity.HeaderUserID: "u1", identity.HeaderAgentID: "writer", identity.HeaderInstanceID: "inst-1",
		identity.HeaderExecutionToken: "", "traceparent": traceparent,
	}
	for k, v := range want {
		if got := last.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
}

// execution is an Execution outside an agent.
type execution struct {
	token, gateway string
}

func (e execution) ExecutionToken() (secret.Value, error) {
	if e.token == "" {
		return secret.Value{}, identity.ErrNoToken
	}
	return secret.New(e.token), nil
}
func (e execution) GatewayURL() string { return e.gateway }
func (e execution) CorrelationHeaders() map[string]string {
	return map[string]string{identity.HeaderRunID: "run-1"}
}
func (e execution) Traceparent() string { return "" }

func TestFromFindsTheGateway(t *testing.T) {
	tests := []struct {
		name    string
		exec    execution
		env     string
		base    string
		want    string
		wantErr error
	}{
		{"gateway_url", execution{token: token, gateway: "http://platform:8080"}, "", "", "http://platform:8080/v1", nil},
		{"environment first", execution{token: token, gateway: "http://platform:8080"}, "http://llm:4000/v1", "", "http://llm:4000/v1", nil},
		{"options first", execution{token: token, gateway: "http://platform:8080"}, "http://llm:4000/v1", "http://mine/v1/", "http://mine/v1", nil},
		{"no token", execution{gateway: "http://platform:8080"}, "", "", "", identity.ErrNoToken},
		{"no URL", execution{token: token}, "", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(llm.GatewayURLEnv, tt.env)
			c, err := llm.From(tt.exec, &llm.FromOptions{BaseURL: tt.base})
			noToken(t, err)
			if tt.want == "" {
				if err == nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.BaseURL() != tt.want {
				t.Errorf("base URL %q, want %q", c.BaseURL(), tt.want)
			}
		})
	}
}
