package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/pgtest"
)

// Two replicas, each its own novaos process, on one PostgreSQL database: a
// stream resumed on the replica that does not run the task follows it to
// the end with the same sequence numbers, a cancel sent to that replica
// stops the execution on the other, and when the executing replica is
// killed the survivor settles its task and tells the stream it serves.
func TestReplicasOnOnePostgres(t *testing.T) {
	db := pgtest.URL(t)
	bin := buildBinary(t)
	// tck-delayed-complete works for one --tck-timeout and
	// test-resubscribe-message-id for two; short leases make the kill
	// settle within seconds.
	flags := []string{"--db", db, "--tck-timeout", "2s", "--lease-heartbeat", "100ms", "--lease-expiry", "1s"}
	echoA, stopA := serve(t, bin, t.TempDir(), flags...)
	echoB, _ := serve(t, bin, t.TempDir(), flags...)
	tckA, tckB := strings.TrimSuffix(echoA, "/echo")+"/tck", strings.TrimSuffix(echoB, "/echo")+"/tck"

	t.Run("ResumeOnB", func(t *testing.T) {
		onA := openStream(t, tckA, a2a.MethodSendStreamingMessage, a2a.SendMessageRequest{Message: tckMessage("tck-delayed-complete-r")})
		first := onA.next(t)
		if first.task == "" || first.state != a2a.TaskStateWorking {
			t.Fatalf("the stream on A starts with %+v, want the task WORKING", first)
		}
		onB := openStream(t, tckB, a2a.MethodSubscribeToTask, a2a.SubscribeToTaskRequest{ID: first.task})
		snap := onB.next(t)
		if snap.state != a2a.TaskStateWorking {
			t.Fatalf("B's snapshot: %+v", snap)
		}
		lastA := onA.until(t, a2a.TaskStateCompleted)
		lastB := onB.until(t, a2a.TaskStateCompleted)
		if lastA.seq != lastB.seq || lastB.seq <= snap.seq {
			t.Errorf("the completion is numbered %d on A and %d on B (B's snapshot %d)", lastA.seq, lastB.seq, snap.seq)
		}
	})

	t.Run("CancelFromB", func(t *testing.T) {
		onA := openStream(t, tckA, a2a.MethodSendStreamingMessage, a2a.SendMessageRequest{Message: tckMessage("test-resubscribe-message-id-c")})
		id := onA.next(t).task
		began := time.Now()
		var task a2a.Task
		call(t, tckB, a2a.MethodCancelTask, a2a.CancelTaskRequest{ID: id}, &task)
		if task.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("CancelTask on B: %s", task.Status.State)
		}
		onA.until(t, a2a.TaskStateCanceled)
		// The execution would have run four seconds.
		if d := time.Since(began); d > 2*time.Second {
			t.Errorf("A's stream took %v to end after the cancel", d)
		}
		call(t, tckA, a2a.MethodGetTask, a2a.GetTaskRequest{ID: id}, &task)
		if task.Status.State != a2a.TaskStateCanceled {
			t.Errorf("GetTask on A after the cancel: %s", task.Status.State)
		}
	})

	t.Run("KillA", func(t *testing.T) {
		id := start(t, tckA, "test-resubscribe-message-id-k")
		waitState(t, tckA, id, a2a.TaskStateWorking)
		onB := openStream(t, tckB, a2a.MethodSubscribeToTask, a2a.SubscribeToTaskRequest{ID: id})
		onB.next(t)
		stopA(syscall.SIGKILL)
		last := onB.until(t, a2a.TaskStateFailed)
		if last.seq <= a2asrv.RecoveryVersionGap {
			t.Errorf("the settlement is numbered %d, want past %d", last.seq, a2asrv.RecoveryVersionGap)
		}
	})
}

func tckMessage(id string) *a2a.Message {
	msg := a2a.NewMessage(a2a.RoleUser, a2a.TextPart("go"))
	msg.MessageID = id
	return msg
}

// sseFrame is one frame of a JSON-RPC stream, reduced to what the test
// compares.
type sseFrame struct {
	seq   a2asrv.Version
	task  string
	state a2a.TaskState
}

type sseStream struct {
	frames chan sseFrame
	errs   chan error
}

// openStream calls a streaming method and reads its frames in the
// background.
func openStream(t *testing.T, url, method string, params any) *sseStream {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		t.Fatalf("%s: %s, %s", method, resp.Status, ct)
	}
	s := &sseStream{frames: make(chan sseFrame, 64), errs: make(chan error, 1)}
	go func() {
		defer resp.Body.Close()
		defer close(s.frames)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var seq int64
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				seq, _ = strconv.ParseInt(v, 10, 64)
				continue
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			r, err := a2a.DecodeResponse([]byte(data))
			if err != nil || r.Error != nil {
				s.errs <- fmt.Errorf("frame %q: %v %v", data, err, r.Error)
				return
			}
			var sr a2a.StreamResponse
			if err := a2a.Unmarshal(r.Result, &sr); err != nil {
				s.errs <- err
				return
			}
			f := sseFrame{seq: a2asrv.Version(seq)}
			switch {
			case sr.Task != nil:
				f.task, f.state = sr.Task.ID, sr.Task.Status.State
			case sr.StatusUpdate != nil:
				f.task, f.state = sr.StatusUpdate.TaskID, sr.StatusUpdate.Status.State
			case sr.ArtifactUpdate != nil:
				f.task = sr.ArtifactUpdate.TaskID
			}
			s.frames <- f
		}
	}()
	return s
}

// next returns the stream's next frame.
func (s *sseStream) next(t *testing.T) sseFrame {
	t.Helper()
	select {
	case f, ok := <-s.frames:
		if !ok {
			select {
			case err := <-s.errs:
				t.Fatalf("the stream failed: %v", err)
			default:
			}
			t.Fatal("the stream ended early")
		}
		return f
	case <-time.After(20 * time.Second):
		t.Fatal("no frame within 20s")
	}
	return sseFrame{}
}

// until reads frames up to one in state want, which must end the stream.
func (s *sseStream) until(t *testing.T, want a2a.TaskState) sseFrame {
	t.Helper()
	for {
		f := s.next(t)
		if f.state != want {
			continue
		}
		if want.Final() {
			select {
			case extra, ok := <-s.frames:
				if ok {
					t.Errorf("a frame after the final one: %+v", extra)
				}
			case <-time.After(5 * time.Second):
				t.Error("the stream stayed open after its final frame")
			}
		}
		return f
	}
}
