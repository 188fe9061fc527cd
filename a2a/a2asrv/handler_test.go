package a2asrv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// controlled is an executor whose runs block until the test releases them,
// recording how each run's context ended.
type controlled struct {
	mu      sync.Mutex
	release map[string]chan string // task id -> what to do next
	causes  map[string]error
	after   map[string]error // result of a write attempted after the context ended
	started chan string
}

func newControlled() *controlled {
	return &controlled{release: map[string]chan string{}, causes: map[string]error{}, after: map[string]error{}, started: make(chan string, 16)}
}

func (c *controlled) ch(id string) chan string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.release[id]
	if ch == nil {
		ch = make(chan string, 1)
		c.release[id] = ch
	}
	return ch
}

func (c *controlled) Execute(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
		return err
	}
	c.started <- req.TaskID
	select {
	case next := <-c.ch(req.TaskID):
		art := a2a.Artifact{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart(next)}}
		if err := u.AddArtifact(ctx, art, false, true, nil); err != nil {
			return err
		}
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
	case <-ctx.Done():
		werr := u.UpdateStatus(context.Background(), a2a.TaskStateCompleted, nil, nil)
		c.mu.Lock()
		c.causes[req.TaskID] = context.Cause(ctx)
		c.after[req.TaskID] = werr
		c.mu.Unlock()
		return ctx.Err()
	}
}

func (c *controlled) outcome(id string) (cause, after error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.causes[id], c.after[id]
}

type client struct {
	t   *testing.T
	url string
	n   atomic.Int64
}

func (c *client) body(method string, params any) []byte {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.n.Add(1), "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

func (c *client) post(ctx context.Context, method string, params any, header ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body(method, params)))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return http.DefaultClient.Do(req)
}

// call runs a unary method and decodes its result into out.
func (c *client) call(method string, params any, out any, header ...string) *a2a.Error {
	c.t.Helper()
	resp, err := c.post(context.Background(), method, params, header...)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	r, err := a2a.DecodeResponse(body)
	if err != nil {
		c.t.Fatalf("%s: %v: %s", method, err, body)
	}
	if r.Error != nil {
		return r.Error
	}
	if out != nil {
		if err := a2a.Unmarshal(r.Result, out); err != nil {
			c.t.Fatal(err)
		}
	}
	return nil
}

// stream opens a streaming method and returns a channel of frames; the
// channel closes when the stream ends. How it ended is kept for next and
// closed: an error frame, a frame that does not decode or a broken
// connection fails the test there, and, should the test never look (a
// range loop), when the test ends. A stream the test's own ctx ended is a
// clean end.
func (c *client) stream(ctx context.Context, method string, params any) <-chan *a2a.StreamResponse {
	c.t.Helper()
	resp, err := c.post(ctx, method, params)
	if err != nil {
		c.t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s: content type %q: %s", method, ct, body)
	}
	out := make(chan *a2a.StreamResponse, 64)
	end := &streamEnd{done: make(chan struct{})}
	streamEnds.Store((<-chan *a2a.StreamResponse)(out), end)
	// Runs before newServer's cleanup (cleanups run last first), so a
	// stream still open here is not judged by the server's shutdown.
	c.t.Cleanup(func() {
		streamEnds.Delete((<-chan *a2a.StreamResponse)(out))
		select {
		case <-end.done:
			if end.err != nil && !end.seen.Load() {
				c.t.Errorf("%s: stream ended with an error the test never saw: %v", method, end.err)
			}
		default:
		}
	})
	go func() {
		defer close(out)
		defer close(end.done)
		defer resp.Body.Close()
		er := a2a.NewEventReader(resp.Body, 0)
		for n := 1; ; n++ {
			ev, err := er.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() == nil {
					end.err = fmt.Errorf("after %d frames: read: %w", n-1, err)
				}
				return
			}
			r, err := a2a.DecodeResponse(ev.Data)
			if err != nil {
				end.err = fmt.Errorf("frame %d: %w: %s", n, err, ev.Data)
				return
			}
			if r.Error != nil {
				end.err = fmt.Errorf("frame %d is an error: %w", n, r.Error)
				return
			}
			var sr a2a.StreamResponse
			if err := a2a.Unmarshal(r.Result, &sr); err != nil {
				end.err = fmt.Errorf("frame %d: %w: %s", n, err, ev.Data)
				return
			}
			out <- &sr
		}
	}()
	return out
}

