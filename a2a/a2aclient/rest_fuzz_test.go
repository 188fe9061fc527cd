package a2aclient

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode"

	"novaos.dev/novaos/a2a"
)

// FuzzRESTError feeds arbitrary error answers to the HTTP+JSON error
// decoder: it never panics, always says what went wrong as a *CallError or
// an *HTTPError, and a peer's text reaches an HTTPError's Detail only as
// one printable line of at most 200 bytes (plus the ellipsis).
func FuzzRESTError(f *testing.F) {
	f.Add(404, "application/a2a+json", []byte(`{"error":{"code":404,"status":"NOT_FOUND","message":"no","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"t"}}]}}`))
	f.Add(400, "application/json", []byte(`{"error":{"code":400,"message":"x","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[]}]}}`))
	f.Add(403, "application/problem+json", []byte(`{"title":"Forbidden","detail":"no\nway"}`))
	f.Add(502, "text/plain", []byte("bad\x00gateway\r\nmore"))
	f.Add(500, "", []byte(`{"error":"plain string"}`))
	f.Add(401, "application/a2a+json", []byte(`{"error":{"code":401,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"UNAUTHENTICATED","domain":"a2a-protocol.org"}],"details":[]}}`))
	f.Fuzz(func(t *testing.T, status int, ct string, body []byte) {
		h := http.Header{"Content-Type": {ct}}
		err := restError("SendMessage", status, h, body)
		var ce *CallError
		var he *HTTPError
		switch {
		case errors.As(err, &ce):
			if ce.Err == nil {
				t.Fatal("CallError without an a2a.Error")
			}
		case errors.As(err, &he):
			if len(he.Detail) > 200+len("…") || strings.ContainsFunc(he.Detail, unicode.IsControl) {
				t.Fatalf("detail %q is not one short printable line", he.Detail)
			}
		default:
			t.Fatalf("error %T %v", err, err)
		}
		_ = err.Error()
	})
}

// FuzzRESTResponse feeds arbitrary bodies to the HTTP+JSON result and
// stream-frame decoders: they never panic; a frame that decodes holds
// exactly one member, and an error event is never a frame.
func FuzzRESTResponse(f *testing.F) {
	f.Add("", []byte(`{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}}`))
	f.Add("", []byte(`{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}`))
	f.Add("", []byte(`{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING"}},"error":{"code":404}}`))
	f.Add("error", []byte(`{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"m","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"UNSUPPORTED_OPERATION","domain":"a2a-protocol.org"}]}}`))
	f.Add("", []byte(`{"tasks":[{"id":"t"}],"nextPageToken":""}`))
	f.Add("", []byte(`{"configs":[{"id":"c","url":"https://x"}]}`))
	f.Fuzz(func(t *testing.T, event string, data []byte) {
		fr, err := decodeRESTFrame("SendStreamingMessage", a2a.Event{Event: event, Data: data})
		if err == nil {
			if cerr := checkFrame("SendStreamingMessage", fr); cerr == nil && event == "error" {
				t.Fatal("an error event decoded as a frame")
			}
		}
		for _, out := range []any{new(a2a.SendMessageResponse), new(a2a.Task), new(a2a.ListTasksResponse),
			new(a2a.TaskPushNotificationConfig), new(a2a.ListTaskPushNotificationConfigsResponse), new(a2a.AgentCard), new(a2a.StreamResponse)} {
			if err := decodeRESTResult("GetTask", data, out); err != nil && !errors.Is(err, ErrInvalidResponse) {
				t.Fatalf("%T: error %v does not match ErrInvalidResponse", out, err)
			}
		}
	})
}
