package runspage_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw/runspage"
)

// sseFrame is one frame read off the wire.
type sseFrame struct {
	ID, Event string
	Frame     gateway.Frame
}

// liveStream is an open GET {run}/events.
type liveStream struct {
	t      *testing.T
	resp   *http.Response
	sc     *bufio.Scanner
	cancel context.CancelFunc
}

// open requests the run's stream with the session cookie (when cookie
// is not nil) and lastID as Last-Event-ID (when not "").
func open(t *testing.T, srv *httptest.Server, path string, cookie *http.Cookie, lastID string) *liveStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &liveStream{t: t, resp: resp, sc: sc, cancel: cancel}
}

// next reads the next frame; false at the end of the stream.
func (s *liveStream) next() (sseFrame, bool) {
	s.t.Helper()
	var f sseFrame
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && f.Event != "":
			return f, true
		case strings.HasPrefix(line, "id: "):
			f.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			f.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &f.Frame); err != nil {
				s.t.Fatalf("frame %q: %v", line, err)
			}
		}
	}
	return sseFrame{}, false
}

// rest reads frames until the stream ends.
func (s *liveStream) rest() []sseFrame {
	var out []sseFrame
	for {
		f, ok := s.next()
		if !ok {
			return out
		}
		out = append(out, f)
	}
}

func seqs(fs []sseFrame) []string {
	var out []string
	for _, f := range fs {
		if f.ID != strconv.FormatInt(f.Frame.Sequence, 10) || f.Event != gateway.SSEEventName || f.Frame.RunID == "" {
			out = append(out, "bad frame "+f.ID)
			continue
		}
		out = append(out, f.ID+" "+f.Frame.Type)
	}
	return out
}

