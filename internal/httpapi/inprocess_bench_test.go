package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a/a2aclient"
)

// BenchmarkHandlerTransport compares a unary call served in process with
// the same call over a keep-alive loopback TCP connection (httptest), in
// one run: "json" a small JSON-RPC-sized exchange on a bare handler,
// "a2a" an A2A SendMessage ("unary") and a streamed task ("stream")
// through a2aclient to an a2asrv agent (the gateway's call of a hosted
// agent). Report in-process/loopback ns/op.
func BenchmarkHandlerTransport(b *testing.B) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"0190d5d4-0000-7000-8000-000000000000"}}`
	jsonHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"id":"0190d5d4-0000-7000-8000-000000000000","status":{"state":"TASK_STATE_COMPLETED"}}}`)
	})
	clients := func(h http.Handler) (inproc, tcp *http.Client, base string, stop func()) {
		srv := httptest.NewServer(h)
		return inProcess(h), srv.Client(), srv.URL, srv.Close
	}

	b.Run("json", func(b *testing.B) {
		inproc, tcp, base, stop := clients(jsonHandler)
		defer stop()
		for _, bc := range []struct {
			name string
			c    *http.Client
			url  string
		}{{"inprocess", inproc, "http://agents.internal/"}, {"loopback", tcp, base + "/"}} {
			b.Run(bc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					resp, err := bc.c.Post(bc.url, "application/json", strings.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
	})

	b.Run("a2a", func(b *testing.B) {
		inproc, tcp, base, stop := clients(stepAgent(nil))
		defer stop()
		ctx := context.Background()
		for _, bc := range []struct {
			name string
			c    *http.Client
			url  string
		}{{"inprocess", inproc, "http://agents.internal/agents/steps"}, {"loopback", tcp, base + "/agents/steps"}} {
			b.Run(bc.name, func(b *testing.B) {
				c, err := a2aclient.NewForURL(bc.url, &a2aclient.Options{HTTPClient: bc.c})
				if err != nil {
					b.Fatal(err)
				}
				b.Run("unary", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := c.SendText(ctx, "hello", "", ""); err != nil {
							b.Fatal(err)
						}
					}
				})
				// A whole streamed task (three SSE frames): the gateway's
				// dispatch of a hosted agent.
				b.Run("stream", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						for _, err := range c.SendStreamingMessage(ctx, a2aclient.TextRequest("hello", "", "")) {
							if err != nil {
								b.Fatal(err)
							}
						}
					}
				})
			})
		}
	})
}
