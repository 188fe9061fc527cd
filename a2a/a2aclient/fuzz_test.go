package a2aclient_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
)

// FuzzStream feeds arbitrary bytes to the client as a stream body, over
// JSON-RPC (v1 and A2A 0.3) and over HTTP+JSON, as a card, and as a 0.3
// unary answer: it must not panic, a stream must end with a final frame or
// an error, never silently, and a unary call returns a result or an error.
func FuzzStream(f *testing.F) {
	f.Add([]byte("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}}\n\n"))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32001}}\n\n"))
	f.Add([]byte(": keep-alive\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"message\":{\"messageId\":\"m\"}}}\r\n\r\n"))
	f.Add([]byte(`{"name":"x","supportedInterfaces":[{"url":"http://x","protocolBinding":"JSONRPC"}]}`))
	f.Add([]byte("data: {\"task\":{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}\n\nevent: error\ndata: {\"error\":{\"code\":404}}\n\n"))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"status-update\",\"taskId\":\"t\",\"contextId\":\"c\",\"final\":true,\"status\":{\"state\":\"completed\"}}}\n\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t","contextId":"c","status":{"state":"completed","timestamp":"2025-04-02T16:59:25"}}}`))
	f.Add([]byte(`{"name":"x","url":"http://x","preferredTransport":"JSONRPC","additionalInterfaces":[{"url":"http://y","transport":"GRPC"}]}`))
	var body atomic.Pointer[[]byte]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Write(*body.Load())
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(*body.Load())
	}))
	defer srv.Close()
	c, err := a2aclient.NewForURL(srv.URL, &a2aclient.Options{ResumeAttempts: -1})
	if err != nil {
		f.Fatal(err)
	}
	rc, err := a2aclient.NewForURL(srv.URL, &a2aclient.Options{ResumeAttempts: -1, Transports: []string{a2a.BindingHTTPJSON}})
	if err != nil {
		f.Fatal(err)
	}
	// The same agent as an A2A 0.3 agent: the 0.3 dialect of JSON-RPC.
	c03, err := a2aclient.New(&a2a.AgentCard{Name: "x", SupportedInterfaces: []a2a.AgentInterface{{URL: srv.URL, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3.0"}}}, &a2aclient.Options{ResumeAttempts: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		body.Store(&data)
		if card, err := a2aclient.ParseCard(data); err == nil {
			_, _ = a2aclient.SelectInterface(card)
		}
		_, _ = a2aclient.NewResolver(nil).Resolve(t.Context(), srv.URL)
		if task, err := c03.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "t"}); err == nil && task == nil {
			t.Fatal("0.3 GetTask: no task and no error")
		}
		if r, err := c03.SendMessage(t.Context(), msgReq("m", "x")); err == nil && (r.Task == nil) == (r.Message == nil) {
			t.Fatalf("0.3 SendMessage: %+v, want one of task and message", r)
		}
		for _, cl := range []*a2aclient.Client{c, rc, c03} {
			final := false
			var last error
			for fr, err := range cl.SendStreamingMessage(t.Context(), msgReq("m", "x")) {
				if err != nil {
					last = err
					break
				}
				if final {
					t.Fatalf("%s: frame after the final frame", cl.Binding())
				}
				final = fr.Final()
			}
			if !final && last == nil {
				t.Fatalf("%s: stream ended without a final frame and without an error", cl.Binding())
			}
			if last != nil && strings.Contains(last.Error(), "panic") {
				t.Fatal(last)
			}
		}
	})
}
