package runspage_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/gateway"
)

// manyEvents adds a running run with n message events.
func manyEvents(hs *harness, id string, n int, st gateway.Status) {
	evs := make([]gateway.Event, n)
	for i := range evs {
		evs[i] = event(gateway.EventMessageDelta, fmt.Sprintf(`{"content":"chunk %d"}`, i+1))
	}
	hs.runs.add(newRun(id, "acme", "alice", st, t0), evs...)
}

func TestDefaultsAndLimits(t *testing.T) {
	hs := newHarness(t, nil)
	for i := range 51 {
		hs.runs.add(newRun(fmt.Sprintf("r-many-%02d", i), "acme", "alice", gateway.StatusCompleted, t0.Add(time.Duration(i)*time.Second)))
	}
	manyEvents(hs, "r-600", 600, gateway.StatusRunning)
	b := hs.browser(t)
	b.login(tokAlice)

	t.Run("default page size", func(t *testing.T) {
		w := b.get("/ui/runs")
		if n := len(listed(w.Body.String())); n != 50 {
			t.Errorf("%d runs on the first page, want 50", n)
		}
		wantContains(t, w.Body.String(), `id="next"`)
	})
	t.Run("every event of a long run", func(t *testing.T) {
		w := b.get("/ui/runs/r-600")
		wantContains(t, w.Body.String(), `data-seq="600"`, `data-after="600"`, "chunk 600")
	})
	t.Run("the operator's tenant filter", func(t *testing.T) {
		a := hs.browser(t)
		a.login(tokAdmin)
		if w := a.get("/ui/runs?tenant=" + strings.Repeat("t", 128)); w.Code != http.StatusOK {
			t.Errorf("a 128-byte tenant: %d", w.Code)
		}
		if w := a.get("/ui/runs?tenant=" + strings.Repeat("t", 129)); w.Code != http.StatusBadRequest {
			t.Errorf("a 129-byte tenant: %d", w.Code)
		}
	})
	t.Run("static files", func(t *testing.T) {
		get, head := b.get("/ui/runs/static/runs.js"), b.do(http.MethodHead, "/ui/runs/static/runs.js", nil, nil)
		if !strings.Contains(get.Body.String(), "EventSource") || head.Body.Len() != 0 || head.Code != http.StatusOK {
			t.Errorf("GET %d bytes, HEAD %d %d bytes", get.Body.Len(), head.Code, head.Body.Len())
		}
		if w := b.do(http.MethodPost, "/ui/runs/static/runs.js", nil, nil); w.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST a static file: %d", w.Code)
		}
	})
}

func TestStreamPages(t *testing.T) {
	hs := newHarness(t, nil) // the default keep-alive
	manyEvents(hs, "r-300", 300, gateway.StatusRunning)
	hs.runs.emit("r-300", statusEvent(gateway.StatusCompleted, "ok"), event(gateway.EventDone, `{}`))
	hs.runs.add(newRun("r-quiet", "acme", "alice", gateway.StatusRunning, t0), statusEvent(gateway.StatusRunning, ""))
	srv := httptest.NewServer(hs.h)
	t.Cleanup(srv.Close)
	b := hs.browser(t)
	b.login(tokAlice)
	cookie := b.cookies["novaos_runs_session"]

	// More events than one read of the gateway brings: every one, in
	// order, then the end.
	got := open(t, srv, "/ui/runs/r-300/events", cookie, "").rest()
	if len(got) != 302 || got[0].ID != "1" || got[301].Frame.Type != gateway.EventDone {
		t.Fatalf("%d frames, want 302 ending with done", len(got))
	}
	for i, f := range got {
		if f.ID != fmt.Sprint(i+1) {
			t.Fatalf("frame %d has id %s", i, f.ID)
		}
	}

	// A run that ends without a new event (its ending was recorded
	// earlier) closes a caught-up stream at the next wake-up.
	s := open(t, srv, "/ui/runs/r-quiet/events", cookie, "1")
	waitFor(t, func() bool { return hs.runs.following("r-quiet") == 1 })
	hs.runs.mu.Lock()
	hs.runs.find("r-quiet").Status = gateway.StatusFailed
	hs.runs.mu.Unlock()
	hs.runs.emit("r-quiet")
	if rest := s.rest(); len(rest) != 0 {
		t.Errorf("frames %v", seqs(rest))
	}
}
