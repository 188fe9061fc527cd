package a2asrv_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// fakeRecoverer keeps orphans in memory; conflict makes Settle of the
// named tasks fail as if another process had settled them first, and stuck
// makes it fail with err (ErrNotFound when nil) every time.
type fakeRecoverer struct {
	mu       sync.Mutex
	tasks    map[string]*a2asrv.Orphan
	conflict map[string]bool
	stuck    map[string]error
	settled  map[string]a2asrv.Version
}

func (f *fakeRecoverer) Orphans(_ context.Context, after string, limit int) ([]a2asrv.Orphan, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id, o := range f.tasks {
		if id > after && !o.Task.Status.State.Final() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	next := ""
	if len(ids) > limit {
		ids = ids[:limit]
		next = ids[limit-1]
	}
	var out []a2asrv.Orphan
	for _, id := range ids {
		o := f.tasks[id]
		out = append(out, a2asrv.Orphan{Scope: o.Scope, Task: o.Task.Clone(), Version: o.Version})
	}
	return out, next, nil
}

func (f *fakeRecoverer) Settle(_ context.Context, scope a2asrv.Scope, t *a2a.Task, prev a2asrv.Version) (a2asrv.Version, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.tasks[t.ID]
	switch {
	case o == nil || o.Scope != scope:
		return 0, a2asrv.ErrNotFound
	case f.conflict[t.ID] || o.Version != prev:
		return 0, a2asrv.ErrConcurrentModification
	}
	if err, ok := f.stuck[t.ID]; ok {
		return 0, cmp.Or(err, a2asrv.ErrNotFound)
	}
	o.Task, o.Version = t.Clone(), prev+a2asrv.RecoveryVersionGap
	f.settled[t.ID] = o.Version
	return o.Version, nil
}

func TestRecoverSettlesOrphans(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	scope := a2asrv.Scope{Tenant: "echo/", Owner: "alice"}
	f := &fakeRecoverer{tasks: map[string]*a2asrv.Orphan{}, conflict: map[string]bool{"taken": true}, settled: map[string]a2asrv.Version{}}
	user := a2a.Message{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}
	for i := range 250 {
		id := fmt.Sprintf("t%03d", i)
		f.tasks[id] = &a2asrv.Orphan{Scope: scope, Version: a2asrv.Version(i%7 + 1), Task: &a2a.Task{
			ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}, History: []a2a.Message{user},
		}}
	}
	f.tasks["taken"] = &a2asrv.Orphan{Scope: scope, Version: 3, Task: &a2a.Task{ID: "taken", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}}

	n, err := a2asrv.Recover(context.Background(), f, &a2asrv.RecoverOptions{
		BatchSize: 40, Now: func() time.Time { return now }, NewID: func() string { return "restart-msg" },
	})
	if err != nil || n != 250 {
		t.Fatalf("Recover = %d, %v; want 250 settled", n, err)
	}
	if _, ok := f.settled["taken"]; ok {
		t.Error("a task another process settled first was settled again")
	}
	msg := a2a.Message{MessageID: "restart-msg", Role: a2a.RoleAgent, TaskID: "t042", ContextID: "c", Parts: []a2a.Part{a2a.TextPart(a2asrv.RestartedText)}}
	want := &a2a.Task{ID: "t042", ContextID: "c",
		Status:  a2a.TaskStatus{State: a2a.TaskStateFailed, Message: &msg, Timestamp: now},
		History: []a2a.Message{user, msg},
	}
	if diff := gocmp.Diff(want, f.tasks["t042"].Task); diff != "" {
		t.Errorf("settled task (-want +got):\n%s", diff)
	}
	if got, want := f.settled["t042"], a2asrv.Version(42%7+1)+a2asrv.RecoveryVersionGap; got != want {
		t.Errorf("settled at version %d, want %d (stored + gap)", got, want)
	}
}

// Orphans that can never be settled, filling whole batches at the head of
// the id order, are passed over: the orphans behind them are settled in
// the same Recover, and a failure other than a lost race is reported once
// the walk is done.
func TestRecoverPassesOverStuckOrphans(t *testing.T) {
	scope := a2asrv.Scope{Tenant: "echo/"}
	broken := errors.New("disk on fire")
	tests := []struct {
		name    string
		stuck   error
		wantErr error
	}{
		{"not found", nil, nil},
		{"failing", broken, broken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRecoverer{tasks: map[string]*a2asrv.Orphan{}, stuck: map[string]error{}, settled: map[string]a2asrv.Version{}}
			add := func(id string) {
				f.tasks[id] = &a2asrv.Orphan{Scope: scope, Version: 1, Task: &a2a.Task{ID: id, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}}
			}
			for i := range 25 {
				id := fmt.Sprintf("0-stuck-%02d", i)
				add(id)
				f.stuck[id] = tt.stuck
			}
			for i := range 7 {
				add(fmt.Sprintf("1-good-%d", i))
			}
			n, err := a2asrv.Recover(context.Background(), f, &a2asrv.RecoverOptions{BatchSize: 5})
			if n != 7 || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("Recover = %d, %v; want 7 settled, error %v", n, err, tt.wantErr)
			}
			for i := range 7 {
				if id := fmt.Sprintf("1-good-%d", i); f.settled[id] == 0 {
					t.Errorf("%s behind the stuck orphans was not settled", id)
				}
			}
		})
	}
}

