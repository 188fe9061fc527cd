package app_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/store/sqlite"
)

// leftBehind writes tasks into the database at dir as a server that then
// went away would have left them: under the partitioned scope of the echo
// agent, by a handle that is closed afterwards. Closing gives the handle's
// lease up, so its tasks are orphans at once (a killed process's lease
// lapses instead; cmd/novaos tests that).
func leftBehind(t *testing.T, dir string, tasks ...*a2a.Task) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(dir, app.DatabaseFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, task := range tasks {
		if _, err := db.TaskStore().Create(t.Context(), a2asrv.Scope{Tenant: "echo/"}, task); err != nil {
			t.Fatal(err)
		}
	}
}

func orphanTask(id string, state a2a.TaskState) *a2a.Task {
	return &a2a.Task{ID: id, ContextID: "ctx-" + id,
		Status:  a2a.TaskStatus{State: state, Timestamp: time.Now().UTC().Truncate(time.Millisecond)},
		History: []a2a.Message{*a2a.NewMessage(a2a.RoleUser, a2a.TextPart("work on "+id))},
	}
}

func getTask(t *testing.T, url, id string) (*a2a.Task, *a2a.Error) {
	t.Helper()
	res, rerr := rpc(t, url, a2a.MethodGetTask, a2a.GetTaskRequest{ID: id})
	if rerr != nil {
		return nil, rerr
	}
	var task a2a.Task
	if err := a2a.Unmarshal(res, &task); err != nil {
		t.Fatal(err)
	}
	return &task, nil
}

func wantSettled(t *testing.T, task *a2a.Task, text string) {
	t.Helper()
	st := task.Status
	if st.State != a2a.TaskStateFailed || st.Message == nil || st.Message.Text() != text || st.Message.Role != a2a.RoleAgent {
		t.Errorf("task %s: %s %+v; want FAILED with agent message %q", task.ID, st.State, st.Message, text)
		return
	}
	if h := task.History; len(h) == 0 || h[len(h)-1].MessageID != st.Message.MessageID {
		t.Errorf("task %s: the status message is not the last history entry", task.ID)
	}
}

// At start, the server settles what a dead process left SUBMITTED or
// WORKING, keeps what waits for a user, and each settled task stays its own
// agent's.
func TestStartSettlesOrphans(t *testing.T) {
	dir := t.TempDir()
	start(t, &app.Options{DataDir: dir}).Shutdown(t.Context()) // creates the database
	leftBehind(t, dir,
		orphanTask("submitted", a2a.TaskStateSubmitted),
		orphanTask("working", a2a.TaskStateWorking),
		orphanTask("input", a2a.TaskStateInputRequired),
		orphanTask("done", a2a.TaskStateCompleted),
	)
	srv := start(t, &app.Options{DataDir: dir})
	echo := srv.URL() + "/agents/echo"
	for _, id := range []string{"submitted", "working"} {
		task, rerr := getTask(t, echo, id)
		if rerr != nil {
			t.Fatalf("GetTask %s: %v", id, rerr)
		}
		wantSettled(t, task, a2asrv.RestartedText)
		if _, rerr := getTask(t, srv.URL()+"/agents/tck", id); !errors.Is(rerr, a2a.ErrTaskNotFound) {
			t.Errorf("settled task %s through another agent: %v, want not found", id, rerr)
		}
	}
	for id, want := range map[string]a2a.TaskState{"input": a2a.TaskStateInputRequired, "done": a2a.TaskStateCompleted} {
		if task, rerr := getTask(t, echo, id); rerr != nil || task.Status.State != want {
			t.Errorf("task %s: %v %v, want %s kept", id, task, rerr, want)
		}
	}
}

