package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/builtin"
	"novaos.dev/novaos/secret"
)

func TestRunsOptionsDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   *RunsOptions
		want RunsOptions
	}{
		{"nil", nil, RunsOptions{Concurrency: 32, Duration: 20 * time.Second, Warmup: 2 * time.Second, Round: DefaultRunsRound,
			Streams: DefaultRunsStreams, Input: DefaultRunsInput}},
		{"negative warm-up is none", &RunsOptions{Concurrency: 3, Duration: time.Second, Warmup: -1, Round: time.Millisecond, Streams: 7, Input: "a b"},
			RunsOptions{Concurrency: 3, Duration: time.Second, Warmup: 0, Round: time.Millisecond, Streams: 7, Input: "a b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.withDefaults()
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b func()) bool { return (a == nil) == (b == nil) })); diff != "" {
				t.Errorf("withDefaults (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMBPer1000(t *testing.T) {
	tests := []struct {
		before, after uint64
		n             int
		want          float64
	}{
		{0, 50_000_000, 1000, 50},
		{100_000_000, 90_000_000, 500, -20},
		{1_000_000, 2_000_000, 1, 1000},
	}
	for _, tc := range tests {
		if got := mbPer1000(tc.before, tc.after, tc.n); got != tc.want {
			t.Errorf("mbPer1000(%d, %d, %d) = %v, want %v", tc.before, tc.after, tc.n, got, tc.want)
		}
	}
}

func TestRunsResult(t *testing.T) {
	s := &side{name: "s", calls: 12, errors: 2, errText: "boom"}
	for range 10 {
		s.total.Record(time.Millisecond)
		s.first.Record(time.Microsecond)
	}
	if r := runsResult(s); r.Throughput != 0 {
		t.Errorf("throughput %v without elapsed time, want 0", r.Throughput)
	}
	s.elapsed = 2 * time.Second
	want := RunsSide{Scenario: "s", Runs: 12, Errors: 2, Elapsed: 2 * time.Second, Throughput: 5,
		Latency:    Latency{P50: time.Millisecond, P90: time.Millisecond, P99: time.Millisecond, Max: time.Millisecond, Mean: time.Millisecond},
		FirstEvent: Latency{P50: time.Microsecond, P90: time.Microsecond, P99: time.Microsecond, Max: time.Microsecond, Mean: time.Microsecond},
		FirstError: "boom"}
	if diff := cmp.Diff(want, runsResult(s)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestFrameState(t *testing.T) {
	tests := []struct {
		name  string
		frame *a2a.StreamResponse
		want  a2a.TaskState
	}{
		{"task", &a2a.StreamResponse{Task: &a2a.Task{Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}}, a2a.TaskStateWorking},
		{"status update", &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}}, a2a.TaskStateCompleted},
		{"message", &a2a.StreamResponse{Message: &a2a.Message{}}, a2a.TaskStateUnspecified},
	}
	for _, tc := range tests {
		if got := frameState(tc.frame); got != tc.want {
			t.Errorf("%s: frameState = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRunRunsIncompleteTarget(t *testing.T) {
	if _, err := RunRuns(t.Context(), &RunsTarget{Instance: "i"}, nil); err == nil || !strings.Contains(err.Error(), "incomplete target") {
		t.Fatalf("RunRuns = %v, want an incomplete target error", err)
	}
}

// fakeGateway serves execute and a scripted event stream per run.
type fakeGateway struct {
	// frames answers an events request with the frames to write; hold
	// keeps the stream open after them until the client goes.
	frames func(lastEventID string) (frames []string, hold bool)
	mu     sync.Mutex
	cursor []string // Last-Event-ID of each events request, in order
	cut    int      // streams the client closed while the server held them
	open   atomic.Int64
	status int // of every events request; 0 means 200
	auth   []string
	// runID names the run execute starts on an instance, and runFrames
	// scripts the streams per run (both nil: run-1 and frames).
	runID     func(instance string) string
	runFrames func(run, lastEventID string) (frames []string, hold bool)
	cancels   atomic.Int64
}

func (f *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == gateway.ExecutePath:
		id := "run-1"
		if f.runID != nil {
			var in gateway.ExecuteRequest
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			id = f.runID(in.InstanceID)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = fmt.Fprintf(w, `{"run_id":%q,"status":"QUEUED"}`, id)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, gateway.RunsPath+"/") && strings.HasSuffix(r.URL.Path, "/cancel"):
		f.cancels.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"run_id":"x","status":"CANCELLED"}`)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, gateway.EventsPath):
		f.mu.Lock()
		f.cursor = append(f.cursor, r.Header.Get("Last-Event-ID"))
		f.auth = append(f.auth, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Tenant-ID"))
		f.mu.Unlock()
		if f.status != 0 {
			http.Error(w, "overloaded", f.status)
			return
		}
		var frames []string
		var hold bool
		if f.runFrames != nil {
			frames, hold = f.runFrames(strings.TrimPrefix(r.URL.Path, gateway.EventsPath), r.Header.Get("Last-Event-ID"))
		} else {
			frames, hold = f.frames(r.Header.Get("Last-Event-ID"))
		}
		if hold {
			// Counted before the headers go, so a client that read them
			// finds the stream counted.
			f.open.Add(1)
			defer f.open.Add(-1)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, fr := range frames {
			_, _ = io.WriteString(w, fr)
		}
		w.(http.Flusher).Flush()
		if hold {
			<-r.Context().Done()
			f.mu.Lock()
			f.cut++
			f.mu.Unlock()
		}
	default:
		http.NotFound(w, r)
	}
}

func frame(seq int, typ string, payload any) string {
	return runFrame("run-1", seq, typ, payload)
}

func runFrame(run string, seq int, typ string, payload any) string {
	p, _ := json.Marshal(payload)
	return fmt.Sprintf("id: %d\nevent: message\ndata: {\"type\":%q,\"payload\":%s,\"run_id\":%q,\"sequence\":%d}\n\n", seq, typ, p, run, seq)
}

func newFakeTarget(t *testing.T, f *fakeGateway) *RunsTarget {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	gw, err := gateway.NewClient(srv.URL, &gateway.ClientOptions{Token: secret.New("tok-1")})
	if err != nil {
		t.Fatal(err)
	}
	return &RunsTarget{Gateway: gw, Instance: "inst", PauseInstance: "pause", BaseURL: srv.URL, Token: secret.New("tok-1"), Tenant: "acme"}
}

func TestGatewayRun(t *testing.T) {
	running := frame(1, gateway.EventStatus, map[string]string{"status": "RUNNING"})
	tests := []struct {
		name    string
		frames  []string
		wantErr string
	}{
		{"completed", []string{running, frame(2, gateway.EventMessageDelta, map[string]string{"content": "hi"}),
			frame(3, gateway.EventStatus, map[string]string{"status": "COMPLETED"}), frame(4, gateway.EventDone, map[string]string{"status": "COMPLETED"})}, ""},
		{"failed", []string{running, frame(2, gateway.EventStatus, map[string]string{"status": "FAILED", "reason": "boom"}),
			frame(3, gateway.EventError, map[string]string{"error": "boom"})}, "status FAILED"},
		{"stream ends early", []string{running}, "ended before the run ended"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := newFakeTarget(t, &fakeGateway{frames: func(string) ([]string, bool) { return tc.frames, false }})
			first, err := gatewayRun(t.Context(), tg, "a b")
			if tc.wantErr == "" {
				if err != nil || first <= 0 {
					t.Fatalf("gatewayRun = %v, %v; want a first-event time and no error", first, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("gatewayRun error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// pauseScript is a run of the pause agent: event 1, and after it the
// text, the pause's status and the hitl event; the stream then stays open.
func pauseScript(end []string) func(string) ([]string, bool) {
	return func(last string) ([]string, bool) {
		if last == "" {
			return []string{frame(1, gateway.EventStatus, map[string]string{"status": "RUNNING"})}, true
		}
		return append([]string{frame(2, gateway.EventMessageDelta, map[string]string{"content": "working"})}, end...), true
	}
}

func TestCutAndResume(t *testing.T) {
	paused := []string{frame(3, gateway.EventStatus, map[string]string{"status": "WAITING_USER"}),
		frame(4, gateway.EventHITL, map[string]any{"hitl": map[string]string{"prompt": "reply"}})}
	f := &fakeGateway{frames: pauseScript(paused)}
	tg := newFakeTarget(t, f)
	p, took, err := cutAndResume(t.Context(), tg, "a b")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pausedRun{id: "run-1", lastEventID: "4"}, p, cmp.AllowUnexported(pausedRun{})); diff != "" {
		t.Errorf("paused run (-want +got):\n%s", diff)
	}
	if took.live <= 0 || took.replay <= 0 {
		t.Errorf("resume took %+v", took)
	}
	waitFor(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.cut == 3 }, "the three streams closed by the client")
	f.mu.Lock()
	defer f.mu.Unlock()
	// The first stream, its resumption read to the pause, and the replay.
	if diff := cmp.Diff([]string{"", "1", "1"}, f.cursor); diff != "" {
		t.Errorf("Last-Event-ID of the streams (-want +got):\n%s", diff)
	}
}

func TestCutAndResumeFailures(t *testing.T) {
	tests := []struct {
		name    string
		end     []string
		wantErr string
	}{
		{"run ends", []string{frame(3, gateway.EventStatus, map[string]string{"status": "COMPLETED"})}, "instead of pausing"},
		{"no pause", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script := pauseScript(tc.end)
			f := &fakeGateway{frames: func(last string) ([]string, bool) {
				fr, hold := script(last)
				// Without a pause the resumed stream ends.
				return fr, hold && (last == "" || tc.end != nil)
			}}
			tg := newFakeTarget(t, f)
			p, _, err := cutAndResume(t.Context(), tg, "a b")
			if err == nil {
				t.Fatal("cutAndResume succeeded")
			}
			if tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
			if p.id != "run-1" || p.lastEventID != "" {
				t.Errorf("paused run %+v, want the run to cancel and no cursor", p)
			}
		})
	}
}

func TestHoldStreams(t *testing.T) {
	f := &fakeGateway{frames: func(string) ([]string, bool) { return nil, true }}
	tg := newFakeTarget(t, f)
	runs := []pausedRun{{id: "run-1", lastEventID: "4"}, {id: "run-1", lastEventID: "4"}, {id: "run-1", lastEventID: "4"}, {id: "not-paused"}}
	var heldOpen int64 = -1
	m, err := holdStreams(t.Context(), tg, runs, 2, func() { heldOpen = f.open.Load() })
	if err != nil {
		t.Fatal(err)
	}
	if m.Streams != 3 || heldOpen != 3 {
		t.Errorf("%d streams held, %d open on the server while held; want 3", m.Streams, heldOpen)
	}
	waitFor(t, func() bool { return f.open.Load() == 0 }, "the held streams closed")
	f.mu.Lock()
	defer f.mu.Unlock()
	if diff := cmp.Diff([]string{"4", "4", "4"}, f.cursor); diff != "" {
		t.Errorf("Last-Event-ID (-want +got):\n%s", diff)
	}
	for _, a := range f.auth {
		if a != "Bearer tok-1|acme" {
			t.Errorf("stream sent Authorization|X-Tenant-ID %q", a)
		}
	}
}

func TestHoldStreamsFailures(t *testing.T) {
	f := &fakeGateway{status: http.StatusServiceUnavailable}
	tg := newFakeTarget(t, f)
	_, err := holdStreams(t.Context(), tg, []pausedRun{{id: "run-1", lastEventID: "4"}}, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "503") || strings.Contains(err.Error(), "tok-1") {
		t.Errorf("holdStreams = %v, want a 503 error without the token", err)
	}
	if _, err := holdStreams(t.Context(), tg, []pausedRun{{id: "run-1"}}, 1, nil); err == nil || !strings.Contains(err.Error(), "no run paused") {
		t.Errorf("holdStreams without a paused run = %v", err)
	}
}

// rw is a connection whose reads come from r and whose writes are kept.
type rw struct {
	r io.Reader
	w bytes.Buffer
}

func (c *rw) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *rw) Write(p []byte) (int, error) { return c.w.Write(p) }

// oneByte reads one byte at a time, as a slow peer sends them.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 1)]) }

func TestReadHead(t *testing.T) {
	long := "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", maxStreamHead) + "\r\n\r\n"
	// A head whose end (the blank line included) is its last byte.
	atMost := "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxStreamHead-len("HTTP/1.1 200 OK\r\nX: \r\n\r\n")) + "\r\n\r\n"
	tests := []struct {
		name, in string
		slow     bool
		want     string
		wantErr  bool
	}{
		{"head and body", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nbody", false, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n", false},
		{"byte by byte", "HTTP/1.1 503 Service Unavailable\r\n\r\n", true, "HTTP/1.1 503 Service Unavailable\r\n", false},
		{"cut short", "HTTP/1.1 200 OK\r\n", false, "", true},
		{"too large", long, false, "", true},
		{"empty", "\r\n\r\n", false, "\r\n", false},
		{"as large as allowed", atMost, false, atMost[:len(atMost)-2], false},
		{"a byte larger", atMost[:4] + "x" + atMost[4:], false, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(tc.in)
			if tc.slow {
				r = oneByte{r}
			}
			c := &rw{r: r}
			got, err := readHead(c, []byte("GET / HTTP/1.1\r\n\r\n"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("readHead error %v, want error %v", err, tc.wantErr)
			}
			if string(got) != tc.want {
				t.Errorf("head %q, want %q", got, tc.want)
			}
			if c.w.String() != "GET / HTTP/1.1\r\n\r\n" {
				t.Errorf("wrote %q", c.w.String())
			}
		})
	}
}

func FuzzReadHead(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\n\r"))
	f.Add([]byte("\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		head, err := readHead(&rw{r: bytes.NewReader(in)}, nil)
		if err != nil {
			return
		}
		if len(head) > maxStreamHead || !bytes.HasPrefix(in, append(head, '\r', '\n')) || bytes.Contains(head, []byte("\r\n\r\n")) {
			t.Fatalf("head %q of input %q", head, in)
		}
	})
}

// waitFor polls cond; the deadline only bounds a failure.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// serveAgent serves an agent over A2A on loopback and returns a client
// of it.
func serveAgent(t *testing.T, a interface {
	a2asrv.Executor
	Card() *a2a.AgentCard
}) *a2aclient.Client {
	t.Helper()
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	card := a.Card()
	card.SupportedInterfaces = []a2a.AgentInterface{{URL: srv.URL, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}}
	h := a2asrv.NewHandler(card, a, &a2asrv.Options{TaskStore: a2asrv.NewMemoryTaskStore(nil)})
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	srv.Config.Handler = h
	c, err := a2aclient.NewForURL(srv.URL, &a2aclient.Options{ResumeAttempts: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A direct call must end its task: echo's does, the pause agent's waits
// for input.
func TestDirectRun(t *testing.T) {
	first, err := directRun(t.Context(), serveAgent(t, builtin.Echo()), DefaultRunsInput)
	if err != nil || first <= 0 {
		t.Fatalf("echo: directRun = %v, %v", first, err)
	}
	if _, err := directRun(t.Context(), serveAgent(t, PauseAgent()), DefaultRunsInput); err == nil || !strings.Contains(err.Error(), "INPUT_REQUIRED") {
		t.Fatalf("pause agent: directRun = %v, want an error naming INPUT_REQUIRED", err)
	}
}

// runsFake is a gateway whose runs of instance "inst" complete and whose
// runs of "pause" pause after three events, except the run named ends,
// which completes on its resumed stream.
func runsFake(ends string) *fakeGateway {
	var n atomic.Int64
	return &fakeGateway{
		runID: func(instance string) string { return fmt.Sprintf("%s-%d", instance, n.Add(1)) },
		runFrames: func(run, last string) ([]string, bool) {
			if strings.HasPrefix(run, "inst-") {
				return []string{runFrame(run, 1, gateway.EventStatus, map[string]string{"status": "RUNNING"}),
					runFrame(run, 2, gateway.EventStatus, map[string]string{"status": "COMPLETED"}),
					runFrame(run, 3, gateway.EventDone, map[string]string{"status": "COMPLETED"})}, false
			}
			switch {
			case last == "":
				return []string{runFrame(run, 1, gateway.EventStatus, map[string]string{"status": "RUNNING"})}, true
			case last == "1" && run == ends:
				return []string{runFrame(run, 2, gateway.EventStatus, map[string]string{"status": "COMPLETED"}),
					runFrame(run, 3, gateway.EventDone, map[string]string{"status": "COMPLETED"})}, false
			case last == "1":
				return []string{runFrame(run, 2, gateway.EventMessageDelta, map[string]string{"content": "working"}),
					runFrame(run, 3, gateway.EventStatus, map[string]string{"status": "WAITING_USER"}),
					runFrame(run, 4, gateway.EventHITL, map[string]any{"hitl": map[string]string{"prompt": "reply"}})}, true
			}
			return nil, true // after the pause: nothing more
		},
	}
}

// RunRuns against a scripted gateway and a real echo: every phase runs,
// is counted, and the paused runs are cancelled at the end.
func TestRunRuns(t *testing.T) {
	f := runsFake("")
	tg := newFakeTarget(t, f)
	tg.Direct = serveAgent(t, builtin.Echo())
	var heldOpen int64 = -1
	var rounds []string
	o := &RunsOptions{Concurrency: 2, Duration: 40 * time.Millisecond, Round: 20 * time.Millisecond, Warmup: -1, Streams: 5,
		StreamsHeld: func() { heldOpen = f.open.Load() },
		MeasuredRound: func(scenario string, i int) func() {
			rounds = append(rounds, fmt.Sprint(scenario, i))
			return func() {}
		}}
	res, err := RunRuns(t.Context(), tg, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []RunsSide{res.Gateway, res.Direct} {
		if side.Runs == 0 || side.Errors != 0 || side.Throughput <= 0 || side.FirstEvent.P50 <= 0 {
			t.Errorf("%s: %+v", side.Scenario, side)
		}
	}
	if res.ThroughputRatio <= 0 || res.ThroughputRatio != res.Gateway.Throughput/res.Direct.Throughput ||
		res.FirstEventP99Excess != res.Gateway.FirstEvent.P99-res.Direct.FirstEvent.P99 {
		t.Errorf("ratio %v, first-event p99 excess %v", res.ThroughputRatio, res.FirstEventP99Excess)
	}
	if r := res.Resume; r.Resumes != 5 || r.Errors != 0 || r.Latency.P50 <= 0 || r.Replay.P50 <= 0 {
		t.Errorf("resume %+v", r)
	}
	if res.Streams.Streams != 5 || heldOpen != 5 {
		t.Errorf("%d streams held, %d open on the server while held", res.Streams.Streams, heldOpen)
	}
	if got := f.cancels.Load(); got != 5 {
		t.Errorf("%d runs cancelled, want the 5 paused", got)
	}
	want := []string{ScenarioGatewayRun + "0", ScenarioDirect + "0", ScenarioDirect + "1", ScenarioGatewayRun + "1"}
	if diff := cmp.Diff(want, rounds); diff != "" {
		t.Errorf("measured rounds (-want +got):\n%s", diff)
	}
}

// A run that ends instead of pausing is a resume error; the others are
// held, and every run is cancelled.
func TestRunRunsCountsResumeFailures(t *testing.T) {
	var n atomic.Int64
	f := runsFake("")
	var ends atomic.Pointer[string]
	script := f.runFrames
	f.runID = func(instance string) string {
		id := fmt.Sprintf("%s-%d", instance, n.Add(1))
		if instance == "pause" {
			ends.CompareAndSwap(nil, &id) // the first pause run, named before any stream of it
		}
		return id
	}
	f.runFrames = func(run, last string) ([]string, bool) {
		if e := ends.Load(); e != nil && run == *e && last == "1" {
			return runsFake(run).runFrames(run, last)
		}
		return script(run, last)
	}
	tg := newFakeTarget(t, f)
	tg.Direct = serveAgent(t, builtin.Echo())
	res, err := RunRuns(t.Context(), tg, &RunsOptions{Concurrency: 1, Duration: 10 * time.Millisecond, Warmup: -1, Streams: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Resume; r.Resumes != 3 || r.Errors != 1 || !strings.Contains(r.FirstError, "instead of pausing") {
		t.Errorf("resume %+v, want 1 of 3 failed", r)
	}
	if res.Streams.Streams != 2 || f.cancels.Load() != 3 {
		t.Errorf("%d streams held, %d runs cancelled; want 2 and 3", res.Streams.Streams, f.cancels.Load())
	}
}
