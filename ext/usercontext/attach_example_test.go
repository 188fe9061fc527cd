package usercontext_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/usercontext"
)

// The sealing side sends a run's secrets to an agent with one call: seal
// into the request, then send it activating the extension.
func ExampleSealRequest() {
	ctx := context.Background()
	key, _ := usercontext.GenerateKey() // the agent's key; the caller holds only key.Recipient()
	a := agent.New("mailer", "1.0.0", &agent.Options{KeyRing: usercontext.StaticKeyRing(key)})
	a.MustRegister(agent.Skill{ID: "send", Handler: func(c *agent.Context) (agent.Result, error) {
		pw, err := c.GetSecret("SMTP_PASSWORD")
		if err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: fmt.Sprintf("run %s: a %d-character password", c.RunID(), len(pw.Reveal()))}, nil
	}})
	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = a.Handler(srv.URL, nil)

	client, err := a2aclient.NewFromURL(ctx, srv.URL, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	req := a2aclient.TextRequest("send the report", "", "")
	run := usercontext.Run{TenantID: "acme", InstanceID: "mailer-1", RunID: "run-42"}
	act, err := usercontext.SealRequest(req, key.Recipient(), run, map[string]usercontext.Secret{
		"SMTP_PASSWORD": usercontext.NewSecret("hunter2"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := client.SendMessage(ctx, req, a2aclient.WithExtensions(act.Extensions...))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Task.Status.State, res.Task.Status.Message.Text())
	// Output:
	// TASK_STATE_COMPLETED run run-42: a 7-character password
}
