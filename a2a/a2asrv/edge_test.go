package a2asrv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// Strict parsing at the edge: every request below used to be accepted,
// answered with the wrong error or run.

// edgeHandler serves a streaming agent with push configs whose executor
// counts its runs and completes at once.
func edgeHandler(t *testing.T, opts *a2asrv.Options) (*a2asrv.Handler, *atomic.Int32) {
	t.Helper()
	runs := new(atomic.Int32)
	exec := a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		runs.Add(1)
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
	})
	if opts == nil {
		opts = &a2asrv.Options{}
	}
	opts.PushConfigStore = a2asrv.NewMemoryPushConfigStore(nil)
	streaming := true
	card := &a2a.AgentCard{Name: "edge", Version: "1", Capabilities: a2a.AgentCapabilities{Streaming: &streaming}}
	h := a2asrv.NewHandler(card, exec, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		h.Shutdown(ctx)
	})
	return h, runs
}

// serve posts body to h with the usual headers, overridden (or removed,
// with an empty value) by header.
func serve(h http.Handler, target, body string, header map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	for k, v := range header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// rpcError reads the JSON-RPC error of an answer, failing when there is
// none.
func rpcError(t *testing.T, w *httptest.ResponseRecorder) *a2a.Error {
	t.Helper()
	resp, err := a2a.DecodeResponse(w.Body.Bytes())
	if err != nil {
		t.Fatalf("answer %d %q: %v", w.Code, w.Body, err)
	}
	if resp.Error == nil {
		t.Fatalf("answer %d %s: no error", w.Code, w.Body)
	}
	return resp.Error
}

const sendParams = `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`

func envelope(id, method, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
}

func TestEdgeRefusals(t *testing.T) {
	tests := []struct {
		name     string
		target   string
		body     string
		header   map[string]string
		status   int
		code     int
		contains string // part of the error message
	}{
		// Content-Type: a browser posts these cross-site without a preflight.
		{name: "text/plain", body: envelope("1", "SendMessage", sendParams), header: map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, status: 415, code: a2a.CodeInvalidRequest, contains: "Content-Type"},
		{name: "form", body: envelope("1", "SendMessage", sendParams), header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: 415, code: a2a.CodeInvalidRequest, contains: "Content-Type"},
		{name: "multipart", body: envelope("1", "SendMessage", sendParams), header: map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, status: 415, code: a2a.CodeInvalidRequest, contains: "Content-Type"},
		{name: "no Content-Type", body: envelope("1", "SendMessage", sendParams), header: map[string]string{"Content-Type": ""}, status: 415, code: a2a.CodeInvalidRequest, contains: "Content-Type"},
		{name: "JSON in UTF-16", body: envelope("1", "SendMessage", sendParams), header: map[string]string{"Content-Type": "application/json; charset=utf-16"}, status: 415, code: a2a.CodeInvalidRequest, contains: "Content-Type"},
		{name: "text/json", body: envelope("1", "SendMessage", sendParams), header: map[string]string{"Content-Type": "text/json"}, status: 415, code: a2a.CodeInvalidRequest, contains: "Content-Type"},

		// A2A-Version travels in the header only in the JSON-RPC binding (§9.2).
		{name: "version in the query string", target: "/?A2A-Version=1.0", body: envelope("1", "SendMessage", sendParams), header: map[string]string{a2a.HeaderVersion: ""}, status: 200, code: a2a.CodeVersionNotSupported, contains: "the A2A-Version header is missing"},

		// Keys matched exactly, repeats refused.
		{name: "METHOD does not override method", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","METHOD":"ListTasks","params":{"id":"nope"}}`, status: 200, code: a2a.CodeTaskNotFound},
		{name: "METHOD is not a method", body: `{"jsonrpc":"2.0","id":1,"METHOD":"ListTasks","params":{}}`, status: 200, code: a2a.CodeInvalidRequest, contains: "method"},
		{name: "Id does not fill id", body: envelope("1", "GetTask", `{"Id":"nope"}`), status: 200, code: a2a.CodeInvalidParams, contains: "id is required"},
		{name: "repeated method", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"ListTasks","params":{"id":"x"}}`, status: 200, code: a2a.CodeInvalidRequest, contains: `duplicate key "method"`},
		{name: "repeated jsonrpc", body: `{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"method":"ListTasks"}`, status: 200, code: a2a.CodeInvalidRequest, contains: `duplicate key "jsonrpc"`},
		{name: "repeated param", body: envelope("1", "GetTask", `{"id":"a","id":"b"}`), status: 200, code: a2a.CodeInvalidParams, contains: `duplicate key "id"`},
		{name: "repeated message field", body: envelope("1", "SendMessage", `{"message":{"messageId":"a","messageId":"b","role":"ROLE_USER","parts":[{"text":"hi"}]}}`), status: 200, code: a2a.CodeInvalidParams, contains: `duplicate key "messageId" in message`},
		{name: "camel and snake spelling", body: envelope("1", "SendMessage", `{"message":{"messageId":"a","context_id":"x","contextId":"y","role":"ROLE_USER","parts":[{"text":"hi"}]}}`), status: 200, code: a2a.CodeInvalidParams, contains: `duplicate key "contextId"`},
		{name: "repeat in a data part", body: envelope("1", "SendMessage", `{"message":{"messageId":"a","role":"ROLE_USER","parts":[{"data":{"x":{"y":1,"y":2}}}]}}`), status: 200, code: a2a.CodeInvalidParams, contains: `"y" in message.parts[0].data.x`},
		{name: "repeat in request metadata", body: envelope("1", "SendMessage", `{"message":{"messageId":"a","role":"ROLE_USER","parts":[{"text":"hi"}]},"metadata":{"k":1,"k":2}}`), status: 200, code: a2a.CodeInvalidParams, contains: `"k" in metadata`},
		{name: "repeated tenant", body: envelope("1", "GetTask", `{"tenant":"a","tenant":"b","id":"x"}`), status: 200, code: a2a.CodeInvalidParams, contains: `duplicate key "tenant"`},
		// The scope is built from the decoded request, so an escaped key is
		// the tenant like a plain one: the lookup runs in tenant "other".
		{name: "tenant behind an escape", body: envelope("1", "GetTask", `{"\u0074enant":"other","id":"x"}`), status: 200, code: a2a.CodeTaskNotFound, contains: "task not found"},

		// Sizes.
		{name: "oversize JSON-RPC id", body: envelope(`"`+strings.Repeat("i", 300)+`"`, "GetTask", `{"id":"x"}`), status: 200, code: a2a.CodeInvalidRequest, contains: "JSON-RPC id is longer than 256 bytes"},
		{name: "oversize task id", body: envelope("1", "GetTask", `{"id":"`+strings.Repeat("t", 257)+`"}`), status: 200, code: a2a.CodeInvalidParams, contains: "id is longer than 256 bytes"},
		{name: "oversize messageId", body: envelope("1", "SendMessage", `{"message":{"messageId":"`+strings.Repeat("m", 257)+`","role":"ROLE_USER","parts":[{"text":"hi"}]}}`), status: 200, code: a2a.CodeInvalidParams, contains: "message.messageId is longer"},
		{name: "too many extensions", body: envelope("1", "GetTask", `{"id":"x"}`), header: map[string]string{a2a.HeaderExtensions: manyURIs(65)}, status: 200, code: a2a.CodeInvalidRequest, contains: "more than 64 extensions"},
		{name: "oversize extension URI", body: envelope("1", "GetTask", `{"id":"x"}`), header: map[string]string{a2a.HeaderExtensions: "https://x/" + strings.Repeat("u", 1100)}, status: 200, code: a2a.CodeInvalidRequest, contains: "longer than 1024 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, runs := edgeHandler(t, nil)
			target := tc.target
			if target == "" {
				target = "/"
			}
			w := serve(h, target, tc.body, tc.header)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			e := rpcError(t, w)
			if e.Code != tc.code || !strings.Contains(e.Message, tc.contains) {
				t.Fatalf("error %d %q, want %d containing %q", e.Code, e.Message, tc.code, tc.contains)
			}
			if n := runs.Load(); n != 0 {
				t.Fatalf("the executor ran %d times", n)
			}
		})
	}
}

func manyURIs(n int) string {
	uris := make([]string, n)
	for i := range uris {
		uris[i] = fmt.Sprintf("https://ext.example/%d", i)
	}
	return strings.Join(uris, ",")
}

// TestEdgeJSONContentTypes: the JSON media types are all accepted.
func TestEdgeJSONContentTypes(t *testing.T) {
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8", "application/a2a+json", "application/vnd.example+json"} {
		t.Run(ct, func(t *testing.T) {
			h, runs := edgeHandler(t, nil)
			w := serve(h, "/", envelope("1", "SendMessage", sendParams), map[string]string{"Content-Type": ct})
			resp, err := a2a.DecodeResponse(w.Body.Bytes())
			if err != nil || resp.Error != nil || w.Code != 200 {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			if runs.Load() != 1 {
				t.Fatalf("the executor ran %d times", runs.Load())
			}
		})
	}
}

// TestEdgeNotification: a request without an id gets no answer and runs
// nothing; "id": null is a request like any other.
func TestEdgeNotification(t *testing.T) {
	h, runs := edgeHandler(t, nil)
	for _, method := range []string{"SendMessage", "GetTask", "NoSuchMethod"} {
		w := serve(h, "/", fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`, method, sendParams), nil)
		if w.Code != http.StatusNoContent || w.Body.Len() != 0 {
			t.Fatalf("%s notification: %d %q, want 204 and no body", method, w.Code, w.Body)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("a notification ran the executor %d times", n)
	}
	w := serve(h, "/", envelope("null", "SendMessage", sendParams), nil)
	resp, err := a2a.DecodeResponse(w.Body.Bytes())
	if err != nil || resp.Error != nil || string(resp.ID) != "null" || runs.Load() != 1 {
		t.Fatalf("null id: %d %s (runs %d), want a result with a null id", w.Code, w.Body, runs.Load())
	}
	// A malformed envelope without an id is still answered (JSON-RPC 2.0
	// §5: the error has a null id).
	if e := rpcError(t, serve(h, "/", `{"jsonrpc":"2.0","method":1}`, nil)); e.Code != a2a.CodeInvalidRequest {
		t.Fatalf("malformed notification: %v", e)
	}
}

// TestEdgeControlCharacters: NUL and the other control characters are
// refused in every identifier, naming the field, on every method.
func TestEdgeControlCharacters(t *testing.T) {
	h, _ := edgeHandler(t, nil)
	// A real task, so the checks are not hidden behind "task not found".
	w := serve(h, "/", envelope("1", "SendMessage", sendParams), nil)
	var res struct {
		Result struct {
			Task a2a.Task `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || res.Result.Task.ID == "" {
		t.Fatalf("no task: %s", w.Body)
	}
	task, ctxID := res.Result.Task.ID, res.Result.Task.ContextID
	msg := func(extra string) string {
		return `{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"hi"}]` + extra + `}}`
	}
	tests := []struct {
		name, method, params, field string
	}{
		{"GetTask id", "GetTask", `{"id":"` + task + `\u0000"}`, "id"},
		{"GetTask tenant", "GetTask", `{"tenant":"a\u0000","id":"` + task + `"}`, "tenant"},
		{"CancelTask id", "CancelTask", `{"id":"\u0000` + task + `"}`, "id"},
		{"SubscribeToTask id", "SubscribeToTask", `{"id":"` + task + `\u0000"}`, "id"},
		{"ListTasks contextId", "ListTasks", `{"contextId":"` + ctxID + `\u0000"}`, "contextId"},
		{"SendMessage messageId", "SendMessage", `{"message":{"messageId":"m\u0000","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, "message.messageId"},
		{"SendMessage taskId", "SendMessage", msg(`,"taskId":"` + task + `\u0000"`), "message.taskId"},
		{"SendMessage contextId", "SendMessage", msg(`,"contextId":"c\u001f"`), "message.contextId"},
		{"SendMessage DEL", "SendMessage", msg(`,"contextId":"c\u007f"`), "message.contextId"},
		{"SendMessage C1", "SendMessage", msg(`,"contextId":"c\u0085"`), "message.contextId"},
		{"SendMessage newline", "SendMessage", msg(`,"contextId":"c\n"`), "message.contextId"},
		{"SendMessage referenceTaskIds", "SendMessage", msg(`,"referenceTaskIds":["ok","r\u0000"]`), "message.referenceTaskIds[1]"},
		{"SendMessage tenant", "SendMessage", `{"tenant":"\u0000","message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, "tenant"},
		{"SendMessage push config id", "SendMessage", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"taskPushNotificationConfig":{"id":"p\u0000","url":"https://hook.example/"}}}`, "configuration.taskPushNotificationConfig.id"},
		{"SendStreamingMessage contextId", "SendStreamingMessage", msg(`,"contextId":"\u0000"`), "message.contextId"},
		{"Create push config id", "CreateTaskPushNotificationConfig", `{"taskId":"` + task + `","id":"p\u0000","url":"https://hook.example/"}`, "id"},
		{"Create push config taskId", "CreateTaskPushNotificationConfig", `{"taskId":"` + task + `\u0000","url":"https://hook.example/"}`, "taskId"},
		{"Get push config id", "GetTaskPushNotificationConfig", `{"taskId":"` + task + `","id":"p\u0000"}`, "id"},
		{"Delete push config taskId", "DeleteTaskPushNotificationConfig", `{"taskId":"` + task + `\u0000","id":"p"}`, "taskId"},
		{"List push configs taskId", "ListTaskPushNotificationConfigs", `{"taskId":"` + task + `\u0000"}`, "taskId"},
		{"GetExtendedAgentCard tenant", "GetExtendedAgentCard", `{"tenant":"t\u0000"}`, "tenant"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := rpcError(t, serve(h, "/", envelope("7", tc.method, tc.params), nil))
			if e.Code != a2a.CodeInvalidParams || !strings.HasPrefix(e.Message, tc.field+" ") || !strings.Contains(string(e.Data), `"field":"`+tc.field+`"`) {
				t.Fatalf("error %d %q %s, want -32602 naming %s", e.Code, e.Message, e.Data, tc.field)
			}
		})
	}
}

