package builtin

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"novaos.dev/novaos/a2a"
)

// BenchmarkEchoSendMessage measures one SendMessage to the echo agent
// through a2asrv with the in-memory store, over loopback HTTP.
func BenchmarkEchoSendMessage(b *testing.B) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = Echo().Handler(srv.URL, nil)
	client := srv.Client()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m` +
			strconv.Itoa(i) + `","role":"ROLE_USER","parts":[{"text":"hello world"}]}}}`)
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
