package storetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// Replica is one process's handle on a store that other replicas share: its
// task store and the feed that reports the others' writes.
type Replica struct {
	Tasks a2asrv.TaskStore
	Feed  a2asrv.TaskFeed
	// DropFeed, when set, breaks the feed's connection to the store the
	// way a network fault would; the feed must notice, reconnect and
	// report the gap (TaskChange.Lost). Nil skips that part of the
	// contract.
	DropFeed func(t *testing.T)
}

// TestTaskFeed runs the a2asrv.TaskFeed contract through a2asrv Handlers, one
// per replica, on one store: a stream resumed on another replica continues
// with the sequence numbers the executing replica streams, with no gap and
// no duplicate, and the same frames a subscriber of the executing replica
// gets; CancelTask on any replica stops the execution wherever it runs; a
// newer message on another replica supersedes it; and a dropped feed
// catches up. newDB returns a function that opens a new replica on one fresh
// store, the same store at every call.
func TestTaskFeed(t *testing.T, newDB func(t *testing.T) func() Replica) {
	t.Run("ResumeOnAnotherReplica", func(t *testing.T) { testResumeElsewhere(t, newDB(t), false) })
	t.Run("ArtifactChunksAcrossReplicas", func(t *testing.T) { testResumeElsewhere(t, newDB(t), true) })
	t.Run("CancelFromAnotherReplica", func(t *testing.T) { testCancelElsewhere(t, newDB(t)) })
	t.Run("NewerMessageOnAnotherReplica", func(t *testing.T) { testSupersedeElsewhere(t, newDB(t)) })
	t.Run("DroppedFeedCatchesUp", func(t *testing.T) { testDroppedFeed(t, newDB(t)) })
	t.Run("CatchUp", func(t *testing.T) { testCatchUp(t, newDB(t)) })
}

// feedWait bounds every wait for a frame that must come.
const feedWait = 10 * time.Second

// stepper is an executor driven by the test: each step it is sent becomes
// one write; it reports how its execution ended.
type stepper struct {
	steps chan step
	ended chan error // context.Cause when cancelled, nil when it completed
}

type step struct {
	text     string
	artifact bool
	done     bool
}

func newStepper() *stepper {
	return &stepper{steps: make(chan step), ended: make(chan error, 4)}
}

func (s *stepper) Execute(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
		s.ended <- err
		return err
	}
	for {
		select {
		case <-ctx.Done():
			s.ended <- context.Cause(ctx)
			return ctx.Err()
		case st := <-s.steps:
			var err error
			switch {
			case st.done:
				err = u.UpdateStatus(ctx, a2a.TaskStateCompleted, textMessage(st.text), nil)
			case st.artifact:
				err = u.AddArtifact(ctx, a2a.Artifact{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart(st.text)}}, true, false, nil)
			default:
				err = u.UpdateStatus(ctx, a2a.TaskStateWorking, textMessage(st.text), nil)
			}
			if err != nil || st.done {
				s.ended <- err
				return err
			}
		}
	}
}

// wantEnded waits for the execution to end with cause want.
func (s *stepper) wantEnded(t *testing.T, want error, what string) {
	t.Helper()
	select {
	case cause := <-s.ended:
		if !errors.Is(cause, want) {
			t.Errorf("%s ended with %v, want %v", what, cause, want)
		}
	case <-time.After(feedWait):
		t.Fatalf("%s did not end", what)
	}
}

func textMessage(text string) *a2a.Message {
	return &a2a.Message{Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
}

// recorder is a StreamSink that keeps what it was sent.
type recorder struct {
	mu     sync.Mutex
	frames []recorded
	more   chan struct{}
}

// recorded is one frame, reduced to what replicas must agree on.
type recorded struct {
	seq  a2asrv.Version
	what string
}

func newRecorder() *recorder { return &recorder{more: make(chan struct{}, 1)} }

func (r *recorder) Send(v a2asrv.Version, resp *a2a.StreamResponse) error {
	var what string
	switch {
	case resp.Task != nil:
		what = "task " + resp.Task.Status.State.String()
	case resp.StatusUpdate != nil:
		what = "status " + resp.StatusUpdate.Status.State.String()
		if m := resp.StatusUpdate.Status.Message; m != nil {
			what += " " + m.Text()
		}
	case resp.ArtifactUpdate != nil:
		var text strings.Builder
		for _, p := range resp.ArtifactUpdate.Artifact.Parts {
			text.WriteString(p.Text)
		}
		what = "artifact " + text.String()
	default:
		what = "other"
	}
	r.mu.Lock()
	r.frames = append(r.frames, recorded{v, what})
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
	return nil
}

func (r *recorder) Flush() error     { return nil }
func (r *recorder) KeepAlive() error { return nil }

func (r *recorder) snapshot() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.frames)
}

