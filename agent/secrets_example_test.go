package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/usercontext"
)

// A skill reads a secret the platform sealed for this run. Here the
// platform's half (sealing to the agent's public key) is done inline.
func ExampleContext_GetSecret() {
	key, _ := usercontext.GenerateKey() // normally a {kid}.jwk file: usercontext.NewKeyRing(dir)
	a := agent.New("mailer", "1.0.0", &agent.Options{KeyRing: usercontext.StaticKeyRing(key)})
	a.MustRegister(agent.Skill{ID: "send", Handler: func(c *agent.Context) (agent.Result, error) {
		pw, err := c.GetSecret("SMTP_PASSWORD")
		if err != nil {
			return agent.Result{}, err
		}
		fmt.Println("delivered:", c.SecretNames(), "value:", pw) // redacted
		return agent.Result{Output: fmt.Sprintf("logged in with a %d-character password", len(pw.Reveal()))}, nil
	}})
	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = a.Handler(srv.URL, nil)

	// The platform seals for one run and names the run in its context.
	run := usercontext.Run{TenantID: "acme", InstanceID: "mailer-1", RunID: "run-42"}
	payload, _ := usercontext.SealPayload(key.Recipient(), run, map[string]usercontext.Secret{
		"SMTP_PASSWORD": usercontext.NewSecret("hunter2"),
	})
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{
		"message": map[string]any{"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "send"}}},
		"metadata": map[string]any{
			agent.ContextMetadataKey: map[string]any{"tenant_id": "acme", "instance_id": "mailer-1", "run_id": "run-42"},
			usercontext.URI:          payload,
		},
	}})
	req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	req.Header.Set(a2a.HeaderExtensions, usercontext.URI) // activates the extension
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	env, _ := a2a.DecodeResponse(raw)
	var out a2a.SendMessageResponse
	if err := a2a.Unmarshal(env.Result, &out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Task.Status.State, out.Task.Status.Message.Text())
	// Output:
	// delivered: [SMTP_PASSWORD] value: [REDACTED]
	// TASK_STATE_COMPLETED logged in with a 7-character password
}