// While the server runs, it keeps sweeping: a task another process leaves
// behind later is settled within a heartbeat or two.
func TestSweeperSettlesLaterOrphans(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, &app.Options{DataDir: dir, Database: app.DatabaseOptions{LeaseHeartbeat: 50 * time.Millisecond, LeaseExpiry: time.Second}})
	leftBehind(t, dir, orphanTask("later", a2a.TaskStateWorking))
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, rerr := getTask(t, srv.URL()+"/agents/echo", "later")
		if rerr != nil {
			t.Fatal(rerr)
		}
		if task.Status.State == a2a.TaskStateFailed {
			wantSettled(t, task, a2asrv.RestartedText)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task still %s after 10s", task.Status.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewRefusesAShortLease(t *testing.T) {
	_, err := app.New(t.Context(), &app.Options{DataDir: t.TempDir(), Database: app.DatabaseOptions{LeaseHeartbeat: time.Second, LeaseExpiry: time.Second}})
	if err == nil {
		t.Fatal("New accepted a lease expiry shorter than twice the heartbeat")
	}
}

// A blocking SendMessage still running when the shutdown grace ends gets a
// JSON-RPC error body, not a cut connection, and its task is FAILED when
// the server comes back.
func TestShutdownAnswersBlockingCaller(t *testing.T) {
	dir := t.TempDir()
	opts := func() *app.Options {
		return &app.Options{Addr: "127.0.0.1:0", DataDir: dir, Agents: app.AgentOptions{TCKStreamingTimeout: time.Hour}}
	}
	srv, err := app.New(t.Context(), opts())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	tck := srv.URL() + "/agents/tck"

	// A blocking call's new task is stored only when it is final, so the
	// call continues a stored task instead: one waiting for input, which
	// then works for an hour.
	res, rerr := rpc(t, tck, a2a.MethodSendMessage, map[string]any{"message": map[string]any{
		"messageId": "tck-input-required-" + a2a.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": "start"}},
	}})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var first a2a.SendMessageResponse
	if err := a2a.Unmarshal(res, &first); err != nil || first.Task == nil || first.Task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("first message: %s (%v), want an INPUT_REQUIRED task", res, err)
	}
	taskID := first.Task.ID

	type answer struct {
		body []byte
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		body := `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"tck-delayed-complete-` + a2a.NewID() +
			`","taskId":"` + taskID + `","role":"ROLE_USER","parts":[{"text":"take your time"}]}}}`
		req, _ := http.NewRequest(http.MethodPost, tck, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{b, err}
	}()
	// Wait until the task is WORKING, so the call is blocked on it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, rerr := getTask(t, tck, taskID)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if task.Status.State == a2a.TaskStateWorking {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task is %s, not WORKING, after 10s", task.Status.State)
		}
		time.Sleep(10 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want the grace period exceeded", err)
	}
	a := <-answered
	if a.err != nil {
		t.Fatalf("blocking call: %v (the connection was cut before an answer)", a.err)
	}
	r, err := a2a.DecodeResponse(a.body)
	if err != nil || r.Error == nil {
		t.Fatalf("blocking call answered %q (%v), want a JSON-RPC error", a.body, err)
	}
	if r.Error.Code != a2a.CodeInternalError || !strings.Contains(r.Error.Message, "server shutting down; the task was left in state TASK_STATE_FAILED") ||
		!strings.Contains(string(a.body), `"taskId":"`+taskID+`"`) {
		t.Errorf("error body: %s", a.body)
	}

	again := start(t, opts())
	task, rerr := getTask(t, again.URL()+"/agents/tck", taskID)
	if rerr != nil {
		t.Fatal(rerr)
	}
	wantSettled(t, task, a2asrv.ShutdownText)
}

// blockingStore is a task store whose first sweep blocks until release is
// closed or the sweep's context ends, as on a database that stalls.
type blockingStore struct {
	a2asrv.TaskStore
	entered chan struct{}
	release chan struct{}
	once    *sync.Once
}

func newBlockingStore() blockingStore {
	return blockingStore{a2asrv.NewMemoryTaskStore(nil), make(chan struct{}), make(chan struct{}), new(sync.Once)}
}

func (b blockingStore) Orphans(ctx context.Context, _ string, _ int) ([]a2asrv.Orphan, string, error) {
	b.once.Do(func() { close(b.entered) })
	select {
	case <-b.release:
		return nil, "", nil
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
}

func (b blockingStore) Settle(context.Context, a2asrv.Scope, *a2a.Task, a2asrv.Version) (a2asrv.Version, error) {
	return 0, a2asrv.ErrNotFound
}

// within fails t unless f returns within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s blocked for %v while the first sweep waits on the database", what, d)
	}
}