// waitFor waits until a frame satisfies ok, and returns the frames so far.
func (r *recorder) waitFor(t *testing.T, what string, ok func(recorded) bool) []recorded {
	t.Helper()
	deadline := time.After(feedWait)
	for {
		fs := r.snapshot()
		if slices.ContainsFunc(fs, ok) {
			return fs
		}
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("no frame %s within %v; got %v", what, feedWait, fs)
		}
	}
}

func hasText(text string) func(recorded) bool {
	return func(f recorded) bool { return strings.HasSuffix(f.what, " "+text) }
}

// replicaSet is the Handlers of one test, each on its own replica.
type replicaSet struct {
	handlers []*a2asrv.Handler
	stepper  []*stepper
	replicas []Replica
}

func newReplicaSet(t *testing.T, open func() Replica, n int) *replicaSet {
	rs := &replicaSet{}
	streaming := true
	card := &a2a.AgentCard{Name: "feed", Capabilities: a2a.AgentCapabilities{Streaming: &streaming}}
	for range n {
		r := open()
		st := newStepper()
		h := a2asrv.NewHandler(card, st, &a2asrv.Options{
			TaskStore: r.Tasks, TaskFeed: r.Feed, ArtifactFlushInterval: 5 * time.Millisecond,
			// A new task takes the id its first message names after "m-".
			NewTaskID: func(req *a2a.SendMessageRequest) string { return strings.TrimPrefix(req.Message.MessageID, "m-") },
		})
		t.Cleanup(func() {
			// No grace: what still runs is cut off at once.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			h.Shutdown(ctx)
		})
		rs.handlers = append(rs.handlers, h)
		rs.stepper = append(rs.stepper, st)
		rs.replicas = append(rs.replicas, r)
	}
	return rs
}

func feedCall(method string) *a2asrv.Call {
	hd := http.Header{}
	hd.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	return &a2asrv.Call{Method: method, Binding: "test", Header: hd}
}

// stream runs fn (a streaming method) in the background into a recorder.
func stream(t *testing.T, fn func(ctx context.Context, sink a2asrv.StreamSink) error) (*recorder, <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rec, done := newRecorder(), make(chan error, 1)
	go func() { done <- fn(ctx, rec) }()
	return rec, done
}

// startTask sends a streaming message to replica i and waits for its task.
func (rs *replicaSet) startTask(t *testing.T, i int, taskID string) (*recorder, <-chan error) {
	t.Helper()
	req := &a2a.SendMessageRequest{Message: &a2a.Message{
		MessageID: "m-" + taskID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("go")},
	}}
	rec, done := stream(t, func(ctx context.Context, sink a2asrv.StreamSink) error {
		return rs.handlers[i].Core().SendStreamingMessage(ctx, feedCall(a2a.MethodSendStreamingMessage), req, sink)
	})
	rec.waitFor(t, "the task", func(f recorded) bool { return f.what == "task TASK_STATE_WORKING" })
	return rec, done
}

// startWorking starts a task on replica 0 and has it write its first
// status update, s0.
func (rs *replicaSet) startWorking(t *testing.T, taskID string) (*recorder, <-chan error) {
	t.Helper()
	rec, done := rs.startTask(t, 0, taskID)
	rs.send(t, 0, step{text: "s0"})
	rec.waitFor(t, "s0", hasText("s0"))
	return rec, done
}

func (rs *replicaSet) subscribe(t *testing.T, i int, taskID string) (*recorder, <-chan error) {
	rec, done := stream(t, func(ctx context.Context, sink a2asrv.StreamSink) error {
		return rs.handlers[i].Core().SubscribeToTask(ctx, feedCall(a2a.MethodSubscribeToTask), &a2a.SubscribeToTaskRequest{ID: taskID}, sink)
	})
	rec.waitFor(t, "snapshot", func(f recorded) bool { return strings.HasPrefix(f.what, "task ") })
	return rec, done
}

// send hands the executing replica's stepper one step.
func (rs *replicaSet) send(t *testing.T, i int, s step) {
	t.Helper()
	select {
	case rs.stepper[i].steps <- s:
	case <-time.After(feedWait):
		t.Fatalf("replica %d's execution did not take step %+v", i, s)
	}
}

func waitDone(t *testing.T, what string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s ended with %v", what, err)
		}
	case <-time.After(feedWait):
		t.Fatalf("%s did not end", what)
	}
}

// after returns the frames past the first (a subscription's snapshot).
func after(fs []recorded) []recorded {
	if len(fs) == 0 {
		return nil
	}
	return fs[1:]
}