// streamEnd is how a stream opened by client.stream ended; err is set
// before done and the frame channel are closed.
type streamEnd struct {
	done chan struct{}
	err  error
	seen atomic.Bool // a helper reported err
}

// streamEnds maps each channel client.stream returned to its streamEnd.
var streamEnds sync.Map

// endOf returns the error a closed stream ended with, and marks it seen.
func endOf(ch <-chan *a2a.StreamResponse) error {
	v, ok := streamEnds.Load(ch)
	if !ok {
		return nil
	}
	end := v.(*streamEnd)
	<-end.done
	end.seen.Store(true)
	return end.err
}

func next(t *testing.T, ch <-chan *a2a.StreamResponse) *a2a.StreamResponse {
	t.Helper()
	select {
	case f, ok := <-ch:
		if !ok {
			if err := endOf(ch); err != nil {
				t.Fatalf("stream closed early: %v", err)
			}
			t.Fatal("stream closed early")
		}
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no frame within 5s")
	}
	return nil
}

// closed waits for the stream to end cleanly: no further frame, and no
// error frame or broken connection at its end.
func closed(t *testing.T, ch <-chan *a2a.StreamResponse) {
	t.Helper()
	select {
	case f, ok := <-ch:
		if ok {
			t.Fatalf("want the stream closed, got a frame %+v", f)
		}
		if err := endOf(ch); err != nil {
			t.Fatalf("want the stream closed cleanly, it ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream still open after 5s")
	}
}

func newServer(t *testing.T, exec a2asrv.Executor, opts *a2asrv.Options) (*client, *a2asrv.Handler) {
	t.Helper()
	h := a2asrv.NewHandler(testCard(), exec, opts)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		h.Shutdown(ctx)
		srv.Close()
	})
	return &client{t: t, url: srv.URL}, h
}

func userMessage(text string) map[string]any {
	return map[string]any{"message": map[string]any{"messageId": a2a.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}}
}

func continuation(taskID, text string) map[string]any {
	m := userMessage(text)
	m["message"].(map[string]any)["taskId"] = taskID
	return m
}

// Rule 1: CancelTask writes CANCELED first, then preempts the execution,
// whose later writes are refused; streams on the task end with CANCELED.
func TestCancelPreemptsExecution(t *testing.T) {
	exec := newControlled()
	c, _ := newServer(t, exec, nil)
	frames := c.stream(context.Background(), a2a.MethodSendStreamingMessage, userMessage("work"))
	first := next(t, frames)
	if first.Task == nil || first.Task.Status.State != a2a.TaskStateWorking {
		t.Fatalf("first frame = %+v, want the task, working", first)
	}
	id := first.Task.ID
	<-exec.started
	var canceled a2a.Task
	if err := c.call(a2a.MethodCancelTask, map[string]any{"id": id}, &canceled); err != nil {
		t.Fatal(err)
	}
	if canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask returned %s", canceled.Status.State)
	}
	last := next(t, frames)
	if last.StatusUpdate == nil || last.StatusUpdate.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("last frame = %+v, want CANCELED", last)
	}
	closed(t, frames)
	waitFor(t, func() bool { cause, _ := exec.outcome(id); return cause != nil })
	cause, after := exec.outcome(id)
	if !errors.Is(cause, a2asrv.ErrCanceled) {
		t.Errorf("execution cause = %v, want ErrCanceled", cause)
	}
	if !errors.Is(after, a2asrv.ErrRevoked) {
		t.Errorf("write after cancel = %v, want ErrRevoked", after)
	}
	var got a2a.Task
	if err := c.call(a2a.MethodGetTask, map[string]any{"id": id}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateCanceled {
		t.Errorf("stored state = %s, want CANCELED (the skill's late write must not win)", got.Status.State)
	}
}

