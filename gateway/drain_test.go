package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// After a run's terminal event the client reads the rest of the stream,
// so the next stream goes over the same connection.
func TestEventsReuseConnection(t *testing.T) {
	// A bound on a failure only: the server writes at once.
	old := maxDrainTime
	maxDrainTime = time.Minute
	defer func() { maxDrainTime = old }()
	var conns atomic.Int32
	// The done frame is written only once the client has the terminal
	// status, so it is still in flight when the iteration ends.
	seen := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: 1\nevent: message\ndata: {\"type\":\"status\",\"payload\":{\"status\":\"COMPLETED\"},\"run_id\":\"r1\",\"sequence\":1}\n\n")
		w.(http.Flusher).Flush()
		<-seen
		fmt.Fprint(w, "id: 2\nevent: message\ndata: {\"type\":\"done\",\"payload\":{\"status\":\"COMPLETED\"},\"run_id\":\"r1\",\"sequence\":2}\n\n")
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := NewClient(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		n := 0
		for ev, err := range c.Events(context.Background(), "r1", "") {
			if err != nil {
				t.Fatal(err)
			}
			n++
			if !ev.IsTerminal() {
				t.Fatalf("event %+v", ev)
			}
			seen <- struct{}{}
		}
		if n != 1 {
			t.Fatalf("%d events, want the terminal one", n)
		}
	}
	if got := conns.Load(); got != 1 {
		t.Fatalf("%d connections for three streams, want 1", got)
	}
}
