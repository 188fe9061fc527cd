package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// gateway is a stand-in for the platform's tool gateway: one tool that
// greets, one write-class tool it holds for a person.
func gateway() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     int64  `json:"id"`
			Method string `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		answer := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		switch {
		case req.Method == "tools/list":
			answer["result"] = map[string]any{"tools": []any{
				map[string]any{"name": "novaos.demo.greet", "description": "Greet someone"},
				map[string]any{"name": "novaos.notify.webhook", "description": "Post a webhook"},
			}}
		case req.Params.Name == "novaos.demo.greet":
			var in struct{ Name string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			answer["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "Hello, " + in.Name + "!"}}}
		default:
			answer["error"] = map[string]any{"code": tools.CodeWriteConfirmationRequired, "message": "a person must approve this call",
				"data": tools.WriteConfirmationData{Code: tools.ReasonHITLRequired, CallID: "call-1", ToolName: req.Params.Name}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
}

func ExampleClient() {
	gw := gateway()
	defer gw.Close()
	ctx := context.Background()

	c, err := tools.NewClient(gw.URL, secret.New("execution-token"), &tools.ClientOptions{TenantID: "acme"})
	if err != nil {
		panic(err)
	}
	list, err := c.ListTools(ctx, "greet")
	if err != nil {
		panic(err)
	}
	for _, t := range list {
		fmt.Println("tool:", t.Name)
	}
	res, err := c.CallTool(ctx, "novaos.demo.greet", map[string]string{"name": "Ada"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text())

	_, err = c.CallTool(ctx, "novaos.notify.webhook", map[string]string{"url": "https://hooks.example.com/x"})
	var held *tools.WriteConfirmationRequired
	if errors.As(err, &held) {
		fmt.Println("held:", held.Data.CallID, held.Data.ToolName)
	}
	// Output:
	// tool: novaos.demo.greet
	// Hello, Ada!
	// held: call-1 novaos.notify.webhook
}

// A skill calls tools as its agent: From reads the gateway, the token
// and the tenant from the execution, and a call the gateway holds for a
// person pauses the task until the person decides.
func ExampleFrom() {
	skill := func(c *agent.Context) (agent.Result, error) {
		b, err := tools.From(c, nil)
		if err != nil {
			return agent.Result{}, err
		}
		hits, err := b.Knowledge.Search(c, &tools.KnowledgeSearchRequest{Query: "refund policy"})
		if err != nil {
			return agent.Result{}, err
		}
		_, err = b.Notify.Webhook(c, "https://hooks.example.com/refunds", map[string]any{"hits": hits.Data})
		if held, ok := errors.AsType[*tools.WriteConfirmationRequired](err); ok {
			status, output := held.Pause("") // AUTH_REQUIRED until a person approves
			return agent.Result{Status: status, Output: output}, nil
		}
		if err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: "sent"}, nil
	}
	a := agent.New("refunds", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "notify", Handler: skill})
}
