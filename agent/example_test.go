package agent_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
)

// An agent with one skill, served over A2A JSON-RPC and called with a
// plain HTTP request.
func Example() {
	a := agent.New("greeter", "1.0.0", &agent.Options{Description: "Says hello"})
	a.MustRegister(agent.Skill{
		ID:          "greet",
		Description: "Greets the caller by name",
		Handler: func(c *agent.Context) (agent.Result, error) {
			c.Logger().Info("greeting", "name", c.Input())
			return agent.Result{Output: "Hello, " + c.Input() + "!"}, nil
		},
	})

	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = a.Handler(srv.URL, nil)

	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{
		"messageId":"m1","role":"ROLE_USER","parts":[{"text":"Ada"}],"metadata":{"skillId":"greet"}}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	env, err := a2a.DecodeResponse(raw)
	if err != nil {
		fmt.Println(err)
		return
	}
	var out a2a.SendMessageResponse
	if err := a2a.Unmarshal(env.Result, &out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Task.Status.State, out.Task.Status.Message.Text())
	// Output: TASK_STATE_COMPLETED Hello, Ada!
}

func ExampleAgent_Card() {
	a := agent.New("helper", "2.0.0", nil)
	noop := func(c *agent.Context) (agent.Result, error) { return agent.Result{}, nil }
	a.MustRegister(agent.Skill{ID: "search", Name: "Search", Tags: []string{"web"}, Handler: noop})
	a.MustRegister(agent.Skill{Name: "summarize", Handler: noop}) // id defaults to the name
	for _, s := range a.Card().Skills {
		fmt.Println(s.ID, s.Name, s.Tags)
	}
	// Output:
	// search Search [web]
	// summarize summarize []
}

func ExampleStatusState() {
	for _, s := range []string{"", "WAITING_USER", "IN_PROGRESS", "ERROR", "done"} {
		state, ok := agent.StatusState(s)
		fmt.Printf("%q %v %v\n", s, state, ok)
	}
	// Output:
	// "" TASK_STATE_COMPLETED true
	// "WAITING_USER" TASK_STATE_INPUT_REQUIRED true
	// "IN_PROGRESS" TASK_STATE_WORKING true
	// "ERROR" TASK_STATE_FAILED true
	// "done" TASK_STATE_UNSPECIFIED false
}

func ExampleParsePlatformContext() {
	requestMetadata := map[string]any{agent.ContextMetadataKey: map[string]any{
		"run_id":          "run-42",
		"tenant_id":       "acme",
		"idempotency_key": "run-42/1",
		"history":         []any{map[string]any{"role": "user", "content": "Hi"}, map[string]any{"role": "assistant", "content": "Hello!"}},
	}}
	pc, ok := agent.ParsePlatformContext(requestMetadata, nil)
	fmt.Println(ok, pc.RunID, pc.TenantID, pc.IdempotencyKey, len(pc.History), pc.History[1].Content)
	// Output: true run-42 acme run-42/1 2 Hello!
}

func ExampleIsSafeCustomHeader() {
	for _, h := range []string{"X-Customer-Id", "Authorization", "X-NovaOS-Run-Id", "traceparent"} {
		fmt.Println(h, agent.IsSafeCustomHeader(h))
	}
	// Output:
	// X-Customer-Id true
	// Authorization false
	// X-NovaOS-Run-Id false
	// traceparent false
}

// A skill that streams its answer as artifact chunks, read by a client of
// SendStreamingMessage.
func ExampleUpdater() {
	a := agent.New("counter", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "count", Handler: func(c *agent.Context) (agent.Result, error) {
		u := c.Updater()
		for i, chunk := range []string{"one ", "two ", "three"} {
			art := a2a.Artifact{ArtifactID: "count", Parts: []a2a.Part{a2a.TextPart(chunk)}}
			if err := u.AppendArtifact(c, art, i == 2); err != nil {
				return agent.Result{}, err
			}
		}
		return agent.Result{}, nil // COMPLETED, nothing more to say
	}})

	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = a.Handler(srv.URL, nil)

	body := `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{
		"messageId":"m1","role":"ROLE_USER","parts":[{"text":"count"}]}}}`
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
			break // io.EOF: the server closed the stream after the final frame
		}
		env, _ := a2a.DecodeResponse(ev.Data)
		var frame a2a.StreamResponse
		if err := a2a.Unmarshal(env.Result, &frame); err != nil {
			fmt.Println(err)
			return
		}
		switch {
		case frame.Task != nil:
			fmt.Println("task", frame.Task.Status.State)
		case frame.ArtifactUpdate != nil:
			u := frame.ArtifactUpdate
			fmt.Printf("chunk %q append=%v last=%v\n", a2a.PartsText(u.Artifact.Parts), u.Append, u.LastChunk)
		case frame.StatusUpdate != nil:
			fmt.Println("status", frame.StatusUpdate.Status.State)
		}
	}
	// Output:
	// task TASK_STATE_WORKING
	// chunk "one " append=false last=false
	// chunk "two " append=true last=false
	// chunk "three" append=true last=true
	// status TASK_STATE_COMPLETED
}