// since returns the frames of fs whose sequence number is past seq.
func since(fs []recorded, seq a2asrv.Version) []recorded {
	var out []recorded
	for _, f := range fs {
		if f.seq > seq {
			out = append(out, f)
		}
	}
	return out
}

func testResumeElsewhere(t *testing.T, open func() Replica, artifacts bool) {
	rs := newReplicaSet(t, open, 2)
	const id = "feed-resume"
	onA, doneA := rs.startTask(t, 0, id)
	next := func(i int) step { return step{text: fmt.Sprintf("s%d", i), artifact: artifacts} }
	for i := range 3 {
		rs.send(t, 0, next(i))
	}
	onA.waitFor(t, "s2", hasText("s2"))
	// A client that followed the stream on A resumes it on B; another
	// subscribes on A itself, for comparison.
	onB, doneB := rs.subscribe(t, 1, id)
	sameA, doneSameA := rs.subscribe(t, 0, id)
	for i := 3; i < 8; i++ {
		rs.send(t, 0, next(i))
	}
	rs.send(t, 0, step{text: "finished", done: true})
	for what, done := range map[string]<-chan error{"the stream on A": doneA, "the stream resumed on B": doneB, "A's subscription": doneSameA} {
		waitDone(t, what, done)
	}
	if err := <-rs.stepper[0].ended; err != nil {
		t.Fatalf("the execution ended with %v", err)
	}
	a, b, same := onA.snapshot(), onB.snapshot(), sameA.snapshot()
	if len(b) == 0 || len(same) == 0 {
		t.Fatalf("a subscription got nothing: B %v, A %v", b, same)
	}
	snapB := b[0].seq
	// B's snapshot is what was stored when it subscribed; every frame A
	// streamed after that version reaches B, with its number, once.
	if want := since(a, snapB); !slices.Equal(after(b), want) {
		t.Errorf("frames on B after its snapshot at %d:\n got %v\nwant %v (A's stream: %v)", snapB, after(b), want, a)
	}
	for i := 1; i < len(b); i++ {
		if b[i].seq != b[i-1].seq+1 {
			t.Errorf("B's frames skip or repeat a sequence number: %v", b)
			break
		}
	}
	// A subscriber of the executing replica sees the same numbers.
	if want := since(a, same[0].seq); !slices.Equal(after(same), want) {
		t.Errorf("frames of A's own subscription:\n got %v\nwant %v", after(same), want)
	}
	if last := b[len(b)-1]; last.what != "status TASK_STATE_COMPLETED finished" {
		t.Errorf("B's last frame %v, want the completion", last)
	}
}

func testCancelElsewhere(t *testing.T, open func() Replica) {
	rs := newReplicaSet(t, open, 2)
	const id = "feed-cancel"
	onA, doneA := rs.startWorking(t, id)
	onB, doneB := rs.subscribe(t, 1, id)
	task, err := rs.handlers[1].Core().CancelTask(context.Background(), feedCall(a2a.MethodCancelTask), &a2a.CancelTaskRequest{ID: id})
	if err != nil {
		t.Fatalf("CancelTask on B: %v", err)
	}
	if task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask on B answered %s", task.Status.State)
	}
	rs.stepper[0].wantEnded(t, a2asrv.ErrCanceled, "the execution on A, cancelled on B")
	waitDone(t, "the stream on A", doneA)
	waitDone(t, "the subscription on B", doneB)
	for name, rec := range map[string]*recorder{"A": onA, "B": onB} {
		fs := rec.snapshot()
		if last := fs[len(fs)-1]; last.what != "status TASK_STATE_CANCELED" {
			t.Errorf("the stream on %s ends with %v, want the cancellation: %v", name, last, fs)
		}
	}
	a, b := onA.snapshot(), onB.snapshot()
	if a[len(a)-1].seq != b[len(b)-1].seq {
		t.Errorf("the cancellation is numbered %d on A and %d on B", a[len(a)-1].seq, b[len(b)-1].seq)
	}
	// The execution's writes after the cancellation are refused, and the
	// task stays cancelled everywhere.
	for i, h := range rs.handlers {
		got, err := h.Core().GetTask(context.Background(), feedCall(a2a.MethodGetTask), &a2a.GetTaskRequest{ID: id})
		if err != nil || got.Status.State != a2a.TaskStateCanceled {
			t.Errorf("GetTask on replica %d: %v, %v", i, got, err)
		}
	}
}