// Rule 3: a caller that disconnects detaches the execution; it runs on and
// SubscribeToTask re-attaches, snapshot first.
func TestDisconnectDetachesAndResubscribe(t *testing.T) {
	exec := newControlled()
	c, _ := newServer(t, exec, nil)
	ctx, cancel := context.WithCancel(context.Background())
	frames := c.stream(ctx, a2a.MethodSendStreamingMessage, userMessage("work"))
	id := next(t, frames).Task.ID
	<-exec.started
	cancel() // the caller goes away
	closed(t, frames)

	var got a2a.Task
	if err := c.call(a2a.MethodGetTask, map[string]any{"id": id}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateWorking {
		t.Fatalf("after disconnect state = %s, want WORKING", got.Status.State)
	}
	sub := c.stream(context.Background(), a2a.MethodSubscribeToTask, map[string]any{"id": id})
	snap := next(t, sub)
	if snap.Task == nil || snap.Task.ID != id {
		t.Fatalf("first SubscribeToTask frame = %+v, want the task snapshot", snap)
	}
	exec.ch(id) <- "finished while detached"
	var states []a2a.TaskState
	for f := range sub {
		switch {
		case f.ArtifactUpdate != nil:
			if txt := a2a.PartsText(f.ArtifactUpdate.Artifact.Parts); txt != "finished while detached" {
				t.Errorf("artifact = %q", txt)
			}
		case f.StatusUpdate != nil:
			states = append(states, f.StatusUpdate.Status.State)
		}
	}
	if len(states) != 1 || states[0] != a2a.TaskStateCompleted {
		t.Errorf("status frames after re-attach = %v, want [COMPLETED]", states)
	}
}

// A new message on a task whose execution is live supersedes it.
func TestNewMessageSupersedesLiveExecution(t *testing.T) {
	exec := newControlled()
	c, _ := newServer(t, exec, nil)
	var first a2a.SendMessageResponse
	params := userMessage("first")
	params["configuration"] = map[string]any{"returnImmediately": true}
	if err := c.call(a2a.MethodSendMessage, params, &first); err != nil {
		t.Fatal(err)
	}
	if first.Task == nil || first.Task.Status.State != a2a.TaskStateSubmitted {
		t.Fatalf("returnImmediately answered %+v, want a submitted task", first)
	}
	id := first.Task.ID
	<-exec.started
	done := make(chan *a2a.SendMessageResponse, 1)
	go func() {
		var resp a2a.SendMessageResponse
		if err := c.call(a2a.MethodSendMessage, continuation(id, "second"), &resp); err != nil {
			t.Error(err)
		}
		done <- &resp
	}()
	<-exec.started // the second execution is running
	var cause, after error
	waitFor(t, func() bool { cause, after = exec.outcome(id); return cause != nil })
	if !errors.Is(cause, a2asrv.ErrSuperseded) || !errors.Is(after, a2asrv.ErrRevoked) {
		t.Errorf("first execution: cause %v, late write %v; want ErrSuperseded and ErrRevoked", cause, after)
	}
	exec.ch(id) <- "from the second"
	resp := <-done
	if resp.Task == nil || resp.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("second SendMessage = %+v, want a completed task", resp)
	}
	if n := len(resp.Task.Artifacts); n != 1 || a2a.PartsText(resp.Task.Artifacts[0].Parts) != "from the second" {
		t.Errorf("artifacts = %+v", resp.Task.Artifacts)
	}
}

// Every stream on a task gets the same frames in the same order.
func TestConcurrentSubscribersSeeSameFrames(t *testing.T) {
	exec := newControlled()
	c, _ := newServer(t, exec, nil)
	main := c.stream(context.Background(), a2a.MethodSendStreamingMessage, userMessage("work"))
	id := next(t, main).Task.ID
	<-exec.started
	subs := []<-chan *a2a.StreamResponse{
		c.stream(context.Background(), a2a.MethodSubscribeToTask, map[string]any{"id": id}),
		c.stream(context.Background(), a2a.MethodSubscribeToTask, map[string]any{"id": id}),
	}
	for _, s := range subs {
		if f := next(t, s); f.Task == nil {
			t.Fatalf("subscriber's first frame is not a task: %+v", f)
		}
	}
	exec.ch(id) <- "done"
	collect := func(ch <-chan *a2a.StreamResponse) string {
		var sb strings.Builder
		for f := range ch {
			b, _ := json.Marshal(f)
			sb.Write(b)
			sb.WriteByte('\n')
		}
		return sb.String()
	}
	want := collect(main)
	for i, s := range subs {
		if got := collect(s); got != want {
			t.Errorf("subscriber %d saw\n%s\nwant\n%s", i, got, want)
		}
	}
	if !strings.Contains(want, "TASK_STATE_COMPLETED") {
		t.Errorf("frames lack the completion: %s", want)
	}
}