// TestEdgeExtensionsHeaderLinear: a megabyte of A2A-Extensions took
// seconds of CPU before any authentication. The handler reads it with
// a2a.ParseExtensionsLimit and its bounds: refused with the default ones,
// read whole with a raised one. That the read stops at the bound and costs
// linear time is counted in a2a's TestParseExtensionsLinear.
func TestEdgeExtensionsHeaderLinear(t *testing.T) {
	h, _ := edgeHandler(t, nil)
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "https://ext.example/%d,", i)
	}
	header := b.String()
	for _, limits := range []*a2asrv.Options{nil, {MaxExtensions: 1 << 20}} {
		h := h
		if limits != nil {
			h, _ = edgeHandler(t, limits)
		}
		w := serve(h, "/", envelope("1", "GetTask", `{"id":"x"}`), map[string]string{a2a.HeaderExtensions: header})
		e := rpcError(t, w)
		if limits == nil && e.Code != a2a.CodeInvalidRequest {
			t.Fatalf("default bounds: error %v, want -32600", e)
		}
		if limits != nil && e.Code != a2a.CodeTaskNotFound {
			t.Fatalf("raised bound: error %v, want the method's own answer", e)
		}
	}
}

// A JSON-RPC call is read as A2A 0.3 when it names no version: one whose
// method 0.3 does not have is answered for what it most likely is, on a
// handler that serves 0.3 and on one that refuses it.
func TestVersionlessMethods(t *testing.T) {
	const v03Params = `{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}`
	const missing = "the A2A-Version header is missing: a request without it is A2A 0.3, which has no method \"SendMessage\"; send A2A-Version: 1.0"
	tests := []struct {
		name    string
		version string // "" sends none
		method  string
		params  string
		// want is the error code and message on a handler that serves
		// 0.3 and on one that refuses it (code 0: a result).
		serves, refuses rpcAnswer
	}{
		{name: "v1 method, no header", method: "SendMessage", params: sendParams,
			serves: ans(a2a.CodeVersionNotSupported, missing), refuses: ans(a2a.CodeVersionNotSupported, missing)},
		{name: "v1 streaming method, no header", method: "SendStreamingMessage", params: sendParams,
			serves:  ans(a2a.CodeVersionNotSupported, strings.ReplaceAll(missing, `"SendMessage"`, `"SendStreamingMessage"`)),
			refuses: ans(a2a.CodeVersionNotSupported, strings.ReplaceAll(missing, `"SendMessage"`, `"SendStreamingMessage"`))},
		{name: "unknown method, no header", method: "bogus/method", params: `{}`,
			serves: ans(a2a.CodeMethodNotFound, `method "bogus/method" not found`), refuses: ans(a2a.CodeMethodNotFound, `method "bogus/method" not found`)},
		{name: "0.3 method, no header", method: "message/send", params: v03Params,
			serves: ans(0, ""), refuses: ans(a2a.CodeVersionNotSupported, `A2A version "0.3" is not supported; supported: 1.0`)},
		{name: "v1 method, 0.3 named", version: "0.3", method: "SendMessage", params: sendParams,
			serves:  ans(a2a.CodeMethodNotFound, `method "SendMessage" is not an A2A 0.3 method; A2A 1.0 methods need the header A2A-Version: 1.0`),
			refuses: ans(a2a.CodeVersionNotSupported, `A2A version "0.3" is not supported; supported: 1.0`)},
		{name: "unknown method, 0.3 named", version: "0.3.1", method: "bogus", params: `{}`,
			serves: ans(a2a.CodeMethodNotFound, `method "bogus" not found`), refuses: ans(a2a.CodeMethodNotFound, `method "bogus" not found`)},
		{name: "unknown method, 1.0", version: "1.0", method: "bogus", params: `{}`,
			serves: ans(a2a.CodeMethodNotFound, `method "bogus" not found`), refuses: ans(a2a.CodeMethodNotFound, `method "bogus" not found`)},
		{name: "0.3 method, 1.0", version: "1.0", method: "message/send", params: v03Params,
			serves: ans(a2a.CodeMethodNotFound, `method "message/send" not found`), refuses: ans(a2a.CodeMethodNotFound, `method "message/send" not found`)},
		{name: "v1 method, unsupported version", version: "9.9", method: "SendMessage", params: sendParams,
			serves:  ans(a2a.CodeVersionNotSupported, `A2A version "9.9" is not supported; supported: 1.0`),
			refuses: ans(a2a.CodeVersionNotSupported, `A2A version "9.9" is not supported; supported: 1.0`)},
		{name: "v1 method, 1.0", version: "1.0", method: "SendMessage", params: sendParams, serves: ans(0, ""), refuses: ans(0, "")},
	}
	for _, tc := range tests {
		for _, refuse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/refuseV03=%v", tc.name, refuse), func(t *testing.T) {
				h, _ := edgeHandler(t, &a2asrv.Options{RefuseV03: refuse})
				w := serve(h, "/", envelope("1", tc.method, tc.params), map[string]string{a2a.HeaderVersion: tc.version})
				want := tc.serves
				if refuse {
					want = tc.refuses
				}
				resp, err := a2a.DecodeResponse(w.Body.Bytes())
				if err != nil || w.Code != http.StatusOK {
					t.Fatalf("answer %d %s: %v", w.Code, w.Body, err)
				}
				var got rpcAnswer
				if resp.Error != nil {
					got.code, got.msg = resp.Error.Code, resp.Error.Message
				}
				if got != want {
					t.Errorf("answer %d %q, want %d %q", got.code, got.msg, want.code, want.msg)
				}
			})
		}
	}
}

// rpcAnswer is a JSON-RPC answer's error code and message (0 and "" for
// a result).
type rpcAnswer struct {
	code int
	msg  string
}

func ans(code int, msg string) rpcAnswer { return rpcAnswer{code, msg} }
