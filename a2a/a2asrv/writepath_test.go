package a2asrv_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// meteredStore counts the writes that reach a TaskStore and the bytes they
// hand it (encoded tasks and events; a compacting append counts both),
// which is what makes a write path linear or quadratic in a task's output.
type meteredStore struct {
	a2asrv.TaskStore
	mu                     sync.Mutex
	creates, updates, apps int
	events                 int
	bytes                  int64
}

func (m *meteredStore) count(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
}

func taskBytes(t *a2a.Task) int64 {
	b, _ := a2a.AppendTask(nil, t)
	return int64(len(b))
}

func (m *meteredStore) Create(ctx context.Context, s a2asrv.Scope, t *a2a.Task) (a2asrv.Version, error) {
	m.count(func() { m.creates++; m.bytes += taskBytes(t) })
	return m.TaskStore.Create(ctx, s, t)
}

func (m *meteredStore) Update(ctx context.Context, s a2asrv.Scope, t *a2a.Task, prev a2asrv.Version) (a2asrv.Version, error) {
	m.count(func() { m.updates++; m.bytes += taskBytes(t) })
	return m.TaskStore.Update(ctx, s, t, prev)
}

func (m *meteredStore) Append(ctx context.Context, s a2asrv.Scope, id string, prev a2asrv.Version, evs []*a2a.StreamResponse, compact *a2a.Task) (a2asrv.Version, error) {
	m.count(func() {
		m.apps++
		m.events += len(evs)
		if compact != nil {
			m.bytes += taskBytes(compact)
		}
		for _, ev := range evs {
			b, _ := a2a.AppendStreamResponse(nil, ev)
			m.bytes += int64(len(b))
		}
	})
	return m.TaskStore.Append(ctx, s, id, prev, evs, compact)
}

func (m *meteredStore) snapshot() (creates, updates, apps, events int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.creates, m.updates, m.apps, m.events, m.bytes
}

// chunker streams the number of chunks its message's text names, each of
// the same size, then completes.
var chunker = a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	var n int
	fmt.Sscan(req.Message.Text(), &n)
	if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
		return err
	}
	for i := range n {
		art := a2a.Artifact{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart(fmt.Sprintf("w%06d ", i))}}
		if err := u.AddArtifact(ctx, art, i > 0, i == n-1, nil); err != nil {
			return err
		}
	}
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
})

func writePathServer(t testing.TB, exec a2asrv.Executor, opts *a2asrv.Options) (*httptest.Server, *meteredStore) {
	store := &meteredStore{TaskStore: a2asrv.NewMemoryTaskStore(nil)}
	o := a2asrv.Options{}
	if opts != nil {
		o = *opts
	}
	o.TaskStore = store
	card := &a2a.AgentCard{Name: "w", Capabilities: a2a.AgentCapabilities{Streaming: new(true)}}
	h := a2asrv.NewHandler(card, exec, &o)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		h.Shutdown(context.Background())
	})
	return srv, store
}

func rpcBody(method, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"text":%q}]}}}`,
		method, a2a.NewID(), text)
}

func post(t testing.TB, url, body string, stream bool) *http.Response {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, "1.0")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// streamFrames runs a streaming call to its end and returns the frames with
// their SSE ids.
func streamFrames(t testing.TB, url, text string) (frames []*a2a.StreamResponse, ids []int64) {
	resp := post(t, url, rpcBody(a2a.MethodSendStreamingMessage, text), true)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	var id int64
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			fmt.Sscan(line[4:], &id)
		case strings.HasPrefix(line, "data: "):
			var env struct {
				Result json.RawMessage `json:"result"`
				Error  *a2a.Error      `json:"error"`
			}
			if err := json.Unmarshal([]byte(line[6:]), &env); err != nil || env.Error != nil {
				t.Fatalf("frame %d: %v %v", len(frames), err, env.Error)
			}
			var f a2a.StreamResponse
			if err := a2a.Unmarshal(env.Result, &f); err != nil {
				t.Fatalf("frame %d: %v", len(frames), err)
			}
			frames = append(frames, &f)
			ids = append(ids, id)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return frames, ids
}

// TestBlockingSendStoresOnce: a blocking SendMessage's new task is named to
// nobody before the answer, so its WORKING, artifact and COMPLETED writes
// reach the store as one create of the final task.
func TestBlockingSendStoresOnce(t *testing.T) {
	srv, store := writePathServer(t, chunker, nil)
	resp := post(t, srv.URL, rpcBody(a2a.MethodSendMessage, "3"), false)
	var env struct {
		Result a2a.SendMessageResponse `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	task := env.Result.Task
	if task == nil || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 3 {
		t.Fatalf("answer = %+v", env.Result)
	}
	creates, updates, apps, _, _ := store.snapshot()
	if creates != 1 || updates != 0 || apps != 0 {
		t.Errorf("store writes: %d creates, %d updates, %d appends; want one create", creates, updates, apps)
	}
	stored, v, err := store.Get(context.Background(), a2asrv.Scope{}, task.ID)
	if err != nil || v != 1 || stored.Status.State != a2a.TaskStateCompleted || len(stored.Artifacts[0].Parts) != 3 {
		t.Errorf("stored task = %+v at version %d, %v", stored, v, err)
	}
}