func testSupersedeElsewhere(t *testing.T, open func() Replica) {
	rs := newReplicaSet(t, open, 2)
	const id = "feed-supersede"
	_, doneA := rs.startWorking(t, id)
	// A client follows the task on B, where the newer message then goes
	// and runs.
	follower, doneFollower := rs.subscribe(t, 1, id)
	req := &a2a.SendMessageRequest{Message: &a2a.Message{
		MessageID: "m2", Role: a2a.RoleUser, TaskID: id, Parts: []a2a.Part{a2a.TextPart("again")},
	}}
	onB, doneB := stream(t, func(ctx context.Context, sink a2asrv.StreamSink) error {
		return rs.handlers[1].Core().SendStreamingMessage(ctx, feedCall(a2a.MethodSendStreamingMessage), req, sink)
	})
	onB.waitFor(t, "B's task frame", func(f recorded) bool { return strings.HasPrefix(f.what, "task ") })
	rs.stepper[0].wantEnded(t, a2asrv.ErrSuperseded, "the execution on A, superseded on B")
	rs.send(t, 1, step{text: "done on B", done: true})
	waitDone(t, "the stream on B", doneB)
	// A's stream followed its own execution, which ended; the task went on
	// on B.
	waitDone(t, "the stream on A", doneA)
	waitDone(t, "the subscription on B", doneFollower)
	if fs := follower.snapshot(); fs[len(fs)-1].what != "status TASK_STATE_COMPLETED done on B" {
		t.Errorf("the subscription on B ends with %v, want B's completion", fs)
	}
	got, err := rs.handlers[0].Core().GetTask(context.Background(), feedCall(a2a.MethodGetTask), &a2a.GetTaskRequest{ID: id})
	if err != nil || got.Status.State != a2a.TaskStateCompleted || got.Status.Message.Text() != "done on B" {
		t.Errorf("GetTask on A after B completed: %v, %v", got, err)
	}
}

func testDroppedFeed(t *testing.T, open func() Replica) {
	rs := newReplicaSet(t, open, 2)
	if rs.replicas[1].DropFeed == nil {
		t.Skip("the store's replicas cannot drop their feed")
	}
	const id = "feed-drop"
	_, doneA := rs.startWorking(t, id)
	onB, doneB := rs.subscribe(t, 1, id)
	rs.replicas[1].DropFeed(t)
	// Written while B's feed may be down: B catches up once it is back.
	for i := 1; i < 4; i++ {
		rs.send(t, 0, step{text: fmt.Sprintf("s%d", i)})
	}
	onB.waitFor(t, "s3 on B", hasText("s3"))
	rs.send(t, 0, step{text: "finished", done: true})
	waitDone(t, "the stream on A", doneA)
	waitDone(t, "the subscription on B", doneB)
	b := onB.snapshot()
	for i := 1; i < len(b); i++ {
		if b[i].seq <= b[i-1].seq {
			t.Fatalf("B's frames go back: %v", b)
		}
	}
	if last := b[len(b)-1]; last.what != "status TASK_STATE_COMPLETED finished" && last.what != "task TASK_STATE_COMPLETED" {
		t.Errorf("B's last frame %v, want the completion", last)
	}
}

func testCatchUp(t *testing.T, open func() Replica) {
	ctx := context.Background()
	r := open()
	scope := a2asrv.Scope{Tenant: "acme", Owner: "ann"}
	task := &a2a.Task{ID: "feed-catchup", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: time.UnixMilli(1_700_000_000_000)}}
	v, err := r.Tasks.Create(ctx, scope, task)
	if err != nil {
		t.Fatal(err)
	}
	ev := func(text string) *a2a.StreamResponse {
		return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: task.ID, ContextID: "c",
			Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: textMessage(text), Timestamp: time.UnixMilli(1_700_000_000_001)}}}
	}
	v2, err := r.Tasks.Append(ctx, scope, task.ID, v, []*a2a.StreamResponse{ev("one"), ev("two")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Feed.CatchUp(ctx, scope, task.ID, v)
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != v2 || c.Prev != v {
		t.Errorf("CatchUp after %d: versions %d..%d, want %d..%d", v, c.Prev, c.Version, v, v2)
	}
	switch {
	case c.Events != nil:
		if len(c.Events) != 2 || c.Events[1].StatusUpdate.Status.Message.Text() != "two" {
			t.Errorf("CatchUp events %v", c.Events)
		}
	case c.Task == nil || c.Task.Status.Message.Text() != "two":
		t.Errorf("CatchUp gave neither the events nor the task: %+v", c)
	}
	c, err = r.Feed.CatchUp(ctx, scope, task.ID, v2)
	if err != nil || c.Version > v2 {
		t.Errorf("CatchUp at the current version: %+v, %v", c, err)
	}
	if _, err := r.Feed.CatchUp(ctx, a2asrv.Scope{Tenant: "other"}, task.ID, 0); !errors.Is(err, a2asrv.ErrNotFound) {
		t.Errorf("CatchUp in another scope: %v, want ErrNotFound", err)
	}
}
