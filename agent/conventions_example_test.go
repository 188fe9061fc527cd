package agent_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/conventions"
	"novaos.dev/novaos/ext/cost"
	"novaos.dev/novaos/ext/toolcall"
)

// A skill reports a tool call and what the run cost; a streaming client
// sees the tool call live on status frames and the cost on the result
// artifact.
func ExampleContext_StartToolCall() {
	a := agent.New("triage", "1.0.0", &agent.Options{
		Extensions: conventions.Declarations([]string{toolcall.URI, cost.URI}),
	})
	a.MustRegister(agent.Skill{ID: "file_bug", Handler: func(c *agent.Context) (agent.Result, error) {
		call, err := c.StartToolCall("call_1", "tracker.create", map[string]any{"title": c.Input()})
		if err != nil {
			return agent.Result{}, err
		}
		if err := call.Complete("BUG-12"); err != nil {
			return agent.Result{}, err
		}
		if err := c.ReportCost(cost.Payload{Usage: cost.Usage{InputTokens: 1500, OutputTokens: 420}}); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: "filed BUG-12"}, nil
	}})

	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = a.Handler(srv.URL, nil)

	body := `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{
		"messageId":"m1","role":"ROLE_USER","parts":[{"text":"login page crashes"}]}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	events := a2a.NewEventReader(resp.Body, 0)
	for {
		ev, err := events.Next()
		if err != nil {
			break
		}
		env, _ := a2a.DecodeResponse(ev.Data)
		var frame a2a.StreamResponse
		if err := a2a.Unmarshal(env.Result, &frame); err != nil {
			fmt.Println(err)
			return
		}
		switch {
		case frame.StatusUpdate != nil && frame.StatusUpdate.Status.Message != nil:
			if p, ok, _ := toolcall.Parse(frame.StatusUpdate.Status.Message.Metadata); ok {
				fmt.Println("tool", p.Name, p.Phase, p.Args, p.Result)
			} else {
				fmt.Println("status", frame.StatusUpdate.Status.State)
			}
		case frame.ArtifactUpdate != nil:
			if p, ok, _ := cost.Parse(frame.ArtifactUpdate.Artifact.Metadata); ok {
				fmt.Println("cost", p.Usage.InputTokens+p.Usage.OutputTokens, "tokens")
			}
		}
	}
	// Output:
	// tool tracker.create started map[title:login page crashes] <nil>
	// tool tracker.create completed <nil> BUG-12
	// cost 1920 tokens
	// status TASK_STATE_COMPLETED
}
