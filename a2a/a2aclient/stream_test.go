package a2aclient_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
)

// cutter kills the connection of the first streaming response after n
// frames, and releases the agent's "hold" once a resumed subscription has
// written its snapshot.
type cutter struct {
	n           int
	release     chan struct{}
	chunked     chan struct{}
	once        sync.Once
	waitChunked sync.Once
	mu          sync.Mutex
	cut         bool
}

func (c *cutter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		switch {
		case bytes.Contains(body, []byte(`"SendStreamingMessage"`)) || strings.HasSuffix(r.URL.Path, "/message:stream"):
			c.mu.Lock()
			first := !c.cut
			c.cut = true
			c.mu.Unlock()
			if first {
				next.ServeHTTP(&killWriter{ResponseWriter: w, left: c.n}, r)
				return
			}
		case bytes.Contains(body, []byte(`"SubscribeToTask"`)) || strings.HasSuffix(r.URL.Path, ":subscribe"):
			// Resume only once every chunk is written, so the snapshot
			// deterministically carries the ones the cut lost.
			if c.chunked != nil {
				c.waitChunked.Do(func() { <-c.chunked })
			}
			next.ServeHTTP(&firstWrite{ResponseWriter: w, fn: func() { c.once.Do(func() { close(c.release) }) }}, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// killWriter passes n SSE events through, then hijacks the connection and
// closes it: the client sees the TCP stream end mid-response.
type killWriter struct {
	http.ResponseWriter
	left int
	dead bool
}

func (k *killWriter) Write(b []byte) (int, error) {
	if k.dead {
		return 0, http.ErrHijacked
	}
	for i := 0; i < len(b); {
		j := bytes.Index(b[i:], []byte("\n\n"))
		if j < 0 || k.left == 0 {
			break
		}
		i += j + 2
		k.left--
		if k.left == 0 {
			if _, err := k.ResponseWriter.Write(b[:i]); err != nil {
				return 0, err
			}
			k.ResponseWriter.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(k.ResponseWriter).Hijack()
			if err == nil {
				conn.Close()
			}
			k.dead = true
			return 0, http.ErrHijacked
		}
	}
	return k.ResponseWriter.Write(b)
}

func (k *killWriter) Flush() {
	if !k.dead {
		k.ResponseWriter.(http.Flusher).Flush()
	}
}

// firstWrite calls fn after the first write (and flush) of a response.
type firstWrite struct {
	http.ResponseWriter
	fn     func()
	wrote  bool
	header bool
}

func (f *firstWrite) Write(b []byte) (int, error) {
	n, err := f.ResponseWriter.Write(b)
	f.wrote = true
	return n, err
}

func (f *firstWrite) Flush() {
	f.ResponseWriter.(http.Flusher).Flush()
	if f.wrote {
		f.fn()
	}
}

func collect(t *testing.T, seq func(func(*a2a.StreamResponse, error) bool)) ([]*a2a.StreamResponse, error) {
	t.Helper()
	var out []*a2a.StreamResponse
	for f, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

func TestStreamResumesAfterCut(t *testing.T) {
	// The uncut reference: task, 5 chunks, completed.
	ref := newAgent(t, nil)
	close(ref.release)
	rc, err := a2aclient.New(ref.card, nil)
	must(t, err)
	want, err := collect(t, rc.SendStreamingMessage(t.Context(), msgReq("m-1", "hold 5")))
	must(t, err)
	if len(want) != 7 {
		t.Fatalf("reference stream has %d frames, want 7", len(want))
	}

	for _, tc := range []struct {
		name string
		cut  int
	}{
		{"after all chunks (snapshot not newer: skipped)", 6},
		{"mid-way (snapshot newer: carries the missed chunks)", 3},
		{"after the first frame", 1},
	} {
		for _, binding := range []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON} {
			t.Run(tc.name+"/"+binding, func(t *testing.T) {
				ct := &cutter{n: tc.cut}
				a := newAgent(t, &agentOptions{wrap: ct.wrap})
				ct.release, ct.chunked = a.release, a.chunked
				card := *a.card
				card.SupportedInterfaces = append(card.SupportedInterfaces, a2a.AgentInterface{URL: a.srv.URL, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: a2a.ProtocolVersion})
				c, err := a2aclient.New(&card, &a2aclient.Options{ResumeBackoff: time.Millisecond, Transports: []string{binding}})
				must(t, err)
				got, err := collect(t, c.SendStreamingMessage(t.Context(), msgReq("m-1", "hold 5")))
				must(t, err)
				if d := cmp.Diff(want[:tc.cut], got[:tc.cut]); d != "" {
					t.Fatalf("frames before the cut (-want +got):\n%s", d)
				}
				rest := got[tc.cut:]
				if tc.cut < 6 {
					// The snapshot replaces the missed frames.
					if len(rest) != 2 || rest[0].Task == nil {
						t.Fatalf("after the cut got %d frames %v, want a task snapshot then the completion", len(rest), frameKinds(rest))
					}
					if got, want := a2a.PartsText(rest[0].Task.Artifacts[0].Parts), "chunk 0;\nchunk 1;\nchunk 2;\nchunk 3;\nchunk 4;"; got != want {
						t.Errorf("snapshot artifact = %q, want %q", got, want)
					}
					rest = rest[1:]
				}
				if d := cmp.Diff(want[6:], rest); d != "" {
					t.Errorf("frames after the cut (-want +got):\n%s", d)
				}
			})
		}
	}
}

func frameKinds(fs []*a2a.StreamResponse) string {
	var b strings.Builder
	for _, f := range fs {
		switch {
		case f.Task != nil:
			b.WriteString("task ")
		case f.Message != nil:
			b.WriteString("message ")
		case f.StatusUpdate != nil:
			b.WriteString("status:" + f.StatusUpdate.Status.State.String() + " ")
		case f.ArtifactUpdate != nil:
			b.WriteString("artifact ")
		}
	}
	return b.String()
}

// sseServer answers every POST with body, as SSE unless json is true.
func sseServer(t *testing.T, status int, contentType, body string) *a2aclient.Client {
	t.Helper()
	srv := newHTTPServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	c, err := a2aclient.NewForURL(srv.URL, &a2aclient.Options{ResumeAttempts: -1})
	must(t, err)
	return c
}

func TestStreamTerminality(t *testing.T) {
	working := `data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}` + "\n\n"
	for _, tc := range []struct {
		name, ct, body string
		frames         int
		want           error
	}{
		{"closes while working", "text/event-stream", working, 1, a2aclient.ErrStreamIncomplete},
		{"closes before any frame", "text/event-stream", ": keep-alive\n\n", 0, a2aclient.ErrStreamIncomplete},
		{"cut inside an event", "text/event-stream", working + `data: {"jsonrpc"`, 1, a2aclient.ErrStreamIncomplete},
		{"refusal as one SSE error event", "text/event-stream", `data: {"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"task not found"}}` + "\n\n", 0, a2a.ErrTaskNotFound},
		{"refusal as plain JSON", "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32004,"message":"terminal"}}`, 0, a2a.ErrUnsupportedOperation},
		{"error mid-stream", "text/event-stream", working + `data: {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}` + "\n\n", 1, a2a.ErrInternal},
		{"frame with two members", "text/event-stream", `data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t"},"message":{"messageId":"m"}}}` + "\n\n", 0, a2aclient.ErrInvalidResponse},
		{"not JSON-RPC", "text/event-stream", "data: hello\n\n", 0, a2aclient.ErrInvalidResponse},
		{"completed", "text/event-stream", working + `data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}}` + "\n\n", 2, nil},
		{"interrupted", "text/event-stream", `data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}}` + "\n\n", 1, nil},
		{"message", "text/event-stream", `data: {"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}}` + "\n\n", 1, nil},
		{"HTTP 401 before the stream", "text/plain", "no", 0, a2aclient.ErrUnauthenticated},
		{"whole answer as plain JSON", "application/json", `{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}}`, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := 200
			if tc.ct == "text/plain" {
				status = 401
			}
			c := sseServer(t, status, tc.ct, tc.body)
			got, err := collect(t, c.SendStreamingMessage(t.Context(), msgReq("m", "x")))
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if len(got) != tc.frames {
				t.Errorf("got %d frames, want %d", len(got), tc.frames)
			}
		})
	}
}

func TestStreamResumeGivesUp(t *testing.T) {
	// A server that always drops the stream while working: the client
	// resumes ResumeAttempts times, then fails.
	var mu sync.Mutex
	calls := map[string]int{}
	srv := newHTTPServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if bytes.Contains(b, []byte("SubscribeToTask")) {
			calls["subscribe"]++
		} else {
			calls["send"]++
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}`+"\n\n")
	}))
	c, err := a2aclient.New(&a2a.AgentCard{Name: "x", SupportedInterfaces: []a2a.AgentInterface{{URL: srv.URL, ProtocolBinding: "JSONRPC"}}},
		&a2aclient.Options{ResumeAttempts: 3, ResumeBackoff: time.Millisecond, ResumeMaxBackoff: 2 * time.Millisecond})
	must(t, err)
	frames, err := collect(t, c.SendStreamingMessage(t.Context(), msgReq("m", "x")))
	if !errors.Is(err, a2aclient.ErrStreamIncomplete) {
		t.Fatalf("err = %v, want ErrStreamIncomplete", err)
	}
	// The frames carry no sequence numbers, so each resumed stream's
	// snapshot is yielded; a snapshot alone is not progress, so the
	// attempts are not reset and the client gives up after three.
	if len(frames) != 4 {
		t.Errorf("got %d frames, want 4 (the first task and three snapshots)", len(frames))
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["send"] != 1 || calls["subscribe"] != 3 {
		t.Errorf("calls = %v, want 1 send and 3 subscribes", calls)
	}
}

// httpServer is an httptest server closed at the end of the test.
type httpServer struct{ URL string }

func newHTTPServer(t *testing.T, h http.Handler) *httpServer {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return &httpServer{URL: s.URL}
}

// A task that ends while the client is disconnected: SubscribeToTask is
// refused (UnsupportedOperation on a terminal task), so the client fetches
// the task and yields it as the final frame.
func TestStreamResumeAfterTaskEnded(t *testing.T) {
	// The cutter's release channel is its own: the interceptor below
	// releases the agent.
	ct := &cutter{n: 2, release: make(chan struct{})}
	a := newAgent(t, &agentOptions{wrap: ct.wrap})
	plain, err := a2aclient.New(a.card, nil)
	must(t, err)
	var methods []string
	waitDone := a2aclient.InterceptorFuncs{BeforeFunc: func(ctx context.Context, call *a2aclient.Call) (context.Context, error) {
		methods = append(methods, call.Method)
		if call.Method != a2a.MethodSubscribeToTask {
			return ctx, nil
		}
		close(a.release)
		id := call.Params.(*a2a.SubscribeToTaskRequest).ID
		for {
			task, err := plain.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
			if err != nil {
				return ctx, err
			}
			if task.Status.State.Terminal() {
				return ctx, nil
			}
			time.Sleep(time.Millisecond)
		}
	}}
	c, err := a2aclient.New(a.card, &a2aclient.Options{ResumeBackoff: time.Millisecond, Interceptors: []a2aclient.Interceptor{waitDone}})
	must(t, err)
	got, err := collect(t, c.SendStreamingMessage(t.Context(), msgReq("m-1", "hold 3")))
	must(t, err)
	if k := frameKinds(got); k != "task artifact task " {
		t.Fatalf("frames %q, want the two frames before the cut and the fetched task", k)
	}
	last := got[2].Task
	if last.Status.State != a2a.TaskStateCompleted || a2a.PartsText(last.Artifacts[0].Parts) != "chunk 0;\nchunk 1;\nchunk 2;" {
		t.Errorf("final task = %+v", last)
	}
	if d := cmp.Diff([]string{"SendStreamingMessage", "SubscribeToTask", "GetTask"}, methods); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}

// A connection that goes silent (half-open) is dropped after
// StreamIdleTimeout and the stream resumed.
func TestStreamIdleTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if bytes.Contains(b, []byte("SubscribeToTask")) {
			io.WriteString(w, "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}}\n\n")
			return
		}
		io.WriteString(w, "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // silent until the client gives up
	}))
	defer srv.Close()
	c, err := a2aclient.NewForURL(srv.URL, &a2aclient.Options{StreamIdleTimeout: 50 * time.Millisecond, ResumeBackoff: time.Millisecond})
	must(t, err)
	// The server stays silent for good: without the idle timeout the
	// stream would end only with this context, a minute from now.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	got, err := collect(t, c.SendStreamingMessage(ctx, msgReq("m", "x")))
	must(t, err)
	if k := frameKinds(got); k != "task task " || got[1].Task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("frames %q, want the working task then the completed snapshot", k)
	}
}

// A resumption refused with an HTTP 4xx is not retried.
func TestStreamResumeRefused(t *testing.T) {
	var mu sync.Mutex
	subscribes := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte("SubscribeToTask")) {
			mu.Lock()
			subscribes++
			mu.Unlock()
			http.Error(w, "gone", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}`+"\n\n")
	}))
	defer srv.Close()
	c, err := a2aclient.NewForURL(srv.URL, &a2aclient.Options{ResumeBackoff: time.Millisecond})
	must(t, err)
	_, err = collect(t, c.SendStreamingMessage(t.Context(), msgReq("m", "x")))
	if !errors.Is(err, a2aclient.ErrStreamIncomplete) || !errors.Is(err, a2aclient.ErrUnreachable) {
		t.Errorf("err = %v, want ErrStreamIncomplete and ErrUnreachable", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if subscribes != 1 {
		t.Errorf("%d subscribe attempts, want 1", subscribes)
	}
}