// The first sweep runs before the server serves, but without the server's
// lock: while it waits on a slow database, Addr, URL and Endpoints answer
// at once, and Shutdown cuts the sweep short.
func TestFirstSweepHoldsNoLock(t *testing.T) {
	tests := []struct {
		name     string
		shutdown bool // else the sweep is let through
		wantErr  error
	}{
		{"sweep ends", false, nil},
		{"shutdown during sweep", true, app.ErrStarted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newBlockingStore()
			srv, err := app.New(t.Context(), &app.Options{Addr: "127.0.0.1:0", Stores: recoverable(store)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Shutdown(context.Background()) })
			started := make(chan error, 1)
			go func() { started <- srv.Start(context.Background()) }()
			<-store.entered
			within(t, 2*time.Second, "Addr, URL and Endpoints", func() {
				if srv.Addr() != "" || srv.URL() != "" || srv.Endpoints() != nil {
					t.Errorf("the server has an address before its first sweep ended")
				}
				if srv.Issuer() != nil || srv.Gate() != nil {
					t.Errorf("the server hands out its services before it serves")
				}
			})
			if tt.shutdown {
				within(t, 5*time.Second, "Shutdown", func() {
					if err := srv.Shutdown(context.Background()); err != nil {
						t.Errorf("Shutdown: %v", err)
					}
				})
			} else {
				close(store.release)
			}
			if err := <-started; !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Start = %v, want %v", err, tt.wantErr)
			}
			if !tt.shutdown {
				if srv.Addr() == "" {
					t.Error("no address after Start")
				}
				resp, err := http.Get(srv.URL() + "/healthz")
				if err != nil {
					t.Fatalf("not serving after Start: %v", err)
				}
				resp.Body.Close()
			}
		})
	}
}

// countingStore counts the sweeps that read it.
type countingStore struct {
	a2asrv.TaskStore
	sweeps *atomic.Int32
}

func (c countingStore) Orphans(context.Context, string, int) ([]a2asrv.Orphan, string, error) {
	c.sweeps.Add(1)
	return nil, "", nil
}

func (c countingStore) Settle(context.Context, a2asrv.Scope, *a2a.Task, a2asrv.Version) (a2asrv.Version, error) {
	return 0, a2asrv.ErrNotFound
}

// Orphans appear only as leases lapse, so the server sweeps every lease
// expiry, not every heartbeat: once at Start, then at each tick of a
// ticker set to the expiry. The test drives the ticks itself.
func TestSweepsEveryExpiry(t *testing.T) {
	store := countingStore{a2asrv.NewMemoryTaskStore(nil), new(atomic.Int32)}
	const beat, expiry = 20 * time.Millisecond, 400 * time.Millisecond
	ticks := make(chan time.Time)
	var every atomic.Int64
	defer app.SetSweepTicker(func(d time.Duration) (<-chan time.Time, func()) {
		every.Store(int64(d))
		return ticks, func() {}
	})()
	start(t, &app.Options{Stores: recoverable(store), Database: app.DatabaseOptions{LeaseHeartbeat: beat, LeaseExpiry: expiry}})
	if got := time.Duration(every.Load()); got != expiry {
		t.Errorf("sweeps every %v, want every lease expiry (%v; the heartbeat is %v)", got, expiry, beat)
	}
	if n := store.sweeps.Load(); n != 1 {
		t.Fatalf("%d sweeps once started, want 1", n)
	}
	for want := int32(2); want <= 4; want++ {
		ticks <- time.Now()
		for deadline := time.Now().Add(time.Minute); store.sweeps.Load() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("%d sweeps after %d ticks, want %d", store.sweeps.Load(), want-1, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if n := store.sweeps.Load(); n != 4 {
		t.Errorf("%d sweeps after 3 ticks, want 4", n)
	}
}