func TestStream(t *testing.T) {
	hs := newHarness(t, &runspage.Options{KeepAlive: time.Hour})
	srv := httptest.NewServer(hs.h)
	t.Cleanup(srv.Close)
	b := hs.browser(t)
	b.login(tokAlice)
	cookie := b.cookies["novaos_runs_session"]

	t.Run("needs the cookie", func(t *testing.T) {
		for _, c := range []*http.Cookie{nil, {Name: "novaos_runs_session", Value: "forged.dG9r"}} {
			s := open(t, srv, "/ui/runs/r-alice-2/events", c, "")
			if s.resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("cookie %v: status %d, want 401", c, s.resp.StatusCode)
			}
		}
	})

	t.Run("another user's run", func(t *testing.T) {
		s := open(t, srv, "/ui/runs/r-bob-1/events", cookie, "")
		if s.resp.StatusCode != http.StatusNotFound {
			t.Errorf("status %d, want 404", s.resp.StatusCode)
		}
	})

	t.Run("bad cursors", func(t *testing.T) {
		for _, id := range []string{"-1", "3", "01", "x", "1e1", "+1"} {
			s := open(t, srv, "/ui/runs/r-alice-2/events", cookie, id)
			if s.resp.StatusCode != http.StatusBadRequest {
				t.Errorf("Last-Event-ID %q: %d, want 400", id, s.resp.StatusCode)
			}
		}
		s := open(t, srv, "/ui/runs/r-alice-2/events?after=9", cookie, "")
		if s.resp.StatusCode != http.StatusBadRequest {
			t.Errorf("after=9: %d, want 400", s.resp.StatusCode)
		}
	})

	t.Run("an ended run replays and ends", func(t *testing.T) {
		s := open(t, srv, "/ui/runs/r-alice-1/events", cookie, "")
		if ct := s.resp.Header.Get("Content-Type"); s.resp.StatusCode != 200 || ct != "text/event-stream" {
			t.Fatalf("%d %q", s.resp.StatusCode, ct)
		}
		want := []string{"1 status", "2 status", "3 message.delta", "4 status", "5 done"}
		if diff := cmp.Diff(want, seqs(s.rest())); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		s = open(t, srv, "/ui/runs/r-alice-1/events", cookie, "3")
		if diff := cmp.Diff(want[3:], seqs(s.rest())); diff != "" {
			t.Errorf("resumed after 3 (-want +got):\n%s", diff)
		}
		// Caught up with an ended run: 204 tells an EventSource to stop.
		s = open(t, srv, "/ui/runs/r-alice-1/events", cookie, "5")
		if s.resp.StatusCode != http.StatusNoContent {
			t.Errorf("caught up: %d, want 204", s.resp.StatusCode)
		}
	})

	t.Run("live events arrive in order", func(t *testing.T) {
		s := open(t, srv, "/ui/runs/r-alice-2/events?after=1", cookie, "")
		f, ok := s.next()
		if !ok || f.ID != "2" {
			t.Fatalf("first frame %+v %v, want id 2", f, ok)
		}
		if f.Frame.Timestamp != t0.Add(2*time.Second).UnixMilli() || f.Frame.RunID != "r-alice-2" {
			t.Errorf("frame %+v", f.Frame)
		}
		waitFor(t, func() bool { return hs.runs.following("r-alice-2") == 1 })
		hs.runs.emit("r-alice-2", event(gateway.EventMessageDelta, `{"content":"one"}`))
		if f, ok := s.next(); !ok || f.Frame.Type != gateway.EventMessageDelta || string(f.Frame.Payload) != `{"content":"one"}` {
			t.Fatalf("live frame %+v %v", f, ok)
		}
		hs.runs.emit("r-alice-2", event(gateway.EventMessageDelta, `{"content":"two"}`), statusEvent(gateway.StatusCompleted, "ok"),
			event(gateway.EventDone, `{"status":"COMPLETED"}`))
		if diff := cmp.Diff([]string{"4 message.delta", "5 status", "6 done"}, seqs(s.rest())); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		waitFor(t, func() bool { return hs.runs.following("r-alice-2") == 0 })
	})

	t.Run("a reconnection resumes after Last-Event-ID", func(t *testing.T) {
		hs.runs.add(newRun("r-resume", "acme", "alice", gateway.StatusRunning, t0), statusEvent(gateway.StatusRunning, ""))
		first := open(t, srv, "/ui/runs/r-resume/events", cookie, "")
		if f, ok := first.next(); !ok || f.ID != "1" {
			t.Fatalf("first frame %+v", f)
		}
		first.cancel() // the connection drops
		hs.runs.emit("r-resume", event(gateway.EventToolCall, `{"name":"x"}`), event(gateway.EventToolResult, `{}`))
		again := open(t, srv, "/ui/runs/r-resume/events", cookie, "1")
		hs.runs.emit("r-resume", statusEvent(gateway.StatusFailed, "boom"), event(gateway.EventError, `{}`))
		if diff := cmp.Diff([]string{"2 tool.call", "3 tool.result", "4 status", "5 error"}, seqs(again.rest())); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("shutdown ends the stream", func(t *testing.T) {
		hs.runs.add(newRun("r-open", "acme", "alice", gateway.StatusRunning, t0), statusEvent(gateway.StatusRunning, ""))
		s := open(t, srv, "/ui/runs/r-open/events", cookie, "1")
		waitFor(t, func() bool { return hs.runs.following("r-open") == 1 })
		close(hs.runs.closing)
		if rest := s.rest(); len(rest) != 0 {
			t.Errorf("frames after shutdown: %v", seqs(rest))
		}
	})
}

func TestStreamLimits(t *testing.T) {
	hs := newHarness(t, nil)
	hs.runs.noFollow = true
	srv := httptest.NewServer(hs.h)
	t.Cleanup(srv.Close)
	b := hs.browser(t)
	b.login(tokAlice)
	s := open(t, srv, "/ui/runs/r-alice-2/events", b.cookies["novaos_runs_session"], "")
	body, _ := io.ReadAll(s.resp.Body)
	if s.resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "Too many live streams") {
		t.Errorf("%d %q, want 503", s.resp.StatusCode, body)
	}
}

// TestKeepAlive: an idle stream sends comments, counted rather than
// timed: the test waits for the comment itself.
func TestKeepAlive(t *testing.T) {
	hs := newHarness(t, &runspage.Options{KeepAlive: time.Millisecond})
	srv := httptest.NewServer(hs.h)
	t.Cleanup(srv.Close)
	b := hs.browser(t)
	b.login(tokAlice)
	s := open(t, srv, "/ui/runs/r-alice-2/events", b.cookies["novaos_runs_session"], "2")
	for s.sc.Scan() {
		if s.sc.Text() == ": keepalive" {
			return
		}
	}
	t.Fatal("the stream ended without a keep-alive")
}

// waitFor polls cond: the bound is a failure's, not a timing assumption.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(time.Millisecond)
	}
}