// TestStreamSequenceAndStore: coalesced chunks still carry one sequence
// number each, in order, and every one of them is in the store by the end.
func TestStreamSequenceAndStore(t *testing.T) {
	srv, store := writePathServer(t, chunker, nil)
	const n = 2000
	frames, ids := streamFrames(t, srv.URL, fmt.Sprint(n))
	if len(frames) != n+2 { // the task (WORKING), n chunks, COMPLETED
		t.Fatalf("%d frames, want %d", len(frames), n+2)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			t.Fatalf("frame %d has id %d after %d: sequence numbers must grow by one", i, ids[i], ids[i-1])
		}
	}
	taskID := frames[0].Task.ID
	got, v, err := store.Get(context.Background(), a2asrv.Scope{}, taskID)
	if err != nil {
		t.Fatal(err)
	}
	if int64(v) != ids[len(ids)-1] || got.Status.State != a2a.TaskStateCompleted || len(got.Artifacts[0].Parts) != n {
		t.Errorf("stored: version %d (last frame %d), state %v, %d parts; want every chunk", v, ids[len(ids)-1], got.Status.State, len(got.Artifacts[0].Parts))
	}
	_, _, apps, events, _ := store.snapshot()
	if events != n+1 {
		t.Errorf("%d events stored, want %d", events, n+1)
	}
	if apps > n/4 {
		t.Errorf("%d appends for %d chunks: chunks were not coalesced", apps, n)
	}
}

// TestStreamCostLinear: the bytes written to the store per chunk do not
// grow with the number of chunks before it. Before chunks were appended,
// each one rewrote the whole task: 64 times the chunks cost about 64 times
// more per chunk.
func TestStreamCostLinear(t *testing.T) {
	perChunk := func(n int) float64 {
		srv, store := writePathServer(t, chunker, nil)
		// A reader slower than the executor may be dropped (the stream
		// ends early); the execution runs on, so wait for the store.
		frames, _ := streamFrames(t, srv.URL, fmt.Sprint(n))
		waitCompleted(t, store, frames[0].Task.ID)
		c, u, a, e, b := store.snapshot()
		t.Logf("%d chunks: %d creates, %d updates, %d appends of %d events, %d bytes", n, c, u, a, e, b)
		return float64(b) / float64(n)
	}
	small, large := perChunk(1000), perChunk(64000)
	t.Logf("bytes stored per chunk: %.0f at 1k chunks, %.0f at 64k", small, large)
	if large > 1.5*small {
		t.Errorf("per-chunk store cost grows with the output: %.0f bytes at 64k chunks vs %.0f at 1k", large, small)
	}
}

func waitCompleted(t testing.TB, store a2asrv.TaskStore, id string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got, _, err := store.Get(context.Background(), a2asrv.Scope{}, id)
		if err == nil && got.Status.State == a2a.TaskStateCompleted {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s not completed after a minute: %v", id, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestChunkStoredWithinInterval bounds what a crash can lose: a chunk an
// executor streams and then sits on reaches the store within the flush
// interval, without waiting for the next write.
func TestChunkStoredWithinInterval(t *testing.T) {
	release := make(chan struct{})
	exec := a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
			return err
		}
		if err := u.AddArtifact(ctx, a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("first")}}, false, false, nil); err != nil {
			return err
		}
		<-release
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
	})
	srv, store := writePathServer(t, exec, &a2asrv.Options{ArtifactFlushInterval: 20 * time.Millisecond})
	resp := post(t, srv.URL, rpcBody(a2a.MethodSendStreamingMessage, "go"), true)
	defer resp.Body.Close()
	defer close(release)
	sc := bufio.NewScanner(resp.Body)
	var taskID string
	for sc.Scan() && taskID == "" {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			var env struct {
				Result struct {
					Task struct{ ID string } `json:"task"`
				} `json:"result"`
			}
			json.Unmarshal([]byte(line[6:]), &env)
			taskID = env.Result.Task.ID
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, _, err := store.Get(context.Background(), a2asrv.Scope{}, taskID)
		if err == nil && len(got.Artifacts) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the streamed chunk is not in the store 5s later (task %+v, %v)", got, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkStreamChunks reports the cost of one streamed chunk, end to end
// through the handler and the in-memory store, at two stream lengths; the
// ratio of the two is what must stay near 1.
func BenchmarkStreamChunks(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			srv, store := writePathServer(b, chunker, nil)
			b.ResetTimer()
			for range b.N {
				frames, _ := streamFrames(b, srv.URL, fmt.Sprint(n))
				waitCompleted(b, store, frames[0].Task.ID)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
		})
	}
}
