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
// JSON-RPC and over HTTP+JSON, and as a card: it must not panic, and a
// stream must end with a final frame or an error, never silently.
func FuzzStream(f *testing.F) {
	f.Add([]byte("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}}\n\n"))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32001}}\n\n"))
	f.Add([]byte(": keep-alive\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"message\":{\"messageId\":\"m\"}}}\r\n\r\n"))
	f.Add([]byte(`{"name":"x","supportedInterfaces":[{"url":"http://x","protocolBinding":"JSONRPC"}]}`))
	f.Add([]byte("data: {\"task\":{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}\n\nevent: error\ndata: {\"error\":{\"code\":404}}\n\n"))
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
	f.Fuzz(func(t *testing.T, data []byte) {
		body.Store(&data)
		_, _ = a2aclient.ParseCard(data)
		_, _ = a2aclient.NewResolver(nil).Resolve(t.Context(), srv.URL)
		for _, cl := range []*a2aclient.Client{c, rc} {
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
