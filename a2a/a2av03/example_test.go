package a2av03_test

import (
	"fmt"
	"os"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
)

// A server answers a 0.3 call by running the v1 method it maps to:
// DecodeRequest gives the v1 request, EncodeResult the 0.3 result.
func Example() {
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"hello"}]},"configuration":{"blocking":false}}}`)
	req, e := a2a.DecodeRequest(body)
	if e != nil {
		fmt.Println(e)
		return
	}
	v1Method, params, e := a2av03.DecodeRequest(req.Method, req.Params)
	if e != nil {
		os.Stdout.Write(a2a.AppendErrorResponse(nil, req.ID, e))
		return
	}
	send := params.(*a2a.SendMessageRequest)
	fmt.Println(v1Method, send.Message.Role, send.Message.Text(), send.Configuration.ReturnImmediately)

	// The v1 method's answer, written for the 0.3 caller.
	task := &a2a.Task{ID: "t-1", ContextID: "c-1", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}
	result, err := a2av03.EncodeResult(&a2a.SendMessageResponse{Task: task})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(a2a.AppendResult(nil, req.ID, result)))

	// A stream frame: a status update says final when a v1 stream would
	// end there.
	frame, _ := a2av03.EncodeResult(&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
		TaskID: "t-1", ContextID: "c-1", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired},
	}})
	fmt.Println(string(frame))
	// Output:
	// SendMessage ROLE_USER hello true
	// {"jsonrpc":"2.0","id":7,"result":{"id":"t-1","contextId":"c-1","status":{"state":"submitted"},"kind":"task"}}
	// {"taskId":"t-1","contextId":"c-1","status":{"state":"input-required"},"final":true,"kind":"status-update"}
}

// A client talks to an agent whose card says 0.3: ParseCard reads either
// card version, EncodeRequest gives the 0.3 call, DecodeResult reads the
// answer as v1.
func ExampleEncodeRequest() {
	card, err := a2av03.ParseCard([]byte(`{"protocolVersion":"0.3.0","name":"old agent","url":"https://old.example.com/rpc","preferredTransport":"JSONRPC","version":"1","capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(card.SupportedInterfaces[0].URL, card.SupportedInterfaces[0].ProtocolVersion)

	method, params, err := a2av03.EncodeRequest(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: "t-1"})
	fmt.Println(method, params, err)

	answer := []byte(`{"kind":"task","id":"t-1","contextId":"c-1","status":{"state":"completed","timestamp":"2025-06-01T10:00:00Z"}}`)
	v1, err := a2av03.DecodeResult(a2a.MethodGetTask, answer)
	if err != nil {
		fmt.Println(err)
		return
	}
	task := v1.(*a2a.Task)
	fmt.Println(task.Status.State, task.Status.Timestamp.Format(a2a.TimestampLayout))
	// Output:
	// https://old.example.com/rpc 0.3.0
	// tasks/get &{t-1 <nil> map[]} <nil>
	// TASK_STATE_COMPLETED 2025-06-01T10:00:00.000Z
}
