package a2asrv_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// A large SendMessage costs the handler a few copies of its body, not a
// dozen: the body is read into a buffer of its Content-Length (not grown
// by doubling), the answer is encoded inside its JSON-RPC envelope (not
// copied into it), and a task's encoder sizes its buffer once. Before, a
// 4 MiB message to an echo agent allocated about 13 times its size; now
// the body, the decoded text, the stored task and the answer, about 6.
func TestLargeSendAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocates")
	}
	const size = 4 << 20
	h := a2asrv.NewHandler(testCard(), a2asrv.ExecutorFunc(echoExecutor), nil)
	defer h.Shutdown(context.Background())
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"` +
		strings.Repeat("x", size) + `"}]}}}`)
	cost := func() uint64 {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
		w := &discard{header: http.Header{}}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		h.ServeHTTP(w, r)
		runtime.ReadMemStats(&after)
		if w.code != 0 && w.code != http.StatusOK {
			t.Fatalf("status %d", w.code)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	best := cost()
	for range 2 {
		best = min(best, cost())
	}
	if ratio := float64(best) / size; ratio > 7 {
		t.Errorf("a %d MiB SendMessage allocated %.1f times its body, want at most 7", size>>20, ratio)
	} else {
		t.Logf("a %d MiB SendMessage allocated %.1f times its body", size>>20, ratio)
	}
}

// discard is a ResponseWriter that keeps nothing of the answer, so that
// the test counts the handler's allocations only.
type discard struct {
	header http.Header
	code   int
}

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) WriteHeader(code int)        { d.code = code }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
