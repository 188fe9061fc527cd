package runsse_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw/runsse"
)

func TestParseCursor(t *testing.T) {
	for v, want := range map[string]int64{"": 0, "0": 0, "1": 1, "100": 100} {
		if got, ok := runsse.ParseCursor(v, 100); !ok || got != want {
			t.Errorf("ParseCursor(%q) = %d, %v", v, got, ok)
		}
	}
	for _, v := range []string{"101", "-1", "-0", "+1", "01", "1e2", " 1", "x", "9223372036854775808"} {
		if _, ok := runsse.ParseCursor(v, 100); ok {
			t.Errorf("ParseCursor(%q) accepted", v)
		}
	}
}

func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "0", "7", "100", "101", "-1", "01", "+1", "1e2", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, ok := runsse.ParseCursor(v, 100)
		if !ok {
			return
		}
		if n < 0 || n > 100 || v != "" && strconv.FormatInt(n, 10) != v {
			t.Fatalf("ParseCursor(%q) = %d", v, n)
		}
	})
}

// memSource is a run's events in memory, with a wake-up per append.
type memSource struct {
	reads  chan struct{} // hears each call of Events, when set
	mu     sync.Mutex
	events []gateway.Event
	ended  bool
	wake   chan struct{}
}

func (m *memSource) Events(_ context.Context, after int64, limit int) ([]gateway.Event, error) {
	if m.reads != nil {
		select {
		case m.reads <- struct{}{}:
		default:
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []gateway.Event
	for _, e := range m.events {
		if e.Sequence > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memSource) Ended(_ context.Context, after int64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ended && int64(len(m.events)) <= after, nil
}

func (m *memSource) add(typ string) {
	m.mu.Lock()
	n := int64(len(m.events)) + 1
	m.events = append(m.events, gateway.Event{RunID: "r", Sequence: n, Type: typ, Payload: []byte(`{}`), At: time.Unix(1, 0)})
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// A stream writes what there is, follows what comes, and ends after the
// end of the run's stream; more than a page arrives without a wake-up.
func TestStream(t *testing.T) {
	src := &memSource{wake: make(chan struct{}, 1), reads: make(chan struct{}, 1)}
	for range runsse.Page + 10 {
		src.add("message.delta")
	}
	<-src.wake // no wake-up is pending: the second page comes because the first was full
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runsse.Stream(w, r, src, 3, runsse.Options{KeepAlive: time.Hour, Wake: src.wake})
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers %v", resp.Header)
	}
	sc := bufio.NewScanner(resp.Body)
	want := int64(4)
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			if id != strconv.FormatInt(want, 10) {
				t.Fatalf("id %s, want %d", id, want)
			}
			if want == runsse.Page+10 {
				// A wake-up with nothing new does not end a live run's
				// stream.
				select { // a read that came before is not the one awaited
				case <-src.reads:
				default:
				}
				src.wake <- struct{}{}
				<-src.reads
				src.add("status")
				src.add("done")
			}
			want++
		}
	}
	if want != runsse.Page+13 {
		t.Fatalf("the stream ended before id %d", want)
	}
}

// A caught-up stream of an ended run ends at once.
func TestStreamEnded(t *testing.T) {
	src := &memSource{ended: true, wake: make(chan struct{}, 1)}
	src.add("status")
	w := httptest.NewRecorder()
	runsse.Stream(w, httptest.NewRequest("GET", "/", nil), src, 1, runsse.Options{KeepAlive: time.Hour})
	if w.Body.String() != "" {
		t.Fatalf("wrote %q", w.Body.String())
	}
}

func BenchmarkAppendFrame(b *testing.B) {
	e := gateway.Event{RunID: "0192f8e4-5c1a-7b3d-9e2f-1a2b3c4d5e6f", Sequence: 42, Type: gateway.EventMessageDelta,
		Payload: []byte(`{"content":"a chunk of the answer"}`), At: time.Unix(1_700_000_000, 0)}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = runsse.AppendFrame(buf[:0], e); err != nil {
			b.Fatal(err)
		}
	}
}
