package schematest

import (
	"strings"
	"testing"
)

func TestCheckRequest(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		wantMethod string
		wantErr    string // substring; "" means valid
	}{
		{"send", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, "SendMessage", ""},
		{"streaming uses the send request", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"tenant":"a","message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, "SendStreamingMessage", ""},
		{"create push config takes the config", `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t","url":"https://h.example/"}}`, "CreateTaskPushNotificationConfig", ""},
		{"bad params", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":"x"}}`, "GetTask", "historyLength"},
		{"unknown params field", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"t","bogus":1}}`, "CancelTask", "bogus"},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, "message/send", "not an A2A method"},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`, "GetExtendedAgentCard", "no params"},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"t"}}`, "GetTask", "jsonrpc"},
		{"not JSON", `{"jsonrpc":`, "", "not a JSON-RPC request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method, err := CheckRequest([]byte(tc.body))
			if method != tc.wantMethod {
				t.Errorf("method = %q, want %q", method, tc.wantMethod)
			}
			wantErr(t, err, tc.wantErr)
		})
	}
}

func TestCheckResponse(t *testing.T) {
	const (
		task     = `{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}`
		errorObj = `{"code":-32001,"message":"task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND"}]}`
		sse      = "text/event-stream"
	)
	tests := []struct {
		name, method, contentType, body string
		wantErr                         string
	}{
		{"task", "GetTask", "application/json", `{"jsonrpc":"2.0","id":1,"result":` + task + `}`, ""},
		{"invalid task", "GetTask", "application/json", `{"jsonrpc":"2.0","id":1,"result":{"id":"t","status":{"state":"DONE"}}}`, "state"},
		{"send answers with a task", "SendMessage", "application/json", `{"jsonrpc":"2.0","id":1,"result":{"task":` + task + `}}`, ""},
		{"send must wrap the task", "SendMessage", "application/json", `{"jsonrpc":"2.0","id":1,"result":` + task + `}`, "Send Message Response"},
		{"error", "GetTask", "application/json", `{"jsonrpc":"2.0","id":1,"error":` + errorObj + `}`, ""},
		{"error without code", "GetTask", "application/json", `{"jsonrpc":"2.0","id":1,"error":{"message":"x"}}`, "code"},
		{"error with a fractional code", "GetTask", "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`, "integer"},
		{"error detail without @type", "GetTask", "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"x","data":[{"reason":"R"}]}}`, "@type"},
		{"result and error", "GetTask", "application/json", `{"jsonrpc":"2.0","id":1,"result":` + task + `,"error":` + errorObj + `}`, "both"},
		{"neither", "GetTask", "application/json", `{"jsonrpc":"2.0","id":1}`, "neither"},
		{"null result for a task", "GetTask", "application/json", `{"jsonrpc":"2.0","id":1,"result":null}`, "Task"},
		{"delete returns null", "DeleteTaskPushNotificationConfig", "application/json", `{"jsonrpc":"2.0","id":1,"result":null}`, ""},
		{"delete returns {}", "DeleteTaskPushNotificationConfig", "application/json", `{"jsonrpc":"2.0","id":1,"result":{}}`, ""},
		{"delete returns something", "DeleteTaskPushNotificationConfig", "application/json", `{"jsonrpc":"2.0","id":1,"result":{"id":"x"}}`, "Empty"},
		{"stream", "SubscribeToTask", sse + "; charset=utf-8",
			"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":" + task + "}}\n\n: keep-alive\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\n" +
				"data: \"result\":{\"statusUpdate\":{\"taskId\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}}\n\n", ""},
		{"stream with an invalid event", "SendStreamingMessage", sse,
			"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":" + task + "}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"nope\":{}}}\n\n", "event 2"},
		{"stream ending in an error", "SubscribeToTask", sse, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":" + errorObj + "}\r\n\r\n", ""},
		{"empty stream", "SubscribeToTask", sse, ": keep-alive\n\n", "without an event"},
		{"unknown method", "tasks/get", "application/json", `{"jsonrpc":"2.0","id":1,"result":{}}`, "not an A2A method"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, CheckResponse(tc.method, tc.contentType, []byte(tc.body)), tc.wantErr)
		})
	}
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("err = %v, want none", err)
	case want != "" && err == nil:
		t.Fatalf("err = nil, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("err = %v, want one containing %q", err, want)
	}
}