// Tasks are scoped to the caller on every path.
func TestTasksAreScopedToCaller(t *testing.T) {
	opts := &a2asrv.Options{Identify: func(_ context.Context, c *a2asrv.Call) (a2asrv.Scope, error) {
		user := c.Header.Get("X-User")
		if user == "" {
			return a2asrv.Scope{}, errors.New("no user")
		}
		return a2asrv.Scope{Tenant: "acme", Owner: user}, nil
	}, PushConfigStore: a2asrv.NewMemoryPushConfigStore(nil)}
	c, _ := newServer(t, a2asrv.ExecutorFunc(scripted), opts)
	var resp a2a.SendMessageResponse
	if err := c.call(a2a.MethodSendMessage, userMessage("complete mine"), &resp, "X-User", "alice"); err != nil {
		t.Fatal(err)
	}
	id := resp.Task.ID
	cases := []struct {
		method string
		params any
	}{
		{a2a.MethodGetTask, map[string]any{"id": id}},
		{a2a.MethodCancelTask, map[string]any{"id": id}},
		{a2a.MethodSendMessage, continuation(id, "hijack")},
		{a2a.MethodCreateTaskPushNotificationConfig, map[string]any{"taskId": id, "url": "https://example.com/h"}},
		{a2a.MethodListTaskPushNotificationConfigs, map[string]any{"taskId": id}},
	}
	for _, tc := range cases {
		t.Run(tc.method, func(t *testing.T) {
			err := c.call(tc.method, tc.params, nil, "X-User", "mallory")
			if err == nil || err.Code != a2a.CodeTaskNotFound {
				t.Errorf("as another owner: %v, want TaskNotFound", err)
			}
		})
	}
	var list a2a.ListTasksResponse
	if err := c.call(a2a.MethodListTasks, map[string]any{}, &list, "X-User", "mallory"); err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != 0 || list.TotalSize != 0 {
		t.Errorf("another owner lists %d tasks", len(list.Tasks))
	}
	if err := c.call(a2a.MethodListTasks, map[string]any{}, &list, "X-User", "alice"); err != nil || len(list.Tasks) != 1 {
		t.Errorf("owner lists %d tasks (err %v), want 1", len(list.Tasks), err)
	}
	if err := c.call(a2a.MethodGetTask, map[string]any{"id": id}, nil); err == nil || err.Code != a2asrv.CodeUnauthenticated {
		t.Errorf("anonymous call: %v, want unauthenticated", err)
	}
}

// Shutdown waits for executions, then cancels those still running; their
// tasks keep the last state.
func TestShutdownCancelsLingeringExecutions(t *testing.T) {
	exec := newControlled()
	c, h := newServer(t, exec, nil)
	params := userMessage("work")
	params["configuration"] = map[string]any{"returnImmediately": true}
	var resp a2a.SendMessageResponse
	if err := c.call(a2a.MethodSendMessage, params, &resp); err != nil {
		t.Fatal(err)
	}
	<-exec.started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want deadline exceeded", err)
	}
	cause, _ := exec.outcome(resp.Task.ID)
	if !errors.Is(cause, a2asrv.ErrShutdown) {
		t.Errorf("cause = %v, want ErrShutdown", cause)
	}
	if err := c.call(a2a.MethodSendMessage, userMessage("complete late"), nil); err == nil {
		t.Error("a message after Shutdown was accepted")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Many concurrent callers on one handler: every blocking send completes
// and is listed afterwards.
func TestConcurrentSends(t *testing.T) {
	c, _ := newServer(t, a2asrv.ExecutorFunc(scripted), nil)
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp a2a.SendMessageResponse
			if err := c.call(a2a.MethodSendMessage, userMessage(fmt.Sprintf("complete %d", i)), &resp); err != nil {
				t.Error(err)
				return
			}
			if resp.Task == nil || resp.Task.Status.State != a2a.TaskStateCompleted {
				t.Errorf("send %d: %+v", i, resp)
			}
		}()
	}
	wg.Wait()
	var list a2a.ListTasksResponse
	if err := c.call(a2a.MethodListTasks, map[string]any{"pageSize": 100}, &list); err != nil {
		t.Fatal(err)
	}
	if list.TotalSize != n {
		t.Errorf("listed %d tasks, want %d", list.TotalSize, n)
	}
}

