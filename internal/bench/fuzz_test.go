package bench

import (
	"net/http"
	"testing"
)

// The checks read whatever a server under test sends; they must judge it,
// never panic.
func FuzzChecks(f *testing.F) {
	for _, s := range []string{okTask, okMsg, rpcErr, sse(working, done), sse(working), ": keep-alive\n\n", "data: {\n\n", ""} {
		f.Add([]byte(s))
	}
	stream := http.Header{"Content-Type": {"text/event-stream"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = checkSend(nil, body)
		_ = checkStream(stream, body)
		_ = checkStream(nil, body)
	})
}
