package a2aclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2asrv"
)

// A client built from the agent's card URL sends a message, streams
// another, and branches on a typed error.
func Example() {
	ctx := context.Background()
	srv := httptest.NewUnstartedServer(nil)
	card := &a2a.AgentCard{Name: "shout", Version: "1.0.0", Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true)}, SupportedInterfaces: []a2a.AgentInterface{
		{URL: "http://" + srv.Listener.Addr().String(), ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion},
	}}
	srv.Config.Handler = a2asrv.NewHandler(card, a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		reply := a2a.NewMessage(a2a.RoleAgent, a2a.TextPart(req.Message.Text()+"!"))
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, reply, nil)
	}), nil)
	srv.Start()
	defer srv.Close()

	c, err := a2aclient.NewFromURL(ctx, srv.URL, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.SendText(ctx, "hello", "", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Task.Status.State, res.Task.Status.Message.Text())

	for frame, err := range c.SendStreamingMessage(ctx, a2aclient.TextRequest("again", "", "")) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if frame.Final() {
			fmt.Println("final frame for task", frame.TaskID() != "")
		}
	}

	_, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"})
	fmt.Println(errors.Is(err, a2a.ErrTaskNotFound))
	// Output:
	// TASK_STATE_COMPLETED hello!
	// final frame for task true
	// true
}

// A card offering two bindings: the caller prefers HTTP+JSON, so the
// client posts to the REST interface's /message:send under its tenant.
func ExampleOptions_transports() {
	ctx := context.Background()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rest/acme/message:send", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/a2a+json")
		fmt.Fprint(w, `{"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"}}}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	card := &a2a.AgentCard{Name: "two-bindings", SupportedInterfaces: []a2a.AgentInterface{
		{URL: srv.URL + "/rpc", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"},
		{URL: srv.URL + "/rest", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "1.0", Tenant: "acme"},
	}}

	c, err := a2aclient.New(card, &a2aclient.Options{Transports: []string{a2a.BindingHTTPJSON, a2a.BindingJSONRPC}})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.SendText(ctx, "hello", "", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Binding(), c.Tenant(), res.Task.Status.State)
	// Output:
	// HTTP+JSON acme TASK_STATE_COMPLETED
}
