package bench

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

var testXStream = XStreamOptions{Updates: 5, Interval: 2 * time.Millisecond, StartDelay: 20 * time.Millisecond}

// serveXStream serves the xstream agent over store, as one replica would.
func serveXStream(t *testing.T, store a2asrv.TaskStore) string {
	t.Helper()
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	a := NewXStreamAgent(&testXStream)
	card := a.Card()
	card.SupportedInterfaces = []a2a.AgentInterface{{URL: srv.URL, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}}
	h := a2asrv.NewHandler(card, a, &a2asrv.Options{TaskStore: store})
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	srv.Config.Handler = h
	return srv.URL
}

var xstreamRunOpts = &Options{Concurrency: 4, Duration: 300 * time.Millisecond, Warmup: -1}

// On the replica that runs the task (A = B) every update arrives, in
// order, and is timed.
func TestRunXStreamOneServer(t *testing.T) {
	url := serveXStream(t, a2asrv.NewMemoryTaskStore(nil))
	res, err := RunXStream(t.Context(), XStream{Send: []string{url}, Subscribe: []string{url}, Options: testXStream}, xstreamRunOpts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Requests == 0 {
		t.Fatalf("%d of %d tasks failed; first: %s", res.Errors, res.Requests, res.FirstError)
	}
	f := res.Frames
	if f == nil || f.Seen == 0 || f.Seen != f.Expected {
		t.Fatalf("frames %+v, want every expected one seen", f)
	}
	if f.Expected+f.Late*uint64(testXStream.Updates+1) < res.Requests*uint64(testXStream.Updates+1) {
		t.Errorf("frames %+v for %d tasks: too few expected", f, res.Requests)
	}
	// A loaded machine may delay updates, never by half a minute: a bound
	// on nonsense (wrong unit, wrong start), not on speed.
	if res.Latency.P50 <= 0 || res.Latency.P99 > 30*time.Second || res.Latency.P50 > res.Latency.P99 {
		t.Errorf("update latency %+v", res.Latency)
	}
}

// Two servers on one store with nothing carrying updates between them:
// B sends its snapshot and closes, which the row reports plainly. A
// subscription the busy machine opened after its task had ended is late,
// not failed; every other one fails, and no update crosses.
func TestRunXStreamWithoutFeed(t *testing.T) {
	store := a2asrv.NewMemoryTaskStore(nil)
	a, b := serveXStream(t, store), serveXStream(t, store)
	res, err := RunXStream(t.Context(), XStream{Send: []string{a}, Subscribe: []string{b}, Options: testXStream}, xstreamRunOpts)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Frames
	if f == nil || f.Seen != 0 {
		t.Fatalf("frames %+v, want none seen", f)
	}
	if res.Requests == 0 || res.Errors == 0 || res.Errors+f.Late < res.Requests {
		t.Errorf("%d of %d tasks failed, %d late; want every one failed or late", res.Errors, res.Requests, f.Late)
	}
	if !regexp.MustCompile(`replica B saw 0 of [1-9][0-9]* status updates`).MatchString(res.FirstError) {
		t.Errorf("first error %q, want it to say replica B saw 0 of the updates", res.FirstError)
	}
}

// A subscription that skips, repeats or reorders updates fails its task.
func TestXStreamChecksSequence(t *testing.T) {
	tests := []struct {
		name    string
		start   int   // the update the snapshot shows
		seqs    []int // the updates that follow
		wantErr string
	}{
		{"all", 0, []int{1, 2, 3, 4, 5, 6}, ""},
		{"late subscription", 2, []int{3, 4, 5, 6}, ""},
		{"missing", 0, []int{1, 3}, "status updates 2 to 2 are missing"},
		{"duplicated", 0, []int{1, 2, 2}, "status update 2 came again after 2"},
		{"out of order", 0, []int{1, 3, 2}, "status updates 2 to 2 are missing"},
		{"closed early", 0, []int{1, 2}, "replica B saw 2 of 6 status updates"},
		{"snapshot only", 0, nil, "replica B saw 0 of 6 status updates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := fakeXStream(t, tt.start, tt.seqs)
			r := &xstreamRun{XStream: XStream{Send: []string{url}, Subscribe: []string{url}, Wait: time.Second},
				o: testXStream.withDefaults(), client: http.DefaultClient, pending: make([]xstreamTally, 1), total: make([]xstreamTally, 1)}
			err := r.do(t.Context(), 0)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			p := r.pending[0]
			if want := uint64(testXStream.Updates + 1 - tt.start); p.expected != want {
				t.Errorf("expected %d, want %d", p.expected, want)
			}
			if tt.wantErr == "" && (p.seen != p.expected || len(p.latencies) != int(p.seen)) {
				t.Errorf("tally %+v", p)
			}
			if late := uint64(min(tt.start, 1)); p.late != late {
				t.Errorf("late %d, want %d", p.late, late)
			}
		})
	}
}

// fakeXStream answers SendMessage with a task and SubscribeToTask with a
// snapshot at update start followed by updates seqs.
func fakeXStream(t *testing.T, start int, seqs []int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, rpcErr := readRequest(r)
		if rpcErr != nil {
			http.Error(w, rpcErr.Error(), http.StatusBadRequest)
			return
		}
		task := &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}
		if req.Method == a2a.MethodSendMessage {
			result, _ := json.Marshal(&a2a.SendMessageResponse{Task: task})
			w.Write(a2a.AppendResult(nil, req.ID, result))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if start > 0 {
			task.Status = a2a.TaskStatus{State: a2a.TaskStateWorking,
				Message: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Metadata: map[string]any{xstreamKey: map[string]any{"seq": start}}}}
		}
		frames := []*a2a.StreamResponse{{Task: task}}
		for _, seq := range seqs {
			state := a2a.TaskStateWorking
			if seq == testXStream.Updates+1 {
				state = a2a.TaskStateCompleted
			}
			frames = append(frames, &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1",
				Status:   a2a.TaskStatus{State: state},
				Metadata: map[string]any{xstreamKey: map[string]any{"seq": seq, "emittedUnixNano": strconv.FormatInt(time.Now().UnixNano(), 10)}}}})
		}
		var b []byte
		for _, f := range frames {
			result, _ := json.Marshal(f)
			b = a2a.AppendEvent(b, a2a.Event{Data: a2a.AppendResult(nil, req.ID, result)})
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func readRequest(r *http.Request) (*a2a.Request, *a2a.Error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, a2a.NewError(a2a.CodeParseError, "%v", err)
	}
	return a2a.DecodeRequest(b)
}

// A subscription that opens after its task ended is refused with the
// protocol's terminal-task error: late, with nothing expected, not a
// failure.
func TestReadUpdatesAfterTheEnd(t *testing.T) {
	body := "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32004,\"message\":\"task t-1 is in terminal state TASK_STATE_COMPLETED\"}}\n\n"
	var p xstreamTally
	if err := readUpdates(t.Context(), strings.NewReader(body), 6, time.Second, &p); err != nil {
		t.Fatal(err)
	}
	if p.late != 1 || p.expected != 0 || p.seen != 0 {
		t.Errorf("tally %+v, want one late subscription expecting nothing", p)
	}
	// Any other error in its place is a failure.
	body = strings.Replace(body, "-32004", "-32603", 1)
	if err := readUpdates(t.Context(), strings.NewReader(body), 6, time.Second, &xstreamTally{}); err == nil {
		t.Error("an internal error on subscribing was taken for a late subscription")
	}
}
