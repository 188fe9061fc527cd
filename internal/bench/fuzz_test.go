package bench

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// The checks read whatever a server under test sends; they must judge it,
// never panic.
func FuzzChecks(f *testing.F) {
	for _, s := range []string{okTask, okMsg, rpcErr, sse(working, done), sse(working), ": keep-alive\n\n", "data: {\n\n", "", xstreamSeed} {
		f.Add([]byte(s))
	}
	stream := http.Header{"Content-Type": {"text/event-stream"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = checkSend(nil, body)
		_ = checkStream(stream, body)
		_ = checkStream(nil, body)
		var p xstreamTally
		if err := readUpdates(t.Context(), bytes.NewReader(body), 11, time.Second, &p); err == nil && p.seen != p.expected {
			t.Errorf("xstream passed a stream with %d of %d updates", p.seen, p.expected)
		}
	})
}

// xstreamSeed is a subscription that sees its task's 11 updates.
var xstreamSeed = func() string {
	frames := []string{`{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}`}
	for seq := 1; seq <= 11; seq++ {
		state := "TASK_STATE_WORKING"
		if seq == 11 {
			state = "TASK_STATE_COMPLETED"
		}
		frames = append(frames, `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"`+state+
			`"},"metadata":{"novaosBench":{"seq":`+strconv.Itoa(seq)+`,"emittedUnixNano":"1700000000000000000"}}}}`)
	}
	var b []byte
	for _, f := range frames {
		b = append(b, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":"+f+"}\n\n"...)
	}
	return string(b)
}()