// A body over the limit is refused with a JSON-RPC error whether or not the
// client announced its length.
func TestBodyLimit(t *testing.T) {
	h := a2asrv.NewHandler(testCard(), a2asrv.ExecutorFunc(scripted), &a2asrv.Options{MaxBodyBytes: 1024})
	defer h.Shutdown(context.Background())
	big := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("x", 2048) + `"}]}}}`
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(big))
			if chunked {
				r.ContentLength = -1
			}
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			resp, err := a2a.DecodeResponse(w.Body.Bytes())
			if w.Code != http.StatusRequestEntityTooLarge || err != nil || resp.Error == nil || resp.Error.Code != a2a.CodeInvalidRequest {
				t.Errorf("got %d %s, want 413 with a -32600 error", w.Code, w.Body)
			}
		})
	}
}

// asker asks for input on a task's first turn; on the next it writes an
// artifact, reports it on written and completes once the test releases it.
type asker struct {
	written chan struct{}
	release chan struct{}
}

func (a *asker) Execute(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	if req.Task == nil {
		q := &a2a.Message{MessageID: a2a.NewID(), Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("what number?")}}
		return u.UpdateStatus(ctx, a2a.TaskStateInputRequired, q, nil)
	}
	art := a2a.Artifact{ArtifactID: "answer", Parts: []a2a.Part{a2a.TextPart("answer: " + req.Message.Text())}}
	if err := u.AddArtifact(ctx, art, false, true, nil); err != nil {
		return err
	}
	a.written <- struct{}{}
	<-a.release
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
}

// A message answering an interrupted task puts it back to WORKING, so a
// blocking call or a stream about the continuation waits for the agent
// instead of ending at the first write on the stale INPUT_REQUIRED.
func TestContinuationOfInterruptedTaskRunsToTheEnd(t *testing.T) {
	ask := func(t *testing.T) (*client, *asker, string) {
		a := &asker{written: make(chan struct{}, 1), release: make(chan struct{})}
		c, _ := newServer(t, a, nil)
		var first a2a.SendMessageResponse
		if err := c.call(a2a.MethodSendMessage, userMessage("ask"), &first); err != nil {
			t.Fatal(err)
		}
		if first.Task == nil || first.Task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("first turn = %+v, want INPUT_REQUIRED", first)
		}
		return c, a, first.Task.ID
	}
	t.Run("blocking", func(t *testing.T) {
		c, a, id := ask(t)
		done := make(chan *a2a.SendMessageResponse, 1)
		go func() {
			var resp a2a.SendMessageResponse
			if err := c.call(a2a.MethodSendMessage, continuation(id, "42"), &resp); err != nil {
				t.Error(err)
			}
			done <- &resp
		}()
		<-a.written
		select {
		case resp := <-done:
			t.Fatalf("the call answered before the agent finished: %+v", resp.Task.Status)
		case <-time.After(100 * time.Millisecond):
		}
		close(a.release)
		resp := <-done
		if resp.Task == nil || resp.Task.Status.State != a2a.TaskStateCompleted || len(resp.Task.Artifacts) != 1 {
			t.Fatalf("continuation = %+v, want COMPLETED with the answer", resp.Task)
		}
	})
	t.Run("stream", func(t *testing.T) {
		c, a, id := ask(t)
		frames := c.stream(t.Context(), a2a.MethodSendStreamingMessage, continuation(id, "42"))
		first := next(t, frames)
		if first.Task == nil || first.Task.Status.State != a2a.TaskStateWorking || len(first.Task.Artifacts) != 1 {
			t.Fatalf("first frame = %+v, want the task WORKING with the new artifact", first)
		}
		<-a.written
		close(a.release)
		last := next(t, frames)
		if last.StatusUpdate == nil || last.StatusUpdate.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("next frame = %+v, want the COMPLETED status", last)
		}
		closed(t, frames)
	})
	t.Run("returnImmediately", func(t *testing.T) {
		c, a, id := ask(t)
		params := continuation(id, "42")
		params["configuration"] = map[string]any{"returnImmediately": true}
		var resp a2a.SendMessageResponse
		if err := c.call(a2a.MethodSendMessage, params, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Task == nil || resp.Task.Status.State != a2a.TaskStateWorking {
			t.Fatalf("continuation = %+v, want WORKING", resp.Task)
		}
		<-a.written
		close(a.release)
	})
}
