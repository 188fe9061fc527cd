package a2a_test

import (
	"encoding/json"
	"fmt"
	"os"

	"novaos.dev/novaos/a2a"
)

// A client builds a message and sends it as SendMessage params; a task
// written by a peer that uses proto field names and v0.3 enum spellings
// still reads into the same types.
func Example() {
	msg := &a2a.Message{MessageID: "m-1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("What is 2 + 2?")}}
	params, err := json.Marshal(a2a.SendMessageRequest{Message: msg})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(params))

	reply := []byte(`{
		"id": "t-1", "context_id": "c-1",
		"status": {"state": "completed", "timestamp": "2026-05-01T12:00:00.123456+02:00"},
		"artifacts": [{"artifact_id": "a-1", "parts": [{"text": "4", "media_type": "text/plain"}]}],
		"metadata": {"cost_usd": 0.002}
	}`)
	var task a2a.Task
	if err := a2a.Unmarshal(reply, &task); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.Status.State, task.Status.State.Terminal(), a2a.PartsText(task.Artifacts[0].Parts))

	out, err := a2a.AppendTask(nil, &task)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))
	// Output:
	// {"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"What is 2 + 2?"}]}}
	// TASK_STATE_COMPLETED true 4
	// {"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-05-01T10:00:00.123Z"},"artifacts":[{"artifactId":"a-1","parts":[{"text":"4","mediaType":"text/plain"}]}],"metadata":{"cost_usd":0.002}}
}

// Servers answer a JSON-RPC request by decoding the envelope, reading the
// params tolerantly and appending the response to a reused buffer.
func ExampleDecodeRequest() {
	body := []byte(`{"jsonrpc":"2.0","id":"req-7","method":"GetTask","params":{"id":"t-1","history_length":0}}`)
	req, rpcErr := a2a.DecodeRequest(body)
	if rpcErr != nil {
		os.Stdout.Write(a2a.AppendErrorResponse(nil, req.ID, rpcErr))
		return
	}
	var p a2a.GetTaskRequest
	if e := a2a.DecodeParams(req.Params, &p); e != nil {
		os.Stdout.Write(a2a.AppendErrorResponse(nil, req.ID, e))
		return
	}
	fmt.Println(req.Method, p.ID, *p.HistoryLength)

	_, rpcErr = a2a.DecodeRequest([]byte(`{"jsonrpc":"2.0","id":8,"method":"GetTask","params":[1]}`))
	fmt.Println(string(a2a.AppendErrorResponse(nil, json.RawMessage(`8`), rpcErr)))
	// Output:
	// GetTask t-1 0
	// {"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"params must be an object","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_PARAMS","domain":"a2a-protocol.org"}]}}
}

// Streams are framed as server-sent events, one JSON-RPC response per event.
func ExampleAppendEvent() {
	frame, _ := a2a.AppendStreamResponse(nil, &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
		TaskID: "t-1", ContextID: "c-1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
	}})
	stream := a2a.AppendEvent(nil, a2a.Event{Data: a2a.AppendResult(nil, json.RawMessage(`1`), frame)})
	os.Stdout.Write(stream)
	// Output:
	// data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}}
}
