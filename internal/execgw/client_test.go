package execgw_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw"
	"novaos.dev/novaos/secret"
)

// KB-15 with the Go client against the gateway: every ending is
// recognised for what it is, and a pause is not an ending.
func TestClientEndings(t *testing.T) {
	drop := func(_ *a2a.SendMessageRequest, w *frameWriter) { w.text("a", "partial", false) }
	cases := []struct {
		name    string
		steps   []func(*a2a.SendMessageRequest, *frameWriter)
		opts    *execgw.Options
		cancel  bool
		status  gateway.Status
		failure bool
	}{
		{name: "completed", steps: []func(*a2a.SendMessageRequest, *frameWriter){func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.text("a", "fine", false)
			w.status(a2a.TaskStateCompleted, nil)
		}}, status: gateway.StatusCompleted},
		{name: "failed after the agent answered", steps: []func(*a2a.SendMessageRequest, *frameWriter){func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.text("a", strings.Repeat("x", 64), false)
			w.status(a2a.TaskStateCompleted, nil)
		}}, opts: &execgw.Options{MaxOutputBytes: 10}, status: gateway.StatusFailed, failure: true},
		{name: "stream dropped every time", steps: []func(*a2a.SendMessageRequest, *frameWriter){drop, drop, drop},
			status: gateway.StatusFailed, failure: true},
		{name: "agent failed", steps: []func(*a2a.SendMessageRequest, *frameWriter){func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateFailed, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("out of coffee")))
		}}, status: gateway.StatusFailed, failure: true},
		{name: "cancelled", steps: []func(*a2a.SendMessageRequest, *frameWriter){func(_ *a2a.SendMessageRequest, w *frameWriter) {
			w.status(a2a.TaskStateWorking, nil)
			<-w.ctx.Done()
		}}, cancel: true, status: gateway.StatusCancelled, failure: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, hostedAgents{"a": &script{steps: c.steps}}, c.opts)
			client, err := gateway.NewClient(e.srv.URL, &gateway.ClientOptions{Token: secret.New(userTok)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			res, err := client.Execute(ctx, gateway.ExecuteRequest{InstanceID: e.install("a", "a", nil), Input: "q"})
			if err != nil {
				t.Fatal(err)
			}
			var last gateway.StreamEvent
			n := 0
			for ev, err := range client.EventsWithReconnect(ctx, res.RunID, nil) {
				if err != nil {
					t.Fatal(err)
				}
				n++
				if c.cancel && ev.Status == gateway.StatusRunning {
					if _, err := client.CancelRun(ctx, res.RunID); err != nil {
						t.Fatal(err)
					}
				}
				last = ev
			}
			if !last.IsTerminal() || last.IsFailure() != c.failure || last.Status != c.status {
				t.Fatalf("after %d events the client stopped on %+v; want terminal %s (failure %v)", n, last, c.status, c.failure)
			}
		})
	}
	t.Run("paused, then answered", func(t *testing.T) {
		sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){
			func(_ *a2a.SendMessageRequest, w *frameWriter) {
				w.status(a2a.TaskStateInputRequired, hitl.NewMessage("Sure?", hitl.InputRequest("Sure?", hitl.InputText, nil, "")))
			},
			func(_ *a2a.SendMessageRequest, w *frameWriter) { w.status(a2a.TaskStateCompleted, nil) },
		}}
		e := newEnv(t, hostedAgents{"a": sc}, nil)
		client, _ := gateway.NewClient(e.srv.URL, &gateway.ClientOptions{Token: secret.New(userTok)})
		ctx := context.Background()
		res, err := client.Execute(ctx, gateway.ExecuteRequest{InstanceID: e.install("a", "a", nil), Input: "q"})
		if err != nil {
			t.Fatal(err)
		}
		var sawPause bool
		var last gateway.StreamEvent
		for ev, err := range client.EventsWithReconnect(ctx, res.RunID, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Status == gateway.StatusWaitingUser && ev.IsTerminal() {
				t.Fatal("a pause reads as an ending")
			}
			if ev.WireType == gateway.EventHITL {
				sawPause = true
				if _, err := client.Reply(ctx, res.RunID, gateway.Reply{Input: "yes"}); err != nil {
					t.Fatal(err)
				}
			}
			last = ev
		}
		if !sawPause || !last.IsTerminal() || last.IsFailure() {
			t.Fatalf("paused %v, ended on %+v", sawPause, last)
		}
	})
}

// cutWriter passes a response through until its budget of bytes is
// spent, then breaks the connection.
type cutWriter struct {
	http.ResponseWriter
	left int
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if len(p) > c.left {
		n, _ := c.ResponseWriter.Write(p[:c.left])
		c.ResponseWriter.(http.Flusher).Flush()
		c.left = 0
		_ = n
		panic(http.ErrAbortHandler) // the connection drops mid-frame
	}
	c.left -= len(p)
	return c.ResponseWriter.Write(p)
}

func (c *cutWriter) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

// Events resumed across 1,000 random connection cuts: the Go client
// yields every event exactly once, in order.
func TestThousandCuts(t *testing.T) {
	const chunks = 300
	sc := &script{steps: []func(*a2a.SendMessageRequest, *frameWriter){func(_ *a2a.SendMessageRequest, w *frameWriter) {
		for i := range chunks {
			w.text("a", strconv.Itoa(i)+" ", i > 0)
		}
		w.status(a2a.TaskStateCompleted, nil)
	}}}
	e := newEnv(t, hostedAgents{"a": sc}, nil)
	run := e.execute(userTok, gateway.ExecuteRequest{InstanceID: e.install("a", "a", nil), Input: "q"})
	e.waitStatus(run, gateway.StatusCompleted)
	// The client stops at the terminal status, before the done that follows it.
	want := e.events(userTok, run, "", nil)
	want = want[:len(want)-1]

	rng := rand.New(rand.NewPCG(1, 2))
	var mu sync.Mutex
	cuts := 0
	inner := e.srv.Config.Handler
	cutter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		budget := 50 + rng.IntN(600)
		cut := cuts < 1000
		if cut {
			cuts++
		}
		mu.Unlock()
		if cut && strings.HasPrefix(r.URL.Path, gateway.EventsPath) {
			w = &cutWriter{ResponseWriter: w, left: budget}
		}
		inner.ServeHTTP(w, r)
	}))
	defer cutter.Close()
	client, err := gateway.NewClient(cutter.URL, &gateway.ClientOptions{Token: secret.New(userTok)})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for ev, err := range client.EventsWithReconnect(context.Background(), run, &gateway.ReconnectOptions{
		MaxRetries: 2000, Sleep: func(context.Context, time.Duration) error { return nil }}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Sequence)
	}
	if cuts < 1000 {
		t.Fatalf("only %d cuts", cuts)
	}
	if len(got) != len(want) {
		t.Fatalf("%d events through %d cuts, want %d", len(got), cuts, len(want))
	}
	for i, s := range got {
		if s != int64(i+1) {
			t.Fatalf("event %d has sequence %d", i, s)
		}
	}
}