// cutServer is a handler whose every execution marks its task WORKING and
// then waits for its context, the way a long model call would.
func cutServer(t *testing.T) (*client, *a2asrv.Handler, a2asrv.TaskStore, chan string) {
	t.Helper()
	store := a2asrv.NewMemoryTaskStore(nil)
	started := make(chan string, 4)
	exec := a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
			return err
		}
		started <- req.TaskID
		<-ctx.Done()
		// A late write must not land after the task was settled.
		if err := u.UpdateStatus(context.Background(), a2a.TaskStateCompleted, nil, nil); !errors.Is(err, a2asrv.ErrRevoked) {
			t.Errorf("write after shutdown: %v, want ErrRevoked", err)
		}
		return ctx.Err()
	})
	c, h := newServer(t, exec, &a2asrv.Options{TaskStore: store})
	return c, h, store, started
}

// A blocking SendMessage and a stream still waiting when Shutdown's grace
// period ends get a JSON-RPC error naming the task and the state it was
// left in, and that state is FAILED with ShutdownText.
func TestShutdownAnswersWaitingCalls(t *testing.T) {
	c, h, store, started := cutServer(t)

	type answer struct {
		body []byte
		err  error
	}
	blocking := make(chan answer, 1)
	go func() {
		resp, err := c.post(context.Background(), a2a.MethodSendMessage, userMessage("block"))
		if err != nil {
			blocking <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		blocking <- answer{b, err}
	}()
	blockedID := <-started

	streaming := make(chan answer, 1)
	go func() {
		resp, err := c.post(context.Background(), a2a.MethodSendStreamingMessage, userMessage("stream"), "Accept", "text/event-stream")
		if err != nil {
			streaming <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		streaming <- answer{b, err}
	}()
	streamedID := <-started

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := h.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want deadline exceeded", err)
	}

	wantErr := func(what string, raw []byte, id string) {
		t.Helper()
		r, err := a2a.DecodeResponse(raw)
		if err != nil {
			t.Fatalf("%s: %v: %s", what, err, raw)
		}
		if r.Error == nil {
			t.Fatalf("%s: got a result, want a shutdown error: %s", what, raw)
		}
		e := r.Error
		if e.Code != a2asrv.CodeShuttingDown || !strings.Contains(e.Message, "server shutting down; the task was left in state TASK_STATE_FAILED") {
			t.Errorf("%s: error %d %q", what, e.Code, e.Message)
		}
		if !strings.Contains(string(raw), `"taskId":"`+id+`"`) || !strings.Contains(string(raw), `"state":"TASK_STATE_FAILED"`) {
			t.Errorf("%s: ErrorInfo metadata does not name the task and state: %s", what, raw)
		}
	}
	a := <-blocking
	if a.err != nil {
		t.Fatalf("blocking call: %v", a.err)
	}
	wantErr("blocking SendMessage", a.body, blockedID)

	a = <-streaming
	if a.err != nil {
		t.Fatalf("stream: %v", a.err)
	}
	events := strings.Split(strings.TrimSpace(string(a.body)), "\n\n")
	last := events[len(events)-1]
	data, ok := strings.CutPrefix(last[strings.LastIndex(last, "\n")+1:], "data: ")
	if len(events) < 2 || !ok {
		t.Fatalf("stream: want frames then an error event, got %q", a.body)
	}
	wantErr("stream's last event", []byte(data), streamedID)

	for _, id := range []string{blockedID, streamedID} {
		task, v, err := store.Get(context.Background(), a2asrv.Scope{}, id)
		if err != nil {
			t.Fatal(err)
		}
		st := task.Status
		if st.State != a2a.TaskStateFailed || st.Message == nil || st.Message.Text() != a2asrv.ShutdownText || st.Message.Role != a2a.RoleAgent {
			t.Errorf("task %s after shutdown: %s %+v, want FAILED with %q", id, st.State, st.Message, a2asrv.ShutdownText)
		}
		if h := task.History; len(h) == 0 || h[len(h)-1].MessageID != st.Message.MessageID {
			t.Errorf("task %s: the status message is not the last history entry", id)
		}
		if v != 2 { // created WORKING, then FAILED
			t.Errorf("task %s at version %d, want 2", id, v)
		}
	}
}

// An interrupted task waits for its user, not for this process: shutdown
// leaves it as it is.
func TestShutdownKeepsInterruptedTasks(t *testing.T) {
	store := a2asrv.NewMemoryTaskStore(nil)
	asked := make(chan string, 1)
	exec := a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		if err := u.UpdateStatus(ctx, a2a.TaskStateInputRequired, &a2a.Message{Parts: []a2a.Part{a2a.TextPart("which city?")}}, nil); err != nil {
			return err
		}
		asked <- req.TaskID
		<-ctx.Done() // an executor that lingers after asking
		return ctx.Err()
	})
	c, h := newServer(t, exec, &a2asrv.Options{TaskStore: store})
	params := userMessage("weather")
	params["configuration"] = map[string]any{"returnImmediately": true}
	if err := c.call(a2a.MethodSendMessage, params, nil); err != nil {
		t.Fatal(err)
	}
	id := <-asked
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	h.Shutdown(ctx)
	task, _, err := store.Get(context.Background(), a2asrv.Scope{}, id)
	if err != nil || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("task after shutdown: %v, %v; want INPUT_REQUIRED kept", task, err)
	}
}
