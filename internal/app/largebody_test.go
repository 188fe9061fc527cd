package app_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/app"
)

// largeSend is a JSON-RPC SendMessage whose one text part is size bytes.
func largeSend(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"` + a2a.NewID() +
		`","role":"ROLE_USER","parts":[{"text":"`)
	b.WriteString(strings.Repeat("x", size))
	b.WriteString(`"}]}}}`)
	return b.Bytes()
}

// BenchmarkSendLarge measures what a 9.9 MB SendMessage to the echo agent
// allocates over loopback, the server's side being nearly all of it: the
// client sends one prepared body and discards the answer.
func BenchmarkSendLarge(b *testing.B) {
	const size = 9900 << 10
	srv, err := app.New(b.Context(), &app.Options{Addr: "127.0.0.1:0", DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown(b.Context())
	body := largeSend(size)
	url := srv.URL() + "/agents/echo"
	c := &http.Client{}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(a2a.HeaderVersion, "1.0")
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
