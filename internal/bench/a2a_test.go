package bench

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"novaos.dev/novaos/a2a"
)

func TestMessageBody(t *testing.T) {
	for _, method := range []string{a2a.MethodSendMessage, a2a.MethodSendStreamingMessage} {
		body := messageBody(method)
		first := body(nil)
		second := body(first[:0:0])
		req, rpcErr := a2a.DecodeRequest(first)
		if rpcErr != nil {
			t.Fatalf("%s: %v", method, rpcErr)
		}
		if req.Method != method {
			t.Errorf("method %q, want %q", req.Method, method)
		}
		var p1, p2 a2a.SendMessageRequest
		if err := a2a.DecodeParams(req.Params, &p1); err != nil {
			t.Fatal(err)
		}
		req2, _ := a2a.DecodeRequest(second)
		if err := a2a.DecodeParams(req2.Params, &p2); err != nil {
			t.Fatal(err)
		}
		if p1.Message.MessageID == "" || p1.Message.MessageID == p2.Message.MessageID {
			t.Errorf("message ids %q and %q are not fresh", p1.Message.MessageID, p2.Message.MessageID)
		}
		if p1.Message.Role != a2a.RoleUser || p1.Message.Text() == "" {
			t.Errorf("message %+v", p1.Message)
		}
	}
}

func TestScenarioHeaders(t *testing.T) {
	tests := []struct {
		sc   Scenario
		want http.Header
	}{
		{SendMessage("u"), http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}, "A2a-Version": {"1.0"}}},
		{SendStreamingMessage("u"), http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}, "A2a-Version": {"1.0"}}},
		{Baseline("u"), http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}},
	}
	for _, tc := range tests {
		t.Run(tc.sc.Name, func(t *testing.T) {
			// Canonicalise as the transport would see it.
			got := http.Header{}
			for k, v := range tc.sc.Header {
				got[http.CanonicalHeaderKey(k)] = v
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

const (
	okTask  = `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}`
	okMsg   = `{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}}`
	rpcErr  = `{"jsonrpc":"2.0","id":1,"error":{"code":-32009,"message":"version"}}`
	working = `{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}`
	done    = `{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}`
)

func sse(frames ...string) string {
	var b []byte
	for i, f := range frames {
		b = a2a.AppendEvent(b, a2a.Event{ID: string(rune('1' + i)), Data: []byte(f)})
	}
	return string(b)
}

func TestCheckSend(t *testing.T) {
	tests := []struct {
		name, body, wantErr string
	}{
		{"task", okTask, ""},
		{"message", okMsg, ""},
		{"JSON-RPC error", rpcErr, "version"},
		{"empty result", `{"jsonrpc":"2.0","id":1,"result":{}}`, "neither task nor message"},
		{"not JSON", `<html>`, "decode response"},
		{"other member order", `{"id":1,"result":{"task":{"id":"t"}},"jsonrpc":"2.0"}`, ""},
		{"error after a result-like prefix", `{"jsonrpc":"2.0","id":1,"result":{"status":1},"error":{"code":-32603,"message":"x"}}`, "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErr(t, checkSend(nil, []byte(tc.body)), tc.wantErr)
		})
	}
}

func TestCheckStream(t *testing.T) {
	stream := http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}
	plain := http.Header{"Content-Type": {"application/json"}}
	tests := []struct {
		name    string
		h       http.Header
		body    string
		wantErr string
	}{
		{"working then completed", stream, sse(working, done), ""},
		{"a message ends a stream", stream, sse(okMsg), ""},
		{"cut off before a final frame", stream, sse(working), "before a final frame"},
		{"no frames", stream, ": keep-alive\n\n", "no frame"},
		{"error frame", stream, sse(working, rpcErr), "version"},
		{"malformed last frame", stream, sse(working, `{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":`), "decode response"},
		{"other member order", stream, sse(`{"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}},"id":1,"jsonrpc":"2.0"}`), ""},
		{"error instead of a stream", plain, rpcErr, "version"},
		{"JSON result instead of a stream", plain, okTask, "not an event stream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErr(t, checkStream(tc.h, []byte(tc.body)), tc.wantErr)
		})
	}
}

func assertErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("error %v, want one containing %q", err, want)
	}
}
