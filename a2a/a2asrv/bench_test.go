package a2asrv_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// echoExecutor is the cheapest useful agent: one artifact, then completed.
func echoExecutor(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	art := a2a.Artifact{ArtifactID: "echo", Parts: req.Message.Parts}
	if err := u.AddArtifact(ctx, art, false, true, nil); err != nil {
		return err
	}
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
}

func benchRequest(method string, i int) *http.Request {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"message":{"messageId":"m-%d","role":"ROLE_USER","parts":[{"text":"hello benchmark world"}]}}}`, i, method, i)
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader([]byte(body)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	return r
}

// benchRESTRequest is benchRequest over HTTP+JSON.
func benchRESTRequest(method string, i int) *http.Request {
	path := "/message:send"
	if method == a2a.MethodSendStreamingMessage {
		path = "/message:stream"
	}
	body := fmt.Sprintf(`{"message":{"messageId":"m-%d","role":"ROLE_USER","parts":[{"text":"hello benchmark world"}]}}`, i)
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader([]byte(body)))
	r.Header.Set("Content-Type", "application/a2a+json")
	r.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	return r
}

// BenchmarkSend measures the handler's own cost of a blocking SendMessage
// and of a SendStreamingMessage (decode, execute, two store writes, encode)
// without the network, with the bounded in-memory store.
//
// The HTTP+JSON sub-benchmarks send the same message without the JSON-RPC
// envelope; the difference is the bindings' own cost.
func BenchmarkSend(b *testing.B) {
	for _, binding := range []struct {
		name string
		req  func(string, int) *http.Request
	}{{"jsonrpc", benchRequest}, {"rest", benchRESTRequest}} {
		for _, method := range []string{a2a.MethodSendMessage, a2a.MethodSendStreamingMessage} {
			b.Run(binding.name+"/"+method, func(b *testing.B) {
				h := a2asrv.NewHandler(testCard(), a2asrv.ExecutorFunc(echoExecutor), nil)
				defer h.Shutdown(context.Background())
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					w := httptest.NewRecorder()
					h.ServeHTTP(w, binding.req(method, i))
					if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte("TASK_STATE_COMPLETED")) {
						b.Fatalf("unexpected response %d: %s", w.Code, w.Body)
					}
				}
			})
		}
	}
}
